// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "device_step.h"

#include "nodefl/fedwalk/codebook_sampling.h"
#include "nodefl/fedwalk/walk_step.h"

namespace nodefl::server::fedwalk::walk_sim {

namespace fw = nodefl::fedwalk;

StepCounters& StepCounters::operator+=(const StepCounters& o) {
  neighbour_hops += o.neighbour_hops;
  predicted_hops += o.predicted_hops;
  empty_pool_hops += o.empty_pool_hops;
  pool_entries += o.pool_entries;
  neighbour_encodings += o.neighbour_encodings;
  neighbour_substitutions += o.neighbour_substitutions;
  self_encodings += o.self_encodings;
  self_substitutions += o.self_substitutions;
  jump_vs_previous += o.jump_vs_previous;
  jump_vs_skipped += o.jump_vs_skipped;
  return *this;
}

namespace {

constexpr uint64_t kWalkStreams = uint64_t{1} << 32;

// The k-th neighbour holding a codebook row (walk_step.h's choice of u).
const fw::HctNeighbour* KthWalkNeighbour(const fw::WalkStepContext& c, uint64_t k) {
  for (const fw::HctNeighbour& n : c.neighbours) {
    if (!n.has_codebook_row) continue;
    if (k-- == 0) return &n;
  }
  return nullptr;
}

}  // namespace

DeviceSteps::DeviceSteps(const SimulatedDevices& devices, const std::vector<std::vector<uint32_t>>& graph,
                         uint64_t seed, bool oracle_predictor)
    : devices_(devices),
      graph_(graph),
      distance_(graph),
      seed_(seed),
      oracle_predictor_(oracle_predictor),
      rng_(new Drbg[devices.vertex_count()]),
      replica_(new Drbg[devices.vertex_count()]) {}

std::string DeviceSteps::Seed() {
  for (uint32_t v = 0; v < devices_.vertex_count(); ++v) {
    if (!rng_[v].SeedDeterministic(seed_, kWalkStreams + v).ok() ||
        !replica_[v].SeedDeterministic(seed_, kWalkStreams + v).ok()) {
      return "DRBG seeding failed";
    }
  }
  return {};
}

bool DeviceSteps::Step(uint32_t w, fw::WalkHeader* walk, ByteSpan ids, StepScratch* scratch, StepResult* result,
                       std::string* error) {
  const fw::WalkStepContext& c = devices_.context(w);
  const fw::WalkHeader before = *walk;
  const Result<fw::WalkStepResult> r = fw::RunWalkStep(c, walk, ids, rng_[w], Span<uint32_t>(scratch->pool));
  if (!r.ok()) {
    *error = std::string("RunWalkStep: ") + r.status().str();
    return false;
  }
  const auto disagree = [error](const char* what) {
    *error = std::string("the replica of RunWalkStep's draws disagrees (") + what +
             "): did walk_step.h change its draw order?";
    return false;
  };
  const auto end_here = [&](fw::WalkOutcome outcome, const char* what) {
    if (r->hop != fw::WalkHop::kServer || r->outcome != outcome) return disagree(what);
    result->finished = true;
    result->outcome = outcome;
    return true;
  };
  const ConstByteSpan entries(ids);

  // The replica, draw for draw.
  Drbg& replica = replica_[w];
  StepCounters& k = scratch->counters;
  size_t entry = before.count;
  if ((before.flags & fw::kSelfEncodeFirst) != 0) {
    if (c.own_row.empty()) return end_here(fw::WalkOutcome::kDropped, "no own row");
    const Result<uint32_t> e = fw::SampleCodebookRow(c.own_row, replica);
    if (!e.ok() || *e != fw::WalkIdAt(entries, entry)) return disagree("Enc(w)");
    ++k.self_encodings;
    k.self_substitutions += *e != w ? 1 : 0;
    ++entry;
  }
  if (c.walk_neighbours == 0) return end_here(fw::WalkOutcome::kDeadEnd, "dead end");
  const fw::HctNeighbour* u = KthWalkNeighbour(c, replica.UniformBelow(c.walk_neighbours));
  if (u == nullptr) return disagree("neighbour index");
  const Result<uint32_t> e =
      fw::SampleCodebookRow(c.codebook_pool.subspan(u->codebook_offset, u->codebook_count), replica);
  if (!e.ok() || *e != fw::WalkIdAt(entries, entry)) return disagree("Enc(u)");
  ++k.neighbour_encodings;
  k.neighbour_substitutions += *e != u->id ? 1 : 0;
  if (before.remaining == 1) return end_here(fw::WalkOutcome::kComplete, "last entry");

  const bool coin = before.remaining > 2 && replica.Bernoulli(c.p);
  if (coin != r->predictor_triggered) return disagree("predictor coin");
  result->finished = false;
  if (coin && r->pool_size > 0) {
    const uint64_t pick = replica.UniformBelow(r->pool_size);
    if (r->hop != fw::WalkHop::kPredicted || scratch->pool[pick] != r->destination) return disagree("pool pick");
    uint32_t target = r->destination;
    if (oracle_predictor_) {
      // Both DRBGs draw, so the replica stays in step with the device's.
      const std::vector<uint32_t>& truth = graph_[u->id];
      const uint64_t j = rng_[w].UniformBelow(truth.size());
      if (replica.UniformBelow(truth.size()) != j) return disagree("oracle pick");
      target = truth[j];
    }
    ++k.predicted_hops;
    k.pool_entries += r->pool_size;
    distance_.Count(w, target, &k.jump_vs_previous);
    distance_.Count(u->id, target, &k.jump_vs_skipped);
    result->next = target;
    return true;
  }
  if (r->hop != fw::WalkHop::kNeighbour || r->destination != u->id) return disagree("neighbour hop");
  ++k.neighbour_hops;
  k.empty_pool_hops += coin ? 1 : 0;
  result->next = u->id;
  return true;
}

}  // namespace nodefl::server::fedwalk::walk_sim
