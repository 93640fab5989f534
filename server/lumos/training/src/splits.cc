// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/lumos/training/splits.h"

#include <algorithm>
#include <numeric>
#include <random>

namespace nodefl::server::lumos {
namespace {

// Fisher-Yates with a 64-bit Mersenne twister: the same on every platform
// (std::shuffle's use of the engine is not specified across libraries).
template <typename T>
void Shuffle(std::vector<T>& v, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (size_t i = v.size(); i > 1; --i) {
    const size_t j = static_cast<size_t>(rng() % i);
    std::swap(v[i - 1], v[j]);
  }
}

}  // namespace

const char* SplitName(Split s) {
  switch (s) {
    case Split::kTrain: return "train";
    case Split::kValidation: return "validation";
    case Split::kTest: return "test";
  }
  return "?";
}

std::vector<Split> SplitNodes(uint32_t nodes, uint64_t seed, double train, double validation) {
  std::vector<uint32_t> order(nodes);
  std::iota(order.begin(), order.end(), 0u);
  Shuffle(order, seed);
  const size_t n_train = static_cast<size_t>(train * nodes);
  const size_t n_validation = static_cast<size_t>(validation * nodes);
  std::vector<Split> out(nodes, Split::kTest);
  for (size_t i = 0; i < nodes; ++i) {
    out[order[i]] = i < n_train ? Split::kTrain : i < n_train + n_validation ? Split::kValidation : Split::kTest;
  }
  return out;
}

EdgeSplit SplitEdges(const std::vector<std::pair<uint32_t, uint32_t>>& edges, uint64_t seed, double train,
                     double validation) {
  std::vector<std::pair<uint32_t, uint32_t>> order = edges;
  Shuffle(order, seed);
  const size_t n_train = static_cast<size_t>(train * static_cast<double>(edges.size()));
  const size_t n_validation = static_cast<size_t>(validation * static_cast<double>(edges.size()));
  EdgeSplit s;
  s.train.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n_train));
  s.validation.assign(order.begin() + static_cast<std::ptrdiff_t>(n_train),
                      order.begin() + static_cast<std::ptrdiff_t>(n_train + n_validation));
  s.test.assign(order.begin() + static_cast<std::ptrdiff_t>(n_train + n_validation), order.end());
  return s;
}

}  // namespace nodefl::server::lumos
