// The symptom registry (analysis/symptom_list.def): ids are unique, and the facts the
// repairs and the consequence marking read from it are the ones the symptoms mean.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "analysis/symptoms.h"

using namespace dl::an;

TEST_CASE("symptoms: one registry, unique ids, facts by value") {
  std::set<std::string> ids;
  for (const Symptom& s : all_symptoms()) CHECK_MESSAGE(ids.insert(s.id).second, "duplicate symptom " << s.id);
  CHECK(ids.size() >= 30);
  CHECK(symptom_info("nan_forward").numerical);
  CHECK(symptom_info("exploding_gradients").pace == Symptom::Pace::kTooFast);
  CHECK(symptom_info("oscillating_loss").pace == Symptom::Pace::kTooFast);
  CHECK_FALSE(symptom_info("oscillating_loss").numerical);
  CHECK(symptom_info("loss_plateau").pace == Symptom::Pace::kTooSlow);
  CHECK(symptom_info("dead_units").dead_units);
  CHECK(symptom_info("vanishing_gradient").pace == Symptom::Pace::kNone);
  // Unknown ids (another version's trace): neutral, never a match on a substring.
  const Symptom unknown = symptom_info("nan_but_not_registered");
  CHECK(unknown.pace == Symptom::Pace::kNone);
  CHECK_FALSE(unknown.numerical);
  CHECK(std::string(sym::softmax_single_unit.id) == "softmax_single_unit");
}
