// Diagnoses built by hand for the verified-fixes tests (fixes_test.cpp,
// fixes_verify_test.cpp): a finding with the symptom and root cause a rule emits, a
// faulty diagnosis of such findings, and one repair action.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "analysis/fixes.h"

namespace dl::test::fixes {

inline an::Finding finding(const std::string& symptom, an::RootCause cause, int layer = -1, bool conclusive = true) {
  an::Finding f;
  f.symptom = symptom;
  f.root_cause = cause;
  f.layer = layer;
  f.conclusive = conclusive;
  return f;
}

inline an::Diagnosis faulty(std::vector<an::Finding> findings) {
  an::Diagnosis d;
  d.fault = true;
  d.findings = std::move(findings);
  return d;
}

inline an::FixAction action(an::FixAction::Kind k, int layer = -1, std::string value = "", double factor = 1) {
  an::FixAction a;
  a.kind = k, a.layer = layer, a.value = std::move(value), a.factor = factor;
  return a;
}

}  // namespace dl::test::fixes
