// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// PrivacyLedger: a device-side record of every differentially private release
// it makes, and the device's own budget. One entry per (phase, mechanism,
// mode); repeated releases add up. Totals are basic sequential composition
// (sums of ε and of δ), which is what nodefl reports unless a doc states a
// tighter accounting for a phase.
//
// What one release costs is the device's figure (ReleaseCost): computed
// from what the device holds where it can (e.g. the walk encoder's rows),
// never just taken from the server. Besides (ε, δ) a cost says
//   * `edge_epsilon`: how much one of this device's edges can change the
//     release set, when that differs from ε (a walk step: changing an edge
//     changes the walk's every later hop, so all its later encodings count);
//   * `unbounded`: no differential-privacy bound at all (an exact release,
//     e.g. paper-mode FedWalk's ordered degree matrix);
//   * `unbounded_against_server`: the bound holds for whoever reads the
//     content, but the server learns the protected data from the relay's
//     metadata anyway (device-to-device walks).
//
// The budget (PrivacyBudget) is the device's, not the server's: Record
// refuses (kPermissionDenied, nothing recorded) a release that would take
// the current job's or the device's lifetime totals past it, or an
// unbounded release unless the budget allows them. Callers check before
// they release and never publish a value the ledger refused; CanRecord
// asks without recording. The lifetime totals start from what the app
// persisted (the SDK stores nothing itself).
//
// Storage is caller-provided; a full ledger refuses the release
// (kResourceExhausted).
#pragma once

#include <cstdint>
#include <limits>

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
  kExact = 5,  // no noise: the value itself (always unbounded)
};

const char* MechanismName(Mechanism mechanism);

// What one release costs.
struct ReleaseCost {
  double epsilon = 0.0;  // per release, finite, >= 0
  double delta = 0.0;    // per release, in [0, 1]
  // Per-edge ε of the whole Record call (all its releases together);
  // negative: the same as releases x epsilon (sensitivity per edge = per
  // device, the common case).
  double edge_epsilon = -1.0;
  bool unbounded = false;
  bool unbounded_against_server = false;
};

struct LedgerEntry {
  uint16_t phase = 0;  // job-defined phase id (e.g. FedWalk binning = 1)
  Mechanism mechanism = Mechanism::kLaplace;
  PrivacyMode mode = PrivacyMode::kStrict;
  uint32_t releases = 0;
  double epsilon = 0.0;       // sum over the releases of this entry
  double delta = 0.0;         // sum
  double edge_epsilon = 0.0;  // sum of the per-edge figures
  bool unbounded = false;                 // some release had no bound
  bool unbounded_against_server = false;  // some release is visible to the server through metadata
};

inline constexpr double kUnlimitedBudget = std::numeric_limits<double>::infinity();

// The device's limits. Defaults: what a device that runs strict-mode jobs
// needs with room to spare (strict FedWalk spends at most 8 per job),
// refusing exact releases; paper-mode experiments raise them explicitly.
struct PrivacyBudget {
  double job_epsilon = 16.0;         // per job: the larger of ε and per-edge ε
  double job_delta = 1e-5;           // per job
  double lifetime_epsilon = 256.0;   // over the device's life (persisted by the app)
  double lifetime_delta = 1e-4;
  bool allow_unbounded = false;      // exact releases (paper modes) refused unless true

  static PrivacyBudget Unlimited() {
    PrivacyBudget b;
    b.job_epsilon = b.job_delta = b.lifetime_epsilon = b.lifetime_delta = kUnlimitedBudget;
    b.allow_unbounded = true;
    return b;
  }
};

class PrivacyLedger {
 public:
  // `lifetime_epsilon_spent`/`lifetime_delta_spent`: what earlier lives of
  // the device spent (the app persists lifetime_epsilon()/lifetime_delta()).
  explicit PrivacyLedger(Span<LedgerEntry> storage, const PrivacyBudget& budget = PrivacyBudget(),
                         double lifetime_epsilon_spent = 0.0, double lifetime_delta_spent = 0.0);

  // A job starts: its totals start at 0 (a job id seen last is a repeat and
  // keeps them). Roles call it when they start their part of a job.
  void BeginJob(uint64_t job_id);

  // Would `releases` releases at `cost` be recorded? kInvalidArgument for a
  // malformed cost, kPermissionDenied past the budget, kResourceExhausted if
  // a new entry would not fit.
  Status CanRecord(uint16_t phase, Mechanism mechanism, PrivacyMode mode, const ReleaseCost& cost,
                   uint32_t releases = 1) const;
  // Records them (CanRecord's errors; nothing recorded on error).
  Status Record(uint16_t phase, Mechanism mechanism, PrivacyMode mode, const ReleaseCost& cost,
                uint32_t releases = 1);
  // Pure ε releases (δ = 0, per-edge = per-device, bounded).
  Status Record(uint16_t phase, Mechanism mechanism, PrivacyMode mode, double epsilon_each,
                uint32_t releases = 1);

  const PrivacyBudget& budget() const { return budget_; }
  void set_budget(const PrivacyBudget& budget) { budget_ = budget; }

  // Sums over every entry (this life of the device).
  double total_epsilon() const;
  double total_delta() const;
  double total_edge_epsilon() const;
  bool unbounded() const;
  bool unbounded_against_server() const;
  double phase_epsilon(uint16_t phase) const;
  double phase_delta(uint16_t phase) const;
  double phase_edge_epsilon(uint16_t phase) const;
  bool phase_unbounded(uint16_t phase) const;
  bool phase_unbounded_against_server(uint16_t phase) const;
  // The current job's totals (the larger of ε and per-edge ε) and the
  // lifetime totals including earlier lives.
  double job_epsilon() const { return job_epsilon_; }
  double job_delta() const { return job_delta_; }
  double lifetime_epsilon() const { return lifetime_epsilon_; }
  double lifetime_delta() const { return lifetime_delta_; }
  Span<const LedgerEntry> entries() const { return entries_.span(); }

 private:
  LedgerEntry* Find(uint16_t phase, Mechanism mechanism, PrivacyMode mode);
  const LedgerEntry* Find(uint16_t phase, Mechanism mechanism, PrivacyMode mode) const;

  FixedVector<LedgerEntry> entries_;
  PrivacyBudget budget_;
  uint64_t job_id_ = 0;
  bool in_job_ = false;
  double job_epsilon_ = 0.0;
  double job_delta_ = 0.0;
  double lifetime_epsilon_ = 0.0;
  double lifetime_delta_ = 0.0;
};

}  // namespace nodefl
