// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/fedwalk/walk_step.h"

#include "nodefl/core/little_endian.h"

namespace nodefl::fedwalk {
namespace {

// The k-th neighbour (in id order) that has a codebook row. O(degree): a
// step is rare next to the relay round trip it causes, and an index of
// walk neighbours would cost the device a word per neighbour.
const HctNeighbour* WalkNeighbourAt(Span<const HctNeighbour> neighbours, uint64_t k) {
  for (const HctNeighbour& n : neighbours) {
    if (!n.has_codebook_row) continue;
    if (k == 0) return &n;
    --k;
  }
  return nullptr;
}

Span<const CodebookEntry> RowOf(const WalkStepContext& c, const HctNeighbour& n) {
  if (size_t{n.codebook_offset} + n.codebook_count > c.codebook_pool.size()) return {};
  return c.codebook_pool.subspan(n.codebook_offset, n.codebook_count);
}

// u's quota per bin (PoolQuotas) into `quotas` (kMaxBins entries); false
// when u has no dictionary row or the context no bins.
bool QuotasOf(const WalkStepContext& c, const HctNeighbour& u, uint32_t* quotas) {
  const size_t bins = c.bin_sizes.size();
  if (bins == 0 || bins > kMaxBins || !u.in_dictionary) return false;
  PoolQuotas(ConstByteSpan(u.row_bytes, 4 * bins), c.bin_sizes, Span<uint32_t>(quotas, bins));
  return true;
}

// kTree's pool: the vertices nearest u in the HCT, by u's bin quotas.
size_t TreePool(const WalkStepContext& c, const HctNeighbour& u, Span<uint32_t> pool) {
  uint32_t quotas[kMaxBins] = {};
  if (c.tree == nullptr || c.tree->empty() || !QuotasOf(c, u, quotas)) return 0;
  const Span<const uint32_t> per_bin(quotas, c.bin_sizes.size());
  return NearestInBins(*c.tree, c.bin_plan, u.id, c.own_id, per_bin, pool);
}

// kNeighbours' pool: the walk neighbours other than u, those in bins where
// u's noised counts round to neighbours (a bin where they round to none
// holds few or none of them), else all of them. Bins are a random
// numbering of the vertices, so the filter tells little beyond low-degree
// u's; what makes a candidate a true 2-hop neighbour is a triangle through
// this device and u. A candidate that closes none is still one hop from u
// through this device, where the paper's predictor mostly lands farther.
size_t NeighbourPool(const WalkStepContext& c, const HctNeighbour& u, Span<uint32_t> pool) {
  const size_t bins = c.bin_sizes.size();
  uint32_t quotas[kMaxBins] = {};
  const bool filter = !c.bin_plan.empty() && QuotasOf(c, u, quotas);
  for (int pass = filter ? 0 : 1; pass < 2; ++pass) {
    size_t n = 0;
    for (const HctNeighbour& w : c.neighbours) {
      if (!w.has_codebook_row || w.id == u.id) continue;
      if (pass == 0) {
        const uint8_t bin = w.id < c.bin_plan.size() ? c.bin_plan[w.id] : kAbsentBin;
        if (bin >= bins || quotas[bin] == 0) continue;
      }
      if (n == pool.size()) break;
      pool[n++] = w.id;
    }
    if (n > 0) return n;
  }
  return 0;
}

// The predictor (step 4): u' drawn uniformly from the pool, or kNone if
// the pool is empty.
Result<uint32_t> Predict(const WalkStepContext& c, const HctNeighbour& u, Drbg& rng, Span<uint32_t> pool,
                         uint32_t* pool_size) {
  const size_t n = c.predictor == JumpPredictor::kNeighbours ? NeighbourPool(c, u, pool) : TreePool(c, u, pool);
  *pool_size = static_cast<uint32_t>(n);
  if (n == 0) return TreeIndex::kNone;
  const uint64_t pick = rng.UniformBelow(n);
  NODEFL_TRY(rng.status());
  return pool[static_cast<size_t>(pick)];
}

}  // namespace

uint32_t CountWalkNeighbours(Span<const HctNeighbour> neighbours) {
  uint32_t count = 0;
  for (const HctNeighbour& n : neighbours) count += n.has_codebook_row ? 1 : 0;
  return count;
}

Result<WalkStepResult> RunWalkStep(const WalkStepContext& c, WalkHeader* walk, ByteSpan ids, Drbg& rng,
                                   Span<uint32_t> pool) {
  WalkHeader h = *walk;
  NODEFL_TRY(CheckWalkHeader(h));
  if (ids.size() / 4 < WalkLength(h)) return Status::InvalidArgument();
  WalkStepResult r;
  auto append = [&ids, &h](uint32_t v) {
    StoreU32Le(v, ids.data() + 4 * size_t{h.count});
    ++h.count;
  };

  // 1. The entry the previous device owed: it jumped here with the
  // predictor and holds no codebook row for this device.
  if ((h.flags & kSelfEncodeFirst) != 0) {
    if (c.own_row.empty()) {
      r.outcome = WalkOutcome::kDropped;
      return r;
    }
    NODEFL_TRY_ASSIGN(const uint32_t e, SampleCodebookRow(c.own_row, rng));
    append(e);
    h.flags = static_cast<uint8_t>(h.flags & ~kSelfEncodeFirst);
    ++r.encodings;
  }
  if (c.walk_neighbours == 0) {
    r.outcome = WalkOutcome::kDeadEnd;
    *walk = h;
    return r;
  }

  // 2. A neighbour u, uniformly, and Enc(u).
  const uint64_t k = rng.UniformBelow(c.walk_neighbours);
  NODEFL_TRY(rng.status());
  const HctNeighbour* u = WalkNeighbourAt(c.neighbours, k);
  if (u == nullptr) return Status::InvalidArgument();  // walk_neighbours overstated
  NODEFL_TRY_ASSIGN(const uint32_t e, SampleCodebookRow(RowOf(c, *u), rng));
  append(e);
  ++r.encodings;

  // 3. The last entry: the walk is complete.
  if (h.remaining == 1) {
    h.remaining = 0;
    r.outcome = WalkOutcome::kComplete;
    *walk = h;
    return r;
  }

  // 4. The 2-hop predictor, with probability p while two or more entries
  // remain after Enc(u) (Alg. 1: l > 2).
  uint32_t next = u->id;
  uint16_t advance = 1;
  if (h.remaining > 2 && rng.Bernoulli(c.p)) {
    NODEFL_TRY(rng.status());
    r.predictor_triggered = true;
    NODEFL_TRY_ASSIGN(const uint32_t predicted, Predict(c, *u, rng, pool, &r.pool_size));
    if (predicted != TreeIndex::kNone) {
      next = predicted;
      advance = 2;
      h.flags = static_cast<uint8_t>(h.flags | kSelfEncodeFirst);
    }
  }
  NODEFL_TRY(rng.status());

  // 4./5. Forward: one more device-to-device message.
  h.remaining = static_cast<uint16_t>(h.remaining - advance);
  ++h.hops;
  r.hop = advance == 2 ? WalkHop::kPredicted : WalkHop::kNeighbour;
  r.destination = next;
  *walk = h;
  return r;
}

}  // namespace nodefl::fedwalk
