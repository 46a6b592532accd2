// A small deflate decoder (RFC 1951) so that numpy.savez_compressed files load without
// a zlib dependency. Canonical Huffman decoding as in zlib's contrib/puff, with a
// 10-bit lookup table in front for speed.
#include <array>
#include <cstring>
#include <string>

#include "converter/errors.h"
#include "runtime/data/npy_internal.h"

namespace dl::rt::data {
namespace {

constexpr int kFastBits = 10;

struct Corrupt {
  const char* what;
};

class BitReader {
 public:
  BitReader(const unsigned char* in, size_t size) : p_(in), begin_(in), end_(in + size) {}

  uint32_t peek(int n) {
    if (count_ < n) refill();
    return static_cast<uint32_t>(buf_ & ((uint64_t(1) << n) - 1));
  }
  void drop(int n) {
    buf_ >>= n;
    count_ -= n;
  }
  uint32_t bits(int n) {
    const uint32_t v = peek(n);
    drop(n);
    return v;
  }
  void align() { drop(count_ % 8); }
  // Bits consumed so far, counting the zero padding read past the end.
  uint64_t consumed() const { return uint64_t(p_ - begin_ + padding_) * 8 - uint64_t(count_); }
  bool overrun() const { return consumed() > uint64_t(end_ - begin_) * 8; }
  // Copies n whole bytes (after align()) to out.
  void copy_bytes(unsigned char* out, size_t n) {
    while (n > 0 && count_ >= 8) {
      *out++ = static_cast<unsigned char>(bits(8));
      --n;
    }
    if (padding_ > 0 || size_t(end_ - p_) < n) throw Corrupt{"a stored block runs past the end"};
    std::memcpy(out, p_, n);
    p_ += n;
  }

 private:
  void refill() {
    while (count_ <= 56) {
      uint64_t byte = 0;
      if (p_ < end_) {
        byte = *p_++;
      } else {
        ++padding_;
      }
      buf_ |= byte << count_;
      count_ += 8;
    }
  }

  const unsigned char* p_;
  const unsigned char* begin_;
  const unsigned char* end_;
  uint64_t buf_ = 0;
  int count_ = 0;
  int64_t padding_ = 0;
};

struct Huffman {
  std::array<int16_t, 16> count{};
  std::array<int16_t, 320> symbol{};
  std::array<uint16_t, 1 << kFastBits> fast{};  // (length << 9) | symbol, 0 = slow path

  void build(const uint8_t* lengths, int n) {
    count.fill(0);
    fast.fill(0);
    for (int s = 0; s < n; ++s) ++count[lengths[s]];
    count[0] = 0;
    int left = 1;
    for (int len = 1; len < 16; ++len) {
      left = 2 * left - count[len];
      if (left < 0) throw Corrupt{"over-subscribed Huffman code"};
    }
    std::array<int, 16> offs{}, next{};
    int code = 0;  // RFC 1951 3.2.2: the first code of each length
    for (int len = 1; len < 16; ++len) {
      offs[len] = len == 1 ? 0 : offs[len - 1] + count[len - 1];
      code = (code + count[len - 1]) << 1;
      next[len] = code;
    }
    for (int s = 0; s < n; ++s) {
      const int len = lengths[s];
      if (len == 0) continue;
      symbol[offs[len]++] = static_cast<int16_t>(s);
      const int c = next[len]++;
      if (len > kFastBits) continue;
      int rev = 0;  // deflate sends Huffman codes most significant bit first
      for (int b = 0; b < len; ++b) rev |= ((c >> b) & 1) << (len - 1 - b);
      for (int fill = rev; fill < (1 << kFastBits); fill += 1 << len) fast[fill] = static_cast<uint16_t>(len << 9 | s);
    }
  }

  int decode(BitReader& br) const {
    const uint16_t e = fast[br.peek(kFastBits)];
    if (e != 0) {
      br.drop(e >> 9);
      return e & 511;
    }
    int code = 0, first = 0, index = 0;
    for (int len = 1; len < 16; ++len) {
      code |= static_cast<int>(br.bits(1));
      const int n = count[len];
      if (code - n < first) return symbol[index + (code - first)];
      index += n;
      first = (first + n) << 1;
      code <<= 1;
    }
    throw Corrupt{"invalid Huffman code"};
  }
};

constexpr uint16_t kLenBase[29] = {3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
                                   31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
constexpr uint8_t kLenExtra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                   2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
constexpr uint16_t kDistBase[30] = {1,    2,    3,    4,    5,    7,    9,    13,    17,    25,
                                    33,   49,   65,   97,   129,  193,  257,  385,   513,   769,
                                    1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
constexpr uint8_t kDistExtra[30] = {0, 0, 0, 0, 1, 1, 2, 2,  3,  3,  4,  4,  5,  5,  6,
                                    6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};

class Inflater {
 public:
  Inflater(const unsigned char* in, size_t in_size, size_t out_size) : br_(in, in_size), out_(out_size, '\0') {}

  std::string run() {
    for (bool last = false; !last;) {
      if (br_.overrun()) throw Corrupt{"the stream ends early"};
      last = br_.bits(1) != 0;
      const uint32_t type = br_.bits(2);
      if (type == 0) {
        stored();
      } else if (type == 1) {
        fixed();
      } else if (type == 2) {
        dynamic();
      } else {
        throw Corrupt{"invalid block type"};
      }
    }
    if (br_.overrun()) throw Corrupt{"the stream ends early"};
    if (pos_ != out_.size()) throw Corrupt{"fewer bytes than the ZIP directory declares"};
    return std::move(out_);
  }

 private:
  void stored() {
    br_.align();
    const uint32_t len = br_.bits(16), nlen = br_.bits(16);
    if ((len ^ 0xffff) != nlen) throw Corrupt{"bad stored block length"};
    if (len > out_.size() - pos_) throw Corrupt{"more bytes than the ZIP directory declares"};
    br_.copy_bytes(reinterpret_cast<unsigned char*>(&out_[pos_]), len);
    pos_ += len;
  }

  void fixed() {
    if (!fixed_built_) {
      uint8_t l[288];
      std::memset(l, 8, 144);
      std::memset(l + 144, 9, 112);
      std::memset(l + 256, 7, 24);
      std::memset(l + 280, 8, 8);
      fixed_lit_.build(l, 288);
      std::memset(l, 5, 30);
      fixed_dist_.build(l, 30);
      fixed_built_ = true;
    }
    codes(fixed_lit_, fixed_dist_);
  }

  void dynamic() {
    const int nlen = static_cast<int>(br_.bits(5)) + 257, ndist = static_cast<int>(br_.bits(5)) + 1;
    const int ncode = static_cast<int>(br_.bits(4)) + 4;
    if (nlen > 286 || ndist > 30) throw Corrupt{"bad code counts"};
    static constexpr uint8_t kOrder[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
    uint8_t lengths[320] = {};
    for (int k = 0; k < ncode; ++k) lengths[kOrder[k]] = static_cast<uint8_t>(br_.bits(3));
    Huffman lencode;
    lencode.build(lengths, 19);
    std::memset(lengths, 0, sizeof lengths);
    for (int k = 0; k < nlen + ndist;) {
      int sym = lencode.decode(br_);
      if (sym < 16) {
        lengths[k++] = static_cast<uint8_t>(sym);
        continue;
      }
      uint8_t value = 0;
      int repeat;
      if (sym == 16) {
        if (k == 0) throw Corrupt{"repeat with no previous length"};
        value = lengths[k - 1];
        repeat = 3 + static_cast<int>(br_.bits(2));
      } else if (sym == 17) {
        repeat = 3 + static_cast<int>(br_.bits(3));
      } else {
        repeat = 11 + static_cast<int>(br_.bits(7));
      }
      if (k + repeat > nlen + ndist) throw Corrupt{"too many code lengths"};
      while (repeat--) lengths[k++] = value;
    }
    if (lengths[256] == 0) throw Corrupt{"no end-of-block code"};
    lit_.build(lengths, nlen);
    dist_.build(lengths + nlen, ndist);
    codes(lit_, dist_);
  }

  void codes(const Huffman& lit, const Huffman& dist) {
    char* out = &out_[0];
    const size_t size = out_.size();
    for (;;) {
      const int sym = lit.decode(br_);
      if (sym < 256) {
        if (pos_ == size) throw Corrupt{"more bytes than the ZIP directory declares"};
        out[pos_++] = static_cast<char>(sym);
        continue;
      }
      if (sym == 256) return;
      if (sym > 285) throw Corrupt{"invalid length code"};
      const size_t len = kLenBase[sym - 257] + br_.bits(kLenExtra[sym - 257]);
      const int dsym = dist.decode(br_);
      if (dsym > 29) throw Corrupt{"invalid distance code"};
      const size_t d = kDistBase[dsym] + br_.bits(kDistExtra[dsym]);
      if (d > pos_) throw Corrupt{"distance too far back"};
      if (len > size - pos_) throw Corrupt{"more bytes than the ZIP directory declares"};
      for (size_t k = 0; k < len; ++k, ++pos_) out[pos_] = out[pos_ - d];  // may overlap
      if (br_.overrun()) throw Corrupt{"the stream ends early"};
    }
  }

  BitReader br_;
  std::string out_;
  size_t pos_ = 0;
  Huffman lit_, dist_, fixed_lit_, fixed_dist_;
  bool fixed_built_ = false;
};

}  // namespace

std::string inflate(const unsigned char* in, size_t in_size, size_t out_size, const std::string& label) {
  try {
    return Inflater(in, in_size, out_size).run();
  } catch (const Corrupt& c) {
    throw DataError(label + ": corrupt compressed data (" + c.what + ")");
  }
}

uint32_t crc32(const unsigned char* data, size_t size) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t n = 0; n < 256; ++n) {
      uint32_t c = n;
      for (int k = 0; k < 8; ++k) c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
      t[n] = c;
    }
    return t;
  }();
  uint32_t c = 0xffffffffu;
  for (size_t k = 0; k < size; ++k) c = table[(c ^ data[k]) & 0xff] ^ (c >> 8);
  return c ^ 0xffffffffu;
}

}  // namespace dl::rt::data
