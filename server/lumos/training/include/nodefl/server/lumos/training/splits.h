// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The seeded splits Lumos training is measured on: nodes 50/25/25
// (train/validation/test) for node classification, edges 80/5/15 for link
// prediction. Exact counts (rounded down, the rest to test), a uniform
// shuffle from the seed, so every party that knows the seed and the ids
// derives the same split.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace nodefl::server::lumos {

enum class Split : uint8_t { kTrain = 0, kValidation = 1, kTest = 2 };
inline constexpr int kSplits = 3;
const char* SplitName(Split s);  // "train", "validation", "test"

std::vector<Split> SplitNodes(uint32_t nodes, uint64_t seed, double train = 0.5, double validation = 0.25);

struct EdgeSplit {
  std::vector<std::pair<uint32_t, uint32_t>> train, validation, test;
};
EdgeSplit SplitEdges(const std::vector<std::pair<uint32_t, uint32_t>>& edges, uint64_t seed, double train = 0.8,
                     double validation = 0.05);

}  // namespace nodefl::server::lumos
