// dl_conv_bench: the runtime's Conv op against oneDNN's convolutions (issue 17: measure
// oneDNN against our own kernels) on resnet18's convolution shapes at 3x32x32: forward,
// backward data (dX) and backward weights (dW and dB) per shape, the two sides
// alternating call by call, medians of --reps calls, CPU ms per call (all threads) and
// GFLOP/s of CPU time.
//
// oneDNN gets NCHW tensors at its interface, as the runtime keeps them, and its preferred
// layouts inside (format any), with the reorders to and from NCHW timed as part of each
// call, as an integration would pay them (the weights too: Adam changes them every step).
//
//   dl_conv_bench [--reps N] [--batch B] [--threads T]
//
// The oneDNN side is built only when libdnnl-dev is installed (bench/CMakeLists.txt);
// without it only the runtime's figures are printed.

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "bench/op_bench.h"
#include "runtime/attrs.h"
#include "runtime/threads.h"

#if defined(DL_HAVE_DNNL)
#include <omp.h>

#include <dnnl.hpp>
#endif

namespace {

struct Shape {
  const char* name;
  int c, m, hw, k, stride, pad;
  int count;  // layers of this shape in the network
  int out() const { return (hw + 2 * pad - k) / stride + 1; }
};

// torchvision's resnet18 at 3x32x32 (conv1 to 16x16, max-pool to 8x8): each distinct
// convolution shape and how many layers have it.
const Shape kResnet18[] = {
    {"conv1 7x7/2 3->64 on 32x32", 3, 64, 32, 7, 2, 3, 1},   {"3x3 64->64 on 8x8", 64, 64, 8, 3, 1, 1, 4},
    {"3x3/2 64->128 on 8x8", 64, 128, 8, 3, 2, 1, 1},        {"3x3 128->128 on 4x4", 128, 128, 4, 3, 1, 1, 3},
    {"1x1/2 64->128 on 8x8", 64, 128, 8, 1, 2, 0, 1},        {"3x3/2 128->256 on 4x4", 128, 256, 4, 3, 2, 1, 1},
    {"3x3 256->256 on 2x2", 256, 256, 2, 3, 1, 1, 3},        {"1x1/2 128->256 on 4x4", 128, 256, 4, 1, 2, 0, 1},
    {"3x3/2 256->512 on 2x2", 256, 512, 2, 3, 2, 1, 1},      {"3x3 512->512 on 1x1", 512, 512, 1, 3, 1, 1, 3},
    {"1x1/2 256->512 on 2x2", 256, 512, 2, 1, 2, 0, 1},
};

// The three calls of one side on one shape.
struct Side {
  virtual ~Side() = default;
  virtual void forward() = 0;
  virtual void backward_data() = 0;
  virtual void backward_weights() = 0;
};

// The runtime's Conv op (runtime/ops/conv.cpp): backward with only dX, or only dW and dB,
// requested.
class Ours : public Side {
 public:
  Ours(const Shape& sh, int batch)
      : b_(dl::rt::sample_node("Conv", 3, 1,
                               {{"pads", dl::rt::attr_ints({sh.pad, sh.pad, sh.pad, sh.pad})},
                                {"strides", dl::rt::attr_ints({sh.stride, sh.stride})}},
                               11),
           {dl::bench::random_tensor({batch, sh.c, sh.hw, sh.hw}, -1, 1, 1),
            dl::bench::random_tensor({sh.m, sh.c, sh.k, sh.k}, -0.1f, 0.1f, 2),
            dl::bench::random_tensor({sh.m}, -0.1f, 0.1f, 3)},
           true),
        din_(b_.bwd.din) {
    b_.op->forward(b_.fwd);
  }
  void forward() override { b_.op->forward(b_.fwd); }
  void backward_data() override { backward({din_[0], nullptr, nullptr}); }
  void backward_weights() override { backward({nullptr, din_[1], din_[2]}); }

 private:
  void backward(std::vector<dl::rt::Tensor*> din) {
    for (dl::rt::Tensor* t : din)
      if (t) std::fill_n(t->f(), t->numel(), 0.0f);  // as the graph zeroes gradients per step
    b_.bwd.din = din;
    b_.op->backward(b_.bwd);
  }
  dl::bench::OpBench b_;
  std::vector<dl::rt::Tensor*> din_;
};

#if defined(DL_HAVE_DNNL)
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

class OneDnn : public Side {
 public:
  OneDnn(const Shape& sh, int batch, dnnl::engine& eng, dnnl::stream& s) : eng_(eng), s_(s) {
    const int o = sh.out();
    const dnnl::memory::dims src{batch, sh.c, sh.hw, sh.hw}, wei{sh.m, sh.c, sh.k, sh.k}, bia{sh.m},
        dst{batch, sh.m, o, o}, strides{sh.stride, sh.stride}, pads{sh.pad, sh.pad};
    u_src_ = user(src, tag::nchw), u_wei_ = user(wei, tag::oihw), u_bia_ = user(bia, tag::x);
    u_dst_ = user(dst, tag::nchw), u_dsrc_ = user(src, tag::nchw), u_dwei_ = user(wei, tag::oihw);
    u_dbia_ = user(bia, tag::x), u_ddst_ = user(dst, tag::nchw);
    const dnnl::memory::desc a_src(src, dt::f32, tag::any), a_wei(wei, dt::f32, tag::any),
        a_bia(bia, dt::f32, tag::any), a_dst(dst, dt::f32, tag::any);
    dnnl::convolution_forward::desc fd(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, a_src,
                                       a_wei, a_bia, a_dst, strides, pads, pads);
    fpd_ = dnnl::convolution_forward::primitive_desc(fd, eng);
    fwd_ = dnnl::convolution_forward(fpd_);
    dnnl::convolution_backward_data::desc bdd(dnnl::algorithm::convolution_direct, a_src, a_wei, a_dst, strides, pads,
                                              pads);
    bdpd_ = dnnl::convolution_backward_data::primitive_desc(bdd, eng, fpd_);
    bwd_data_ = dnnl::convolution_backward_data(bdpd_);
    dnnl::convolution_backward_weights::desc bwd(dnnl::algorithm::convolution_direct, a_src, a_wei, a_bia, a_dst,
                                                 strides, pads, pads);
    bwpd_ = dnnl::convolution_backward_weights::primitive_desc(bwd, eng, fpd_);
    bwd_w_ = dnnl::convolution_backward_weights(bwpd_);
  }
  void forward() override {
    dnnl::memory x = prepare(u_src_, fpd_.src_desc()), w = prepare(u_wei_, fpd_.weights_desc());
    dnnl::memory y = out(u_dst_, fpd_.dst_desc());
    fwd_.execute(s_, {{DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_BIAS, u_bia_}, {DNNL_ARG_DST, y}});
    finish(y, u_dst_);
  }
  void backward_data() override {
    dnnl::memory dy = prepare(u_ddst_, bdpd_.diff_dst_desc()), w = prepare(u_wei_, bdpd_.weights_desc());
    dnnl::memory dx = out(u_dsrc_, bdpd_.diff_src_desc());
    bwd_data_.execute(s_, {{DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DIFF_SRC, dx}});
    finish(dx, u_dsrc_);
  }
  void backward_weights() override {
    dnnl::memory x = prepare(u_src_, bwpd_.src_desc()), dy = prepare(u_ddst_, bwpd_.diff_dst_desc());
    dnnl::memory dw = out(u_dwei_, bwpd_.diff_weights_desc());
    bwd_w_.execute(s_, {{DNNL_ARG_SRC, x}, {DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_DIFF_WEIGHTS, dw},
                        {DNNL_ARG_DIFF_BIAS, u_dbia_}});
    finish(dw, u_dwei_);
  }

 private:
  dnnl::memory user(const dnnl::memory::dims& d, tag t) {
    dnnl::memory m({d, dt::f32, t}, eng_);
    float* p = static_cast<float*>(m.get_data_handle());
    size_t n = 1;
    for (auto x : d) n *= size_t(x);
    for (size_t i = 0; i < n; ++i) p[i] = float((i * 7) % 13) * 0.01f - 0.06f;
    return m;
  }
  // User memory in the primitive's layout: reordered when they differ.
  dnnl::memory prepare(dnnl::memory& u, const dnnl::memory::desc& want) {
    if (u.get_desc() == want) return u;
    dnnl::memory m(want, eng_);
    dnnl::reorder(u, m).execute(s_, u, m);
    return m;
  }
  dnnl::memory out(dnnl::memory& u, const dnnl::memory::desc& want) {
    return u.get_desc() == want ? u : dnnl::memory(want, eng_);
  }
  void finish(dnnl::memory& got, dnnl::memory& u) {
    if (got != u) dnnl::reorder(got, u).execute(s_, got, u);
    s_.wait();
  }
  dnnl::engine& eng_;
  dnnl::stream& s_;
  dnnl::memory u_src_, u_wei_, u_bia_, u_dst_, u_dsrc_, u_dwei_, u_dbia_, u_ddst_;
  dnnl::convolution_forward::primitive_desc fpd_;
  dnnl::convolution_forward fwd_;
  dnnl::convolution_backward_data::primitive_desc bdpd_;
  dnnl::convolution_backward_data bwd_data_;
  dnnl::convolution_backward_weights::primitive_desc bwpd_;
  dnnl::convolution_backward_weights bwd_w_;
};
#endif

}  // namespace

int main(int argc, char** argv) {
  int reps = 21, batch = 16, threads = 1;
  for (int i = 1; i < argc; i += 2) {
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (v && !std::strcmp(argv[i], "--reps")) reps = std::atoi(v);
    else if (v && !std::strcmp(argv[i], "--batch")) batch = std::atoi(v);
    else if (v && !std::strcmp(argv[i], "--threads")) threads = std::atoi(v);
    else {
      std::fprintf(stderr, "usage: %s [--reps N] [--batch B] [--threads T]\n", argv[0]);
      return 2;
    }
  }
  if (reps < 1 || batch < 1 || threads < 1) {
    std::fprintf(stderr, "%s: --reps, --batch and --threads must be positive\n", argv[0]);
    return 2;
  }
  dl::rt::set_compute_threads(threads);
#if defined(DL_HAVE_DNNL)
  omp_set_num_threads(threads);
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  const char* names[] = {"deeplocalize", "oneDNN"};
#else
  const char* names[] = {"deeplocalize"};
#endif
  const int sides = int(sizeof(names) / sizeof(names[0]));
  std::printf("batch %d, %d thread(s), median of %d calls, process CPU time\n", batch, threads, reps);
  std::printf("| shape | side | fwd ms | dX ms | dW+dB ms | GFLOP/s fwd / dX / dW |\n|---|---|---:|---:|---:|---|\n");
  double total[2][3] = {};
  for (const Shape& sh : kResnet18) {
    std::unique_ptr<Side> side[2];
    side[0] = std::make_unique<Ours>(sh, batch);
#if defined(DL_HAVE_DNNL)
    side[1] = std::make_unique<OneDnn>(sh, batch, eng, s);
#endif
    std::vector<double> t[2][3];
    for (int r = 0; r <= reps; ++r)  // call 0 is a warm-up
      for (int k = 0; k < 3; ++k)
        for (int d = 0; d < sides; ++d) {
          Side& x = *side[d];
          const double ms = dl::bench::cpu_ms([&] { k == 0 ? x.forward() : k == 1 ? x.backward_data() : x.backward_weights(); });
          if (r > 0) t[d][k].push_back(ms);
        }
    const int o = sh.out();
    const double gflop = 2.0 * batch * sh.m * o * o * double(sh.c) * sh.k * sh.k * 1e-9;
    for (int d = 0; d < sides; ++d) {
      const double f = dl::bench::median(t[d][0]), dx = dl::bench::median(t[d][1]), dw = dl::bench::median(t[d][2]);
      total[d][0] += sh.count * f, total[d][2] += sh.count * dw;
      if (&sh != &kResnet18[0]) total[d][1] += sh.count * dx;  // no dX into the data
      std::printf("| %s (x%d) | %s | %.3f | %.3f | %.3f | %.1f / %.1f / %.1f |\n", sh.name, sh.count, names[d], f, dx,
                  dw, gflop / f * 1e3, gflop / dx * 1e3, gflop / dw * 1e3);
    }
  }
  for (int d = 0; d < sides; ++d)
    std::printf("| all of resnet18's convolutions (conv1 without dX) | %s | %.2f | %.2f | %.2f | total %.2f ms |\n",
                names[d], total[d][0], total[d][1], total[d][2], total[d][0] + total[d][1] + total[d][2]);
  return 0;
}
