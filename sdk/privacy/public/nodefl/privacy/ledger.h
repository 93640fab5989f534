// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// PrivacyLedger: a device-side record of every differentially private release
// it makes. One entry per (phase, mechanism, mode); repeated releases add up.
// total_epsilon() is basic sequential composition (the sum), which is what
// nodefl reports unless a doc states a tighter accounting for a phase.
// Storage is caller-provided; a full ledger refuses the release (the caller
// must not publish a value it could not account for).
#pragma once

#include <cstdint>

#include "nodefl/core/fixed_vector.h"
#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/privacy/privacy_mode.h"

namespace nodefl {

enum class Mechanism : uint8_t {
  kLaplace = 0,
  kDiscreteLaplace = 1,
  kExponential = 2,
  kOneBit = 3,
  kMultiBit = 4,
};

const char* MechanismName(Mechanism mechanism);

struct LedgerEntry {
  uint16_t phase = 0;  // job-defined phase id (e.g. FedWalk binning = 1)
  Mechanism mechanism = Mechanism::kLaplace;
  PrivacyMode mode = PrivacyMode::kStrict;
  uint32_t releases = 0;
  double epsilon = 0.0;  // sum over the releases of this entry
};

class PrivacyLedger {
 public:
  explicit PrivacyLedger(Span<LedgerEntry> storage) : entries_(storage) {}

  // Records `releases` releases costing `epsilon_each` each. Rejects
  // non-finite or negative epsilon (kInvalidArgument) and a full ledger
  // (kResourceExhausted); on error nothing is recorded.
  Status Record(uint16_t phase, Mechanism mechanism, PrivacyMode mode, double epsilon_each,
                uint32_t releases = 1);

  double total_epsilon() const;
  double phase_epsilon(uint16_t phase) const;
  Span<const LedgerEntry> entries() const { return entries_.span(); }

 private:
  FixedVector<LedgerEntry> entries_;
};

}  // namespace nodefl
