// Symptoms as values: each id the rules report is a constant sym::<id> from
// analysis/symptom_list.def, with the facts other modules need about it (what it says of
// the step size, whether it propagates, whether units are dead), so that nothing matches
// substrings of symptom ids. Findings keep the id as a string (reports, traces, JSON);
// symptom_info() looks it up again for findings read back from a file.
#pragma once

#include <string>
#include <vector>

namespace dl::an {

struct Symptom {
  enum class Pace { kNone, kTooFast, kTooSlow };
  const char* id;
  Pace pace;
  bool numerical;
  bool dead_units;
  bool upstream;  // see analysis/symptom_list.def
};

namespace sym {
#define DL_SYMPTOM(id, pace, numerical, dead, upstream) \
  inline constexpr Symptom id{#id, Symptom::Pace::pace, numerical, dead, upstream};
#include "analysis/symptom_list.def"
#undef DL_SYMPTOM
}  // namespace sym

// Every registered symptom, in list order.
const std::vector<Symptom>& all_symptoms();
// The registered symptom `id`; an unregistered id (a finding from another version of
// deeplocalize, a hand-written trace) gets a neutral entry: pace kNone, not numerical.
Symptom symptom_info(const std::string& id);

}  // namespace dl::an
