// Reporting a tensor to a probe's ValueSink (runtime/op.h) from a serial loop that writes
// (or reads) it front to back, chunk by chunk right after the loop is done with each
// chunk, while it is still in L1/L2, instead of the probe's own pass over it afterwards.
// Chunks are kChunk values on kChunk boundaries (runtime/parallel.h), whole blocks of the
// probe's own pass (stats::kBlock): the same block sums as that pass (only the grouping
// of their double sums differs when that pass splits the tensor in parts), except where
// an op reports a permutation of the tensor (Transpose's backward as dX's first writer).
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

// The same reporting two tensors of n values, y to sink_y and x to sink_x (either may be
// null): an op's output and the input it reads in the same order (FwdCtx::in_stats).
template <class Body>
void chunked_loop(int64_t n, ValueSink* sink_y, const float* y, ValueSink* sink_x, const float* x, Body body) {
  if (!sink_y && !sink_x) {
    body(int64_t{0}, n);
    return;
  }
  ChunkReporter ry(sink_y, y, n), rx(sink_x, x, n);
  for (int64_t lo = 0; lo < n; lo += kChunk) {
    const int64_t hi = lo + kChunk < n ? lo + kChunk : n;
    body(lo, hi);
    ry.upto(hi);
    rx.upto(hi);
  }
  ry.finish();
  rx.finish();
}

}  // namespace dl::rt
