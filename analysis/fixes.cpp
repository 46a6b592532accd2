#include "analysis/fixes.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "analysis/rules/rule_util.h"
#include "analysis/symptoms.h"

namespace dl::an {
namespace {

using Kind = FixAction::Kind;

// The highest drop rate of common healthy setups (excessive_dropout's max_rate is higher:
// a warning there needs more evidence than a candidate repair here).
constexpr double kUsualDropRate = 0.5;
// The batch size a batch-size repair moves to (Keras' default).
constexpr int64_t kUsualBatch = 32;

FixAction act(Kind k, int layer = -1, std::string value = "", double factor = 1, int64_t count = 0) {
  FixAction a;
  a.kind = k, a.layer = layer, a.value = std::move(value), a.factor = factor, a.count = count;
  return a;
}

// What the trace header says about the model, its output and its data.
struct Facts {
  std::string loss, optimizer;
  bool logits = false;
  int last = -1;                         // index of the output layer
  std::vector<std::string> activation;  // per layer: its last activation op, "" for none
  std::vector<bool> saturating, dead_zone, linear_hidden;
  std::vector<double> drop_rate;  // per layer: its highest Dropout rate while training, 0 for none
  std::vector<int64_t> units;     // per layer: its parameterised node's units, 0 when unknown
  std::vector<int> feeds;         // per layer: the layer that alone reads its values, < 0 for none
  int64_t out_units = 1;
  bool regression = false, binary = false, multilabel = false, multiclass = false;
  bool sparse = false;
  bool features_unscaled = false, targets_unscaled = false;
  bool label_issues = false;
  std::vector<int> constant_layers;  // layers whose weights start constant (all zero or all equal)
  std::vector<int> wide_layers;      // layers whose weights start far too wide (wide_initialization)
  int64_t epochs = 10, batch_size = 32;
  // A BatchNormalization over dense features (no spatial positions): it normalises each
  // unit over the rows of the batch alone.
  bool dense_batch_norm = false;
  double lr = 0, default_lr = 0;  // the learning rate and the optimizer's Keras default
};

Facts facts_of(const Trace& t) {
  const TraceHeader& h = t.header;
  Facts f;
  f.loss = ru::config(h, "loss");
  f.optimizer = ru::config(h, "optimizer", "rmsprop");
  f.logits = ru::from_logits(h);
  f.epochs = static_cast<int64_t>(ru::config_number(h, "epochs", 10));
  f.batch_size = static_cast<int64_t>(ru::config_number(h, "batch_size", 32));
  f.lr = ru::learning_rate(h);
  f.default_lr = ru::keras_default_learning_rate(f.optimizer);
  const size_t n = h.layers.size();
  f.last = static_cast<int>(n) - 1;
  f.activation.assign(n, "");
  f.saturating.assign(n, false);
  f.dead_zone.assign(n, false);
  f.linear_hidden.assign(n, false);
  f.drop_rate.assign(n, 0.0);
  f.units.assign(n, 0);
  f.feeds.assign(n, -1);
  for (size_t l = 0; l < n; ++l) f.feeds[l] = h.layers[l].feeds;
  for (const Probe& p : h.probes) {
    if (p.kind != ProbeKind::kForward || p.layer < 0 || static_cast<size_t>(p.layer) >= n) continue;
    if (p.op.role == "parameterized" && p.op.units > 0 && p.op.sample_size == p.op.units) f.units[p.layer] = p.op.units;
    if (p.op.drop_rate > 0) f.drop_rate[p.layer] = std::max(f.drop_rate[p.layer], p.op.drop_rate);
    if (p.op_type == "BatchNormalization" && p.op.units > 0 && p.op.sample_size == p.op.units)
      f.dense_batch_norm = true;
    if (p.op.role == "activation") {
      f.activation[p.layer] = p.op_type;
      f.saturating[p.layer] = p.op.saturates;
      f.dead_zone[p.layer] = p.op.has_dead_zone;
    }
  }
  for (size_t l = 0; l + 1 < n; ++l) f.linear_hidden[l] = f.activation[l].empty();
  f.out_units = std::max<int64_t>(h.output_width, 1);
  const DataSummary& d = h.data_summary;
  f.sparse = f.loss == "sparse_categorical_crossentropy";
  f.regression = !d.targets_are_classes && !f.sparse;
  if (!f.regression) {
    if (f.out_units == 1) f.binary = true;
    else if (ru::multilabel_targets(h)) f.multilabel = true;
    else f.multiclass = true;
  }
  const ru::InputScale s = ru::input_scale(h);
  f.features_unscaled = s.max_abs > 10 || s.std_spread > 100;
  for (const ColumnSummary& c : d.target_columns)
    if (f.regression && (std::fabs(c.mean) > 10 || c.std > 10)) f.targets_unscaled = true;
  f.label_issues = d.label_issue_count > 0;
  std::set<std::string> constant;
  for (const InitializerSummary& i : h.initializers)
    if (i.count > 1 && i.min == i.max) constant.insert(i.name);
  for (const LayerInfo& l : h.layers) {
    // A constant kernel (rank >= 2 weights are listed first) makes the units identical.
    if (!l.params.empty() && constant.count(l.params.front())) f.constant_layers.push_back(l.index);
  }
  return f;
}

// The output activation and loss that the targets call for.
std::string wanted_output(const Facts& f) {
  if (f.regression) return "Identity";
  if (f.binary || f.multilabel) return "Sigmoid";
  return f.logits ? "Identity" : "Softmax";
}
std::string wanted_loss(const Facts& f) {
  if (f.regression) return f.loss == "mae" ? "mae" : "mse";
  if (f.binary || f.multilabel) return "binary_crossentropy";
  return f.sparse ? "sparse_categorical_crossentropy" : "categorical_crossentropy";
}
std::string current_output(const Facts& f) {
  return f.last < 0 || f.activation[f.last].empty() ? "Identity" : f.activation[f.last];
}

// Direction of a learning-rate change from the symptom (analysis/symptom_list.def): -1
// lower, +1 higher, 0 unclear.
int lr_direction(const Finding& primary) {
  if (primary.lr_direction != 0) return primary.lr_direction < 0 ? -1 : +1;
  switch (symptom_info(primary.symptom).pace) {
    case Symptom::Pace::kTooFast: return -1;
    case Symptom::Pace::kTooSlow: return +1;
    case Symptom::Pace::kNone: return 0;
  }
  return 0;
}

class Proposer {
 public:
  Proposer(const Trace& t, const std::vector<Finding>& findings, const std::vector<FixAction>& applied)
      : facts_(facts_of(t)), applied_(applied) {
    for (const Finding& f : findings) {  // bad_initialization lists every too-wide layer
      const auto it = f.evidence.find("wide_layers");
      if (it == f.evidence.end() || !it->is_array()) continue;
      for (const auto& l : *it)
        if (l.is_number_integer()) facts_.wide_layers.push_back(l.get<int>());
    }
  }

  void cause(RootCause c, const Finding& f) {
    switch (c) {
      case RootCause::kLearningRate: learning_rate(lr_direction(f)); break;
      case RootCause::kData: data(true); break;
      case RootCause::kActivation: activation(f, true); break;
      case RootCause::kLoss: loss(); break;
      case RootCause::kInitialization: initialization(f); break;
      case RootCause::kOptimizer: optimizer(); break;
      case RootCause::kLabels: labels(); break;
      case RootCause::kArchitecture: architecture(f); break;
      case RootCause::kTrainingLength: epochs(); break;
      case RootCause::kUnknown: break;
    }
  }

  // Remedies for the kind of symptom, whatever the rule guessed.
  void general(const Finding& f) {
    const int dir = lr_direction(f);
    if (dir < 0) {
      learning_rate(-1);
      activation(f, false);
      if (facts_.features_unscaled) data(false);
      optimizer();
    } else {
      if (facts_.features_unscaled || facts_.targets_unscaled) data(false);
      activation(f, false);
      optimizer();
      learning_rate(dir == 0 ? -1 : +1);
      epochs();
    }
  }

  // Repairs that come before any cause's: a configuration that no model can train under.
  void certain() {
    if (facts_.dense_batch_norm) batch_size();
  }

  std::vector<FixCandidate> take() { return std::move(out_); }

 private:
  void add(std::vector<FixAction> actions, RootCause c, std::string why) {
    for (const FixAction& a : actions) {
      if (std::find(applied_.begin(), applied_.end(), a) != applied_.end()) return;
      // Switching the optimizer resets the learning rate to its default: it would undo an
      // applied learning-rate repair.
      if (a.kind == Kind::kOptimizer)
        for (const FixAction& b : applied_)
          if (b.kind == Kind::kLearningRate) return;
      for (const FixAction& b : applied_)  // never change again what a first fix changed
        if (b.kind == a.kind && b.layer == a.layer) return;
    }
    for (const FixCandidate& c2 : out_)
      if (c2.actions == actions) return;
    FixCandidate cand;
    cand.actions = std::move(actions);
    cand.root_cause = c;
    cand.why = std::move(why);
    out_.push_back(std::move(cand));
  }

  void learning_rate(int dir) {
    const RootCause c = RootCause::kLearningRate;
    // A rate more than 100x off the optimizer's default is rarely fixed by one or two
    // tenfold steps (a rate 1000x too small is still 100x too small after one): the default
    // itself is a candidate too, right after the tenfold step.
    const double to_default = lr_known() ? facts_.default_lr / facts_.lr : 0;
    if (dir <= 0) {
      add({act(Kind::kLearningRate, -1, "", 0.1)}, c, "unstable training: smaller steps");
      if (to_default > 0 && to_default < 0.01) add({act(Kind::kLearningRate, -1, "", to_default)}, c,
                                                   "a learning rate far above the optimizer's default: the default");
      add({act(Kind::kLearningRate, -1, "", 0.01)}, c, "unstable training: much smaller steps");
      batch_size();
    }
    if (dir >= 0) {
      add({act(Kind::kLearningRate, -1, "", 10)}, c, "too little progress: larger steps");
      if (to_default > 100) add({act(Kind::kLearningRate, -1, "", to_default)}, c,
                                "a learning rate far below the optimizer's default: the default");
    }
  }
  // A batch of one row: BatchNormalization over dense features outputs its shift alone
  // (each unit's variance over one row is 0), and every step follows a single sample.
  // Counted with the learning rate: the batch size and the rate set the size and noise of
  // the steps together.
  void batch_size() {
    if (facts_.batch_size != 1) return;
    add({act(Kind::kBatchSize, -1, "", 1, kUsualBatch)}, RootCause::kLearningRate,
        facts_.dense_batch_norm ? "BatchNormalization over a batch of one row outputs only its shift"
                                : "steps of one row are as noisy as a single sample");
  }
  bool lr_known() const { return facts_.lr > 0 && facts_.default_lr > 0 && std::isfinite(facts_.lr); }
  void data(bool primary) {
    const RootCause c = RootCause::kData;
    if (facts_.features_unscaled || primary) {
      add({act(Kind::kFeatures, -1, "standardize")}, c, "input features on a large or uneven scale");
      add({act(Kind::kFeatures, -1, "minmax")}, c, "input features on a large or uneven scale");
    }
    if (facts_.targets_unscaled) {
      add({act(Kind::kTargets)}, c, "regression targets far from the output's scale");
      if (facts_.features_unscaled)
        add({act(Kind::kFeatures, -1, "standardize"), act(Kind::kTargets)}, c, "features and targets unscaled");
    }
  }
  void output_fix(RootCause c) {
    const std::string want = wanted_output(facts_), have = current_output(facts_);
    const std::string want_loss = wanted_loss(facts_);
    if (want != have) {
      if (want_loss != facts_.loss && !facts_.regression)
        add({act(Kind::kActivation, facts_.last, want), act(Kind::kLoss, -1, want_loss)}, c,
            "output activation and loss do not fit the targets");
      add({act(Kind::kActivation, facts_.last, want)}, c, "output activation does not fit the targets");
    } else if (want_loss != facts_.loss) {
      add({act(Kind::kLoss, -1, want_loss)}, c, "loss does not fit the output and targets");
    }
  }
  void activation(const Finding& f, bool primary) {
    const RootCause c = RootCause::kActivation;
    const int last = facts_.last;
    if (f.layer == last || f.layer < 0 || primary) output_fix(c);
    // Hidden layers: saturating units -> ReLU; dead ReLUs -> LeakyReLU / ELU.
    std::vector<FixAction> to_relu, to_leaky, to_elu;
    for (int l = 0; l < last; ++l) {
      if (facts_.saturating[l]) to_relu.push_back(act(Kind::kActivation, l, "Relu"));
      if (facts_.dead_zone[l] && (f.layer == l || f.layer < 0 || symptom_info(f.symptom).dead_units)) {
        to_leaky.push_back(act(Kind::kActivation, l, "LeakyRelu"));
        to_elu.push_back(act(Kind::kActivation, l, "Elu"));
      }
    }
    if (!to_relu.empty()) add(to_relu, c, "saturating hidden activations");
    if (!to_leaky.empty()) add(to_leaky, c, "ReLU units stuck in their dead zone");
    if (!to_elu.empty()) add(to_elu, c, "ReLU units stuck in their dead zone");
    if (f.layer >= 0 && f.layer < last && facts_.linear_hidden[f.layer])
      add({act(Kind::kActivation, f.layer, "Relu")}, c, "a hidden layer without activation");
  }
  void loss() {
    const RootCause c = RootCause::kLoss;
    const std::string want_loss = wanted_loss(facts_);
    const std::string want = wanted_output(facts_), have = current_output(facts_);
    if (want_loss != facts_.loss) {
      if (want != have && !facts_.regression)
        add({act(Kind::kLoss, -1, want_loss), act(Kind::kActivation, facts_.last, want)}, c,
            "loss and output activation do not fit the targets");
      add({act(Kind::kLoss, -1, want_loss)}, c, "loss does not fit the output and targets");
    } else if (facts_.regression && facts_.loss == "mae") {
      add({act(Kind::kLoss, -1, "mse")}, c, "mean absolute error gives constant-size gradients");
    }
    if (want != have) add({act(Kind::kActivation, facts_.last, want)}, RootCause::kActivation,
                          "output activation does not fit the targets");
  }
  void initialization(const Finding& f) {
    const RootCause c = RootCause::kInitialization;
    // Every layer that starts zero, constant or far too wide, and the finding's own: a repair
    // of one of several such layers leaves the others' symptom.
    std::vector<int> layers = facts_.constant_layers;
    layers.insert(layers.end(), facts_.wide_layers.begin(), facts_.wide_layers.end());
    if (f.layer >= 0) layers.push_back(f.layer);
    std::sort(layers.begin(), layers.end());
    layers.erase(std::unique(layers.begin(), layers.end()), layers.end());
    layers.erase(std::remove_if(layers.begin(), layers.end(), [&](int l) { return l < 0 || l > facts_.last; }),
                 layers.end());
    if (layers.empty())
      for (int l = 0; l <= facts_.last; ++l) layers.push_back(l);
    std::vector<FixAction> acts;
    for (int l : layers) acts.push_back(act(Kind::kReinitialize, l, facts_.dead_zone[l] ? "he_uniform" : "glorot_uniform"));
    add(acts, c, "weights that start zero, constant or badly scaled");
  }
  void optimizer() {
    if (facts_.optimizer != "adam") add({act(Kind::kOptimizer, -1, "adam")}, RootCause::kOptimizer, "an adaptive optimizer");
  }
  void labels() {
    if (facts_.label_issues) add({act(Kind::kLabels)}, RootCause::kLabels, "class ids outside 0..C-1");
  }
  void architecture(const Finding& f) {
    width(f.layer);
    std::vector<FixAction> acts;
    for (int l = 0; l < facts_.last; ++l)
      if (facts_.linear_hidden[l]) acts.push_back(act(Kind::kActivation, l, "Relu"));
    if (!acts.empty()) add(acts, RootCause::kArchitecture, "stacked linear layers collapse into one");
    // Dropout above the usual 0.1-0.5 (excessive_dropout): read as the keep probability it
    // usually is (TF1's keep_prob), then without dropout.
    std::vector<FixAction> keep, none;
    for (int l = 0; l <= facts_.last; ++l) {
      if (!(facts_.drop_rate[l] > kUsualDropRate)) continue;
      keep.push_back(act(Kind::kDropout, l, "", 1.0 - facts_.drop_rate[l]));
      none.push_back(act(Kind::kDropout, l, "", 0.0));
    }
    if (!keep.empty()) add(keep, RootCause::kArchitecture, "a dropout rate written as a keep probability");
    if (!none.empty()) add(none, RootCause::kArchitecture, "dropout that zeroes most units");
  }
  // A dense hidden layer narrower than what it must pass on (one unit, or fewer units than
  // the output or a later layer has) that alone feeds the next layer: widened to the widest
  // later layer, at least 16 units (DeepCrime's "change number of units" undone).
  void width(int layer) {
    if (layer < 0 || layer >= facts_.last || facts_.feeds[layer] < 0) return;
    const int64_t units = facts_.units[layer];
    int64_t widest = facts_.out_units;
    for (int k = layer + 1; k <= facts_.last; ++k) widest = std::max(widest, facts_.units[k]);
    if (units < 1 || (units > 1 && units >= facts_.out_units)) return;
    if (widest <= units) return;
    add({act(Kind::kWidth, layer, "", 1, std::max<int64_t>(16, widest))}, RootCause::kArchitecture,
        "a hidden layer too narrow for what the next layers need");
  }
  void epochs() {
    const int64_t target = std::max<int64_t>(facts_.epochs * 3, 10);
    add({act(Kind::kEpochs, -1, "", double(target) / double(std::max<int64_t>(facts_.epochs, 1)), target)},
        RootCause::kTrainingLength, "the loss was still falling");
  }

  Facts facts_;
  std::vector<FixAction> applied_;
  std::vector<FixCandidate> out_;
};

}  // namespace

std::vector<FixCandidate> propose_fixes(const Diagnosis& d, const Trace& trace, const std::vector<FixAction>& applied) {
  if (!d.fault || d.findings.empty()) return {};
  Proposer p(trace, d.findings, applied);
  const Finding& primary = d.findings.front();
  p.certain();
  p.cause(primary.root_cause, primary);
  for (const Finding& f : d.findings)
    if (&f != &primary && f.consequence_of < 0) p.cause(f.root_cause, f);
  p.general(primary);
  return p.take();
}

}  // namespace dl::an
