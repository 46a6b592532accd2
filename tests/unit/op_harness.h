// Runs one op outside a graph: plan, allocate, forward, backward. Used by the generic
// gradient checker and the op unit tests.
#pragma once

#include <algorithm>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "runtime/registry.h"

namespace dl::test {

struct OpRun {
  std::unique_ptr<rt::Op> op;
  std::vector<rt::Tensor> inputs;
  std::vector<rt::Tensor> outputs;
  std::mt19937_64 rng{1234};
  bool training = false;
  rt::ValueSink* out_stats = nullptr;   // handed to the op as FwdCtx::out_stats
  rt::ValueSink* dout_stats = nullptr;  // and BwdCtx::dout_stats
  rt::ValueSink* din_stats = nullptr;   // and BwdCtx::din_stats
  rt::ValueSink* in_stats = nullptr;    // and FwdCtx::in_stats
  rt::ValueSink* feature_stats = nullptr;  // and FwdCtx::feature_stats
  rt::InnerStats* inner = nullptr;      // and FwdCtx::inner
  float din_fill = 0.0f;  // what an input gradient the op adds to (not assigns) holds before

  OpRun(const ir::Node& node, std::vector<rt::Tensor> in, bool train = false)
      : OpRun(rt::make_op(node), std::move(in), node.outputs.size(), train) {}
  // An op made otherwise (the planner's fused ops, runtime/ops/fused.h).
  OpRun(std::unique_ptr<rt::Op> made, std::vector<rt::Tensor> in, size_t outs, bool train = false)
      : op(std::move(made)), inputs(std::move(in)), outputs(outs), training(train) {
    rt::InferCtx ic;
    ic.training = training;
    for (auto& t : inputs) ic.in.push_back(&t);
    ic.known.assign(inputs.size(), true);
    for (auto& t : outputs) ic.out.push_back(&t);
    ic.out_known.assign(outputs.size(), false);
    op->infer(ic);
    for (auto& t : outputs)
      if (!t.allocated()) t.allocate();
  }

  void forward() {
    rt::FwdCtx fc;
    fc.training = training;
    fc.rng = &rng;
    fc.out_stats = out_stats;
    fc.in_stats = in_stats;
    fc.feature_stats = feature_stats;
    fc.inner = inner;
    for (auto& t : inputs) fc.in.push_back(&t);
    for (auto& t : outputs) fc.out.push_back(&t);
    op->forward(fc);
  }

  // dout per output (nullptr = no gradient); returns gradients of the inputs in `want`.
  // `assign`: BwdCtx::assign (those inputs' gradients start as NaN instead of zeros: the
  // op must write every element).
  std::vector<rt::Tensor> backward(const std::vector<const rt::Tensor*>& dout, const std::vector<bool>& want,
                                   uint32_t assign = 0) {
    std::vector<rt::Tensor> din(inputs.size());
    rt::BwdCtx bc;
    bc.training = training;
    bc.assign = assign;
    for (auto& t : inputs) bc.in.push_back(&t);
    for (auto& t : outputs) bc.out.push_back(&t);
    bc.dout = dout;
    bc.dout_stats = dout_stats;
    bc.din_stats = din_stats;
    for (size_t k = 0; k < inputs.size(); ++k) {
      if (k < want.size() && want[k]) {
        din[k].reset(rt::DType::kFloat32, inputs[k].shape());
        if (bc.assigns(k)) std::fill(din[k].f(), din[k].f() + din[k].numel(), std::numeric_limits<float>::quiet_NaN());
        else std::fill(din[k].f(), din[k].f() + din[k].numel(), din_fill);
        bc.din.push_back(&din[k]);
      } else {
        bc.din.push_back(nullptr);
      }
    }
    op->backward(bc);
    return din;
  }
};

}  // namespace dl::test
