// The HTML report (`--report out.html`, `--format html`): one self-contained page for
// people. Inline CSS and inline SVG charts only: no script, no external fonts, no
// network. Well-formed XML as well as HTML5 (every element closed, attributes quoted,
// text escaped), so tools can parse it.
//
// Contents, top to bottom: the verdict and primary finding (layer, iteration, root
// cause, message, "Fix:", evidence); loss and metric curves over iterations (NaN/Inf
// shaded, log scale when the values span > 3 decades, the first failure marked); per
// layer, small multiples of the output activations' mean/std, the gradient norm, the
// update ratio ||dw||/||w|| (log scale), dead and saturated fractions over the
// recorded iterations, the faulty layer's row framed in red; the layer table with each
// layer's status; other findings and warnings; the training summary and timing.
#pragma once

#include <string>

#include "analysis/analyzer.h"
#include "analysis/report.h"
#include "analysis/trace.h"

namespace dl::an {

std::string report_html(const Diagnosis& d, const Trace& t, const RunInfo& run);

// The iteration to mark as the first failure: the primary finding's, else the first
// iteration whose loss is NaN/Inf, else -1.
int64_t first_failure_iteration(const Diagnosis& d, const Trace& t);

}  // namespace dl::an
