// Untrusted text (ONNX node names, paths, case names, messages that quote them) made
// safe for the output it goes to: a terminal, a text or Markdown file, XML.
//
// visible(s) keeps printable UTF-8 as it is and writes everything else as visible ASCII:
//  - C0 controls (newline and tab too), DEL and bytes that are not valid UTF-8 (stray
//    continuation bytes, overlong forms, surrogates, code points past U+10FFFF, cut
//    sequences) as "\xHH", e.g. ESC -> "\x1b", an invalid byte 0xff -> "\xff";
//  - valid code points a terminal or XML 1.0 would act on or reject: C1 controls
//    (U+0080-U+009F, which include the 8-bit CSI), the bidirectional controls
//    (U+200E, U+200F, U+202A-U+202E, U+2066-U+2069, "Trojan source") and the
//    noncharacters (U+FDD0-U+FDEF, U+xFFFE, U+xFFFF) as "\u{HHHH}", e.g. "\u{fffe}".
// The result is valid UTF-8 with no control characters, so it cannot move the cursor,
// clear the screen or change colours, and every character in it is allowed in XML 1.0.
// A backslash is kept as it is (names rarely hold one, and paths should read normally).
#pragma once

#include <string>

namespace dl::io {

std::string visible(const std::string& s);
// The same, but newlines and tabs stay (multi-line text such as a code snippet).
std::string visible_multiline(const std::string& s);
// visible_multiline() with &, <, >, " and ' as XML entities: text and attribute values.
std::string xml_escape(const std::string& s);

}  // namespace dl::io
