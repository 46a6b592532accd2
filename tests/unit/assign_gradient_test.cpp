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

#include "runtime/probe_stats.h"
#include "tests/unit/op_harness.h"

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

}  // namespace

TEST_CASE("assigns_gradient: the first writer's gradient equals adding onto zeros, for every op sample") {
  std::set<std::string> assigning;
  for (const dl::rt::OpInfo& info : dl::rt::all_ops()) {
    for (dl::rt::OpSample& sample : info.samples()) {
      bool any = false;
      for (bool b : sample.check_grad) any = any || b;
      if (!any) continue;
      for (const bool zeros : {false, true})
        for (const bool sink : {false, true}) {
          INFO("op " << std::string(info.type) << ", case '" << sample.label << "'" << (zeros ? ", dY zeros" : "")
                     << (sink ? ", with a sink on dY" : ""));
          dl::test::OpRun run(sample.node, sample.inputs, sample.training);
          dl::rt::SinkSums sums;
          sums.reset({});
          if (sink) run.dout_stats = &sums;
          const std::vector<Tensor> d = douts(run, sample, zeros);
          std::vector<const Tensor*> dout;
          for (const Tensor& t : d) dout.push_back(t.numel() > 0 ? &t : nullptr);
          run.rng.seed(99);
          run.forward();
          uint32_t assign = 0;
          for (size_t i = 0; i < sample.inputs.size() && i < 32; ++i)
            if (i < sample.check_grad.size() && sample.check_grad[i] && run.op->assigns_gradient(i)) assign |= 1u << i;
          if (assign == 0) continue;
          assigning.insert(info.type);
          const std::vector<Tensor> added = run.backward(dout, sample.check_grad);
          sums.reset({});
          const std::vector<Tensor> assigned = run.backward(dout, sample.check_grad, assign);
          for (size_t i = 0; i < added.size(); ++i) {
            if (added[i].numel() == 0) continue;
            INFO("input " << i << ((assign >> i) & 1u ? " (assigned)" : ""));
            int64_t differ = 0;
            for (int64_t k = 0; k < added[i].numel(); ++k) differ += !(assigned[i].f()[k] == added[i].f()[k]);
            CHECK(differ == 0);
          }
        }
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
