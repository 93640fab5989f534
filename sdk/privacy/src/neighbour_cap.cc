// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/privacy/neighbour_cap.h"

namespace nodefl {

uint64_t PublicNeighbourRank(uint32_t id) {
  // SplitMix64's finaliser over a fixed offset: a bijection on 64-bit
  // words, so distinct ids never tie. Public by design: nothing secret.
  uint64_t z = uint64_t{id} + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint32_t CapSensitivityFactor(size_t capacity, uint32_t vertex_count) {
  const uint64_t most = vertex_count == 0 ? 0 : uint64_t{vertex_count} - 1;
  return capacity >= most ? 1u : 2u;
}

void NeighbourCap::SiftDown(size_t i) {
  while (true) {
    const size_t l = 2 * i + 1, r = l + 1;
    size_t top = i;
    if (l < size_ && PublicNeighbourRank(kept_[l]) > PublicNeighbourRank(kept_[top])) top = l;
    if (r < size_ && PublicNeighbourRank(kept_[r]) > PublicNeighbourRank(kept_[top])) top = r;
    if (top == i) return;
    const uint32_t t = kept_[i];
    kept_[i] = kept_[top];
    kept_[top] = t;
    i = top;
  }
}

void NeighbourCap::Offer(uint32_t id) {
  ++offered_;
  if (kept_.size() == 0) return;
  if (size_ < kept_.size()) {
    // Sift up into the max-heap.
    size_t i = size_++;
    kept_[i] = id;
    while (i > 0) {
      const size_t parent = (i - 1) / 2;
      if (PublicNeighbourRank(kept_[parent]) >= PublicNeighbourRank(kept_[i])) break;
      const uint32_t t = kept_[i];
      kept_[i] = kept_[parent];
      kept_[parent] = t;
      i = parent;
    }
    return;
  }
  // Full: the id replaces the largest rank kept if it ranks below it.
  if (PublicNeighbourRank(id) >= PublicNeighbourRank(kept_[0])) return;
  kept_[0] = id;
  SiftDown(0);
}

Span<uint32_t> NeighbourCap::Finish() {
  // Heap sort by id (insertion sort would be quadratic on hubs).
  Span<uint32_t> out = kept_.first(size_);
  const size_t n = out.size();
  auto sift = [&out](size_t i, size_t end) {
    while (true) {
      const size_t l = 2 * i + 1, r = l + 1;
      size_t top = i;
      if (l < end && out[l] > out[top]) top = l;
      if (r < end && out[r] > out[top]) top = r;
      if (top == i) return;
      const uint32_t t = out[i];
      out[i] = out[top];
      out[top] = t;
      i = top;
    }
  };
  for (size_t i = n / 2; i-- > 0;) sift(i, n);
  for (size_t end = n; end > 1; --end) {
    const uint32_t t = out[0];
    out[0] = out[end - 1];
    out[end - 1] = t;
    sift(0, end - 1);
  }
  return out;
}

}  // namespace nodefl
