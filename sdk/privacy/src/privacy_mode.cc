// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include <cmath>

#include "nodefl/privacy/ledger.h"
#include "nodefl/privacy/privacy_mode.h"

namespace nodefl {

const char* PrivacyModeName(PrivacyMode mode) {
  switch (mode) {
    case PrivacyMode::kStrict: return "strict";
    case PrivacyMode::kPaper: return "paper";
  }
  return "?";
}

const char* MechanismName(Mechanism mechanism) {
  switch (mechanism) {
    case Mechanism::kLaplace: return "laplace";
    case Mechanism::kDiscreteLaplace: return "discrete-laplace";
    case Mechanism::kExponential: return "exponential";
    case Mechanism::kOneBit: return "one-bit";
    case Mechanism::kMultiBit: return "multi-bit";
  }
  return "?";
}

Status PrivacyLedger::Record(uint16_t phase, Mechanism mechanism, PrivacyMode mode,
                             double epsilon_each, uint32_t releases) {
  if (!std::isfinite(epsilon_each) || epsilon_each < 0.0) return Status::InvalidArgument();
  for (LedgerEntry& e : entries_) {
    if (e.phase == phase && e.mechanism == mechanism && e.mode == mode) {
      e.releases += releases;
      e.epsilon += epsilon_each * releases;
      return Status::Ok();
    }
  }
  LedgerEntry entry;
  entry.phase = phase;
  entry.mechanism = mechanism;
  entry.mode = mode;
  entry.releases = releases;
  entry.epsilon = epsilon_each * releases;
  return entries_.push_back(entry);
}

double PrivacyLedger::total_epsilon() const {
  double sum = 0.0;
  for (const LedgerEntry& e : entries_) sum += e.epsilon;
  return sum;
}

double PrivacyLedger::phase_epsilon(uint16_t phase) const {
  double sum = 0.0;
  for (const LedgerEntry& e : entries_) {
    if (e.phase == phase) sum += e.epsilon;
  }
  return sum;
}

}  // namespace nodefl
