// One op outside a graph, for the kernel benchmarks (micro_bench.cpp, conv_bench.cpp):
// its inputs, outputs, gradients and contexts, inferred and allocated once.
#pragma once

#include <memory>
#include <random>
#include <vector>

#include "runtime/registry.h"
#include "runtime/tensor.h"

namespace dl::bench {

inline rt::Tensor random_tensor(rt::Shape shape, float lo, float hi, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(static_cast<size_t>(rt::shape_numel(shape)));
  for (float& x : v) x = u(rng);
  return rt::Tensor::floats(std::move(shape), std::move(v));
}

// One op outside a graph, with every input differentiated except input 0 when
// `input_grad` is false (the first layer of a network).
struct OpBench {
  std::unique_ptr<rt::Op> op;
  std::vector<rt::Tensor> in, out, din, dout;
  rt::FwdCtx fwd;
  rt::BwdCtx bwd;
  std::mt19937_64 rng{1};

  OpBench(const ir::Node& node, std::vector<rt::Tensor> inputs, bool input_grad)
      : op(rt::make_op(node)), in(std::move(inputs)), out(node.outputs.size()) {
    rt::InferCtx ic;
    ic.training = true;
    for (auto& t : in) ic.in.push_back(&t);
    ic.known.assign(in.size(), false);
    for (auto& t : out) ic.out.push_back(&t);
    ic.out_known.assign(out.size(), false);
    op->infer(ic);
    for (auto& t : out)
      if (!t.allocated()) t.allocate();
    din.resize(in.size());
    for (size_t k = 0; k < in.size(); ++k) din[k].reset(rt::DType::kFloat32, in[k].shape());
    for (auto& t : out) dout.push_back(random_tensor(t.shape(), -1, 1, 7));
    fwd.training = bwd.training = true;
    fwd.rng = &rng;
    for (auto& t : in) fwd.in.push_back(&t), bwd.in.push_back(&t);
    for (auto& t : out) fwd.out.push_back(&t), bwd.out.push_back(&t);
    for (auto& t : dout) bwd.dout.push_back(&t);
    for (size_t k = 0; k < in.size(); ++k) bwd.din.push_back(k == 0 && !input_grad ? nullptr : &din[k]);
  }
};

}  // namespace dl::bench
