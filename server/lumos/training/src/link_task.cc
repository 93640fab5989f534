// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/lumos/training/link_task.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <random>
#include <unordered_set>

#include "nodefl/core/little_endian.h"

namespace nodefl::server::lumos {
namespace {

// Fisher-Yates with a 64-bit Mersenne twister, as splits.cc shuffles: the
// same draw on every platform (std::shuffle's use of the engine is not).
void Shuffle(std::vector<uint32_t>& v, std::mt19937_64& rng) {
  for (size_t i = v.size(); i > 1; --i) {
    const size_t j = static_cast<size_t>(rng() % i);
    std::swap(v[i - 1], v[j]);
  }
}

}  // namespace

std::vector<std::vector<Partner>> LinkPartners(std::span<const uint32_t> ids, uint32_t training,
                                               uint32_t evaluation, uint64_t seed) {
  const size_t n = ids.size();
  std::vector<std::vector<Partner>> out(n);
  std::vector<uint32_t> order(n);  // positions into ids
  std::iota(order.begin(), order.end(), 0u);
  std::unordered_set<uint64_t> drawn;  // (lower position << 32) | higher position
  drawn.reserve(n / 2 * (size_t{training} + evaluation));
  std::mt19937_64 rng(seed);
  for (uint64_t m = 0; m < uint64_t{training} + evaluation; ++m) {
    const PartnerUse use = m < training ? PartnerUse::kTraining : PartnerUse::kEvaluation;
    Shuffle(order, rng);
    for (size_t k = 0; k + 1 < n; k += 2) {
      const uint32_t a = std::min(order[k], order[k + 1]);
      const uint32_t b = std::max(order[k], order[k + 1]);
      if (!drawn.insert((uint64_t{a} << 32) | b).second) continue;
      out[a].push_back(Partner{ids[b], use});
      out[b].push_back(Partner{ids[a], use});
    }
  }
  for (std::vector<Partner>& p : out) {
    std::sort(p.begin(), p.end(), [](const Partner& x, const Partner& y) { return x.id < y.id; });
  }
  return out;
}

std::vector<std::vector<uint8_t>> PartnerRecords(std::span<const Partner> partners) {
  std::vector<std::vector<uint8_t>> records;
  for (size_t first = 0; first < partners.size(); first += nodefl::lumos::kTrainPartnersPerRecord) {
    const size_t n = std::min(nodefl::lumos::kTrainPartnersPerRecord, partners.size() - first);
    std::vector<uint8_t> bytes(5 * n);
    for (size_t k = 0; k < n; ++k) {
      StoreU32Le(partners[first + k].id, bytes.data() + 5 * k);
      bytes[5 * k + 4] = static_cast<uint8_t>(partners[first + k].use);
    }
    records.push_back(std::move(bytes));
  }
  return records;
}

double BinnedAuc(const ScoreHistogram& positives, const ScoreHistogram& negatives) {
  const uint64_t p = std::accumulate(positives.begin(), positives.end(), uint64_t{0});
  const uint64_t q = std::accumulate(negatives.begin(), negatives.end(), uint64_t{0});
  if (p == 0 || q == 0) return std::numeric_limits<double>::quiet_NaN();
  // Twice the pairs ordered right plus the ties once: whole numbers, so the
  // sum is exact in a double up to 2^53 (and a direct pairwise count over
  // the same bins gives the same value).
  double twice = 0;
  uint64_t below = 0;  // negatives in lower bins
  for (uint32_t b = 0; b < nodefl::lumos::kScoreBins; ++b) {
    twice += static_cast<double>(positives[b]) * static_cast<double>(2 * below + negatives[b]);
    below += negatives[b];
  }
  return twice / (2.0 * static_cast<double>(p) * static_cast<double>(q));
}

}  // namespace nodefl::server::lumos
