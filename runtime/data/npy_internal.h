// Internal pieces shared by the data readers: parsers of a whole file held in memory
// (read once, so that a pipe is not consumed by sniffing its format) and the NPZ inflater.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "runtime/data/table.h"

namespace dl::rt::data {

// Parse a whole .npy / .npz / CSV file held in memory; label names it in messages.
Table parse_npy(const char* data, size_t size, const std::string& label, const ReadOptions& options);
std::pair<Table, Table> parse_npz_xy(const char* data, size_t size, const std::string& label,
                                     const ReadOptions& options);
Table parse_csv(const char* data, size_t size, const std::string& label, const ReadOptions& options);

// The largest ratio of uncompressed to compressed size DEFLATE can reach (a run of one
// byte: 258 bytes per 2-bit length code, less the block overhead), used to refuse an
// entry that declares more than its compressed bytes can hold before allocating.
constexpr uint64_t kMaxDeflateRatio = 1032;

// Decodes a raw DEFLATE stream (RFC 1951, zlib's inflate) that must produce exactly
// out_size bytes; the output grows only as data is decoded. Throws DataError
// "label: corrupt compressed data (...)".
std::string inflate(const unsigned char* in, size_t in_size, size_t out_size, const std::string& label);

}  // namespace dl::rt::data
