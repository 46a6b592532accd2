// Which initializers are parameters, decided by the ops that read them (Op::param_role),
// never by op names: weights, embeddings, biases, scales (trainable) and running
// statistics (model state). Also finds tied parameters: one initializer that several
// nodes read as a parameter, directly or through views (Identity, Reshape, Transpose:
// ops whose traits say kShape), as eval-mode PyTorch exports make of identical
// initializers and language models make of a shared embedding.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "converter/ir.h"
#include "runtime/op.h"

namespace dl::rt {

struct ParamUse {
  std::string node;     // ONNX node name
  std::string op_type;
  size_t input = 0;     // which input of the node reads it
  ParamRole role;
};

struct ModelParam {
  std::string name;  // the initializer
  Shape shape;
  ParamRole role;    // the first trainable use's (else the first use's)
  std::vector<ParamUse> uses;        // graph order
  std::vector<std::string> aliases;  // values that are views of it
  bool trainable() const { return role.trainable(); }
  // Several nodes read it as a parameter: they train one tensor.
  bool tied() const { return uses.size() > 1; }
};

// Every float initializer some node reads as a parameter or state, by name. A float
// initializer that an element-wise linear op (Add, Sub: traits) adds to the output of a
// node with a trainable parameter is that node's bias (MatMul + Add, Conv + Add).
// `ops` holds one op per node of `g`, in order.
std::map<std::string, ModelParam> model_params(const ir::Graph& g, const std::vector<std::unique_ptr<Op>>& ops);
// Makes the ops itself; throws ModelError for a node the runtime cannot run.
std::map<std::string, ModelParam> model_params(const ir::Model& model);

// A mask: a float initializer holding -inf and no +inf (an attention mask added to the
// scores, an action mask added to the logits). Added right after a trainable node it is
// still no bias (no gradient step makes -inf finite): it stays a constant.
bool is_mask(const ir::TensorData& t);

// Float initializers of more than one element that an element-wise op (traits) reads
// through a differentiable input while no op reads them as a parameter or statistic
// (an affine step written as Mul/Add with no parameterised op before it): they are
// trained as constants, and the user should be told. Sorted by name.
std::vector<std::string> constant_initializers(const ir::Graph& g, const std::vector<std::unique_ptr<Op>>& ops,
                                               const std::map<std::string, ModelParam>& params);

// "'w' (weight) is read by 'a' (Gemm) and 'b' (Gemm)": one line per tied parameter.
std::vector<std::string> tied_param_notes(const std::map<std::string, ModelParam>& params);

// Re-initialises float initializers by their roles: weights and embeddings drawn from
// `scheme` ("glorot_uniform": U(+-sqrt(6 / (fan_in + fan_out))), "he_uniform":
// U(+-sqrt(6 / fan_in)), Keras' definitions), biases and running means set to 0, scales
// and running variances to 1. Seeded std::mt19937_64 per parameter (seed and name), so
// the same seed gives the same values on every platform and in any order of the names.
// Returns what changed ("glorot_uniform: W1 [3, 2] U(+-1.09545), b1 zeros"). Throws
// ConfigError for an unknown scheme or no names, ModelError for an unknown or non-float
// initializer, a scalar, or one no node reads as a parameter.
std::string reinitialize_params(ir::Model& model, const std::vector<std::string>& param_names,
                                const std::string& scheme, uint64_t seed);

}  // namespace dl::rt
