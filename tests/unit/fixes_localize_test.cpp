// Localization confirmed by repair (analysis/fixes.h: localize_by_repair): which verified
// repair decides, the layer ranking, and the JSON the report carries.
#include <doctest/doctest.h>

#include "analysis/fixes.h"
#include "analysis/report.h"
#include "analysis/report_html_parts.h"
#include "fixes_test_util.h"

using namespace dl;
using Kind = an::FixAction::Kind;
using S = an::RepairLocalization::Status;
using test::fixes::action;

namespace {

an::FixOutcome outcome(std::vector<an::FixAction> actions, bool verified, std::string change = "") {
  an::FixOutcome o;
  o.actions = std::move(actions);
  o.verified = verified;
  o.change = change.empty() ? "repair " + std::to_string(o.actions.size()) : change;
  return o;
}

// The primary finding at `layer` with ranked `fixes` (as verify_fixes leaves it).
an::Finding tried(int layer, std::vector<an::FixOutcome> fixes) {
  an::Finding f = test::fixes::finding("dead_units", an::RootCause::kActivation, layer);
  f.fixes_attempted = true;
  f.fixes = std::move(fixes);
  return f;
}

}  // namespace

TEST_CASE("localize by repair: a verified layer repair on the finding's layer confirms it") {
  const an::Finding f = tried(1, {outcome({action(Kind::kActivation, 1, "LeakyRelu")}, true, "layer 1: LeakyRelu"),
                                  outcome({action(Kind::kLearningRate, -1, "", 0.1)}, true)});
  const an::RepairLocalization r = an::localize_by_repair(f);
  CHECK(r.status == S::kConfirmed);
  CHECK(r.repair == 0);
  REQUIRE(r.ranking.size() == 1);
  CHECK(r.ranking[0].layer == 1);
  CHECK(r.ranking[0].score == doctest::Approx(1));
  const nlohmann::json j = an::to_json(r, f.fixes);
  CHECK(j["status"] == "confirmed");
  CHECK(j["confirmed_by_repair"] == true);
  CHECK(j["layer_blamed"] == true);
  CHECK(j["repair"] == "layer 1: LeakyRelu");
  CHECK(j["layer_ranking"][0] == nlohmann::json{{"layer", 1}, {"score", 1.0}, {"repairs", 1}});
}

TEST_CASE("localize by repair: a repair of the learning rate, data or loss that works blames no layer") {
  for (const an::FixAction& a : {action(Kind::kLearningRate, -1, "", 0.1), action(Kind::kFeatures, -1, "standardize"),
                                 action(Kind::kLoss, -1, "binary_crossentropy"), action(Kind::kTargets)}) {
    CAPTURE(an::fix_kind_name(a.kind));
    // The layer repair failed; the global one is verified (ranked first, as rank_fixes puts it).
    const an::Finding f = tried(2, {outcome({a}, true), outcome({action(Kind::kActivation, 2, "Relu")}, false)});
    const an::RepairLocalization r = an::localize_by_repair(f);
    CHECK(r.status == S::kNotLayer);
    CHECK(r.ranking.empty());
    CHECK(an::to_json(r, f.fixes)["layer_blamed"] == false);
    CHECK(an::to_json(r, f.fixes)["confirmed_by_repair"] == false);
  }
}

TEST_CASE("localize by repair: the best decisive repair decides; the ranking counts every verified layer repair") {
  SUBCASE("a global repair ranked first, a layer repair after it") {
    const an::Finding f = tried(0, {outcome({action(Kind::kLearningRate, -1, "", 0.01)}, true),
                                    outcome({action(Kind::kActivation, 0, "Elu")}, true)});
    const an::RepairLocalization r = an::localize_by_repair(f);
    CHECK(r.status == S::kNotLayer);
    CHECK(r.repair == 0);
    REQUIRE(r.ranking.size() == 1);  // the layer repair worked too: it is in the ranking
    CHECK(r.ranking[0].layer == 0);
  }
  SUBCASE("layer repairs on other layers") {
    const an::Finding f = tried(2, {outcome({action(Kind::kReinitialize, 0, "he_uniform"),
                                             action(Kind::kReinitialize, 1, "he_uniform")}, true),
                                    outcome({action(Kind::kActivation, 1, "Relu")}, true),
                                    outcome({action(Kind::kActivation, 2, "Relu")}, false)});
    const an::RepairLocalization r = an::localize_by_repair(f);
    CHECK(r.status == S::kOtherLayer);
    REQUIRE(r.ranking.size() == 2);
    CHECK(r.ranking[0].layer == 1);  // 0.5 + 1
    CHECK(r.ranking[0].score == doctest::Approx(1.5));
    CHECK(r.ranking[0].repairs == 2);
    CHECK(r.ranking[1].layer == 0);
    CHECK(r.ranking[1].score == doctest::Approx(0.5));
  }
  SUBCASE("a finding without a layer: a layer repair points at another layer") {
    const an::Finding f = tried(-1, {outcome({action(Kind::kActivation, 1, "Sigmoid")}, true)});
    CHECK(an::localize_by_repair(f).status == S::kOtherLayer);
  }
  SUBCASE("a mixed repair alone cannot tell; a later decisive one still decides") {
    const an::FixOutcome mixed =
        outcome({action(Kind::kLearningRate, -1, "", 0.01), action(Kind::kActivation, 0, "LeakyRelu")}, true);
    an::RepairLocalization r = an::localize_by_repair(tried(0, {mixed}));
    CHECK(r.status == S::kMixed);
    CHECK(r.ranking.empty());
    CHECK(an::to_json(r, {mixed})["layer_blamed"].is_null());
    r = an::localize_by_repair(tried(0, {mixed, outcome({action(Kind::kActivation, 0, "LeakyRelu")}, true)}));
    CHECK(r.status == S::kConfirmed);
    CHECK(r.repair == 1);
  }
}

TEST_CASE("localize by repair: nothing verified, nothing tried") {
  CHECK(an::localize_by_repair(tried(1, {outcome({action(Kind::kActivation, 1, "Relu")}, false)})).status ==
        S::kUnconfirmed);
  CHECK(an::localize_by_repair(tried(1, {})).status == S::kUnconfirmed);  // no repair applied
  an::Finding none = test::fixes::finding("dead_units", an::RootCause::kActivation, 1);
  CHECK(an::localize_by_repair(none).status == S::kNotTried);
  const nlohmann::json j = an::to_json(an::localize_by_repair(tried(1, {})), {});
  CHECK(j["repair"].is_null());
  CHECK(j["layer_blamed"].is_null());
}

TEST_CASE("localize by repair: the reports carry it under the primary finding") {
  an::Diagnosis d;
  d.fault = true;
  d.findings = {tried(1, {outcome({action(Kind::kLearningRate, -1, "", 0.1)}, true, "learning rate 1 -> 0.1"),
                          outcome({action(Kind::kActivation, 0, "LeakyRelu")}, true, "layer 0 (/0/Gemm): LeakyRelu")})};
  an::Finding& f = d.findings[0];
  f.repair_localization = an::localize_by_repair(f);
  an::Trace t;
  for (int l = 0; l < 2; ++l) {
    an::LayerInfo info;
    info.index = l;
    info.nodes = {"/" + std::to_string(2 * l) + "/Gemm"};
    t.header.layers.push_back(info);
  }
  an::RunInfo run;
  const nlohmann::json j = an::report_json(d, t, run);
  const nlohmann::json& loc = j["findings"][0]["repair_localization"];
  CHECK(loc["status"] == "not_layer");
  CHECK(loc["repair"] == "learning rate 1 -> 0.1");
  CHECK(loc["layer_ranking"] == nlohmann::json::array({{{"layer", 0}, {"score", 1.0}, {"repairs", 1}}}));
  const std::string text = an::report_text(d, t, run, false);
  CHECK(text.find("Localization: no layer to blame: repair 1 changes only the training or the data") !=
        std::string::npos);
  CHECK(text.find("Layers whose own repair works: 0 (score 1).") != std::string::npos);
  CHECK(an::html::fixes_section(d, run).find("Localization: no layer to blame: repair 1") != std::string::npos);

  // Without --verify-fixes: no such field, no such line.
  an::Diagnosis plain = d;
  plain.findings[0].fixes.clear();
  plain.findings[0].fixes_attempted = false;
  plain.findings[0].repair_localization = {};
  CHECK_FALSE(an::report_json(plain, t, run)["findings"][0].contains("repair_localization"));
  CHECK(an::report_text(plain, t, run, false).find("Localization:") == std::string::npos);
}
