#include "analysis/trace_header_json.h"

#include <cmath>
#include <limits>

#include "converter/errors.h"
#include "converter/input_file.h"

namespace dl::an::trace_json {
namespace {

using nlohmann::json;

constexpr double kInf = std::numeric_limits<double>::infinity();
// Bounds the sampling state so that stride * probe_every cannot overflow in Trace::wants.
constexpr int64_t kMaxInterval = int64_t(1) << 30;

// JSON has no NaN or infinity: they are written as the strings "NaN", "Infinity", "-Infinity".
json number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return v;
}

// Output bounds: an infinite bound (no bound) is null.
json bound(double v) { return std::isinf(v) ? json(nullptr) : number(v); }

const char* type_of(const json& j) {
  if (j.is_number_integer()) return "an integer";
  if (j.is_number()) return "a number";
  return j.type_name();
}

// Reads typed fields of one JSON object; every error names the field's path.
class Fields {
 public:
  Fields(const json& j, std::string path, const std::string& label) : j_(j), path_(std::move(path)), label_(label) {
    if (!j_.is_object()) fail(path_, std::string("expected an object, got ") + type_of(j_));
  }

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    // Keys and values come from the file: JSON escapes like \u001b decode to raw controls.
    throw DataError(label_ + ": trace header: " + input::escape_bytes((where.empty() ? "top level" : where) + ": " + what));
  }
  std::string at(const char* key) const { return path_.empty() ? key : path_ + "." + key; }

  bool has(const char* key) const { return j_.find(key) != j_.end(); }
  const json& get(const char* key) const {
    auto it = j_.find(key);
    if (it == j_.end()) fail(at(key), "missing");
    return *it;
  }
  std::string str(const char* key) const {
    const json& v = get(key);
    if (!v.is_string()) fail(at(key), std::string("expected a string, got ") + type_of(v));
    return v.get<std::string>();
  }
  bool flag(const char* key) const {
    const json& v = get(key);
    if (!v.is_boolean()) fail(at(key), std::string("expected true or false, got ") + type_of(v));
    return v.get<bool>();
  }
  int64_t integer(const char* key, int64_t lo, int64_t hi) const {
    const json& v = get(key);
    if (!v.is_number_integer()) fail(at(key), std::string("expected an integer, got ") + type_of(v));
    if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(hi))
      fail(at(key), std::to_string(v.get<uint64_t>()) + " is out of range " + std::to_string(lo) + ".." + std::to_string(hi));
    const int64_t x = v.get<int64_t>();
    if (x < lo || x > hi)
      fail(at(key), std::to_string(x) + " is out of range " + std::to_string(lo) + ".." + std::to_string(hi));
    return x;
  }
  int64_t count(const char* key) const { return integer(key, 0, std::numeric_limits<int64_t>::max()); }
  double num(const char* key) const { return decode_number(get(key), at(key)); }
  // An output bound: null is the infinite bound `none`.
  double bound_or(const char* key, double none) const {
    const json& v = get(key);
    return v.is_null() ? none : decode_number(v, at(key));
  }
  const json& array(const char* key) const {
    const json& v = get(key);
    if (!v.is_array()) fail(at(key), std::string("expected an array, got ") + type_of(v));
    return v;
  }
  Fields object(const char* key) const { return Fields(get(key), at(key), label_); }
  Fields element(const char* key, size_t k) const {
    return Fields(get(key)[k], at(key) + "[" + std::to_string(k) + "]", label_);
  }
  std::vector<std::string> strings(const char* key) const {
    const json& a = array(key);
    std::vector<std::string> out;
    out.reserve(a.size());
    for (size_t k = 0; k < a.size(); ++k) {
      if (!a[k].is_string()) fail(at(key) + "[" + std::to_string(k) + "]", std::string("expected a string, got ") + type_of(a[k]));
      out.push_back(a[k].get<std::string>());
    }
    return out;
  }

 private:
  double decode_number(const json& v, const std::string& where) const {
    if (v.is_number()) return v.get<double>();
    if (v.is_string()) {
      const std::string& s = v.get_ref<const std::string&>();
      if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
      if (s == "Infinity") return kInf;
      if (s == "-Infinity") return -kInf;
    }
    fail(where, std::string("expected a number (or \"NaN\", \"Infinity\", \"-Infinity\"), got ") + type_of(v));
  }

  const json& j_;
  std::string path_;
  const std::string& label_;
};

json column(const ColumnSummary& c) {
  json j = {{"min", number(c.min)}, {"max", number(c.max)}, {"mean", number(c.mean)},
            {"std", number(c.std)}, {"nan", c.nan}, {"inf", c.inf}};
  if (c.below_zero >= 0 && c.below_minus_one >= 0 && c.above_one >= 0) {
    j["below_zero"] = c.below_zero;
    j["below_minus_one"] = c.below_minus_one;
    j["above_one"] = c.above_one;
  }
  return j;
}

ColumnSummary column(const Fields& f) {
  ColumnSummary c;
  c.min = f.num("min");
  c.max = f.num("max");
  c.mean = f.num("mean");
  c.std = f.num("std");
  c.nan = f.count("nan");
  c.inf = f.count("inf");
  if (f.has("below_zero") || f.has("below_minus_one") || f.has("above_one")) {  // all three, or an error
    c.below_zero = f.count("below_zero");
    c.below_minus_one = f.count("below_minus_one");
    c.above_one = f.count("above_one");
  }
  return c;
}

std::vector<ColumnSummary> columns(const Fields& f, const char* key) {
  std::vector<ColumnSummary> out;
  const size_t n = f.array(key).size();
  out.reserve(n);
  for (size_t k = 0; k < n; ++k) out.push_back(column(f.element(key, k)));
  return out;
}

// "label_issue_records" holds the typed issues; "label_issues" the same as sentences, for
// readers from before the records (the key is required there). Nothing reads the
// sentences back.
json label_issue_records(const DataSummary& d) {
  json out = json::array();
  for (const LabelIssueRecord& r : d.label_issues) out.push_back({{"location", r.location}, {"value", number(r.value)}});
  return out;
}

json label_issue_sentences(const DataSummary& d) {
  json out = json::array();
  for (const LabelIssueRecord& r : d.label_issues) out.push_back(label_issue_text(r, d.classes));
  return out;
}

std::vector<LabelIssueRecord> decode_label_issues(const Fields& f) {
  std::vector<LabelIssueRecord> out;
  if (!f.has("label_issue_records")) {
    // Older traces list the issues as sentences only; their values are not parsed back.
    if (!f.strings("label_issues").empty())
      f.fail(f.at("label_issues"), "this trace, from an older deeplocalize, lists its invalid labels as text only "
                                   "(no label_issue_records): train again with --trace to analyse it");
    return out;
  }
  const size_t n = f.array("label_issue_records").size();
  out.reserve(n);
  for (size_t k = 0; k < n; ++k) {
    const Fields e = f.element("label_issue_records", k);
    out.push_back({e.str("location"), e.num("value")});
  }
  return out;
}

json encode_data(const DataSummary& d) {
  json feature_columns = json::array(), target_columns = json::array();
  for (const ColumnSummary& c : d.feature_columns) feature_columns.push_back(column(c));
  for (const ColumnSummary& c : d.target_columns) target_columns.push_back(column(c));
  return {{"source", d.source}, {"rows", d.rows}, {"features", d.features},
          {"feature_columns", feature_columns}, {"all_features", column(d.all_features)},
          {"target_columns", target_columns}, {"classes", d.classes},
          {"targets_are_classes", d.targets_are_classes}, {"targets_integer", d.targets_integer},
          {"label_issues", label_issue_sentences(d)}, {"label_issue_records", label_issue_records(d)},
          {"label_issue_count", d.label_issue_count}};
}

DataSummary decode_data(const Fields& f) {
  DataSummary d;
  d.source = f.str("source");
  d.rows = f.count("rows");
  d.features = f.count("features");
  d.feature_columns = columns(f, "feature_columns");
  d.all_features = column(f.object("all_features"));
  d.target_columns = columns(f, "target_columns");
  d.classes = f.count("classes");
  d.targets_are_classes = f.flag("targets_are_classes");
  d.targets_integer = f.flag("targets_integer");
  d.label_issues = decode_label_issues(f);
  d.label_issue_count = f.count("label_issue_count");
  return d;
}

json encode_probe(const Probe& p) {
  const OpDescription& o = p.op;
  json op = {{"role", o.role}, {"linear", o.linear}, {"out_lo", bound(o.out_lo)},
             {"out_hi", bound(o.out_hi)}, {"has_dead_zone", o.has_dead_zone},
             {"saturates", o.saturates}, {"normalizes", o.normalizes}, {"units", o.units}};
  if (o.drop_rate > 0) op["drop_rate"] = o.drop_rate;  // absent (0) in traces of older versions
  if (o.sample_size > 0) op["sample_size"] = o.sample_size;
  // Recurrent and embedding traits absent at their defaults (older traces).
  if (o.recurrent) op["recurrent"] = true;
  if (!o.bounded_state) op["bounded_state"] = false;
  if (o.embedding) op["embedding"] = true;
  json out = {{"kind", probe_kind_name(p.kind)}, {"layer", p.layer}, {"step", p.step},
              {"node", p.node}, {"op_type", p.op_type}, {"op", std::move(op)}};
  if (p.kind == ProbeKind::kFeature) out["feature"] = op_feature_name(p.feature);
  return out;
}

Probe decode_probe(const Fields& f, int64_t layer_count) {
  Probe p;
  const std::string kind = f.str("kind");
  bool known = false;
  for (ProbeKind k : kProbeKinds)
    if (kind == probe_kind_name(k)) p.kind = k, known = true;
  if (!known) f.fail(f.at("kind"), "unknown probe kind '" + kind + "'");
  if (p.kind == ProbeKind::kFeature) {
    const std::string feature = f.str("feature");
    if (!op_feature_from_name(feature, p.feature)) f.fail(f.at("feature"), "unknown op feature '" + feature + "'");
  }
  p.layer = static_cast<int>(f.integer("layer", -1, layer_count - 1));
  p.step = static_cast<int>(f.integer("step", -1, std::numeric_limits<int>::max()));
  p.node = f.str("node");
  p.op_type = f.str("op_type");
  const Fields o = f.object("op");
  p.op.role = o.str("role");
  p.op.linear = o.flag("linear");
  p.op.out_lo = o.bound_or("out_lo", -kInf);
  p.op.out_hi = o.bound_or("out_hi", kInf);
  p.op.has_dead_zone = o.flag("has_dead_zone");
  p.op.saturates = o.flag("saturates");
  p.op.normalizes = o.flag("normalizes");
  p.op.units = o.count("units");
  if (o.has("sample_size")) p.op.sample_size = o.count("sample_size");
  if (o.has("recurrent")) p.op.recurrent = o.flag("recurrent");
  if (o.has("bounded_state")) p.op.bounded_state = o.flag("bounded_state");
  if (o.has("embedding")) p.op.embedding = o.flag("embedding");
  if (o.has("drop_rate")) {
    p.op.drop_rate = o.num("drop_rate");
    if (!(p.op.drop_rate >= 0 && p.op.drop_rate < 1)) o.fail(o.at("drop_rate"), "must be in [0, 1)");
  }
  return p;
}

}  // namespace

json encode(const Trace& t, int format_version) {
  const TraceHeader& h = t.header;
  json layers = json::array(), probes = json::array(), inits = json::array(), epochs = json::array();
  for (const LayerInfo& l : h.layers)
    layers.push_back({{"index", l.index}, {"nodes", l.nodes}, {"op_types", l.op_types},
                      {"params", l.params}, {"param_count", l.param_count}, {"feeds", l.feeds}});
  for (const Probe& p : h.probes) probes.push_back(encode_probe(p));
  for (const InitializerSummary& i : h.initializers)
    inits.push_back({{"name", i.name}, {"count", i.count}, {"min", number(i.min)}, {"max", number(i.max)},
                     {"mean", number(i.mean)}, {"std", number(i.std)}, {"nan", i.nan}, {"inf", i.inf}});
  for (const EpochRecord& e : t.epochs)
    epochs.push_back({{"epoch", e.epoch}, {"loss", number(e.loss)}, {"metric", number(e.metric)},
                      {"has_validation", e.has_validation}, {"val_loss", number(e.val_loss)},
                      {"val_metric", number(e.val_metric)}});
  return {{"version", format_version}, {"model", h.model}, {"data", h.data}, {"config", h.config},
          {"metric_name", h.metric_name}, {"metric_higher_is_better", h.metric_higher_is_better},
          {"output_width", h.output_width}, {"batches_per_epoch", h.batches_per_epoch},
          {"stride", t.stride()}, {"probe_every", t.probe_every()}, {"complete", t.complete},
          {"record_count", t.records.size()}, {"probe_count", h.probes.size()},
          {"loss_count", t.loss.size()}, {"layers", layers}, {"probes", probes},
          {"initializers", inits}, {"data_summary", encode_data(h.data_summary)}, {"epochs", epochs}, {"notes", h.notes}};
}

Counts decode(const json& j, int format_version, const std::string& label, Trace& t) {
  const Fields f(j, "", label);
  TraceHeader& h = t.header;
  const int64_t version = f.integer("version", 0, std::numeric_limits<int>::max());
  if (version != format_version)
    f.fail("version", "header version " + std::to_string(version) + " disagrees with the magic line's version " +
                          std::to_string(format_version));
  h.version = format_version;
  h.model = f.str("model");
  h.data = f.str("data");
  const json& config = f.get("config");
  if (!config.is_object()) f.fail("config", std::string("expected an object, got ") + type_of(config));
  for (auto it = config.begin(); it != config.end(); ++it) {
    if (!it.value().is_string()) f.fail("config." + it.key(), std::string("expected a string, got ") + type_of(it.value()));
    h.config[it.key()] = it.value().get<std::string>();
  }
  h.metric_name = f.str("metric_name");
  h.metric_higher_is_better = f.flag("metric_higher_is_better");
  h.output_width = f.count("output_width");
  h.batches_per_epoch = f.count("batches_per_epoch");
  t.set_stride(f.integer("stride", 1, kMaxInterval));
  t.set_probe_every(f.integer("probe_every", 1, kMaxInterval));
  t.complete = f.flag("complete");

  const size_t layer_count = f.array("layers").size();
  for (size_t k = 0; k < layer_count; ++k) {
    const Fields l = f.element("layers", k);
    LayerInfo info;
    info.index = static_cast<int>(l.integer("index", 0, std::numeric_limits<int>::max()));
    if (info.index != static_cast<int>(k))
      l.fail(l.at("index"), "layer " + std::to_string(info.index) + " is at position " + std::to_string(k) +
                                " (layers must be listed in index order from 0)");
    info.nodes = l.strings("nodes");
    info.op_types = l.strings("op_types");
    info.params = l.strings("params");
    info.param_count = l.count("param_count");
    if (l.has("feeds"))
      info.feeds = static_cast<int>(l.integer("feeds", LayerInfo::kFeedsUnknown, std::numeric_limits<int>::max()));
    h.layers.push_back(std::move(info));
  }
  const size_t probe_count = f.array("probes").size();
  for (size_t k = 0; k < probe_count; ++k)
    h.probes.push_back(decode_probe(f.element("probes", k), static_cast<int64_t>(layer_count)));
  const size_t init_count = f.array("initializers").size();
  for (size_t k = 0; k < init_count; ++k) {
    const Fields i = f.element("initializers", k);
    InitializerSummary s;
    s.name = i.str("name");
    s.count = i.count("count");
    s.min = i.num("min");
    s.max = i.num("max");
    s.mean = i.num("mean");
    s.std = i.num("std");
    s.nan = i.count("nan");
    s.inf = i.count("inf");
    h.initializers.push_back(std::move(s));
  }
  h.data_summary = decode_data(f.object("data_summary"));
  if (f.has("notes")) h.notes = f.strings("notes");  // absent in traces written before the notes
  const size_t epoch_count = f.array("epochs").size();
  for (size_t k = 0; k < epoch_count; ++k) {
    const Fields e = f.element("epochs", k);
    EpochRecord r;
    r.epoch = e.count("epoch");
    r.loss = e.num("loss");
    r.metric = e.num("metric");
    r.has_validation = e.flag("has_validation");
    r.val_loss = e.num("val_loss");
    r.val_metric = e.num("val_metric");
    t.epochs.push_back(r);
  }

  Counts c;
  c.records = f.count("record_count");
  c.probes = f.count("probe_count");
  c.iterations = f.count("loss_count");
  if (c.probes != static_cast<int64_t>(probe_count))
    f.fail("probe_count", std::to_string(c.probes) + " disagrees with the " + std::to_string(probe_count) +
                              " entries of probes");
  return c;
}

}  // namespace dl::an::trace_json
