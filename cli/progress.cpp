#include "cli/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>

namespace dl::cli {

TerminalStyle TerminalStyle::detect() {
  TerminalStyle s;
  s.tty = isatty(STDERR_FILENO) != 0;
  const char* no_color = std::getenv("NO_COLOR");
  s.color = s.tty && !(no_color && *no_color);
  return s;
}

ProgressPrinter::ProgressPrinter(int64_t epochs, std::string metric_name, TerminalStyle style, bool quiet)
    : epochs_(epochs), metric_(std::move(metric_name)), style_(style), quiet_(quiet) {}

void ProgressPrinter::on_batch_begin(const rt::IterationInfo& info) {
  if (info.batch == 0) loss_sum_ = metric_sum_ = 0, seen_ = 0;
}

void ProgressPrinter::after_update(const rt::ExecutionGraph&, const rt::IterationInfo& info) {
  loss_sum_ += info.loss;
  metric_sum_ += info.metric;
  ++seen_;
  if (quiet_ || !style_.tty) return;
  // Redraw at most ~50 times per epoch.
  const int64_t tick = info.batches > 50 ? info.batches / 50 : 1;
  if (info.batch % tick != 0 && info.batch + 1 != info.batches) return;
  const int width = 30;
  const int filled = static_cast<int>(width * (info.batch + 1) / std::max<int64_t>(info.batches, 1));
  std::string bar(static_cast<size_t>(filled), '=');
  bar.resize(static_cast<size_t>(width), ' ');
  fmt::print(stderr, "\r\033[Kepoch {}/{} [{}] {}/{} loss {:.4f} {} {:.4f}", info.epoch + 1, epochs_, bar,
             info.batch + 1, info.batches, loss_sum_ / seen_, metric_, metric_sum_ / seen_);
  std::fflush(stderr);
  last_draw_ = info.iteration;
}

void ProgressPrinter::on_epoch_end(const rt::EpochSummary& s) {
  if (quiet_) return;
  std::string line = fmt::format("epoch {}/{}: loss {:.4f}  {} {:.4f}", s.epoch + 1, epochs_, s.loss, metric_, s.metric);
  if (s.has_validation) line += fmt::format("  val_loss {:.4f}  val_{} {:.4f}", s.val_loss, metric_, s.val_metric);
  line += fmt::format("  ({:.2f}s)", s.seconds);
  if (style_.tty) fmt::print(stderr, "\r\033[K");
  fmt::print(stderr, "{}\n", line);
}

}  // namespace dl::cli
