// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/privacy/ledger.h"

#include <cmath>

namespace nodefl {
namespace {

// Budgets are compared with a little slack so that, e.g., two releases of
// 4.0 fit a budget of 8.0 whatever the rounding of the sums.
constexpr double kSlack = 1e-9;

bool Exceeds(double spent, double add, double limit) {
  if (std::isinf(limit)) return false;
  return spent + add > limit * (1.0 + kSlack) + kSlack;
}

bool WellFormed(const ReleaseCost& c) {
  return std::isfinite(c.epsilon) && c.epsilon >= 0.0 && std::isfinite(c.delta) && c.delta >= 0.0 &&
         c.delta <= 1.0 && std::isfinite(c.edge_epsilon);
}

// What a Record call adds: ε, δ and per-edge ε over all its releases.
struct Charge {
  double epsilon;
  double delta;
  double edge_epsilon;
  double job() const { return edge_epsilon > epsilon ? edge_epsilon : epsilon; }
};

Charge ChargeOf(const ReleaseCost& c, uint32_t releases) {
  Charge k;
  k.epsilon = c.epsilon * releases;
  k.delta = c.delta * releases;
  if (k.delta > 1.0) k.delta = 1.0;
  k.edge_epsilon = c.edge_epsilon < 0.0 ? k.epsilon : c.edge_epsilon;
  return k;
}

}  // namespace

PrivacyLedger::PrivacyLedger(Span<LedgerEntry> storage, const PrivacyBudget& budget, double lifetime_epsilon_spent,
                             double lifetime_delta_spent)
    : entries_(storage),
      budget_(budget),
      lifetime_epsilon_(std::isfinite(lifetime_epsilon_spent) && lifetime_epsilon_spent > 0 ? lifetime_epsilon_spent
                                                                                           : 0.0),
      lifetime_delta_(std::isfinite(lifetime_delta_spent) && lifetime_delta_spent > 0 ? lifetime_delta_spent : 0.0) {}

void PrivacyLedger::BeginJob(uint64_t job_id) {
  if (in_job_ && job_id == job_id_) return;
  in_job_ = true;
  job_id_ = job_id;
  job_epsilon_ = job_delta_ = 0.0;
}

LedgerEntry* PrivacyLedger::Find(uint16_t phase, Mechanism mechanism, PrivacyMode mode) {
  for (LedgerEntry& e : entries_) {
    if (e.phase == phase && e.mechanism == mechanism && e.mode == mode) return &e;
  }
  return nullptr;
}

const LedgerEntry* PrivacyLedger::Find(uint16_t phase, Mechanism mechanism, PrivacyMode mode) const {
  for (const LedgerEntry& e : entries_) {
    if (e.phase == phase && e.mechanism == mechanism && e.mode == mode) return &e;
  }
  return nullptr;
}

Status PrivacyLedger::CanRecord(uint16_t phase, Mechanism mechanism, PrivacyMode mode, const ReleaseCost& cost,
                                uint32_t releases) const {
  if (!WellFormed(cost)) return Status::InvalidArgument();
  const bool unbounded = cost.unbounded || mechanism == Mechanism::kExact;
  if (unbounded && !budget_.allow_unbounded) return Status::PermissionDenied();
  const Charge k = ChargeOf(cost, releases);
  if (Exceeds(job_epsilon_, k.job(), budget_.job_epsilon) || Exceeds(job_delta_, k.delta, budget_.job_delta) ||
      Exceeds(lifetime_epsilon_, k.job(), budget_.lifetime_epsilon) ||
      Exceeds(lifetime_delta_, k.delta, budget_.lifetime_delta)) {
    return Status::PermissionDenied();
  }
  if (Find(phase, mechanism, mode) == nullptr && entries_.size() >= entries_.capacity()) {
    return Status::ResourceExhausted();
  }
  return Status::Ok();
}

Status PrivacyLedger::Record(uint16_t phase, Mechanism mechanism, PrivacyMode mode, const ReleaseCost& cost,
                             uint32_t releases) {
  NODEFL_TRY(CanRecord(phase, mechanism, mode, cost, releases));
  LedgerEntry* e = Find(phase, mechanism, mode);
  if (e == nullptr) {
    LedgerEntry fresh;
    fresh.phase = phase;
    fresh.mechanism = mechanism;
    fresh.mode = mode;
    NODEFL_TRY(entries_.push_back(fresh));
    e = &entries_[entries_.size() - 1];
  }
  const Charge k = ChargeOf(cost, releases);
  e->releases += releases;
  e->epsilon += k.epsilon;
  e->delta += k.delta;
  e->edge_epsilon += k.edge_epsilon;
  e->unbounded = e->unbounded || cost.unbounded || mechanism == Mechanism::kExact;
  e->unbounded_against_server = e->unbounded_against_server || cost.unbounded_against_server;
  job_epsilon_ += k.job();
  job_delta_ += k.delta;
  lifetime_epsilon_ += k.job();
  lifetime_delta_ += k.delta;
  return Status::Ok();
}

Status PrivacyLedger::Record(uint16_t phase, Mechanism mechanism, PrivacyMode mode, double epsilon_each,
                             uint32_t releases) {
  ReleaseCost cost;
  cost.epsilon = epsilon_each;
  return Record(phase, mechanism, mode, cost, releases);
}

namespace {

// Sums `field` over the entries that `pick` selects.
template <typename Pick>
double SumOf(Span<const LedgerEntry> entries, double LedgerEntry::*field, Pick pick) {
  double sum = 0.0;
  for (const LedgerEntry& e : entries) {
    if (pick(e)) sum += e.*field;
  }
  return sum;
}

template <typename Pick>
bool AnyOf(Span<const LedgerEntry> entries, bool LedgerEntry::*flag, Pick pick) {
  for (const LedgerEntry& e : entries) {
    if (pick(e) && e.*flag) return true;
  }
  return false;
}

constexpr auto kAll = [](const LedgerEntry&) { return true; };

}  // namespace

double PrivacyLedger::total_epsilon() const { return SumOf(entries(), &LedgerEntry::epsilon, kAll); }
double PrivacyLedger::total_delta() const { return SumOf(entries(), &LedgerEntry::delta, kAll); }
double PrivacyLedger::total_edge_epsilon() const { return SumOf(entries(), &LedgerEntry::edge_epsilon, kAll); }
bool PrivacyLedger::unbounded() const { return AnyOf(entries(), &LedgerEntry::unbounded, kAll); }
bool PrivacyLedger::unbounded_against_server() const {
  return AnyOf(entries(), &LedgerEntry::unbounded_against_server, kAll);
}

double PrivacyLedger::phase_epsilon(uint16_t phase) const {
  return SumOf(entries(), &LedgerEntry::epsilon, [phase](const LedgerEntry& e) { return e.phase == phase; });
}
double PrivacyLedger::phase_delta(uint16_t phase) const {
  return SumOf(entries(), &LedgerEntry::delta, [phase](const LedgerEntry& e) { return e.phase == phase; });
}
double PrivacyLedger::phase_edge_epsilon(uint16_t phase) const {
  return SumOf(entries(), &LedgerEntry::edge_epsilon, [phase](const LedgerEntry& e) { return e.phase == phase; });
}
bool PrivacyLedger::phase_unbounded(uint16_t phase) const {
  return AnyOf(entries(), &LedgerEntry::unbounded, [phase](const LedgerEntry& e) { return e.phase == phase; });
}
bool PrivacyLedger::phase_unbounded_against_server(uint16_t phase) const {
  return AnyOf(entries(), &LedgerEntry::unbounded_against_server,
               [phase](const LedgerEntry& e) { return e.phase == phase; });
}

}  // namespace nodefl
