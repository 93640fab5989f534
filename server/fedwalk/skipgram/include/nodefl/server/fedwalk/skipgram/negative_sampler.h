// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Negative samples for SkipGram: vertex v is drawn with probability
//   count_v^power / sum_u count_u^power      (power = 0.75, Mikolov et al.)
// from a Walker/Vose alias table: one 64-bit random draw per sample (high
// half picks the cell, low half flips its coin), n cells of 8 bytes. That is
// 80 KiB for BlogCatalog, which stays in cache, where word2vec's 10^8-entry
// unigram table would not.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "nodefl/server/fedwalk/skipgram/fast_rng.h"

namespace nodefl::server::fedwalk {

class NegativeSampler {
 public:
  NegativeSampler() = default;

  // std::nullopt when every count is zero, `counts` is empty or longer than
  // 2^32 - 1, or `power` is negative or not finite. Vertices with count 0
  // are never drawn.
  static std::optional<NegativeSampler> FromCounts(std::span<const uint64_t> counts, double power = 0.75);

  uint32_t Sample(FastRng& rng) const {
    const uint64_t r = rng.Next();
    const uint32_t cell = static_cast<uint32_t>(((r >> 32) * cells_.size()) >> 32);
    const Cell& c = cells_[cell];
    // Branch-free select: the coin is random, so a branch would be
    // mispredicted half the time in the trainer's hottest loop.
    const uint32_t keep = 0u - static_cast<uint32_t>(static_cast<uint32_t>(r) < c.threshold);
    return (cell & keep) | (c.alias & ~keep);
  }

  uint32_t size() const { return static_cast<uint32_t>(cells_.size()); }

  // The exact probability the table gives each vertex (the target
  // distribution up to the 2^-32 quantisation of the coins), for tests.
  std::vector<double> Probabilities() const;

 private:
  struct Cell {
    // The cell keeps its own vertex when the low 32 random bits are below
    // `threshold`, else it yields `alias`. A full cell aliases itself, so
    // the 2^-32 it cannot express by its threshold costs nothing.
    uint32_t threshold;
    uint32_t alias;
  };
  std::vector<Cell> cells_;
};

}  // namespace nodefl::server::fedwalk
