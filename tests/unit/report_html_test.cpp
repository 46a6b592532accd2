// The HTML report (analysis/report_html): well-formed XML, self-contained, the verdict
// and the faulty layer highlighted; the SVG charts' downsampling; the --verbose layer
// table; the report file format chosen from the file name.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "analysis/layer_stats.h"
#include "analysis/report_html.h"
#include "analysis/svg_chart.h"
#include "cli/output.h"
#include "trace_builder.h"

namespace {

using namespace dl::an;

// A tiny XML well-formedness checker: balanced tags, quoted attributes without
// duplicates or '<', known entities, valid UTF-8, one root element.
struct Element {
  std::string name;
  std::map<std::string, std::string> attrs;
};

struct Xml {
  std::string error;
  std::vector<Element> elements;  // in document order
  const Element* by_id(const std::string& id) const {
    for (const Element& e : elements)
      if (e.attrs.count("id") && e.attrs.at("id") == id) return &e;
    return nullptr;
  }
  size_t count(const std::string& name) const {
    size_t n = 0;
    for (const Element& e : elements) n += e.name == name;
    return n;
  }
};

bool name_char(char c, bool first) {
  const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
  return first ? alpha : alpha || (c >= '0' && c <= '9') || c == '-' || c == '.';
}

bool valid_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    if (len == 1 && c < 0x20 && c != '\n' && c != '\t' && c != '\r') return false;
    i += len;
  }
  return true;
}

// Checks the entities of text or an attribute value.
bool entities_ok(const std::string& s, std::string& error) {
  for (size_t i = s.find('&'); i != std::string::npos; i = s.find('&', i + 1)) {
    const size_t end = s.find(';', i);
    const std::string e = end == std::string::npos ? s.substr(i, 12) : s.substr(i + 1, end - i - 1);
    bool ok = end != std::string::npos && (e == "amp" || e == "lt" || e == "gt" || e == "quot" || e == "apos");
    if (!ok && end != std::string::npos && e.size() > 1 && e[0] == '#') {
      const bool hex = e[1] == 'x';
      ok = e.size() > (hex ? 2u : 1u) &&
           e.find_first_not_of(hex ? "0123456789abcdefABCDEF" : "0123456789", hex ? 2 : 1) == std::string::npos;
    }
    if (!ok) return error = "bad entity near '" + s.substr(i, 16) + "'", false;
  }
  return true;
}

Xml parse_xml(const std::string& s) {
  Xml x;
  if (!valid_utf8(s)) return x.error = "invalid UTF-8 or control character", x;
  std::vector<std::string> stack;
  size_t roots = 0, i = 0;
  const auto ws = [&] { while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i; };
  const auto name = [&] {
    const size_t from = i;
    while (i < s.size() && name_char(s[i], i == from)) ++i;
    return s.substr(from, i - from);
  };
  ws();
  if (s.compare(i, 9, "<!DOCTYPE") == 0) i = s.find('>', i) + 1;
  while (i < s.size() && x.error.empty()) {
    if (s[i] != '<') {
      const size_t end = std::min(s.find('<', i), s.size());
      const std::string text = s.substr(i, end - i);
      if (stack.empty() && text.find_first_not_of(" \t\r\n") != std::string::npos) x.error = "text outside the root";
      if (text.find("]]>") != std::string::npos) x.error = "']]>' in text";
      entities_ok(text, x.error);
      i = end;
      continue;
    }
    if (s.compare(i, 4, "<!--") == 0) {
      const size_t end = s.find("-->", i + 4);
      if (end == std::string::npos) return x.error = "unterminated comment", x;
      i = end + 3;
      continue;
    }
    if (s.compare(i, 2, "</") == 0) {
      i += 2;
      const std::string n = name();
      ws();
      if (i >= s.size() || s[i] != '>') return x.error = "bad end tag </" + n, x;
      ++i;
      if (stack.empty() || stack.back() != n)
        return x.error = "end tag </" + n + "> does not match <" + (stack.empty() ? "" : stack.back()) + ">", x;
      stack.pop_back();
      continue;
    }
    ++i;
    Element e;
    e.name = name();
    if (e.name.empty()) return x.error = "bad tag at offset " + std::to_string(i), x;
    if (stack.empty() && roots++ > 0) return x.error = "second root element <" + e.name + ">", x;
    for (;;) {
      ws();
      if (i >= s.size()) return x.error = "unterminated tag <" + e.name, x;
      if (s.compare(i, 2, "/>") == 0) {
        i += 2;
        break;
      }
      if (s[i] == '>') {
        ++i;
        stack.push_back(e.name);
        break;
      }
      const std::string a = name();
      ws();
      if (a.empty() || i >= s.size() || s[i] != '=') return x.error = "attribute without value in <" + e.name, x;
      ++i;
      ws();
      if (i >= s.size() || (s[i] != '"' && s[i] != '\'')) return x.error = "unquoted attribute " + a, x;
      const char q = s[i++];
      const size_t end = s.find(q, i);
      if (end == std::string::npos) return x.error = "unterminated attribute " + a, x;
      const std::string v = s.substr(i, end - i);
      if (v.find('<') != std::string::npos) return x.error = "'<' in attribute " + a, x;
      if (!entities_ok(v, x.error)) return x;
      if (!e.attrs.emplace(a, v).second) return x.error = "duplicate attribute " + a + " in <" + e.name, x;
      i = end + 1;
    }
    x.elements.push_back(e);
  }
  if (x.error.empty() && !stack.empty()) x.error = "unclosed <" + stack.back() + ">";
  if (x.error.empty() && roots != 1) x.error = "no root element";
  return x;
}

struct Faulty {
  Trace trace;
  Diagnosis diagnosis;
  RunInfo run;
};

// Two dense layers; layer 1's activations blow up from iteration 120, NaN from 130,
// and the loss follows.
Faulty faulty_run() {
  dl::test::TraceBuilder b;
  b.dense("relu", 16).dense("relu", 8).dense("softmax", 3).batches_per_epoch(20);
  Faulty f;
  f.trace = b.build(200);
  Trace& t = f.trace;
  t.header.layers[0].param_count = 80;
  t.header.layers[1].nodes[0] = "/2/Gemm<&\"'>";  // must be escaped
  for (size_t r = 120; r < t.records.size(); ++r) {
    const float grow = std::pow(10.0f, float(r - 119) * 0.5f);
    for (size_t p : {b.forward(1), b.forward(1, false), b.gradient(1)}) {
      TensorStats& s = t.at(r, p);
      s.mean *= grow, s.std *= grow, s.l2 *= grow;
      if (r >= 130) s.nan = 3, s.mean = std::numeric_limits<float>::quiet_NaN();
    }
    if (r >= 130) t.loss[r] = std::numeric_limits<float>::quiet_NaN();
  }
  Finding primary;
  primary.symptom = "exploding_tensor";
  primary.rule = "exploding_tensor";
  primary.layer = 1;
  primary.epoch = 6, primary.iteration = 120;
  primary.root_cause = RootCause::kLearningRate;
  primary.message = "the output of layer 1 grows by 10x per iteration <fast> & unbounded";
  primary.recommendation = "Lower the learning rate to 0.001.";
  primary.evidence = {{"growth", 10.0}, {"max", 1e30}, {"note", "a \"quoted\" <value>"}};
  Finding nan_loss;
  nan_loss.symptom = "nan_loss";
  nan_loss.stage = Stage::kLoss;
  nan_loss.iteration = 130;
  nan_loss.root_cause = RootCause::kLearningRate;
  nan_loss.message = "the loss is NaN";
  nan_loss.consequence_of = 0;
  Finding nan_layer2 = nan_loss;
  nan_layer2.symptom = "nan_forward";
  nan_layer2.layer = 2;
  nan_layer2.message = "the output of layer 2 holds NaN";
  Finding warning;
  warning.symptom = "unnormalized_inputs";
  warning.stage = Stage::kStatic;
  warning.root_cause = RootCause::kData;
  warning.message = "feature 3 spans 0..5000";
  warning.recommendation = "Standardise the inputs.";
  warning.conclusive = false;
  f.diagnosis.fault = true;
  f.diagnosis.findings = {primary, nan_loss, nan_layer2};
  f.diagnosis.warnings = {warning};
  f.run.tool_version = "0.1.0";
  f.run.model = "models/x/model.onnx";
  f.run.data = "models/x/data.csv";
  f.run.iterations = 200, f.run.epochs = 10;
  for (int e = 0; e < 10; ++e) f.run.epoch_loss.push_back(1.0 / (e + 1)), f.run.epoch_metric.push_back(0.5);
  f.run.train_s = 1.5;
  return f;
}

}  // namespace

TEST_CASE("html report: well-formed, self-contained, verdict and faulty layer highlighted") {
  const Faulty f = faulty_run();
  const std::string html = report_html(f.diagnosis, f.trace, f.run);
  const Xml x = parse_xml(html);
  REQUIRE_MESSAGE(x.error.empty(), x.error);
  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(x.elements.front().name == "html");
  // Self-contained: no URL, script, external resource.
  CHECK(html.find("http") == std::string::npos);
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("src=") == std::string::npos);
  CHECK(html.find("url(") == std::string::npos);
  CHECK(html.find("@import") == std::string::npos);
  // Verdict and primary finding, escaped.
  CHECK(html.find(">FAULT<") != std::string::npos);
  CHECK(html.find("grows by 10x per iteration &lt;fast&gt; &amp; unbounded") != std::string::npos);
  CHECK(html.find("<strong>Fix:</strong> Lower the learning rate to 0.001.") != std::string::npos);
  CHECK(html.find("learning_rate") != std::string::npos);
  CHECK(html.find("a &quot;quoted&quot; &lt;value&gt;") != std::string::npos);
  CHECK(html.find("/2/Gemm&lt;&amp;&quot;&#39;&gt;") != std::string::npos);
  CHECK(html.find("iteration 120 (epoch 6)") != std::string::npos);
  // Charts: two curves and five small multiples per layer (some may be placeholders).
  CHECK(x.count("svg") >= 2 + 3 * 3);
  CHECK(html.find("first failure: iteration 120") != std::string::npos);
  CHECK(html.find(">log<") != std::string::npos);  // the update ratio's scale
  CHECK(html.find("NaN/Inf") != std::string::npos);
  // The faulty layer's row is framed; the others are not.
  const Element* row1 = x.by_id("layer-1");
  REQUIRE(row1 != nullptr);
  CHECK(row1->attrs.at("class").find("primary") != std::string::npos);
  REQUIRE(x.by_id("layer-0") != nullptr);
  CHECK(x.by_id("layer-0")->attrs.at("class").find("primary") == std::string::npos);
  CHECK(x.by_id("layer-2")->attrs.at("class").find("consequence") != std::string::npos);
  // Layer table statuses, other findings and warnings.
  CHECK(html.find(">fault (primary)<") != std::string::npos);
  CHECK(html.find(">consequence<") != std::string::npos);
  CHECK(html.find("consequence of #1") != std::string::npos);
  CHECK(html.find("feature 3 spans 0..5000") != std::string::npos);
  CHECK(html.find("Timing") != std::string::npos);
}

TEST_CASE("html report: healthy, empty and hostile inputs stay well-formed") {
  dl::test::TraceBuilder b;
  b.dense("tanh", 8).dense("sigmoid", 1);
  const Trace healthy = b.build(50);
  RunInfo run;
  run.model = "m.onnx";
  run.iterations = 50;
  const std::string ok = report_html(Diagnosis{}, healthy, run);
  const Xml x = parse_xml(ok);
  REQUIRE_MESSAGE(x.error.empty(), x.error);
  CHECK(ok.find(">OK<") != std::string::npos);
  for (const Element& e : x.elements)
    if (e.attrs.count("class")) CHECK(e.attrs.at("class").find("primary") == std::string::npos);
  CHECK(first_failure_iteration(Diagnosis{}, healthy) == -1);

  const std::string empty = report_html(Diagnosis{}, Trace{}, RunInfo{});
  CHECK_MESSAGE(parse_xml(empty).error.empty(), parse_xml(empty).error);

  RunInfo hostile;
  hostile.model = std::string("bad\xff\xfe name\x01 ]]> <!-- & ") + "\xed\xa0\x80";
  hostile.metric_name = "<m>";
  Faulty f = faulty_run();
  f.diagnosis.findings[0].symptom = "<script>alert(1)</script>";
  f.trace.header.notes = {"the graph input '<b>x</b>' & co has a fixed batch"};
  const std::string h = report_html(f.diagnosis, f.trace, hostile);
  CHECK_MESSAGE(parse_xml(h).error.empty(), parse_xml(h).error);
  CHECK(h.find("<script") == std::string::npos);
  CHECK(h.find("Notes about the model") != std::string::npos);
  CHECK(h.find("<b>x") == std::string::npos);
}

TEST_CASE("svg charts: downsampling keeps spikes and at most 400 points; NaN spans; log scale") {
  std::vector<double> x, y;
  for (int i = 0; i < 100000; ++i) x.push_back(i), y.push_back(1.0 + 0.01 * std::sin(i));
  y[54321] = 1e4;   // a spike
  y[70000] = -5;    // a dip
  y[80000] = std::numeric_limits<double>::quiet_NaN();
  const svg::Downsampled d = svg::downsample(x, y, 400);
  CHECK(d.x.size() <= 400);
  CHECK(std::find(d.y.begin(), d.y.end(), 1e4) != d.y.end());
  CHECK(std::find(d.y.begin(), d.y.end(), -5.0) != d.y.end());
  REQUIRE(d.bad.size() == 1);
  CHECK(d.bad[0].first == 80000);

  svg::Series s;
  s.x = x, s.y = y;
  svg::ChartOptions o;
  o.mark_x = 50000;
  o.mark_label = "first failure";
  const std::string c = svg::chart({s}, o);
  CHECK(parse_xml(c).error.empty());
  size_t points = 0;
  for (char ch : c.substr(c.find(" d=\""))) {
    if (ch == '"' && points > 0) break;
    points += ch == 'M' || ch == 'L';
  }
  CHECK(points <= 400);
  CHECK(points > 100);
  CHECK(c.find("first failure") != std::string::npos);
  CHECK(c.find("fill-opacity") != std::string::npos);  // the NaN span

  svg::Series wide;
  wide.x = {0, 1, 2, 3};
  wide.y = {1e-6, 1e-3, 1, 10};
  CHECK(svg::uses_log_scale({wide}, svg::Scale::kAuto));
  wide.y = {1, 2, 3, 4};
  CHECK_FALSE(svg::uses_log_scale({wide}, svg::Scale::kAuto));
  CHECK(svg::uses_log_scale({wide}, svg::Scale::kLog));
  CHECK(svg::escape("a<b>&\"'\x01") == "a&lt;b&gt;&amp;&quot;&#39;\xEF\xBF\xBD");
}

TEST_CASE("verbose layer table and layer status") {
  const Faulty f = faulty_run();
  const std::vector<std::string> st = layer_status(f.diagnosis, f.trace);
  REQUIRE(st.size() == 3);
  CHECK(st[0] == "ok");
  CHECK(st[1] == "fault (primary)");
  CHECK(st[2] == "consequence");
  const std::string plain = report_layer_stats(f.diagnosis, f.trace, false);
  CHECK(plain.find("Per-layer statistics at iteration 199") != std::string::npos);
  CHECK(plain.find("fault (primary) (NaN/Inf)") != std::string::npos);
  CHECK(plain.find("\x1b[") == std::string::npos);
  CHECK(report_layer_stats(f.diagnosis, f.trace, true).find("\x1b[") != std::string::npos);
  CHECK(report_layer_stats(Diagnosis{}, Trace{}, false).empty());
}

TEST_CASE("report file format from the file name") {
  using dl::cli::report_file_format;
  CHECK(report_file_format("text", "out.html") == "html");
  CHECK(report_file_format("text", "OUT.HTM") == "html");
  CHECK(report_file_format("json", "r.html") == "html");
  CHECK(report_file_format("html", "r.txt") == "html");
  CHECK(report_file_format("json", "r.json") == "json");
  CHECK(report_file_format("text", "") == "text");
}

TEST_CASE("the test's XML checker rejects malformed markup") {
  CHECK(parse_xml("<a><b/>x &amp; y&#39;&#x41;</a>").error.empty());
  CHECK_FALSE(parse_xml("<a><b></a></b>").error.empty());
  CHECK_FALSE(parse_xml("<a x=1/>").error.empty());
  CHECK_FALSE(parse_xml("<a x='1' x='2'/>").error.empty());
  CHECK_FALSE(parse_xml("<a>&nbsp;</a>").error.empty());
  CHECK_FALSE(parse_xml("<a>x & y</a>").error.empty());
  CHECK_FALSE(parse_xml("<a><br></a>").error.empty());
  CHECK_FALSE(parse_xml("<a/><b/>").error.empty());
  CHECK_FALSE(parse_xml("<a>\xff</a>").error.empty());
}
