#include "cli/batch_outputs.h"

#include "cli/batch_scoring.h"
#include "io/text_escape.h"

#include <cstdio>

namespace dl::cli {
namespace {

using nlohmann::json;

json field(const json& r, const char* key) { return r.is_object() && r.contains(key) ? r[key] : json(); }
// Every string of a summary comes from a manifest, a model or a message quoting them:
// made visible here (io/text_escape.h), once for the terminal, JUnit and Markdown alike.
std::string text(const json& r, const char* key) {
  const json v = field(r, key);
  return v.is_string() ? io::visible(v.get<std::string>()) : "";
}
int64_t integer(const json& r, const char* key) {
  const json v = field(r, key);
  return v.is_number() ? v.get<int64_t>() : 0;
}

std::string fixed(double v, int digits) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string ratio(int64_t a, int64_t b) {
  if (b == 0) return "n/a";
  return std::to_string(a) + "/" + std::to_string(b) + " (" + std::to_string((200 * a + b) / (2 * b)) + "%)";
}

// "input error: ...", "crashed: SIGSEGV", "timeout after 5 s", or the verdict.
std::string verdict_text(const json& r) {
  const std::string status = text(r, "status");
  if (status == "input_error") return "input error: " + text(r, "error");
  if (status == "crashed" || status == "timeout") return text(r, "error");
  return text(r, "verdict");
}

std::string layer_text(const json& primary, const char* quote) {
  const json layer = field(primary, "layer");
  if (!layer.is_object()) return "no layer";
  std::string s = "layer " + std::to_string(integer(layer, "index"));
  const json nodes = field(layer, "nodes");
  if (!nodes.is_array() || nodes.empty()) return s;
  s += " (";
  for (size_t k = 0; k < nodes.size(); ++k)
    s += (k ? ", " : "") + std::string(quote) + (nodes[k].is_string() ? io::visible(nodes[k].get<std::string>()) : "") +
         quote;
  return s + ")";
}

// "fault: detected, localized, WRONG root cause" / "ok: FALSE ALARM"; "" without expectation.
std::string expectation_text(const json& r) {
  const json e = field(r, "expected"), s = field(r, "scores");
  if (!e.is_object()) return "";
  if (field(e, "fault") != json(true))
    return std::string("no fault: ") + (field(s, "false_alarm") == json(true) ? "FALSE ALARM" : "ok");
  if (field(s, "detected") != json(true)) return "fault: MISSED";
  std::string out = "fault: detected";
  if (!field(s, "localized").is_null()) out += field(s, "localized") == json(true) ? ", localized" : ", NOT localized";
  if (!field(s, "root_cause").is_null())
    out += field(s, "root_cause") == json(true) ? ", root cause ok" : ", WRONG root cause";
  return out;
}

bool passed(const json& r) { return field(field(r, "scores"), "as_expected") == json(true); }

std::string pad(std::string s, size_t width) {
  if (s.size() < width) s.resize(width, ' ');
  return s;
}

std::string md_cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\|";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '\n' || c == '\r') out += ' ';
    else out += c;
  }
  return out;
}

// "16/19 (84%, 95% CI 62-94%)": a rate with its Wilson interval (batch_scoring.h).
std::string rate_with_interval(int64_t a, int64_t b) {
  if (b == 0) return "n/a";
  const auto [lo, hi] = wilson_interval(a, b);
  const auto pct = [](double v) { return std::to_string(static_cast<int>(std::lround(100 * v))); };
  return std::to_string(a) + "/" + std::to_string(b) + " (" + pct(double(a) / double(b)) + "%, 95% CI " + pct(lo) + "-" +
         pct(hi) + "%)";
}

std::string scores_line(const json& t) {
  return "detected " + rate_with_interval(integer(t, "detected"), integer(t, "faulty")) + ", localized " +
         rate_with_interval(integer(t, "localized"), integer(t, "localizable")) + ", root cause " +
         rate_with_interval(integer(t, "root_cause"), integer(t, "root_cause_cases")) + ", false alarms " +
         rate_with_interval(integer(t, "false_alarms"), integer(t, "non_faulty"));
}

std::string median_text(const json& t) {
  const json m = field(t, "median_time_to_verdict_s");
  return m.is_number() ? fixed(m.get<double>(), 2) + " s" : "n/a";
}

}  // namespace

std::string xml_escape(const std::string& s) { return io::xml_escape(s); }

std::string case_line(const json& r, size_t position, size_t count, size_t name_width, bool color) {
  const std::string digits = std::to_string(count);
  std::string pos = std::to_string(position);
  pos = std::string(digits.size() - std::min(digits.size(), pos.size()), ' ') + pos;
  std::string verdict = verdict_text(r);
  const bool ok_status = text(r, "status") == "ok";
  std::string shown = ok_status ? pad(verdict == "fault" ? "FAULT" : verdict, 5) : verdict;
  if (color) shown = std::string(!ok_status ? "\x1b[1;33m" : verdict == "fault" ? "\x1b[1;31m" : "\x1b[1;32m") + shown + "\x1b[0m";
  std::string line = "[" + pos + "/" + digits + "] " + pad(text(r, "name"), name_width) + "  " + shown;
  const json primary = field(r, "primary");
  if (primary.is_object())
    line += "  " + pad(layer_text(primary, ""), 30) + "  " + pad(text(primary, "root_cause"), 15);
  else if (ok_status)
    line += std::string(2 + 30 + 2 + 15, ' ');  // keeps the expectation column aligned
  const std::string e = expectation_text(r);
  if (!e.empty()) line += "  [expected " + e + "]";
  return line + "  " + fixed(field(r, "seconds").is_number() ? field(r, "seconds").get<double>() : 0.0, 2) + " s\n";
}

std::string summary_text(const json& s) {
  const json t = field(s, "totals"), shard = field(s, "shard");
  const int64_t cases = integer(t, "cases");
  std::string out = "\nSummary: " + std::to_string(cases) + " case" + (cases == 1 ? "" : "s");
  if (shard.is_object())
    out += " (shard " + std::to_string(integer(shard, "index")) + "/" + std::to_string(integer(shard, "count")) +
           " of " + std::to_string(integer(s, "total_cases")) + ")";
  out += ", detector " + text(s, "detector") + "\n";
  out += "  ran " + std::to_string(integer(t, "ran")) + ", faults found in " + std::to_string(integer(t, "faults"));
  for (const auto& [key, label] : {std::pair{"input_errors", "input error"}, {"crashed", "crashed"}, {"timeouts", "timeout"}}) {
    const int64_t n = integer(t, key);
    if (n > 0) out += ", " + std::to_string(n) + " " + label + (n > 1 && key[0] != 'c' ? "s" : "");
  }
  out += "\n";
  if (integer(t, "with_expectation") > 0) out += "  scores: " + scores_line(t) + "\n";
  if (const json splits = field(t, "splits"); splits.is_object())
    for (auto it = splits.begin(); it != splits.end(); ++it)
      if (integer(it.value(), "with_expectation") > 0)
        out += "  " + it.key() + " (" + std::to_string(integer(it.value(), "cases")) + " cases): " +
               scores_line(it.value()) + "\n";
  if (const json f = field(t, "fixes"); f.is_object()) {
    out += "  verified fixes: " + std::to_string(integer(f, "verified")) + " of " +
           std::to_string(integer(f, "faults_with_trials")) + " detected faults (" +
           std::to_string(integer(f, "root_cause_matches")) + " confirm an accepted root cause; " +
           std::to_string(integer(f, "within_10pct_of_fixed")) + " of " + std::to_string(integer(f, "compared_with_fixed")) +
           " within 10% of the fixed version), median extra time " +
           fixed(field(f, "median_extra_s").is_number() ? f["median_extra_s"].get<double>() : 0.0, 2) + " s\n";
    out += "  confirmed by a repair: the first root cause in " + std::to_string(integer(f, "first_root_cause_confirmed")) +
           " of " + std::to_string(integer(f, "faults_with_trials")) + ", the layer in " +
           std::to_string(integer(f, "layer_confirmed")) + " of " + std::to_string(integer(f, "primary_with_layer")) +
           " with a layer\n";
  }
  out += "  median time to verdict " + median_text(t) + ", wall " +
         fixed(field(s, "wall_s").is_number() ? field(s, "wall_s").get<double>() : 0.0, 1) + " s\n";
  out += "  " + std::to_string(integer(t, "as_expected")) + " of " + std::to_string(cases) + " as expected" +
         (integer(t, "with_expectation") < cases ? " (a case without an expected result passes when no fault is found)" : "") + "\n";
  return out;
}

std::string junit_xml(const json& s) {
  const json t = field(s, "totals"), cases = field(s, "cases");
  int failures = 0, errors = 0;
  double time = 0;
  for (const json& r : cases) {
    if (text(r, "status") != "ok") ++errors;
    else if (!passed(r)) ++failures;
    if (field(r, "seconds").is_number()) time += field(r, "seconds").get<double>();
  }
  const std::string counts = " tests=\"" + std::to_string(cases.size()) + "\" failures=\"" + std::to_string(failures) +
                             "\" errors=\"" + std::to_string(errors) + "\" time=\"" + fixed(time, 3) + "\"";
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"deeplocalize\"" + counts + ">\n";
  out += "  <testsuite name=\"" + xml_escape("deeplocalize batch " + text(s, "input")) + "\"" + counts + " skipped=\"0\">\n";
  out += "    <properties>\n      <property name=\"detector\" value=\"" + xml_escape(text(s, "detector")) + "\"/>\n";
  out += "      <property name=\"version\" value=\"" + xml_escape(text(s, "version")) + "\"/>\n    </properties>\n";
  for (const json& r : cases) {
    const std::string kind = text(r, "kind");
    out += "    <testcase classname=\"" + xml_escape("deeplocalize." + (kind.empty() ? std::string("model") : kind)) +
           "\" name=\"" + xml_escape(text(r, "name")) + "\" file=\"" + xml_escape(text(r, "model")) + "\" time=\"" +
           fixed(field(r, "seconds").is_number() ? field(r, "seconds").get<double>() : 0.0, 3) + "\">\n";
    const json p = field(r, "primary");
    std::string body = "verdict: " + verdict_text(r) + "\n";
    if (p.is_object())
      body += "finding: " + text(p, "message") + "\nsymptom: " + text(p, "symptom") + " (" + text(p, "stage") +
              " stage)\nwhere: " + layer_text(p, "") + "\nroot cause: " + text(p, "root_cause") +
              "\nrecommendation: " + text(p, "recommendation") + "\n";
    const std::string e = expectation_text(r);
    if (!e.empty()) body += "expected " + e + "\n";
    if (text(r, "status") != "ok") {
      out += "      <error type=\"" + xml_escape(text(r, "status")) + "\" message=\"" + xml_escape(verdict_text(r)) +
             "\">" + xml_escape(body) + "</error>\n";
    } else if (!passed(r)) {
      std::string message = p.is_object() ? text(p, "message") + (text(p, "recommendation").empty() ? "" : " Fix: " + text(p, "recommendation"))
                                          : "no fault found, but a fault was expected";
      if (!e.empty()) message += " (expected " + e + ")";
      out += "      <failure type=\"" + xml_escape(p.is_object() ? text(p, "root_cause") : "missed") + "\" message=\"" +
             xml_escape(message) + "\">" + xml_escape(body) + "</failure>\n";
    } else {
      out += "      <system-out>" + xml_escape(body) + "</system-out>\n";
    }
    out += "    </testcase>\n";
  }
  return out + "  </testsuite>\n</testsuites>\n";
}

std::string summary_markdown(const json& s) {
  const json t = field(s, "totals"), cases = field(s, "cases"), shard = field(s, "shard");
  std::string out = "### deeplocalize batch: " + std::to_string(integer(t, "as_expected")) + " of " +
                    std::to_string(integer(t, "cases")) + " as expected\n\n";
  out += "Detector `" + md_cell(text(s, "detector")) + "` on `" + md_cell(text(s, "input")) + "`";
  if (shard.is_object())
    out += ", shard " + std::to_string(integer(shard, "index")) + "/" + std::to_string(integer(shard, "count"));
  out += ": ran " + std::to_string(integer(t, "ran")) + ", faults found in " + std::to_string(integer(t, "faults")) +
         ", input errors " + std::to_string(integer(t, "input_errors")) + ", crashed " +
         std::to_string(integer(t, "crashed")) + ", timeouts " + std::to_string(integer(t, "timeouts")) + ".\n\n";
  if (integer(t, "with_expectation") > 0) {
    out += "| detector | detected | localized | root cause | false alarms | median time to verdict |\n";
    out += "|---|---|---|---|---|---|\n";
    out += "| " + md_cell(text(s, "detector")) + " | " + ratio(integer(t, "detected"), integer(t, "faulty")) + " | " +
           ratio(integer(t, "localized"), integer(t, "localizable")) + " | " +
           ratio(integer(t, "root_cause"), integer(t, "root_cause_cases")) + " | " +
           std::to_string(integer(t, "false_alarms")) + "/" + std::to_string(integer(t, "non_faulty")) + " | " +
           median_text(t) + " |\n";
    if (const json splits = field(t, "splits"); splits.is_object())
      for (auto it = splits.begin(); it != splits.end(); ++it) {
        const json& u = it.value();
        out += "| " + md_cell(text(s, "detector")) + " (" + md_cell(it.key()) + ") | " +
               ratio(integer(u, "detected"), integer(u, "faulty")) + " | " +
               ratio(integer(u, "localized"), integer(u, "localizable")) + " | " +
               ratio(integer(u, "root_cause"), integer(u, "root_cause_cases")) + " | " +
               std::to_string(integer(u, "false_alarms")) + "/" + std::to_string(integer(u, "non_faulty")) + " | " +
               median_text(u) + " |\n";
      }
    out += "\n";
  }
  out += "| | case | kind | verdict | layer | root cause | expected | time (s) |\n";
  out += "|:-:|---|---|---|---|---|---|--:|\n";
  for (const json& r : cases) {
    const json p = field(r, "primary");
    const std::string e = expectation_text(r);
    out += std::string("| ") + (passed(r) ? "\u2705" : text(r, "status") == "ok" ? "\u274C" : "\u26A0\uFE0F") + " | " +
           md_cell(text(r, "name")) + " | " + md_cell(text(r, "kind")) + " | " + md_cell(verdict_text(r)) + " | " +
           (p.is_object() ? md_cell(layer_text(p, "`")) : "") + " | " + (p.is_object() ? md_cell(text(p, "root_cause")) : "") +
           " | " + md_cell(e) + " | " +
           fixed(field(r, "seconds").is_number() ? field(r, "seconds").get<double>() : 0.0, 2) + " |\n";
  }
  if (const std::string fixes = fixes_markdown(cases); !fixes.empty()) out += "\n#### Verified fixes\n\n" + fixes;
  return out;
}

}  // namespace dl::cli
