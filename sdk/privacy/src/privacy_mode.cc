// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
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
    case Mechanism::kExact: return "exact";
  }
  return "?";
}

}  // namespace nodefl
