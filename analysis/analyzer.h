// Runs every rule over a trace and turns their findings into a diagnosis: ordered
// (earliest conclusive symptom first), consequences marked, verdict decided.
#pragma once

#include <vector>

#include "analysis/finding.h"
#include "analysis/rule.h"
#include "analysis/trace.h"

namespace dl::an {

struct Diagnosis {
  bool fault = false;
  std::vector<Finding> findings;  // findings[0] is the primary diagnosis when fault
  std::vector<Finding> warnings;  // unconfirmed static findings of a healthy run
};

// `final` is true at the end of training (or offline): trend rules only judge then.
Diagnosis analyze(const Trace& trace, const Settings& settings, bool final);

// Orders findings: static conclusive first, then by iteration, stage and layer; marks
// later numerical symptoms as consequences of the first one.
void order_findings(std::vector<Finding>& findings);

}  // namespace dl::an
