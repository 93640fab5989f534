// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Capping a device's neighbour list without refusing on private data. A
// device whose degree exceeds the memory its app gives a role must not
// refuse the job (that refusal would tell the server "degree > capacity",
// a bit with no DP bound). Instead it keeps `capacity` neighbours chosen in
// a public order that does not depend on anything private: the ones with
// the smallest PublicNeighbourRank(id), a fixed bijective mix of the id.
//
// What that costs in privacy: a release computed from the kept list changes
// by at most twice as much per edge as one computed from the whole list
// (adding an edge can bring one neighbour in and push one out), so its
// sensitivity doubles whenever truncation can happen at all, i.e. whenever
// capacity < vertex_count - 1. CapSensitivityFactor says which; roles
// multiply their recorded ε by it. It depends only on public numbers (the
// app's capacity and the job's vertex count), so the factor itself leaks
// nothing; a device whose capacity covers every possible degree pays
// nothing.
//
// NeighbourCap selects in one pass over the ids in any order (the app may
// stream them from storage), keeping at most `capacity` in caller memory.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/span.h"
#include "nodefl/core/status.h"

namespace nodefl {

// A public, fixed, bijective mix of the id: the order neighbours are kept in.
uint64_t PublicNeighbourRank(uint32_t id);

// 1 if a list of at most `capacity` neighbours can never be cut (capacity
// >= vertex_count - 1), else 2.
uint32_t CapSensitivityFactor(size_t capacity, uint32_t vertex_count);

class NeighbourCap {
 public:
  // `kept` is the caller's memory; its size is the capacity.
  explicit NeighbourCap(Span<uint32_t> kept) : kept_(kept) {}

  // Offers one neighbour id (each id at most once).
  void Offer(uint32_t id);
  // Sorts the kept ids ascending (what roles want) and returns them; the
  // selection is over after this.
  Span<uint32_t> Finish();

  size_t offered() const { return offered_; }
  bool truncated() const { return offered_ > kept_.size(); }

 private:
  void SiftDown(size_t i);

  Span<uint32_t> kept_;  // a max-heap by rank while offering
  size_t size_ = 0;
  size_t offered_ = 0;
};

}  // namespace nodefl
