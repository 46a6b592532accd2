#include "analysis/trace_io.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <vector>

#include "analysis/trace_header_json.h"
#include "converter/errors.h"
#include "converter/input_file.h"
#include "io/atomic_file.h"

namespace dl::an {
namespace {

constexpr char kMagic[] = "DLTRACE ";  // followed by the decimal version and '\n'
constexpr size_t kMagicSize = sizeof(kMagic) - 1;
constexpr uint64_t kRecordBytes = 8 + 8 + 4 + 4 + 4;
constexpr uint64_t kStatsBytes = 14 * 4;  // 10 f32, 3 u32, u32 flags (reserved before: written 0)
constexpr uint64_t kFlushBytes = uint64_t(1) << 20;

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Appends little-endian fields to a buffer, flushing it to a file when one is given.
class Writer {
 public:
  explicit Writer(io::AtomicFile* out) : out_(out) {}
  void bytes(const std::string& s) {
    buf_ += s;
    maybe_flush();
  }
  void u32(uint32_t v) {
    for (int k = 0; k < 4; ++k) buf_.push_back(static_cast<char>((v >> (8 * k)) & 0xff));
  }
  void u64(uint64_t v) {
    for (int k = 0; k < 8; ++k) buf_.push_back(static_cast<char>((v >> (8 * k)) & 0xff));
  }
  void i64(int64_t v) { u64(static_cast<uint64_t>(v)); }
  void f32(float v) { u32(float_bits(v)); }
  void maybe_flush() {
    if (out_ && buf_.size() >= kFlushBytes) flush();
  }
  void flush() {
    if (out_) out_->write(buf_), buf_.clear();
  }
  std::string& buffer() { return buf_; }

 private:
  io::AtomicFile* out_;
  std::string buf_;
};

void emit(const Trace& t, Writer& w) {
  const size_t probes = t.header.probes.size();
  if (t.stats.size() != t.records.size() * probes || t.metric.size() != t.loss.size())
    throw InternalError("trace is inconsistent: " + std::to_string(t.records.size()) + " records x " +
                        std::to_string(probes) + " probes but " + std::to_string(t.stats.size()) +
                        " statistics, " + std::to_string(t.loss.size()) + " losses and " +
                        std::to_string(t.metric.size()) + " metric values");
  const std::string header =
      trace_json::encode(t, kTraceFormatVersion).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  w.bytes(kMagic + std::to_string(kTraceFormatVersion) + "\n");
  w.u64(header.size());
  w.bytes(header);
  for (const IterationRecord& r : t.records) {
    w.i64(r.iteration);
    w.i64(r.epoch);
    w.f32(r.loss);
    w.f32(r.metric);
    w.f32(r.lr);
    w.maybe_flush();
  }
  for (const TensorStats& s : t.stats) {
    for (float v : {s.min, s.max, s.mean, s.std, s.l2, s.mean_abs, s.zero_frac, s.dead_frac, s.sat_frac, s.dead_units})
      w.f32(v);
    w.u32(s.nan);
    w.u32(s.inf);
    w.u32(s.count);
    w.u32(s.flags);
    w.maybe_flush();
  }
  for (const std::vector<float>* v : {&t.loss, &t.metric}) {
    for (float x : *v) w.f32(x);
    w.maybe_flush();
  }
  w.flush();
}

// Reads little-endian fields, checking every length against the bytes that remain.
class Reader {
 public:
  Reader(const std::string& b, const std::string& label) : b_(b), label_(label) {}

  uint64_t remaining() const { return b_.size() - pos_; }
  size_t pos() const { return pos_; }
  [[noreturn]] void fail(const std::string& what) const { throw DataError(label_ + ": " + what); }

  // Checks that `count` items of `size` bytes remain before anything is allocated for them.
  void need(uint64_t count, uint64_t size, const std::string& what) const {
    if (count > remaining() / size)
      fail("truncated trace: " + what + " needs " + bytes_text(count, size) + " at offset " +
           std::to_string(pos_) + ", only " + std::to_string(remaining()) + " bytes remain");
  }
  void skip(uint64_t n) { pos_ += static_cast<size_t>(n); }  // after need()
  uint32_t u32() {
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) v |= uint32_t(static_cast<unsigned char>(b_[pos_ + k])) << (8 * k);
    pos_ += 4;
    return v;
  }
  uint64_t u64() {
    uint64_t v = 0;
    for (int k = 0; k < 8; ++k) v |= uint64_t(static_cast<unsigned char>(b_[pos_ + k])) << (8 * k);
    pos_ += 8;
    return v;
  }
  int64_t i64() { return static_cast<int64_t>(u64()); }
  float f32() { return bits_float(u32()); }

 private:
  static std::string bytes_text(uint64_t count, uint64_t size) {
    if (count > std::numeric_limits<uint64_t>::max() / size) return std::to_string(count) + " x " + std::to_string(size) + " bytes";
    return std::to_string(count * size) + " bytes";
  }
  const std::string& b_;
  const std::string& label_;
  size_t pos_ = 0;
};

// The magic line "DLTRACE <version>\n"; returns the version.
int read_magic(Reader& r, const std::string& bytes) {
  if (bytes.size() < kMagicSize || bytes.compare(0, kMagicSize, kMagic) != 0)
    r.fail("not a deeplocalize trace (the file does not start with \"DLTRACE \")");
  r.skip(kMagicSize);
  int64_t version = 0;
  size_t digits = 0;
  while (r.remaining() > 0 && bytes[r.pos()] >= '0' && bytes[r.pos()] <= '9' && digits < 9) {
    version = version * 10 + (bytes[r.pos()] - '0');
    r.skip(1), ++digits;
  }
  if (digits == 0 || r.remaining() == 0 || bytes[r.pos()] != '\n')
    r.fail("not a deeplocalize trace (bad magic line: expected \"DLTRACE <version>\" and a newline)");
  r.skip(1);
  if (version > kTraceFormatVersion)
    r.fail("trace version " + std::to_string(version) + " is newer than this deeplocalize reads (" +
           std::to_string(kTraceFormatVersion) + ")");
  if (version < 1) r.fail("unsupported trace version " + std::to_string(version));
  return static_cast<int>(version);
}

}  // namespace

std::string trace_bytes(const Trace& trace) {
  Writer w(nullptr);
  emit(trace, w);
  return std::move(w.buffer());
}

void write_trace(const Trace& trace, const std::string& path) {
  io::AtomicFile out(path);  // removes its temporary file if emit() throws
  Writer w(&out);
  emit(trace, w);
  out.commit();
}

Trace read_trace(const std::string& path) {
  // Read to the end, not trusting a reported size (pipes, special files), under a cap:
  // /dev/zero has no end.
  const std::string bytes = input::read_whole_file(
      path, input::kDefaultMaxTraceBytes,
      "the limit of " + input::byte_text(double(input::kDefaultMaxTraceBytes)) + " for a trace",
      [&](input::ReadStep step, int err) {
        if (err == EISDIR) throw DataError(path + ": cannot read trace: it is a directory");
        throw DataError(path + (step == input::ReadStep::kOpen ? ": cannot open trace: " : ": cannot read trace: ") +
                        std::strerror(err));
      },
      [&](const std::string& start) {  // a stream that is no trace is refused at once
        Reader r(start, path);
        read_magic(r, start);
      });
  return read_trace_bytes(bytes, path);
}

Trace read_trace_bytes(const std::string& bytes, const std::string& label) {
  Reader r(bytes, label);
  const int version = read_magic(r, bytes);

  r.need(1, 8, "the header length");
  const uint64_t header_size = r.u64();
  r.need(header_size, 1, "the JSON header");
  const size_t header_at = r.pos();
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes.begin() + static_cast<std::ptrdiff_t>(r.pos()),
                                   bytes.begin() + static_cast<std::ptrdiff_t>(r.pos() + header_size));
  } catch (const nlohmann::json::exception& e) {
    r.fail("trace header (offset " + std::to_string(header_at) +
           ") is not valid JSON: " + input::escape_bytes(e.what()));
  }
  r.skip(header_size);

  Trace t;
  const trace_json::Counts c = trace_json::decode(header, version, label, t);
  const uint64_t records = static_cast<uint64_t>(c.records), probes = static_cast<uint64_t>(c.probes),
                 iterations = static_cast<uint64_t>(c.iterations);
  // Every section's size is checked against the remaining bytes before it is allocated.
  r.need(records, kRecordBytes, "the records section (" + std::to_string(records) + " records)");
  t.records.resize(static_cast<size_t>(records));
  for (IterationRecord& rec : t.records) {
    rec.iteration = r.i64();
    rec.epoch = r.i64();
    rec.loss = r.f32();
    rec.metric = r.f32();
    rec.lr = r.f32();
  }
  for (size_t k = 0; k < t.records.size(); ++k) {
    const IterationRecord& rec = t.records[k];
    if (rec.iteration < 0 || rec.epoch < 0)
      r.fail("record " + std::to_string(k) + " has a negative iteration or epoch (" + std::to_string(rec.iteration) +
             ", " + std::to_string(rec.epoch) + ")");
    if (k > 0 && rec.iteration <= t.records[k - 1].iteration)
      r.fail("record " + std::to_string(k) + " (iteration " + std::to_string(rec.iteration) +
             ") does not follow record " + std::to_string(k - 1) + " (iteration " +
             std::to_string(t.records[k - 1].iteration) + "): records must be in increasing iteration order");
  }
  // R x P is checked as a quotient so that a huge declared product cannot overflow.
  if (records != 0 && probes > (r.remaining() / kStatsBytes) / records) {
    const bool fits = probes <= std::numeric_limits<uint64_t>::max() / kStatsBytes / records;
    r.fail("truncated trace: the statistics section (" + std::to_string(records) + " records x " +
           std::to_string(probes) + " probes) needs " +
           (fits ? std::to_string(records * probes * kStatsBytes) : std::string("more than 2^64")) +
           " bytes at offset " + std::to_string(r.pos()) + ", only " + std::to_string(r.remaining()) +
           " bytes remain");
  }
  t.stats.resize(static_cast<size_t>(records * probes));
  for (TensorStats& s : t.stats) {
    for (float* v : {&s.min, &s.max, &s.mean, &s.std, &s.l2, &s.mean_abs, &s.zero_frac, &s.dead_frac, &s.sat_frac,
                     &s.dead_units})
      *v = r.f32();
    s.nan = r.u32();
    s.inf = r.u32();
    s.count = r.u32();
    s.flags = r.u32();
  }
  r.need(iterations, 8, "the loss and metric sections (" + std::to_string(iterations) + " iterations)");
  for (std::vector<float>* v : {&t.loss, &t.metric}) {
    v->resize(static_cast<size_t>(iterations));
    for (float& x : *v) x = r.f32();
  }
  if (r.remaining() != 0)
    r.fail(std::to_string(r.remaining()) + " unexpected bytes after the metric section (offset " +
           std::to_string(r.pos()) + ")");
  return t;
}

}  // namespace dl::an
