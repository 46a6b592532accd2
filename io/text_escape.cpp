#include "io/text_escape.h"

#include <cstdint>
#include <cstdio>

namespace dl::io {
namespace {

// Length of the valid UTF-8 sequence at s[i] (RFC 3629: no overlong forms, no
// surrogates, at most U+10FFFF) and its code point; 0 when the bytes are not one.
size_t decode(const std::string& s, size_t i, uint32_t& cp) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return cp = c, 1;
  size_t n;
  uint32_t min;
  if (c >= 0xC2 && c <= 0xDF) n = 2, cp = c & 0x1F, min = 0x80;
  else if (c >= 0xE0 && c <= 0xEF) n = 3, cp = c & 0x0F, min = 0x800;
  else if (c >= 0xF0 && c <= 0xF4) n = 4, cp = c & 0x07, min = 0x10000;
  else return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

bool acts_on_display(uint32_t cp) {
  if (cp >= 0x80 && cp <= 0x9F) return true;                    // C1 controls
  if (cp == 0x200E || cp == 0x200F) return true;                // LRM, RLM
  if ((cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069)) return true;  // bidi
  if (cp >= 0xFDD0 && cp <= 0xFDEF) return true;                // noncharacters
  return (cp & 0xFFFE) == 0xFFFE;                               // U+xFFFE, U+xFFFF
}

std::string escape(const std::string& s, bool multiline) {
  std::string out;
  out.reserve(s.size());
  char buf[16];
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = 0;
    const size_t n = decode(s, i, cp);
    if (n == 0 || (n == 1 && (cp < 0x20 || cp == 0x7F) && !(multiline && (cp == '\n' || cp == '\t')))) {
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(s[i]));
      out += buf;
      ++i;
    } else if (acts_on_display(cp)) {
      std::snprintf(buf, sizeof buf, "\\u{%04x}", static_cast<unsigned>(cp));
      out += buf;
      i += n;
    } else {
      out.append(s, i, n);
      i += n;
    }
  }
  return out;
}

}  // namespace

std::string visible(const std::string& s) { return escape(s, false); }
std::string visible_multiline(const std::string& s) { return escape(s, true); }

std::string xml_escape(const std::string& s) {
  const std::string v = visible_multiline(s);
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace dl::io
