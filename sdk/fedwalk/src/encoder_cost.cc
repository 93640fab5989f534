// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/fedwalk/encoder_cost.h"

#include <cmath>

namespace nodefl::fedwalk {
namespace {

constexpr uint64_t kOne = uint64_t{1} << 31;  // Q31 certainty

// The rows in a fixed order: 0 = own row (if any), then the neighbours'.
class Rows {
 public:
  Rows(Span<const CodebookEntry> own, Span<const HctNeighbour> neighbours, Span<const CodebookEntry> pool)
      : own_(own), neighbours_(neighbours), pool_(pool) {}

  size_t slots() const { return 1 + neighbours_.size(); }
  // Row of slot k, or an empty span when that slot has none; *ok false for
  // a row outside the pool.
  Span<const CodebookEntry> Row(size_t k, bool* ok) const {
    if (k == 0) return own_;
    const HctNeighbour& n = neighbours_[k - 1];
    if (!n.has_codebook_row || n.codebook_count == 0) return {};
    if (uint64_t{n.codebook_offset} + n.codebook_count > pool_.size()) {
      *ok = false;
      return {};
    }
    return pool_.subspan(n.codebook_offset, n.codebook_count);
  }
  float Truncated(size_t k, float own_truncated) const {
    return k == 0 ? own_truncated : neighbours_[k - 1].truncated_mass;
  }

 private:
  Span<const CodebookEntry> own_;
  Span<const HctNeighbour> neighbours_;
  Span<const CodebookEntry> pool_;
};

bool ValidRow(Span<const CodebookEntry> row) {
  for (const CodebookEntry& e : row) {
    if (e.accept_q31 > kOne || e.alias >= row.size()) return false;
  }
  return true;
}

// P(row draws `vertex`) x row.size() x 2^31: each entry's own acceptance
// plus what every entry passes to it through its alias, over the entries
// holding `vertex` (one in a well-formed row). 0 if absent.
uint64_t Mass(Span<const CodebookEntry> row, uint32_t vertex) {
  uint64_t mass = 0;
  for (size_t at = 0; at < row.size(); ++at) {
    if (row[at].vertex != vertex) continue;
    mass += row[at].accept_q31;
    for (const CodebookEntry& e : row) {
      if (e.alias == at) mass += kOne - e.accept_q31;
    }
  }
  return mass;
}

double Probability(uint64_t mass, size_t count) {
  return static_cast<double>(mass) / (static_cast<double>(count) * static_cast<double>(kOne));
}

}  // namespace

Result<EncoderCost> MeasureEncoderRows(Span<const CodebookEntry> own_row, float own_truncated_mass,
                                       Span<const HctNeighbour> neighbours, Span<const CodebookEntry> pool) {
  const Rows rows(own_row, neighbours, pool);
  EncoderCost cost;
  // Validate, count, and find the smallest row: every common output is in it.
  size_t smallest = rows.slots();
  for (size_t k = 0; k < rows.slots(); ++k) {
    bool ok = true;
    const Span<const CodebookEntry> r = rows.Row(k, &ok);
    if (!ok || !ValidRow(r)) return Status::DataLoss();
    if (r.empty()) continue;
    ++cost.rows;
    const double t = rows.Truncated(k, own_truncated_mass);
    if (std::isfinite(t) && t > cost.truncated_mass) cost.truncated_mass = t;
    bool unused = true;
    if (smallest == rows.slots() || r.size() < rows.Row(smallest, &unused).size()) smallest = k;
  }
  if (cost.rows <= 1) return cost;  // nothing to tell apart

  bool unused = true;
  const Span<const CodebookEntry> candidates = rows.Row(smallest, &unused);
  if (candidates.size() > kMaxCodebookK) return Status::DataLoss();
  // Which candidates are common, one bit each (K <= kMaxCodebookK).
  uint8_t is_common[kMaxCodebookK / 8] = {};
  double epsilon = 0.0;
  size_t common = 0;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const CodebookEntry& c = candidates[i];
    double lo = 2.0, hi = 0.0;
    for (size_t k = 0; k < rows.slots() && lo > 0.0; ++k) {
      const Span<const CodebookEntry> r = rows.Row(k, &unused);
      if (r.empty()) continue;
      const double p = Probability(Mass(r, c.vertex), r.size());
      if (p < lo) lo = p;
      if (p > hi) hi = p;
    }
    if (lo <= 0.0) continue;  // not common
    ++common;
    is_common[i / 8] = static_cast<uint8_t>(is_common[i / 8] | (1u << (i % 8)));
    const double e = std::log(hi) - std::log(lo);
    if (e > epsilon) epsilon = e;
  }
  if (common == 0) {
    cost.unbounded = true;
    cost.delta = 1.0;
    return cost;
  }
  cost.epsilon = epsilon;
  // delta: the largest probability any row puts outside the common outputs.
  double delta = 0.0;
  for (size_t k = 0; k < rows.slots(); ++k) {
    const Span<const CodebookEntry> r = rows.Row(k, &unused);
    if (r.empty()) continue;
    double inside = 0.0;
    for (size_t i = 0; i < candidates.size(); ++i) {
      if ((is_common[i / 8] >> (i % 8)) & 1u) inside += Probability(Mass(r, candidates[i].vertex), r.size());
    }
    const double outside = 1.0 - inside;
    if (outside > delta) delta = outside;
  }
  // Rounding can leave a hair below zero when every output is common.
  cost.delta = delta < 1e-12 ? 0.0 : delta;
  return cost;
}

}  // namespace nodefl::fedwalk
