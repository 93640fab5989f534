// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Streaming filters that pick a device's neighbours out of the two per-vertex
// artefacts of the HCT job (hct_format.h): the bin plan (one byte per vertex)
// and the degree-vector dictionary (one row per vertex). A device always
// receives the whole artefact and keeps only its neighbours' entries:
// asking the server for specific entries would reveal its edges.
//
// Both walk a cursor through the neighbours (sorted by id) as the offsets
// grow, so a pass costs O(artefact + degree) time and no memory beyond the
// neighbour records. Pieces must arrive in order and without gaps, as
// protocol::ChunkReceiver delivers them; what they write is provisional until
// the receiver reports the digest matched (complete()), after which the
// caller calls Finish().
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/fedwalk/hct_storage.h"

namespace nodefl::fedwalk {

// kBinPlan: vertex_count bytes, the bin of every vertex.
class BinPlanFilter {
 public:
  // Starts a pass: every neighbour's bin becomes kAbsentBin (ids >=
  // vertex_count are not in the plan and stay so). `keep`: where to copy
  // the whole plan, used only if it holds vertex_count bytes.
  void Begin(Span<HctNeighbour> neighbours, uint32_t bins, uint32_t vertex_count, ByteSpan keep);
  // The piece at `offset`. A byte that is neither a bin < bins nor
  // kAbsentBin makes the plan invalid (reported by Finish()).
  void Feed(uint64_t offset, ConstByteSpan data);
  // After the last piece: OK, or kDataLoss for an invalid or short plan.
  Status Finish() const;

  // Neighbours that got a bin (not kAbsentBin).
  uint32_t neighbours_binned() const { return binned_; }
  // The whole plan was copied to `keep`.
  bool kept() const { return keep_whole_ && seen_ == vertex_count_ && !invalid_; }

 private:
  Span<HctNeighbour> neighbours_;
  ByteSpan keep_;
  uint32_t bins_ = 0;
  uint32_t vertex_count_ = 0;
  uint64_t seen_ = 0;
  size_t cursor_ = 0;
  uint32_t binned_ = 0;
  bool keep_whole_ = false;
  bool invalid_ = false;
};

// kDictionary: vertex_count rows of bins x f32.
class DictionaryFilter {
 public:
  // Starts a pass: every neighbour's row is cleared and marked absent.
  void Begin(Span<HctNeighbour> neighbours, uint32_t bins, uint32_t vertex_count);
  // The piece at `offset`: copies the parts of neighbours' rows it holds
  // (rows straddle pieces anywhere).
  void Feed(uint64_t offset, ConstByteSpan data);
  // After the digest matched: a neighbour whose whole row arrived and is
  // finite (IsFiniteRow: the dictionary's NaN marks a vertex without a
  // degree vector) becomes present, with its estimated degree. Returns the
  // number of present neighbours.
  uint32_t Finish();

 private:
  Span<HctNeighbour> neighbours_;
  uint32_t bins_ = 0;
  uint32_t vertex_count_ = 0;
  uint64_t seen_ = 0;
  size_t cursor_ = 0;  // first neighbour whose row is not complete yet
};

}  // namespace nodefl::fedwalk
