// RnnOp: attributes, shapes, and the forward and backward time loops shared by the
// recurrent ops (runtime/ops/rnn_common.h).
#include "runtime/ops/rnn_common.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <optional>

#include "runtime/ops/gemm_kernel.h"
#include "runtime/ops/shape_util.h"

namespace dl::rt::rnn {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

void check_float(const Tensor* t, const char* name, const std::string& where) {
  if (t && t->dtype() != DType::kFloat32) throw ShapeError(where + ": input '" + name + "' must be float32");
}

void check_shape(const Tensor* t, const char* name, const Shape& want, const std::string& where) {
  if (t && t->shape() != want)
    throw ShapeError(where + ": input '" + name + "' " + shape_str(t->shape()) + " must have shape " +
                     shape_str(want));
}

}  // namespace

Tensor ramp(Shape shape, float scale, float shift) {
  const int64_t n = shape_numel(shape);
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) v[static_cast<size_t>(k)] = scale * static_cast<float>((k * 5) % 9) + shift;
  return Tensor::floats(std::move(shape), std::move(v));
}

const char* act_name(Act a) {
  switch (a) {
    case Act::kSigmoid: return "Sigmoid";
    case Act::kTanh: return "Tanh";
    case Act::kRelu: return "Relu";
  }
  return "?";
}

RnnOp::RnnOp(const ir::Node& node, Attrs& a, int64_t gates, size_t inputs, size_t outputs,
             std::vector<std::string> default_acts, std::vector<GateName> gate_names)
    : Op(node), gates_(gates), gate_names_(std::move(gate_names)), version_(node.since_version),
      max_inputs_(inputs), max_outputs_(outputs) {
  const std::string direction = a.s("direction", "forward");
  direction_ = direction;
  if (direction == "bidirectional") dirs_ = 2, forward_only_ = false;
  else if (direction == "reverse") reverse_only_ = true, forward_only_ = false;
  else if (direction != "forward") a.fail("direction", "'" + direction + "' must be forward, reverse or bidirectional");
  hidden_attr_ = a.i("hidden_size", 0);
  if (a.has("hidden_size") && hidden_attr_ <= 0) a.fail("hidden_size", "must be positive");
  if (version_ == 0 || version_ >= 14) layout_ = a.i("layout", 0);
  if (layout_ != 0 && layout_ != 1) a.fail("layout", "must be 0 or 1, got " + std::to_string(layout_));
  float clip = INFINITY;
  if (a.has("clip")) {
    clip = a.f("clip", 0.0f);
    if (!(clip > 0.0f)) a.fail("clip", "must be positive");
  }
  const size_t n = default_acts.size();
  std::vector<std::string> names = a.strings("activations", {});
  if (names.empty())
    for (int d = 0; d < dirs_; ++d) names.insert(names.end(), default_acts.begin(), default_acts.end());
  if (names.size() == n && dirs_ == 2) names.insert(names.end(), names.begin(), names.end());
  if (names.size() != n * static_cast<size_t>(dirs_))
    a.fail("activations", "has " + std::to_string(names.size()) + " entries; " + direction + " " + node.op_type +
                              " takes " + std::to_string(n * static_cast<size_t>(dirs_)));
  for (const std::string& name : names) {
    Gate g;
    const std::string l = lower(name);
    if (l == "sigmoid") g.act = Act::kSigmoid;
    else if (l == "tanh") g.act = Act::kTanh;
    else if (l == "relu") g.act = Act::kRelu;
    else a.fail("activations", "'" + name + "' is not supported (supported: Sigmoid, Tanh, Relu)");
    g.clip = clip;
    g.lo = act_apply(g.act, -clip);
    g.hi = act_apply(g.act, clip);
    acts_.push_back(g);
  }
  // Only activations that take no alpha/beta are supported, so any value is a mistake.
  for (const char* k : {"activation_alpha", "activation_beta"})
    if (!a.floats(k, {}).empty()) a.fail(k, "is not supported (Sigmoid, Tanh and Relu take no parameters)");
}

OpTraits RnnOp::traits() const {
  OpTraits t;
  t.role = OpTraits::Role::kParameterized;  // W, R, B are the layer's weights
  t.recurrent = true;
  for (size_t k = size_t(state_act()); k < acts_.size(); k += acts_.size() / size_t(dirs_))
    t.bounded_state = t.bounded_state && rnn::saturates(acts_[k].act);
  return t;
}

std::string RnnOp::describe() const {
  const size_t per_dir = acts_.size() / static_cast<size_t>(dirs_);
  // Gates sharing an activation are listed together: "i, o, f Sigmoid, c Tanh".
  auto acts_of = [&](int d) {
    std::string s;
    for (size_t k = 0; k < gate_names_.size(); ++k) {
      const GateName& g = gate_names_[k];
      const Gate& act = acts_[static_cast<size_t>(d) * per_dir + g.act];
      const bool last_of_run = k + 1 == gate_names_.size() || gate_names_[k + 1].act != g.act;
      s += g.name;
      s += last_of_run ? std::string(" ") + act_name(act.act) + (k + 1 < gate_names_.size() ? ", " : "") : ", ";
    }
    return s;
  };
  std::string s = "hidden " + std::to_string(hidden_ ? hidden_ : hidden_attr_) + ", " + direction_;
  if (layout_ == 1) s += ", batch first (layout 1)";
  s += "; gates " + acts_of(0);
  if (dirs_ == 2 && acts_of(1) != acts_of(0)) s += "; reverse gates " + acts_of(1);
  if (!acts_.empty() && std::isfinite(acts_[0].clip)) {
    char clip[32];
    std::snprintf(clip, sizeof clip, "; clip %g", double(acts_[0].clip));
    s += clip;
  }
  return s;
}

void RnnOp::infer(InferCtx& ctx) {
  check_inputs(ctx, 3, max_inputs_, 3, where());
  if (ctx.out.size() > max_outputs_)
    throw ShapeError(where() + ": has " + std::to_string(ctx.out.size()) + " outputs, at most " +
                     std::to_string(max_outputs_) + " are defined");
  static const char* kNames[] = {"X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"};
  for (size_t i = 0; i < ctx.in.size(); ++i)
    if (i != 4) check_float(ctx.in[i], kNames[i], where());
  const Tensor& x = *ctx.in[0];
  const Tensor& r = *ctx.in[2];
  if (x.rank() != 3 || ctx.in[1]->rank() != 3 || r.rank() != 3)
    throw ShapeError(where() + ": X " + shape_str(x.shape()) + ", W " + shape_str(ctx.in[1]->shape()) + " and R " +
                     shape_str(r.shape()) + " must be 3-D");
  seq_ = x.dim(layout_ == 0 ? 0 : 1);
  batch_ = x.dim(layout_ == 0 ? 1 : 0);
  input_ = x.dim(2);
  hidden_ = r.dim(2);
  if (hidden_attr_ > 0 && hidden_attr_ != hidden_)
    throw ShapeError(where() + ": hidden_size " + std::to_string(hidden_attr_) + " disagrees with R " +
                     shape_str(r.shape()));
  const int64_t d = dirs_;
  check_shape(ctx.in[1], "W", {d, gh(), input_}, where());
  check_shape(ctx.in[2], "R", {d, gh(), hidden_}, where());
  if (ctx.in.size() > 3) check_shape(ctx.in[3], "B", {d, 2 * gh()}, where());
  if (ctx.in.size() > 4 && ctx.in[4]) {
    if (ctx.in[4]->dtype() != DType::kInt64) throw ShapeError(where() + ": input 'sequence_lens' must be an integer");
    check_shape(ctx.in[4], "sequence_lens", {batch_}, where());
  }
  const Shape state = layout_ == 0 ? Shape{d, batch_, hidden_} : Shape{batch_, d, hidden_};
  if (ctx.in.size() > 5) check_shape(ctx.in[5], "initial_h", state, where());
  check_cell_inputs(ctx);
  if (ctx.out.size() > 0 && ctx.out[0])
    ctx.out[0]->plan(DType::kFloat32, layout_ == 0 ? Shape{seq_, d, batch_, hidden_} : Shape{batch_, seq_, d, hidden_});
  if (ctx.out.size() > 1 && ctx.out[1]) ctx.out[1]->plan(DType::kFloat32, state);
  const int64_t steps = d * seq_ * batch_;
  int64_t floats = 3 * steps * gh() + d * (seq_ + 1) * batch_ * hidden_ + 3 * batch_ * hidden_ + gh();
  plan_cell(ctx, floats);
  if (floats > ctx.max_bytes / static_cast<int64_t>(sizeof(float)))
    throw ResourceError(where() + ": the " + std::to_string(seq_) + " time steps' gates and states (" +
                        std::to_string(floats * 4 / (1 << 20)) + " MiB) exceed the memory budget; raise it with --max-memory");
  ctx.charge(floats * static_cast<int64_t>(sizeof(float)), "its time steps' gates and states");
  xw_.assign(static_cast<size_t>(steps * gh()), 0.0f);
  gates_buf_.assign(static_cast<size_t>(steps * gh()), 0.0f);
  dgates_.assign(static_cast<size_t>(steps * gh()), 0.0f);
  hs_.assign(static_cast<size_t>(d * (seq_ + 1) * batch_ * hidden_), 0.0f);
  dh_.assign(static_cast<size_t>(batch_ * hidden_), 0.0f);
  dh_prev_.assign(dh_.size(), 0.0f);
  scratch_.assign(dh_.size(), 0.0f);
  bias_.assign(static_cast<size_t>(gh()), 0.0f);
  lens_.assign(static_cast<size_t>(batch_), seq_);
  if (ctx.in.size() > 4 && ctx.in[4] && ctx.known.size() > 4 && ctx.known[4]) read_lengths(ctx.in[4]);
}

void RnnOp::read_lengths(const Tensor* seq_lens) {
  lens_.assign(static_cast<size_t>(batch_), seq_);
  if (!seq_lens) return;
  for (int64_t b = 0; b < batch_; ++b) {
    const int64_t l = seq_lens->i()[b];
    if (l < 0 || l > seq_)
      throw ShapeError(where() + ": sequence_lens[" + std::to_string(b) + "] = " + std::to_string(l) +
                       " is outside [0, " + std::to_string(seq_) + "]");
    lens_[static_cast<size_t>(b)] = l;
  }
}

RnnOp::Dir RnnOp::dir_view(const std::vector<const Tensor*>& in, int d) {
  Dir v;
  v.d = d;
  v.reverse = d == 1 || reverse_only_;
  v.w = in[1]->f() + d * gh() * input_;
  v.r = in[2]->f() + d * gh() * hidden_;
  v.b = in.size() > 3 && in[3] ? in[3]->f() + d * 2 * gh() : nullptr;
  const int64_t steps = seq_ * batch_ * gh();
  v.xw = xw_.data() + d * steps;
  v.gates = gates_buf_.data() + d * steps;
  v.dgates = dgates_.data() + d * steps;
  v.hs = hs_.data() + d * (seq_ + 1) * batch_ * hidden_;
  v.acts = acts_.data() + static_cast<size_t>(d) * (acts_.size() / static_cast<size_t>(dirs_));
  return v;
}

void RnnOp::forward(FwdCtx& ctx) {
  read_lengths(ctx.in.size() > 4 ? ctx.in[4] : nullptr);
  const float* x = ctx.in[0]->f();
  const Tensor* h0 = ctx.in.size() > 5 ? ctx.in[5] : nullptr;
  Tensor* y = ctx.out.size() > 0 ? ctx.out[0] : nullptr;
  Tensor* yh = ctx.out.size() > 1 ? ctx.out[1] : nullptr;
  if (y) y->zero();  // rows past their sequence length stay zero
  const int64_t rows = seq_ * batch_, n = gh(), h = hidden_;
  for (int d = 0; d < dirs_; ++d) {
    const Dir dir = dir_view(ctx.in, d);
    gemm(rows, n, input_, 1.0f, {x, input_, false}, {dir.w, input_, true}, dir.xw, n, false);
    if (dir.b) {
      std::vector<float>& bias = bias_;  // Wb + the Rb that fold, one row
      for (int64_t j = 0; j < n; ++j) bias[j] = dir.b[j] + (j < folded_bias_gates() * h ? dir.b[n + j] : 0.0f);
      for (int64_t k = 0; k < rows; ++k)
        for (int64_t j = 0; j < n; ++j) dir.xw[k * n + j] += bias[j];
    }
    for (int64_t b = 0; b < batch_; ++b)
      for (int64_t j = 0; j < h; ++j) dir.hs[b * h + j] = h0 ? h0->f()[state_at(d, b) + j] : 0.0f;
    begin_forward(ctx, dir);
    std::optional<InnerPass> inner;
    if (ctx.inner) inner.emplace(inner_pass(dir, float(ctx.inner->margin)));
    for (int64_t s = 0; s < seq_; ++s) {
      step_forward(dir, s);
      if (inner) reduce_inner_step(dir, s, *inner);
      if (!y) continue;
      const float* hn = dir.hs + (s + 1) * batch_ * h;
      for (int64_t b = 0; b < batch_; ++b) {
        const int64_t t = time_of(dir, s, b);
        if (t < 0) continue;
        const int64_t at = layout_ == 0 ? ((t * dirs_ + d) * batch_ + b) * h : ((b * seq_ + t) * dirs_ + d) * h;
        std::copy(hn + b * h, hn + (b + 1) * h, y->f() + at);
      }
    }
    if (yh) {
      const float* last = dir.hs + seq_ * batch_ * h;
      for (int64_t b = 0; b < batch_; ++b) std::copy(last + b * h, last + (b + 1) * h, yh->f() + state_at(d, b));
    }
    end_forward(ctx, dir);
    if (inner) finish_inner(dir, *inner, *ctx.inner);
  }
}

void RnnOp::grad_recurrent(const Dir& dir, float* dr) {
  gemm(gh(), hidden_, seq_ * batch_, 1.0f, {dir.dgates, gh(), true}, {dir.hs, hidden_, false}, dr, hidden_, true);
}

void RnnOp::backward(BwdCtx& ctx) {
  const float* dy = ctx.dout.size() > 0 && ctx.dout[0] ? ctx.dout[0]->f() : nullptr;
  const float* dyh = ctx.dout.size() > 1 && ctx.dout[1] ? ctx.dout[1]->f() : nullptr;
  auto din = [&](size_t i) { return i < ctx.din.size() && ctx.din[i] ? ctx.din[i]->f() : nullptr; };
  const int64_t rows = seq_ * batch_, n = gh(), h = hidden_;
  for (int d = 0; d < dirs_; ++d) {
    const Dir dir = dir_view(ctx.in, d);
    for (int64_t b = 0; b < batch_; ++b)
      for (int64_t j = 0; j < h; ++j) dh_[b * h + j] = dyh ? dyh[state_at(d, b) + j] : 0.0f;
    std::fill(dir.xw, dir.xw + rows * n, 0.0f);  // rows no step reads keep a zero gradient
    begin_backward(ctx, dir);
    for (int64_t s = seq_ - 1; s >= 0; --s) {
      if (dy)
        for (int64_t b = 0; b < batch_; ++b) {
          const int64_t t = time_of(dir, s, b);
          if (t < 0) continue;
          const float* g = dy + (layout_ == 0 ? ((t * dirs_ + d) * batch_ + b) * h : ((b * seq_ + t) * dirs_ + d) * h);
          for (int64_t j = 0; j < h; ++j) dh_[b * h + j] += g[j];
        }
      step_backward(dir, s, dh_.data(), dh_prev_.data());
      dh_.swap(dh_prev_);
    }
    if (float* dh0 = din(5))
      for (int64_t b = 0; b < batch_; ++b)
        for (int64_t j = 0; j < h; ++j) dh0[state_at(d, b) + j] += dh_[b * h + j];
    end_backward(ctx, dir);
    if (float* dx = din(0)) gemm(rows, input_, n, 1.0f, {dir.xw, n, false}, {dir.w, input_, false}, dx, input_, true);
    if (float* dw = din(1))
      gemm(n, input_, rows, 1.0f, {dir.xw, n, true}, {ctx.in[0]->f(), input_, false}, dw + d * n * input_, input_,
           true);
    if (float* dr = din(2)) grad_recurrent(dir, dr + d * n * h);
    if (float* db = din(3)) {
      float* dwb = db + d * 2 * n;
      for (int64_t k = 0; k < rows; ++k)
        for (int64_t j = 0; j < n; ++j) dwb[j] += dir.xw[k * n + j];
      for (int64_t k = 0; k < rows; ++k)
        for (int64_t j = 0; j < n; ++j) dwb[n + j] += dir.dgates[k * n + j];
    }
  }
}

}  // namespace dl::rt::rnn
