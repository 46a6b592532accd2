// Static: the data cannot be right for the model and loss: class ids outside 0..C-1 or
// not integers, targets outside the loss's domain (binary cross-entropy needs [0, 1]),
// NaN or Inf in the features or targets, input features that are all constant.
#include <algorithm>
#include <cmath>
#include <string>

#include "analysis/context.h"
#include "analysis/rules/rule_util.h"

namespace dl::an {
namespace {

class LabelsInvalid : public Rule {
 public:
  std::string id() const override { return "labels_invalid"; }
  std::string description() const override {
    return "Class ids outside 0..C-1 or not integers, targets outside the loss's domain, NaN/Inf in the data, "
           "constant input features";
  }
  std::vector<Threshold> thresholds() const override {
    return {{"shown_issues", 5, "offending lines listed in the evidence (the count is always complete)"},
            {"domain_tolerance", 1e-6, "targets this far outside [0, 1] still count as inside (float rounding)"}};
  }

  void check(const AnalysisContext& ctx, std::vector<Finding>& out) const override {
    nonfinite(ctx, out);
    constant_features(ctx, out);
    class_ids(ctx, out);
    loss_domain(ctx, out);
  }

 private:
  void nonfinite(const AnalysisContext& ctx, std::vector<Finding>& out) const {
    const DataSummary& d = ctx.header().data_summary;
    auto bad = [](const ColumnSummary& c) { return c.nan + c.inf; };
    int64_t features = bad(d.all_features), targets = 0;
    int first_feature = -1, first_target = -1;
    for (size_t c = 0; c < d.feature_columns.size(); ++c)
      if (bad(d.feature_columns[c]) > 0 && first_feature < 0) first_feature = static_cast<int>(c);
    for (size_t c = 0; c < d.target_columns.size(); ++c) {
      targets += bad(d.target_columns[c]);
      if (bad(d.target_columns[c]) > 0 && first_target < 0) first_target = static_cast<int>(c);
    }
    if (features + targets == 0) return;
    Finding f = ctx.make(*this, sym::nonfinite_data, Stage::kStatic, -1, std::nullopt);
    f.root_cause = RootCause::kData;
    f.conclusive = true;
    std::string what;
    if (features > 0)
      what = std::to_string(features) + " NaN/Inf feature value(s)" +
             (first_feature >= 0 ? " (first in feature column " + std::to_string(first_feature) + ")" : "");
    if (targets > 0)
      what += (what.empty() ? "" : " and ") + std::to_string(targets) + " NaN/Inf target value(s)" +
              " (first in target column " + std::to_string(first_target) + ")";
    f.message = "the training data " + (d.source.empty() ? std::string() : "(" + d.source + ") ") + "holds " + what +
                ": every batch that contains one turns the loss and all gradients into NaN";
    f.recommendation = "remove or impute the rows with NaN/Inf values before training (e.g. drop them, or fill "
                       "with the column mean)";
    f.evidence = {{"nonfinite_features", features}, {"nonfinite_targets", targets},
                  {"first_feature_column", first_feature}, {"first_target_column", first_target},
                  {"rows", d.rows}};
    out.push_back(std::move(f));
  }

  // Every input feature takes one value in all rows (a column summary per feature, or one
  // value overall): the targets cannot depend on the inputs, so nothing but the class
  // frequencies (or the targets' mean) can be learned, whatever the model.
  void constant_features(const AnalysisContext& ctx, std::vector<Finding>& out) const {
    const DataSummary& d = ctx.header().data_summary;
    const ColumnSummary& all = d.all_features;
    if (d.rows < 2 || d.features <= 0 || all.nan + all.inf > 0) return;
    const auto constant = [](const ColumnSummary& c) { return c.min == c.max; };
    const bool one_value = constant(all);
    bool every_column = static_cast<int64_t>(d.feature_columns.size()) == d.features;
    for (const ColumnSummary& c : d.feature_columns) every_column = every_column && constant(c);
    if (!one_value && !every_column) return;
    Finding f = ctx.make(*this, sym::constant_inputs, Stage::kStatic, -1, std::nullopt);
    f.root_cause = RootCause::kData;
    f.conclusive = true;
    f.message = one_value ? "every input value of the training data " +
                                (d.source.empty() ? std::string() : "(" + d.source + ") ") + "is " + ru::num(all.min) +
                                ", in all " + std::to_string(d.rows) + " rows and " + std::to_string(d.features) +
                                " features"
                          : "each of the " + std::to_string(d.features) + " input features is constant over the " +
                                std::to_string(d.rows) + " rows of the training data";
    f.message += ": the targets cannot depend on the inputs, so the model can learn nothing but their frequencies";
    f.recommendation = "check the input pipeline: the features lost their values before training (e.g. pixels "
                       "divided by 255 while still integers, which makes every one 0; a wrong column selection)";
    f.evidence = {{"rows", d.rows}, {"features", d.features}, {"feature_min", all.min}, {"feature_max", all.max},
                  {"one_value", one_value}};
    out.push_back(std::move(f));
  }

  void class_ids(const AnalysisContext& ctx, std::vector<Finding>& out) const {
    const DataSummary& d = ctx.header().data_summary;
    if (d.label_issue_count <= 0) return;
    const int64_t classes = d.classes > 0 ? d.classes : ctx.header().output_width;
    const size_t shown = static_cast<size_t>(std::max(0.0, threshold(ctx, "shown_issues")));
    nlohmann::json lines = nlohmann::json::array();
    bool all_at_c = !d.label_issues.empty(), non_integer = false, negative = false;
    double max_id = -INFINITY;
    for (size_t k = 0; k < d.label_issues.size(); ++k) {
      const double id = d.label_issues[k].value;
      if (k < shown) lines.push_back(label_issue_text(d.label_issues[k], classes));
      if (!std::isfinite(id) || id != std::floor(id)) {
        non_integer = true;
        all_at_c = false;
        continue;
      }
      max_id = std::max(max_id, id);
      negative = negative || id < 0;
      all_at_c = all_at_c && id == double(classes);
    }
    // Non-negative integer ids past the last class (not the 1..C shift): the output layer is
    // too narrow for the labels, so that is the layer to change (or the labels).
    const bool too_narrow = !all_at_c && !non_integer && !negative && std::isfinite(max_id);
    Finding f = ctx.make(*this, sym::invalid_labels, Stage::kStatic, too_narrow ? ru::output_layer(ctx).layer : -1,
                         std::nullopt);
    f.root_cause = RootCause::kLabels;
    f.conclusive = true;
    const std::string range = "0.." + std::to_string(classes - 1);
    f.message = std::to_string(d.label_issue_count) + " of " + std::to_string(d.rows) +
                " training labels are not class ids in " + range + " for the model's " + std::to_string(classes) +
                " outputs" + (d.label_issues.empty() ? "" : " (first: " + label_issue_text(d.label_issues.front(), classes) + ")");
    // Class 0 never occurs in one-hot targets when the ids run 1..C (invalid rows are all zero).
    const bool no_class_zero = d.target_columns.size() == size_t(classes) && d.target_columns[0].max == 0.0;
    if (all_at_c)
      f.recommendation = std::string("the labels appear to run 1..") + std::to_string(classes) +
                         (no_class_zero ? " (no label is 0)" : "") + ": subtract 1 from every label so they run " +
                         range;
    else if (non_integer)
      f.recommendation = "class ids must be integers in " + range +
                         ": map the label values to class indices (e.g. with a label encoder)";
    else if (negative)
      f.recommendation = "remap the labels to class indices " + range + " (negative ids are not classes)";
    else
      f.recommendation = "the labels go up to " + ru::num(max_id) + ": give the last layer " + ru::num(max_id + 1) +
                         " units, or remap the ids to " + range;
    f.evidence = {{"invalid_labels", d.label_issue_count}, {"rows", d.rows}, {"classes", classes},
                  {"first_issues", lines}};
    if (std::isfinite(max_id)) f.evidence["max_listed_id"] = max_id;
    out.push_back(std::move(f));
  }

  void loss_domain(const AnalysisContext& ctx, std::vector<Finding>& out) const {
    const TraceHeader& h = ctx.header();
    const DataSummary& d = h.data_summary;
    const std::string loss = ru::config(h, "loss");
    // Class-id encodings are judged by class_ids(); this checks targets used as given.
    const bool as_given = loss == "binary_crossentropy" ||
                          (loss == "categorical_crossentropy" && d.label_issue_count == 0 &&
                           d.target_columns.size() > 1);
    if (!as_given || d.target_columns.empty()) return;
    const double tol = threshold(ctx, "domain_tolerance");
    double tmin = INFINITY, tmax = -INFINITY;
    int column = -1;
    for (size_t c = 0; c < d.target_columns.size(); ++c) {
      const ColumnSummary& col = d.target_columns[c];
      if ((col.min < -tol || col.max > 1 + tol) && column < 0) column = static_cast<int>(c);
      tmin = std::min(tmin, col.min);
      tmax = std::max(tmax, col.max);
    }
    if (column < 0) return;
    // Real-valued (non-integer) targets beyond [0, 1] are a regression task given a
    // classification loss: the loss is the fault, not the data. Integer targets beyond it
    // are labels coded wrongly (1/2 instead of 0/1, class ids for a binary loss).
    const bool real_valued = !d.targets_integer;
    // Class ids spanning 3 or more values (0..2 and up) under binary cross-entropy: the output
    // layer has one yes/no per unit where the task needs more classes, so that is the layer
    // to change. Two values coded 1/2 are labels coded wrongly, not a layer's fault.
    const bool ids = d.targets_integer && tmin >= 0 && tmax > 1;
    const bool class_ids = ids && tmax - tmin >= 2 && loss == "binary_crossentropy";
    Finding f = ctx.make(*this, sym::targets_outside_loss_domain, Stage::kStatic,
                         class_ids ? ru::output_layer(ctx).layer : -1, std::nullopt);
    f.root_cause = real_valued ? RootCause::kLoss : RootCause::kLabels;
    f.conclusive = true;
    f.message = loss + " needs targets in [0, 1] but the targets span [" + ru::num(tmin) + ", " + ru::num(tmax) +
                "] (first in target column " + std::to_string(column) + ")" +
                (real_valued ? ": real-valued targets are a regression task, which needs a regression loss" : "");
    if (real_valued)
      f.recommendation = "use a regression loss (mse, or mae/huber with outliers) with a linear output layer; "
                         "if the targets are probabilities, rescale them into [0, 1]";
    else if (class_ids)
      f.recommendation = "the targets look like class ids 0.." + ru::num(tmax) +
                         ": use sparse_categorical_crossentropy with a softmax over " + ru::num(tmax + 1) +
                         " output units, or map them to 0/1 for binary classification";
    else
      f.recommendation = "rescale the targets into [0, 1] (e.g. (y - min) / (max - min)), or use mse for real-valued "
                         "targets";
    f.evidence = {{"loss", loss}, {"target_min", tmin}, {"target_max", tmax}, {"target_column", column},
                  {"targets_integer", d.targets_integer}};
    out.push_back(std::move(f));
  }
};

}  // namespace

std::unique_ptr<Rule> make_rule_labels_invalid() { return std::make_unique<LabelsInvalid>(); }

}  // namespace dl::an
