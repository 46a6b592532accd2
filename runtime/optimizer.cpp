// The optimizer driver shared by every rule: state allocation, Keras' learning-rate decay
// and gradient clipping, and the factory with its option checks. The rules are in
// optimizer_rules.cpp.
#include "runtime/optimizer.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "converter/errors.h"
#include "runtime/optimizer_impl.h"
#include "runtime/param_chunk.h"
#include "runtime/parallel.h"

namespace dl::rt {

Optimizer::Optimizer(const OptimizerConfig& config, double default_lr, int slots)
    : config_(config), name_(config.name), lr_(config.learning_rate.value_or(default_lr)), slots_(slots) {
  if (slots_ > 8) throw InternalError("optimizer " + name_ + ": more than 8 state slots");
  for (const std::string& name : frozen_names(config.frozen)) frozen_.insert(name);
}

std::vector<std::string> frozen_names(const std::string& list) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= list.size()) {
    const size_t end = std::min(list.find(',', at), list.size());
    std::string name = list.substr(at, end - at);
    const size_t b = name.find_first_not_of(" \t"), e = name.find_last_not_of(" \t");
    if (b != std::string::npos) out.push_back(name.substr(b, e - b + 1));
    at = end + 1;
  }
  return out;
}

Optimizer::~Optimizer() = default;

double Optimizer::current_learning_rate() const {
  if (!decays_lr() || config_.decay <= 0) return lr_;
  return lr_ / (1.0 + config_.decay * double(iterations_));
}

int64_t Optimizer::state_bytes(const std::vector<Param>& params) const {
  int64_t total = 0, largest = 0;
  for (const Param& p : params) {
    total += p.value->numel();
    largest = std::max(largest, p.value->numel());
  }
  const int64_t scratch = config_.clipnorm || config_.clipvalue ? largest : 0;
  return (total * slots_ + scratch + kMaxElementwiseParts * std::min<int64_t>(largest, int64_t(kChunk))) *
         int64_t(sizeof(float));
}

void Optimizer::allocate(const std::vector<Param>& params) {
  state_.assign(params.size(), {});
  sizes_.assign(params.size(), 0);
  for (size_t i = 0; i < params.size(); ++i) sizes_[i] = params[i].value->numel();
  size_t largest = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    const size_t n = static_cast<size_t>(params[i].value->numel());
    largest = std::max(largest, n);
    state_[i].resize(static_cast<size_t>(slots_));
    for (int k = 0; k < slots_; ++k) state_[i][static_cast<size_t>(k)].assign(n, init_slot(k));
  }
  if (config_.clipnorm || config_.clipvalue) scratch_.assign(largest, 0.0f);
  before_.assign(size_t(kMaxElementwiseParts) * std::min(largest, kChunk), 0.0f);
  slot_ptrs_.assign(static_cast<size_t>(std::max(slots_, 1)), nullptr);
  allocated_ = true;
}

// Keras' _transform_gradients: clipvalue, then clipnorm (tf.clip_by_norm on each tensor).
const float* Optimizer::transform(const Param& p) {
  const float* g = p.grad->f();
  if (!config_.clipnorm && !config_.clipvalue) return g;
  const int64_t n = p.grad->numel();
  float* out = scratch_.data();
  if (config_.clipvalue) {
    const float c = static_cast<float>(*config_.clipvalue);
    for (int64_t k = 0; k < n; ++k) out[k] = g[k] < -c ? -c : (g[k] > c ? c : g[k]);  // NaN passes
  } else {
    std::copy(g, g + n, out);
  }
  if (config_.clipnorm) {
    const double c = *config_.clipnorm;
    double ss = 0.0;
    for (int64_t k = 0; k < n; ++k) ss += double(out[k]) * double(out[k]);
    const double norm = std::sqrt(ss);
    if (!(norm <= c)) {  // also NaN/Inf norms, which TF propagates
      for (int64_t k = 0; k < n; ++k) out[k] = static_cast<float>(double(out[k]) * c / norm);
    }
  }
  return out;
}

void Optimizer::step(std::vector<Param>& params, UpdateObserver* observer) {
  for (const Param& p : params) {
    if (p.value == nullptr || p.grad == nullptr || p.value->dtype() != DType::kFloat32 ||
        p.grad->numel() != p.value->numel() || !p.grad->allocated())
      throw InternalError("optimizer " + name_ + ": parameter '" + p.name + "' has no gradient of its size");
  }
  if (!allocated_) allocate(params);
  if (params.size() != state_.size())
    throw InternalError("optimizer " + name_ + ": called with " + std::to_string(params.size()) +
                        " parameters, its state has " + std::to_string(state_.size()));
  begin_step(iterations_);
  const double lr_t = current_learning_rate();
  for (size_t i = 0; i < params.size(); ++i) {
    Param& p = params[i];
    const int64_t n = p.value->numel();
    if (sizes_[i] != n)  // (the chunk buffers are sized for the first call's parameters)
      throw InternalError("optimizer " + name_ + ": parameter " + std::to_string(i) + " ('" + p.name +
                          "') changed size between steps");
    for (int k = 0; k < slots_; ++k) slot_ptrs_[static_cast<size_t>(k)] = state_[i][static_cast<size_t>(k)].data();
    float* w = p.value->f();
    const int64_t parts = elementwise_parts(n);
    if (frozen(p.name)) {  // learning rate 0: no change, and its state stays as it was
      for (int64_t part = 0; observer && part < parts; ++part) {
        int64_t lo, hi;
        part_range(n, parts, part, lo, hi);
        for (int64_t off = lo; off < hi; off += int64_t(kChunk)) {
          const int64_t len = std::min<int64_t>(int64_t(kChunk), hi - off);
          observer->on_chunk(i, part, off, p.grad->f() + off, w + off, w + off, len);
        }
      }
      continue;
    }
    const Part job{this, i, w, transform(p), p.grad->f(), n, parts, lr_t, observer};
    const int threads = observer && !observer->concurrent_parts(i) ? 1 : loop_threads(n, kParallelValues);
    if (parts == 1 || threads == 1) {
      for (int64_t part = 0; part < parts; ++part) update_part(job, part);
      continue;
    }
    parallel_blocks(parts, threads, [](const void* ctx, int64_t part) {
      const Part& job = *static_cast<const Part*>(ctx);
      job.self->update_part(job, part);
    }, &job);
  }
  ++iterations_;
}

// The rules are element-wise, so updating part by part, chunk by chunk, is the same update.
static_assert(Optimizer::kChunk % stats::ParamChunk::kValues == 0,
              "on_chunk's chunks and the rules' statistics blocks start alike: the same sums");
void Optimizer::update_part(const Part& p, int64_t part) {
  int64_t lo, hi;
  part_range(p.n, p.parts, part, lo, hi);
  float* slots[8];
  for (int k = 0; k < slots_; ++k) slots[k] = slot_ptrs_[static_cast<size_t>(k)] + lo;
  if (!p.observer) {
    update(p.w + lo, p.g + lo, slots, hi - lo, p.lr_t, nullptr, nullptr);
    return;
  }
  // The statistics alone, taken by the rule over the whole part (of the raw gradient:
  // not when clipping made another one).
  if (stats::ParamSums* sums = p.g == p.raw ? p.observer->chunk_sums(p.param, part) : nullptr) {
    update(p.w + lo, p.g + lo, slots, hi - lo, p.lr_t, nullptr, sums);
    return;
  }
  float* before = before_.data() + part * int64_t(kChunk);
  for (int64_t off = lo; off < hi; off += int64_t(kChunk)) {
    const int64_t len = std::min<int64_t>(int64_t(kChunk), hi - off);
    for (int k = 0; k < slots_; ++k) slots[k] = slot_ptrs_[static_cast<size_t>(k)] + off;
    update(p.w + off, p.g + off, slots, len, p.lr_t, before, nullptr);  // (copies w's old values to before)
    p.observer->on_chunk(p.param, part, off, p.raw + off, before, p.w + off, len);
  }
}

const char* valid_optimizer_names() { return "sgd, adam, rmsprop, adagrad, adadelta, adamax, nadam"; }

namespace {

void require(bool ok, const std::string& message) {
  if (!ok) throw ConfigError(message);
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

bool optimizer_takes(const std::string& name, const std::string& key) {
  if (key == "momentum") return name == "sgd" || name == "rmsprop";
  if (key == "nesterov") return name == "sgd";
  return true;
}

std::vector<std::string> drop_settings_not_taken(OptimizerConfig& c) {
  std::string n = c.name;
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char ch) { return std::tolower(ch); });
  std::vector<std::string> notes;
  auto drop = [&](const char* key, bool set, const std::string& value, auto reset) {
    const auto it = c.origin.find(key);
    if (!set || it == c.origin.end() || optimizer_takes(n, key)) return;
    notes.push_back(std::string("model metadata 'deeplocalize.") + key + "' = " + value + " is ignored: the " + n +
                    " optimizer chosen on the command line has no " + key);
    reset();
    c.origin.erase(it);
  };
  drop("momentum", c.momentum != 0, num(c.momentum), [&c] { c.momentum = 0; });
  drop("nesterov", c.nesterov, "true", [&c] { c.nesterov = false; });
  return notes;
}

std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& in) {
  OptimizerConfig c = in;
  std::transform(c.name.begin(), c.name.end(), c.name.begin(), [](unsigned char ch) { return std::tolower(ch); });
  const std::string& n = c.name;
  auto where = [&c](const std::string& key, const std::string& flag) {
    const auto it = c.origin.find(key);
    return it == c.origin.end() ? flag : it->second;
  };
  if (!opt_detail::known(n))
    throw ConfigError(where("optimizer", "--optimizer") + ": unknown optimizer '" + in.name + "' (valid: " + valid_optimizer_names() + ")");
  if (c.learning_rate)
    require(std::isfinite(*c.learning_rate) && *c.learning_rate >= 0,
            where("learning_rate", "--lr") + ": the learning rate must be a finite number >= 0, got " + num(*c.learning_rate));
  require(std::isfinite(c.momentum) && c.momentum >= 0 && c.momentum < 1,
          where("momentum", "--momentum") + ": must be in [0, 1), got " + num(c.momentum));
  require(c.momentum == 0 || optimizer_takes(n, "momentum"),
          where("momentum", "--momentum") + ": the " + n + " optimizer has no momentum (only sgd and rmsprop do)");
  require(!c.nesterov || optimizer_takes(n, "nesterov"),
          where("nesterov", "--nesterov") + ": only the sgd optimizer has Nesterov momentum, not " + n);
  require(std::isfinite(c.decay) && c.decay >= 0, where("decay", "decay") + ": must be a finite number >= 0, got " + num(c.decay));
  if (c.clipnorm)
    require(std::isfinite(*c.clipnorm) && *c.clipnorm > 0, where("clipnorm", "clipnorm") + ": must be a finite number > 0, got " + num(*c.clipnorm));
  if (c.clipvalue)
    require(std::isfinite(*c.clipvalue) && *c.clipvalue > 0,
            where("clipvalue", "clipvalue") + ": must be a finite number > 0, got " + num(*c.clipvalue));
  return opt_detail::make_rule(c);
}

}  // namespace dl::rt
