#include "analysis/symptoms.h"

#include <algorithm>

namespace dl::an {

const std::vector<Symptom>& all_symptoms() {
  static const std::vector<Symptom> all = {
#define DL_SYMPTOM(id, pace, numerical, dead, upstream) sym::id,
#include "analysis/symptom_list.def"
#undef DL_SYMPTOM
  };
  return all;
}

Symptom symptom_info(const std::string& id) {
  const auto& all = all_symptoms();
  const auto it = std::find_if(all.begin(), all.end(), [&](const Symptom& s) { return id == s.id; });
  return it != all.end() ? *it : Symptom{"", Symptom::Pace::kNone, false, false, false};
}

}  // namespace dl::an
