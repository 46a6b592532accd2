// The generic gradient checker: for every registered op and each of its sample cases,
// compares backward() with central finite differences of L = sum_k w_k * y_k (fixed
// random weights w per output element). New ops are enrolled by registering them.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <string>

#include "converter/errors.h"
#include "tests/unit/op_harness.h"

using dl::rt::Tensor;

namespace {

// The op runs in float32, so the step and tolerances are sized for float32 rounding.
double weighted_sum(dl::test::OpRun& run, const std::vector<Tensor>& w) {
  run.rng.seed(99);  // stochastic ops (Dropout) see the same mask every evaluation
  run.forward();
  double s = 0;
  for (size_t o = 0; o < run.outputs.size(); ++o) {
    if (w[o].numel() == 0) continue;
    for (int64_t k = 0; k < run.outputs[o].numel(); ++k) s += double(w[o].f()[k]) * run.outputs[o].f()[k];
  }
  return s;
}

}  // namespace

TEST_CASE("gradient checker: every registered op, every sample case") {
  int checked = 0;
  for (const dl::rt::OpInfo& info : dl::rt::all_ops()) {
    for (dl::rt::OpSample& sample : info.samples()) {
      bool any = false;
      for (bool b : sample.check_grad) any = any || b;
      if (!any) continue;
      INFO("op " << std::string(info.type) << ", case '" << sample.label << "'");
      dl::test::OpRun run(sample.node, sample.inputs, sample.training);
      std::mt19937 gen(7);
      std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
      std::vector<Tensor> w(run.outputs.size());
      std::vector<const Tensor*> dout;
      for (size_t o = 0; o < run.outputs.size(); ++o) {
        // Only the first output carries a gradient unless the sample says otherwise: the
        // extra outputs of most ops (BN running statistics, the Dropout mask) are not
        // differentiable, those of Split are.
        const bool wanted = sample.grad_outputs.empty() ? o == 0 : o < sample.grad_outputs.size() && sample.grad_outputs[o];
        if (wanted && run.outputs[o].dtype() == dl::rt::DType::kFloat32) {
          w[o].reset(dl::rt::DType::kFloat32, run.outputs[o].shape());
          for (int64_t k = 0; k < w[o].numel(); ++k) w[o].f()[k] = uni(gen);
          dout.push_back(&w[o]);
        } else {
          dout.push_back(nullptr);
        }
      }
      run.rng.seed(99);
      run.forward();
      std::vector<Tensor> analytic = run.backward(dout, sample.check_grad);
      for (size_t i = 0; i < sample.inputs.size(); ++i) {
        if (i >= sample.check_grad.size() || !sample.check_grad[i]) continue;
        Tensor& x = run.inputs[i];
        for (int64_t k = 0; k < x.numel(); ++k) {
          const float orig = x.f()[k];
          const float h = 1e-2f * std::max(1.0f, std::fabs(orig));
          x.f()[k] = orig + h;
          double up = weighted_sum(run, w);
          x.f()[k] = orig - h;
          double down = weighted_sum(run, w);
          x.f()[k] = orig;
          double numeric = (up - down) / (2.0 * double(h));
          double got = analytic[i].f()[k];
          INFO("input " << i << " element " << k << ": analytic " << got << " numeric " << numeric);
          CHECK(std::fabs(got - numeric) <= 2e-2 * std::max(1.0, std::fabs(numeric)));
        }
      }
      ++checked;
    }
  }
  CHECK(checked >= 1);
}

// An op whose backward runs (does not throw "backward is not defined") on one of its
// samples must have a gradient case, or its gradient is never checked.
TEST_CASE("gradient checker: every op with a backward has at least one gradient case") {
  for (const dl::rt::OpInfo& info : dl::rt::all_ops()) {
    bool has_backward = false, has_case = false;
    for (dl::rt::OpSample& sample : info.samples()) {
      for (bool b : sample.check_grad) has_case = has_case || b;
      dl::test::OpRun run(sample.node, sample.inputs, sample.training);
      if (run.outputs.empty() || run.outputs[0].dtype() != dl::rt::DType::kFloat32) continue;
      std::vector<bool> want;
      for (size_t i = 0; i < run.inputs.size(); ++i)
        want.push_back(run.inputs[i].dtype() == dl::rt::DType::kFloat32 && run.op->differentiable_input(i));
      bool any = false;
      for (bool w : want) any = any || w;
      if (!any) continue;
      run.forward();
      Tensor dy(dl::rt::DType::kFloat32, run.outputs[0].shape());
      std::vector<const Tensor*> dout(run.outputs.size(), nullptr);
      dout[0] = &dy;
      try {
        run.backward(dout, want);
        has_backward = true;
      } catch (const dl::InternalError&) {
      }
    }
    INFO("op " << std::string(info.type));
    CHECK(has_case == has_backward);
  }
}

// The assertion above only sees ops that have samples: an op without any would pass it
// with a backward nobody checks. Every registered op brings at least one sample case.
TEST_CASE("gradient checker: every registered op has sample cases") {
  for (const dl::rt::OpInfo& info : dl::rt::all_ops()) {
    INFO("op " << std::string(info.type));
    CHECK(!info.samples().empty());
  }
}
