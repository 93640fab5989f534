// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/fedwalk/skipgram/corpus_coverage.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "nodefl/server/fedwalk/skipgram/fast_rng.h"

namespace nodefl::server::fedwalk {

namespace {

// At most this many sampled pair hashes are kept; a table of twice as many
// slots (256 KiB) keeps probes short and in cache.
constexpr size_t kMaxKept = 16384;
constexpr size_t kSlots = 2 * kMaxKept;

// Open-addressing set of nonzero 64-bit hashes whose top `level` bits are
// zero.
class SampledPairSet {
 public:
  SampledPairSet() : slots_(kSlots, 0) {}

  void Add(uint64_t h) {
    if (level_ > 0 && (h >> (64 - level_)) != 0) return;
    if (!Insert(h)) return;
    if (++size_ > kMaxKept) Raise();
  }

  // Distinct hashes seen, estimated as kept << level.
  uint64_t Estimate() const { return static_cast<uint64_t>(size_) << level_; }

 private:
  // True if h was not there yet.
  bool Insert(uint64_t h) {
    for (size_t i = h & (kSlots - 1);; i = (i + 1) & (kSlots - 1)) {
      if (slots_[i] == h) return false;
      if (slots_[i] == 0) {
        slots_[i] = h;
        return true;
      }
    }
  }

  // Halves the sampling rate, dropping the hashes it no longer keeps.
  void Raise() {
    ++level_;
    std::vector<uint64_t> old(kSlots, 0);
    old.swap(slots_);
    size_ = 0;
    for (uint64_t h : old) {
      if (h != 0 && (h >> (64 - level_)) == 0) {
        Insert(h);
        ++size_;
      }
    }
  }

  std::vector<uint64_t> slots_;
  size_t size_ = 0;
  unsigned level_ = 0;  // < 64: each level halves about kMaxKept + 1 hashes
};

}  // namespace

CorpusCoverage MeasureCoverage(const WalkCorpus& corpus) {
  SampledPairSet pairs;
  for (size_t w = 0; w < corpus.num_walks(); ++w) {
    const std::span<const uint32_t> walk = corpus.Walk(w);
    for (size_t i = 1; i < walk.size(); ++i) {
      const uint32_t a = std::min(walk[i - 1], walk[i]);
      const uint32_t b = std::max(walk[i - 1], walk[i]);
      if (a == b) continue;
      // MixBits is a bijection, so distinct pairs get distinct hashes; only
      // the pair whose hash is 0 (the empty-slot mark) is lost.
      const uint64_t h = MixBits((uint64_t{a} << 32) | b);
      if (h != 0) pairs.Add(h);
    }
  }
  CorpusCoverage c;
  c.tokens = corpus.num_tokens();
  c.distinct_pairs = pairs.Estimate();
  c.tokens_per_pair = c.distinct_pairs == 0 ? 0.0 : static_cast<double>(c.tokens) / static_cast<double>(c.distinct_pairs);
  return c;
}

uint32_t AutoEpochs(const CorpusCoverage& coverage) {
  if (coverage.distinct_pairs == 0 || !(coverage.tokens_per_pair > 0)) return 1;
  const double epochs = std::ceil(kAutoEpochTokensPerPair / coverage.tokens_per_pair);
  return static_cast<uint32_t>(std::clamp(epochs, 1.0, static_cast<double>(kAutoEpochsMax)));
}

}  // namespace nodefl::server::fedwalk
