// Raw DEFLATE decoding for .npz entries (numpy.savez_compressed) with zlib: an audited
// decoder for untrusted input. The output buffer grows only as bytes are decoded, so
// an entry that declares gigabytes but holds little costs what it holds.
#include <zlib.h>

#include <algorithm>
#include <climits>
#include <string>

#include "converter/errors.h"
#include "runtime/data/npy_internal.h"

namespace dl::rt::data {

std::string inflate(const unsigned char* in, size_t in_size, size_t out_size, const std::string& label) {
  auto corrupt = [&](const std::string& what) { return DataError(label + ": corrupt compressed data (" + what + ")"); };
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) throw ResourceError(label + ": not enough memory to decompress");
  struct End {
    z_stream* z;
    ~End() { inflateEnd(z); }
  } end{&z};
  std::string out(std::min(out_size, std::max(in_size * 4, size_t(1) << 16)), '\0');
  size_t done = 0, fed = 0;
  unsigned char spare;  // room for one byte more than declared, to tell "too long" from "ends early"
  for (;;) {
    if (z.avail_in == 0 && fed < in_size) {
      z.next_in = const_cast<Bytef*>(in + fed);
      z.avail_in = static_cast<uInt>(std::min<size_t>(in_size - fed, UINT_MAX));
      fed += z.avail_in;
    }
    if (done == out.size() && out.size() < out_size) out.resize(std::min(out_size, out.size() * 2));
    const bool full = done == out_size;
    z.next_out = full ? &spare : reinterpret_cast<Bytef*>(&out[done]);
    z.avail_out = full ? 1 : static_cast<uInt>(std::min<size_t>(out.size() - done, UINT_MAX));
    const uInt before = z.avail_out;
    const int ret = ::inflate(&z, Z_NO_FLUSH);
    const size_t produced = before - z.avail_out;
    if (full && produced > 0) throw corrupt("more bytes than the ZIP directory declares");
    done += produced;
    if (ret == Z_STREAM_END) break;
    if (ret == Z_MEM_ERROR) throw ResourceError(label + ": not enough memory to decompress");
    if (ret == Z_DATA_ERROR || ret == Z_NEED_DICT) throw corrupt(z.msg ? z.msg : "invalid deflate data");
    if (ret == Z_BUF_ERROR && z.avail_in == 0 && fed == in_size) throw corrupt("the stream ends early");
    if (ret != Z_OK && ret != Z_BUF_ERROR) throw corrupt("zlib error " + std::to_string(ret));
  }
  if (done != out_size) throw corrupt("fewer bytes than the ZIP directory declares");
  return out;
}

}  // namespace dl::rt::data
