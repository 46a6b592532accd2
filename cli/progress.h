// Training progress for people: a live bar on a terminal, one plain line per epoch
// otherwise, nothing with --quiet. Writes to stderr so reports on stdout stay clean.
#pragma once

#include <cstdio>
#include <string>

#include "runtime/trainer.h"

namespace dl::cli {

struct TerminalStyle {
  bool tty = false;    // stderr is a terminal
  bool color = false;  // tty and NO_COLOR unset
  static TerminalStyle detect();
};

class ProgressPrinter : public rt::TrainListener {
 public:
  ProgressPrinter(int64_t epochs, std::string metric_name, TerminalStyle style, bool quiet);
  void on_batch_begin(const rt::IterationInfo& info) override;
  void after_update(const rt::ExecutionGraph& graph, const rt::IterationInfo& info) override;
  void on_epoch_end(const rt::EpochSummary& summary) override;

 private:
  int64_t epochs_;
  std::string metric_;
  TerminalStyle style_;
  bool quiet_;
  double loss_sum_ = 0, metric_sum_ = 0;
  int64_t seen_ = 0;
  int64_t last_draw_ = -1;
};

}  // namespace dl::cli
