#include "bench/step_profiler.h"

#include <algorithm>
#include <cstdio>
#include <map>

namespace dl::bench {

using Clock = std::chrono::steady_clock;

StepProfiler::StepProfiler(const rt::ExecutionGraph& g, int64_t warmup, rt::ProbeRecorder* probes)
    : graph_(g), warmup_(warmup), probes_(probes), fwd_(g.steps().size()), bwd_(g.steps().size()) {}

void StepProfiler::on_batch_begin(const rt::IterationInfo& info) {
  if (probes_) probes_->on_batch_begin(info);
  on_ = info.iteration >= warmup_;
  last_ = Clock::now();
}

void StepProfiler::on_forward(size_t k, const rt::Step& st) {
  if (probes_) probes_->on_forward(k, st);
  fwd_[k] += lap();
}

void StepProfiler::on_backward(size_t k, const rt::Step& st) {
  if (probes_) probes_->on_backward(k, st);
  if (first_backward_ < 0) first_backward_ = int64_t(k);
  bwd_[k] += lap();
}

void StepProfiler::before_update(const rt::ExecutionGraph& g, const rt::IterationInfo& info) {
  if (probes_) probes_->before_update(g, info);
  last_ = Clock::now();
}

void StepProfiler::after_update(const rt::ExecutionGraph& g, const rt::IterationInfo& info) {
  if (probes_) probes_->after_update(g, info);
  update_ += lap();
  if (on_) ++steps_;
}

double StepProfiler::lap() {
  const auto now = Clock::now();
  const double s = std::chrono::duration<double>(now - last_).count();
  last_ = now;
  return on_ ? s : 0.0;
}

double StepProfiler::total() const {
  double t = update_;
  for (size_t k = 0; k < fwd_.size(); ++k) t += fwd_[k] + bwd_[k];
  return t;
}

void StepProfiler::print_steps() const {
  const double all = total();
  std::printf("time per training step by program step (%lld steps, %.3f ms/step):\n", (long long)steps_,
              1e3 * all / double(steps_));
  auto line = [&](const std::string& what, double s) {
    std::printf("  %-52s %9.1f us  %5.1f%%\n", what.c_str(), 1e6 * s / double(steps_), 100 * s / all);
  };
  for (size_t k = 0; k < fwd_.size(); ++k)
    line("fwd " + graph_.steps()[k].node->op_type + " " + graph_.steps()[k].node->name, fwd_[k]);
  for (size_t k = fwd_.size(); k-- > 0;)
    if (bwd_[k] > 0)
      line("bwd " + graph_.steps()[k].node->op_type + " " + graph_.steps()[k].node->name +
               (int64_t(k) == first_backward_ ? " (+ loss, zeroing)" : ""),
           bwd_[k]);
  line("optimizer update", update_);
}

void StepProfiler::print_op_types(const std::string& model) const {
  struct Share {
    double fwd = 0, bwd = 0;
    int nodes = 0;
  };
  std::map<std::string, Share> by_type;
  double loss = 0;
  for (size_t k = 0; k < fwd_.size(); ++k) {
    Share& s = by_type[graph_.steps()[k].node->op_type];
    s.fwd += fwd_[k];
    ++s.nodes;
    // The first backward step also times the loss and the zeroing of the gradients:
    // shown apart, so that it is not charged to whatever op comes last.
    if (int64_t(k) == first_backward_) loss += bwd_[k];
    else s.bwd += bwd_[k];
  }
  by_type["(loss, gradient zeroing)"].bwd += loss;
  by_type["(optimizer update)"].fwd += update_;
  std::vector<std::pair<std::string, Share>> rows(by_type.begin(), by_type.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.second.fwd + a.second.bwd > b.second.fwd + b.second.bwd;
  });
  const double all = total(), n = double(std::max<int64_t>(steps_, 1));
  std::printf("time per training step by op type (%lld steps, %.2f ms/step; fwd and bwd in ms per step):\n",
              (long long)steps_, 1e3 * all / n);
  std::printf("  %-26s %6s %9s %9s %7s\n", "op type", "nodes", "fwd ms", "bwd ms", "share");
  for (const auto& [type, s] : rows) {
    if (s.fwd + s.bwd <= 0) continue;
    std::printf("  %-26s %6d %9.2f %9.2f %6.1f%%\n", type.c_str(), s.nodes, 1e3 * s.fwd / n, 1e3 * s.bwd / n,
                100 * (s.fwd + s.bwd) / all);
  }
  for (const auto& [type, s] : rows) {
    if (s.fwd + s.bwd <= 0) continue;
    std::string op = type;
    std::replace(op.begin(), op.end(), ' ', '_');
    std::printf("OPSHARE model=%s op=%s nodes=%d fwd_ms=%.3f bwd_ms=%.3f share_pct=%.2f\n", model.c_str(), op.c_str(),
                s.nodes, 1e3 * s.fwd / n, 1e3 * s.bwd / n, 100 * (s.fwd + s.bwd) / all);
  }
  std::fflush(stdout);
}

}  // namespace dl::bench
