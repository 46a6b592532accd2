// Op::assigns_gradient: an op that says it writes every element of an input's gradient
// as that gradient's first writer (BwdCtx::assigns, the executor then skips zeroing it)
// must do so for every sample case of every registered op: the gradient it assigns into
// a buffer of NaN equals the one it adds onto zeros (the same values: == also takes a
// -0 for a +0), with a probe's sink on dY or not, and with a dY of zeros.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <set>
#include <string>

#include "runtime/attrs.h"
#include "runtime/probe_stats.h"
#include "tests/unit/op_harness.h"
#include "tests/unit/parallel_test_util.h"

using dl::rt::Tensor;

namespace {

// dY for the outputs the gradient checker weights (gradcheck_test.cpp): random, or zeros.
std::vector<Tensor> douts(const dl::test::OpRun& run, const dl::rt::OpSample& sample, bool zeros) {
  std::mt19937 gen(11);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  std::vector<Tensor> d(run.outputs.size());
  for (size_t o = 0; o < run.outputs.size(); ++o) {
    const bool wanted = sample.grad_outputs.empty() ? o == 0 : o < sample.grad_outputs.size() && sample.grad_outputs[o];
    if (!wanted || run.outputs[o].dtype() != dl::rt::DType::kFloat32) continue;
    d[o].reset(dl::rt::DType::kFloat32, run.outputs[o].shape());
    for (int64_t k = 0; k < d[o].numel(); ++k) d[o].f()[k] = zeros ? 0.0f : uni(gen);
  }
  return d;
}

// Runs `node` on `in` and compares, for every input it assigns (each alone, then all at
// once), the gradient written into NaN against the one added onto zeros: dY random or
// zeros; no sink on dY, a light one, a full one. Returns whether it assigned any input.
bool check_assigns(const dl::ir::Node& node, const std::vector<Tensor>& in, bool training,
                   const std::vector<bool>& want, const std::vector<bool>& grad_outputs, const std::string& label) {
  bool any = false;
  for (const bool zeros : {false, true})
    for (const int sink : {0, 1, 2}) {  // none, light, full
      const std::string what = label + (zeros ? ", dY zeros" : "") +
                               (sink == 1 ? ", light sink on dY" : sink == 2 ? ", full sink on dY" : "");
      INFO(what);
      dl::test::OpRun run(node, in, training);
      dl::rt::SinkSums sums;
      dl::rt::stats::Bands bands;
      bands.light = sink == 1;
      if (sink > 0) run.dout_stats = &sums;
      dl::rt::OpSample shape;
      shape.grad_outputs = grad_outputs;
      const std::vector<Tensor> d = douts(run, shape, zeros);
      std::vector<const Tensor*> dout;
      for (const Tensor& t : d) dout.push_back(t.numel() > 0 ? &t : nullptr);
      run.rng.seed(99);
      run.forward();
      uint32_t all = 0;
      for (size_t i = 0; i < in.size() && i < 32; ++i)
        if (i < want.size() && want[i] && run.op->assigns_gradient(i)) all |= 1u << i;
      if (all == 0) continue;
      any = true;
      sums.reset(bands);
      const std::vector<Tensor> added = run.backward(dout, want);
      for (uint32_t assign = 1; assign <= all; assign <<= 1) {
        const uint32_t mask = (assign & all) ? assign : 0;
        for (const uint32_t m : {mask, all}) {
          if (m == 0) continue;
          sums.reset(bands);
          const std::vector<Tensor> assigned = run.backward(dout, want, m);
          for (size_t i = 0; i < added.size(); ++i) {
            if (added[i].numel() == 0) continue;
            INFO("input " << i << ((m >> i) & 1u ? " (assigned)" : ""));
            int64_t differ = 0;
            for (int64_t k = 0; k < added[i].numel(); ++k) differ += !(assigned[i].f()[k] == added[i].f()[k]);
            CHECK(differ == 0);
          }
        }
      }
    }
  return any;
}

}  // namespace

TEST_CASE("assigns_gradient: the first writer's gradient equals adding onto zeros, for every op sample") {
  std::set<std::string> assigning;
  for (const dl::rt::OpInfo& info : dl::rt::all_ops()) {
    for (dl::rt::OpSample& sample : info.samples()) {
      bool any = false;
      for (bool b : sample.check_grad) any = any || b;
      if (!any) continue;
      if (check_assigns(sample.node, sample.inputs, sample.training, sample.check_grad, sample.grad_outputs,
                        "op " + std::string(info.type) + ", case '" + sample.label + "'"))
        assigning.insert(info.type);
    }
  }
  // The ops this is for (the gradients a transformer's and a CNN's step spent ~10% of
  // their time zeroing): each has a sample where it assigns.
  for (const char* type : {"Relu", "Transpose", "Reshape", "Flatten", "Identity", "Concat", "Dropout", "Softmax",
                           "LogSoftmax", "LayerNormalization", "BatchNormalization", "Clip", "MatMul", "Gemm",
                           "Add", "Sub", "Mul", "Div", "Conv"}) {
    INFO(type);
    CHECK(assigning.count(type) == 1);
  }
}

// The samples are small (a few values): these run the ops' vector loops, their light
// sinks' fused loops, and the paths only larger shapes take (Conv's per-image 1x1
// products, grouped 1x1, batched images in parts, depthwise; Transpose's runs; MatMul
// and Add broadcasting).
TEST_CASE("assigns_gradient: vector loops, fused sinks and the large-shape paths") {
  using dl::rt::attr_i;
  using dl::rt::attr_ints;
  using dl::rt::sample_node;
  auto t = [](std::vector<int64_t> shape, unsigned seed) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return Tensor::floats(shape, dl::test::random_values(n, seed));
  };
  struct Case {
    std::string label;
    dl::ir::Node node;
    std::vector<Tensor> in;
    bool training = false;
  };
  const std::vector<Case> cases = {
      {"Relu", sample_node("Relu", 1, 1, {}, 14), {t({3, 1000}, 1)}},
      {"Clip 0..6", sample_node("Clip", 1, 1, {{"min", dl::rt::attr_f(0.0f)}, {"max", dl::rt::attr_f(0.5f)}}, 6),
       {t({3, 1000}, 2)}},
      {"Transpose runs", sample_node("Transpose", 1, 1, {{"perm", attr_ints({0, 2, 1, 3})}}, 13), {t({3, 40, 4, 32}, 3)}},
      {"Conv 1x1 per image", sample_node("Conv", 3, 1, {}, 11), {t({1, 4, 10, 10}, 4), t({6, 4, 1, 1}, 5), t({6}, 6)}},
      {"Conv 1x1 grouped", sample_node("Conv", 2, 1, {{"group", attr_i(2)}}, 11), {t({2, 4, 10, 10}, 7), t({4, 2, 1, 1}, 8)}},
      {"Conv 3x3 batched", sample_node("Conv", 3, 1, {{"pads", attr_ints({1, 1, 1, 1})}}, 11),
       {t({16, 8, 4, 4}, 9), t({40, 8, 3, 3}, 10), t({40}, 11)}},
      {"Conv 3x3 on 1x1 maps (live taps)", sample_node("Conv", 2, 1, {{"pads", attr_ints({1, 1, 1, 1})}}, 11),
       {t({16, 8, 1, 1}, 12), t({40, 8, 3, 3}, 13)}},
      {"Conv depthwise", sample_node("Conv", 2, 1, {{"group", attr_i(4)}, {"pads", attr_ints({1, 1, 1, 1})}}, 11),
       {t({2, 4, 8, 8}, 14), t({4, 1, 3, 3}, 15)}},
      {"MatMul broadcast B", sample_node("MatMul", 2, 1, {}, 13), {t({2, 3, 4, 5}, 16), t({5, 6}, 17)}},
      {"MatMul broadcast both", sample_node("MatMul", 2, 1, {}, 13), {t({2, 1, 4, 5}, 18), t({3, 5, 6}, 19)}},
      {"Add bias", sample_node("Add", 2, 1, {}, 14), {t({3, 1000}, 20), t({1000}, 21)}},
      {"Mul", sample_node("Mul", 2, 1, {}, 14), {t({3, 1000}, 22), t({3, 1000}, 23)}},
      {"Softmax", sample_node("Softmax", 1, 1, {}, 13), {t({40, 300}, 24)}},
      {"LayerNormalization", sample_node("LayerNormalization", 3, 1, {{"axis", attr_i(-1)}}, 17),
       {t({3, 7, 70}, 25), t({70}, 26), t({70}, 27)}},
      {"Gemm", sample_node("Gemm", 3, 1, {{"transB", attr_i(1)}}, 13), {t({8, 50}, 28), t({30, 50}, 29), t({30}, 30)}},
      {"Dropout", sample_node("Dropout", 1, 1, {{"ratio", dl::rt::attr_f(0.3f)}}, 7), {t({3, 1000}, 31)}, true},
  };
  for (const Case& c : cases) {
    std::vector<bool> want;
    for (size_t i = 0; i < c.in.size(); ++i) want.push_back(c.node.op_type != "Dropout" || i == 0);
    CHECK_MESSAGE(check_assigns(c.node, c.in, c.training, want, {}, c.label), c.label);
  }
}
