// Batch scoring of verified fixes (cli/batch_fixes.cpp): whether a repair confirmed the
// first diagnosis, its root cause and its layer, per case and over the batch.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "cli/batch_scoring.h"

using nlohmann::json;

namespace {

json fix(const char* cause, bool verified) {
  return {{"change", std::string("repair of ") + cause}, {"root_cause", cause}, {"verified", verified},
          {"after", {{"loss", 0.1}, {"accuracy", 0.9}}}, {"seconds", 0.5}};
}

json report(json finding) {
  return {{"verdict", "fault"},
          {"findings", json::array({finding})},
          {"training", {{"loss", {1.0}}, {"accuracy", {0.5}}}},
          {"timing", {{"fixes_s", 1.0}}}};
}

}  // namespace

TEST_CASE("batch fixes: a verified repair of the first root cause and layer confirms both") {
  const json f = {{"symptom", "dead_units"}, {"root_cause", "initialization"},
                  {"layer", {{"index", 0}, {"name", "/0/Gemm"}, {"nodes", {"/0/Gemm"}}}},
                  {"fixes", {fix("initialization", true), fix("learning_rate", false)}},
                  {"repair_localization", {{"status", "confirmed"}}}};
  const json r = dl::cli::fix_record(report(f), {{"root_causes", {"initialization"}}});
  CHECK(r["verified"] == true);
  CHECK(r["first_root_cause"] == "initialization");
  CHECK(r["first_root_cause_confirmed"] == true);
  CHECK(r["localization"] == "confirmed");
  CHECK(r["root_cause_matches"] == true);
}

TEST_CASE("batch fixes: a root cause corrected by another cause's repair is not a confirmation of the first") {
  // verify_fixes rewrote root_cause to the verified repair's and kept the guess in evidence.
  const json f = {{"symptom", "loss_plateau"}, {"root_cause", "learning_rate"},
                  {"evidence", {{"root_cause_before_fixes", "training_length"}}},
                  {"layer", nullptr},
                  {"fixes", {fix("learning_rate", true), fix("training_length", false)}},
                  {"repair_localization", {{"status", "not_layer"}}}};
  const json r = dl::cli::fix_record(report(f), {{"root_causes", {"learning_rate"}}});
  CHECK(r["verified"] == true);
  CHECK(r["first_root_cause"] == "training_length");
  CHECK(r["first_root_cause_confirmed"] == false);
  CHECK(r["localization"] == "not_layer");
}

TEST_CASE("batch fixes: totals count confirmations over detected faults, layers over those with a layer") {
  const json with_layer = {{"index", 1}, {"name", "/2/Gemm"}, {"nodes", {"/2/Gemm"}}};
  auto c = [&](bool detected, json layer, json fix_rec) {
    return json{{"name", "c"}, {"kind", "buggy"}, {"pair", nullptr}, {"primary", {{"layer", layer}}},
                {"scores", {{"detected", detected}}}, {"fix", fix_rec}};
  };
  auto rec = [](bool verified, bool guess, const char* loc) {
    return json{{"verified", verified}, {"first_root_cause_confirmed", guess}, {"localization", loc},
                {"root_cause_matches", guess}, {"seconds", 1.0}, {"after", nullptr}};
  };
  const json cases = {c(true, with_layer, rec(true, true, "confirmed")),
                      c(true, with_layer, rec(true, false, "not_layer")),
                      c(true, nullptr, rec(true, true, "not_layer")),
                      c(true, nullptr, rec(false, false, "unconfirmed")),
                      c(false, with_layer, rec(true, true, "confirmed"))};  // not detected: not counted
  const json t = dl::cli::fix_totals(cases);
  CHECK(t["faults_with_trials"] == 4);
  CHECK(t["verified"] == 3);
  CHECK(t["first_root_cause_confirmed"] == 2);
  CHECK(t["primary_with_layer"] == 2);
  CHECK(t["layer_confirmed"] == 1);
}
