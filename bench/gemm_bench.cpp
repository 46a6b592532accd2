// dl_gemm_bench: the runtime's GEMM kernel (runtime/ops/gemm_kernel.h, Eigen's GEBP on
// the runtime's packing and threads) against oneDNN's sgemm (libdnnl-dev) on the products
// of the harness's GEMM-bound nets (issue 17: measure a library against our own kernel and
// take the faster): the MLP 784-256-128-10 at batch 64 (case a: its forward, dX and dW
// products), the MLP 4096-4096-10 at batch 256 (case c) and the TransformerEncoder's
// projections (a subset of case t's products: one layer's). The two sides alternate, one
// timing (a batch of calls of a small product, so that it spans well over the clock's
// grain) at a time; medians of --reps timings, process CPU time per call (all threads),
// GFLOP/s of that time, and the sums over each case's products. (At 2 threads a side's
// threads that keep spinning after a call, libgomp's and the runtime's helpers, are
// charged to the other side's next timing: run with OMP_WAIT_POLICY=passive, and read
// those figures as indicative.)
//
// Then whether each side's bits depend on how a product is cut: every product again in
// two parts of C's rows and in two parts of its columns, each part one call, compared bit
// for bit with the whole, cut where the runtime cuts a product into 2 blocks (half the
// rows or columns rounded up to a multiple of 4 rows or 48 columns, GEBP's register
// blocks; "-" when the product is too small to cut there), on these products and on a
// sweep of 400 shapes (`SWEEP`: how many of its cuts change each side's bits; `SWEEPDIFF`
// names each of the runtime's).
// The runtime cuts products into blocks by the thread count and promises the same bits
// for any (gemm_kernel.h); a library whose bits change with the cut could only take over
// with blocks fixed by the shapes alone.
//
//   dl_gemm_bench [--reps N] [--threads T]
//
// The oneDNN side is built only when libdnnl-dev is installed (bench/CMakeLists.txt).

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "bench/bench_util.h"
#include "runtime/ops/gemm_kernel.h"
#include "runtime/threads.h"

#if defined(DL_HAVE_DNNL)
#include <omp.h>

#include <dnnl.h>
#endif

namespace {

// C (m x n) = op(A) (m x k) * op(B) (k x n), row-major; ta / tb: the operand stored
// transposed (as the Gemm, MatMul and their backward passes call the kernel).
struct Product {
  const char* net;
  const char* name;
  int m, n, k;
  bool ta, tb;
};

const Product kProducts[] = {
    // (a) MLP 784-256-128-10, batch 64: Y = X W^T (+ b), dX = dY W, dW = dY^T X.
    {"a", "fwd 64x784 * (256x784)^T", 64, 256, 784, false, true},
    {"a", "fwd 64x256 * (128x256)^T", 64, 128, 256, false, true},
    {"a", "fwd 64x128 * (10x128)^T", 64, 10, 128, false, true},
    {"a", "dW (64x256)^T * 64x784", 256, 784, 64, true, false},
    {"a", "dW (64x128)^T * 64x256", 128, 256, 64, true, false},
    {"a", "dW (64x10)^T * 64x128", 10, 128, 64, true, false},
    {"a", "dX 64x128 * 128x256", 64, 256, 128, false, false},
    {"a", "dX 64x10 * 10x128", 64, 128, 10, false, false},
    // (c) MLP 4096-4096-10, batch 256.
    {"c", "fwd 256x4096 * (4096x4096)^T", 256, 4096, 4096, false, true},
    {"c", "dW (256x4096)^T * 256x4096", 4096, 4096, 256, true, false},
    {"c", "fwd 256x4096 * (10x4096)^T", 256, 10, 4096, false, true},
    {"c", "dW (256x10)^T * 256x4096", 10, 4096, 256, true, false},
    {"c", "dX 256x10 * 10x4096", 256, 4096, 10, false, false},
    // (t) TransformerEncoder d 128, seq 64, batch 16: 1024 tokens through its projections.
    {"t", "qkv 1024x128 * (384x128)^T", 1024, 384, 128, false, true},
    {"t", "ffn 1024x128 * (512x128)^T", 1024, 512, 128, false, true},
    {"t", "ffn 1024x512 * (128x512)^T", 1024, 128, 512, false, true},
    {"t", "dW (1024x384)^T * 1024x128", 384, 128, 1024, true, false},
};

struct Operands {
  std::vector<float> a, b;
  int lda, ldb;
};

Operands operands(const Product& p, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Operands o;
  o.a.resize(size_t(p.m) * size_t(p.k));
  o.b.resize(size_t(p.k) * size_t(p.n));
  for (float& x : o.a) x = u(rng);
  for (float& x : o.b) x = u(rng);
  o.lda = p.ta ? p.m : p.k;
  o.ldb = p.tb ? p.k : p.n;
  return o;
}

// One side: C rows [r0, r1) and columns [c0, c1) of the product, in one call.
using Call = void (*)(const Product&, const Operands&, int r0, int r1, int c0, int c1, float* c);

void ours(const Product& p, const Operands& o, int r0, int r1, int c0, int c1, float* c) {
  const float* a = o.a.data() + (p.ta ? r0 : size_t(r0) * size_t(o.lda));
  const float* b = o.b.data() + (p.tb ? size_t(c0) * size_t(o.ldb) : c0);
  dl::rt::gemm(r1 - r0, c1 - c0, p.k, 1.0f, {a, o.lda, p.ta}, {b, o.ldb, p.tb}, c + size_t(r0) * p.n + c0, p.n,
               false);
}

#if defined(DL_HAVE_DNNL)
void onednn(const Product& p, const Operands& o, int r0, int r1, int c0, int c1, float* c) {
  const float* a = o.a.data() + (p.ta ? r0 : size_t(r0) * size_t(o.lda));
  const float* b = o.b.data() + (p.tb ? size_t(c0) * size_t(o.ldb) : c0);
  if (dnnl_sgemm(p.ta ? 'T' : 'N', p.tb ? 'T' : 'N', r1 - r0, c1 - c0, p.k, 1.0f, a, o.lda, b, o.ldb, 0.0f,
                 c + size_t(r0) * p.n + c0, p.n) != dnnl_success) {
    std::fprintf(stderr, "dl_gemm_bench: dnnl_sgemm failed on %s\n", p.name);
    std::exit(1);
  }
}
#endif

// Where the runtime cuts C's rows (or columns) into 2 blocks (gemm_kernel.cpp: half,
// rounded up to GEBP's register block), or 0 where it would not cut (nor leave a
// one-wide last block).
int cut_at(const Product& p, bool rows) {
  const int extent = rows ? p.m : p.n, align = rows ? 4 : 48;
  const int half = ((extent + 1) / 2 + align - 1) / align * align;
  return half >= extent - 1 ? 0 : half;
}

// Whether the product cut in two parts of C's rows (or columns) gives the whole's bits:
// "yes", "**no**", or "-" when it is too small to cut there.
const char* same_bits_cut(Call call, const Product& p, const Operands& o, bool rows) {
  const int half = cut_at(p, rows);
  if (half == 0) return "-";
  std::vector<float> whole(size_t(p.m) * p.n), cut(whole.size());
  call(p, o, 0, p.m, 0, p.n, whole.data());
  if (rows) {
    call(p, o, 0, half, 0, p.n, cut.data());
    call(p, o, half, p.m, 0, p.n, cut.data());
  } else {
    call(p, o, 0, p.m, 0, half, cut.data());
    call(p, o, 0, p.m, half, p.n, cut.data());
  }
  return std::memcmp(whole.data(), cut.data(), whole.size() * sizeof(float)) == 0 ? "yes" : "**no**";
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 51, threads = 1;
  // A positive count, the whole argument a number (else -1).
  const auto count = [](const char* v) {
    char* end = nullptr;
    const long x = std::strtol(v, &end, 10);
    return end != v && *end == 0 && x > 0 && x < 1000000 ? int(x) : -1;
  };
  for (int i = 1; i < argc; i += 2) {
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (v && !std::strcmp(argv[i], "--reps")) reps = count(v);
    else if (v && !std::strcmp(argv[i], "--threads")) threads = count(v);
    else {
      std::fprintf(stderr, "usage: %s [--reps N] [--threads T]\n", argv[0]);
      return 2;
    }
  }
  if (reps < 1 || threads < 1) {
    std::fprintf(stderr, "%s: --reps and --threads must be positive whole numbers\n", argv[0]);
    return 2;
  }
  dl::rt::set_compute_threads(threads);
#if defined(DL_HAVE_DNNL)
  omp_set_num_threads(threads);
  const char* names[] = {"deeplocalize", "oneDNN"};
  const Call calls[] = {ours, onednn};
#else
  const char* names[] = {"deeplocalize"};
  const Call calls[] = {ours};
#endif
  const int sides = int(sizeof(names) / sizeof(names[0]));
  std::printf("%d thread(s), median of %d timings, process CPU time per call\n", threads, reps);
  std::printf("| case | product (m x k * k x n) | side | us | GFLOP/s | same bits cut by rows / columns |\n");
  std::printf("|---|---|---|---:|---:|---|\n");
  struct Total {
    const char* net;
    double us[2];
  };
  std::vector<Total> totals;
  for (const Product& p : kProducts) {
    const Operands o = operands(p, uint64_t(p.m) * 7919 + uint64_t(p.n) * 31 + uint64_t(p.k));
    std::vector<float> c(size_t(p.m) * p.n);
    // Enough calls of a small product that each timing spans well over the clock's grain.
    const double macs = double(p.m) * p.n * p.k;
    const int inner = std::max(1, int(2e6 / macs));
    std::vector<double> t[2];
    for (int r = 0; r <= reps; ++r)  // round 0 is a warm-up
      for (int d = 0; d < sides; ++d) {
        const double ms = dl::bench::cpu_ms([&] {
          for (int i = 0; i < inner; ++i) calls[d](p, o, 0, p.m, 0, p.n, c.data());
        });
        if (r > 0) t[d].push_back(ms * 1e3 / inner);
      }
    if (totals.empty() || std::strcmp(totals.back().net, p.net) != 0) totals.push_back({p.net, {0, 0}});
    for (int d = 0; d < sides; ++d) {
      const double us = dl::bench::median(t[d]);
      totals.back().us[d] += us;
      std::printf("| %s | %s | %s | %.2f | %.1f | %s / %s |\n", p.net, p.name, names[d], us, 2.0 * macs / us * 1e-3,
                  same_bits_cut(calls[d], p, o, true), same_bits_cut(calls[d], p, o, false));
    }
  }
  // A wider sweep of shapes (small and odd ones too, all four transposes), cut the same
  // way: how many cuts change each side's bits. (Not single rows: the runtime sends those
  // to Eigen's GEMV and never cuts them.)
  int cuts = 0, differ[2] = {0, 0};
  for (const int m : {3, 16, 64, 100, 256})
    for (const int n : {10, 64, 100, 256, 784})
      for (const int k : {10, 64, 128, 784})
        for (int t = 0; t < 4; ++t) {
          const Product p{"sweep", "sweep", m, n, k, (t & 1) != 0, (t & 2) != 0};
          const Operands o = operands(p, uint64_t(m * 1000003 + n * 1009 + k * 7 + t));
          for (const bool rows : {true, false}) {
            if (cut_at(p, rows) == 0) continue;
            ++cuts;
            for (int d = 0; d < sides; ++d)
              if (!std::strcmp(same_bits_cut(calls[d], p, o, rows), "**no**")) {
                ++differ[d];
                if (d == 0)
                  std::printf("SWEEPDIFF %s m=%d n=%d k=%d ta=%d tb=%d cut=%s\n", names[d], m, n, k, int(p.ta),
                              int(p.tb), rows ? "rows" : "columns");
              }
          }
        }
  std::printf("\nSWEEP shapes=400 cuts=%d %s_differ=%d", cuts, names[0], differ[0]);
  if (sides > 1) std::printf(" %s_differ=%d", names[1], differ[1]);
  std::printf("\n\nper case, the products above summed (us):\n");
  for (const Total& tt : totals) {
    std::printf("GEMMSUM case=%s %s=%.1f", tt.net, names[0], tt.us[0]);
    if (sides > 1) std::printf(" %s=%.1f ratio=%.3f", names[1], tt.us[1], tt.us[0] / tt.us[1]);
    std::printf("\n");
  }
  return 0;
}
