// Internal pieces shared by the NumPy readers (.npy, .npz).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/data/table.h"

namespace dl::rt::data {

// Parses a whole .npy file held in memory; label names it in messages.
Table parse_npy(const char* data, size_t size, const std::string& label, const ReadOptions& options);

// Decodes a raw deflate stream (RFC 1951) that must produce exactly out_size bytes.
// Throws DataError "label: corrupt compressed data (...)".
std::string inflate(const unsigned char* in, size_t in_size, size_t out_size, const std::string& label);

// CRC-32 (ISO-HDLC, as ZIP uses).
uint32_t crc32(const unsigned char* data, size_t size);

}  // namespace dl::rt::data
