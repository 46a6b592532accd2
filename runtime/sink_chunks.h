// Reporting a tensor to a probe's ValueSink (runtime/op.h) from a serial loop that writes
// (or reads) it front to back, chunk by chunk right after the loop is done with each
// chunk, while it is still in L1/L2, instead of the probe's own pass over it afterwards.
// Chunks are kChunk values on kChunk boundaries (runtime/parallel.h), whole blocks of the
// probe's own pass (stats::kBlock): the same block sums as that pass; only the grouping
// of their double sums differs when that pass splits the tensor in parts.
#pragma once

#include <cstdint>

#include "runtime/op.h"
#include "runtime/parallel.h"
#include "runtime/value_sums.h"

namespace dl::rt {

class ChunkReporter {
 public:
  static_assert(kChunk == stats::kBlock, "a chunk is one block of the probe's own pass");
  // sink null: reports nothing (every call is a no-op).
  ChunkReporter(ValueSink* sink, const float* x, int64_t n) : sink_(sink), x_(x), n_(n) {}
  bool active() const { return sink_ != nullptr; }
  // Values [0, end) are final: reports the whole chunks among them not yet reported.
  void upto(int64_t end) {
    if (!sink_) return;
    while (done_ + kChunk <= end) {
      sink_->add(0, x_ + done_, kChunk);
      done_ += kChunk;
    }
  }
  // All n values are final: reports the rest.
  void finish() {
    if (!sink_ || done_ >= n_) return;
    sink_->add(0, x_ + done_, n_ - done_);
    done_ = n_;
  }

 private:
  ValueSink* sink_;
  const float* x_;
  int64_t n_, done_ = 0;
};

// A serial elementwise loop body(lo, hi) over [0, n) run in chunks, reporting x (the
// values it writes or reads) to `sink` (may be null) after each chunk.
template <class Body>
void chunked_loop(int64_t n, ValueSink* sink, const float* x, Body body) {
  if (!sink) {
    body(int64_t{0}, n);
    return;
  }
  ChunkReporter r(sink, x, n);
  for (int64_t lo = 0; lo < n; lo += kChunk) {
    const int64_t hi = lo + kChunk < n ? lo + kChunk : n;
    body(lo, hi);
    r.upto(hi);
  }
  r.finish();
}

// Reporting one part of a tensor (ValueSink::add's `part`) that an op produces in short
// pieces, not front to back (BatchNormalization's rows of one channel, one per image):
// the pieces are copied, in order, into a chunk-sized buffer of the caller's and reported
// a chunk at a time (an add() per row of 4 to 64 values would cost more than its values).
class StagedPart {
 public:
  StagedPart(ValueSink* sink, int64_t part, float* buffer) : sink_(sink), part_(part), buf_(buffer) {}
  void put(const float* p, int64_t n) {
    while (n > 0) {
      const int64_t take = n < kChunk - used_ ? n : kChunk - used_;
      for (int64_t k = 0; k < take; ++k) buf_[used_ + k] = p[k];
      used_ += take, p += take, n -= take;
      if (used_ == kChunk) flush();
    }
  }
  void finish() {
    if (used_ > 0) flush();
  }

 private:
  void flush() {
    sink_->add(part_, buf_, used_);
    used_ = 0;
  }
  ValueSink* sink_;
  int64_t part_;
  float* buf_;
  int64_t used_ = 0;
};

// For an op that computes an (outer, channels, inner) tensor x (or reads it) channel by
// channel, channel(c) computing channel c whole: runs channel(c) for every channel in
// ValueSink::kParts parts of whole channels fixed by the shapes, the parts on up to
// `threads` threads, each part's channels in order, and reports each channel's rows of x
// to the sink's part right after channel(c) is done with them, while in cache (StagedPart).
// The same values in the same parts for any thread count.
template <class Channel>
void report_channel_parts(ValueSink* sink, const float* x, int64_t outer, int64_t channels, int64_t inner, int threads,
                          const Channel& channel) {
  struct Job {
    ValueSink* sink;
    const float* x;
    int64_t outer, channels, inner, parts;
    const Channel* channel;
  } job{sink, x, outer, channels, inner, channels < ValueSink::kParts ? channels : ValueSink::kParts, &channel};
  parallel_blocks(job.parts, threads, [](const void* p, int64_t part) {
    const Job& j = *static_cast<const Job*>(p);
    float buffer[kChunk];
    StagedPart staged(j.sink, part, buffer);
    for (int64_t c = part * j.channels / j.parts; c < (part + 1) * j.channels / j.parts; ++c) {
      (*j.channel)(c);
      for (int64_t n = 0; n < j.outer; ++n) staged.put(j.x + (n * j.channels + c) * j.inner, j.inner);
    }
    staged.finish();
  }, &job);
}

}  // namespace dl::rt
