// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// PartitionFilter: picks a device's neighbours' clusters out of the public
// kPartition artefact of strict FedWalk's cluster-histogram job
// (histogram_format.h: vertex_count x u16) while it streams by. The device
// receives the whole artefact and keeps only its neighbours' entries:
// asking the server for specific entries would reveal its edges (as for the
// HCT job's bin plan and dictionary, neighbour_filters.h).
//
// A cursor walks through the neighbours (sorted by id) as the offsets grow:
// O(artefact + degree) time, no memory beyond the neighbour records.
// Entries may straddle pieces. Pieces must arrive in order without gaps, as
// protocol::ChunkReceiver delivers them; what the filter writes is provisional
// until the receiver reports the digest matched, after which the caller
// calls Finish().
#pragma once

#include <cstdint>

#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/fedwalk/cluster_histogram.h"

namespace nodefl::fedwalk {

class PartitionFilter {
 public:
  // Starts a pass: every neighbour's cluster becomes kAbsentCluster (ids >=
  // vertex_count are not in the partition and stay so).
  void Begin(Span<HistogramNeighbour> neighbours, uint32_t clusters, uint32_t vertex_count);
  // The piece at `offset` (== the bytes seen so far). An entry that is
  // neither a cluster < clusters nor kAbsentCluster, or bytes beyond the
  // artefact's size, make the partition invalid (reported by Finish()).
  void Feed(uint64_t offset, ConstByteSpan data);
  // After the last piece: OK, or kDataLoss for an invalid or short
  // partition (the neighbours' clusters are then all reset to absent).
  Status Finish();

  // Neighbours with a cluster (not kAbsentCluster) after Finish().
  uint32_t neighbours_placed() const { return placed_; }

 private:
  Span<HistogramNeighbour> neighbours_;
  uint32_t clusters_ = 0;
  uint32_t vertex_count_ = 0;
  uint64_t seen_ = 0;
  size_t cursor_ = 0;
  uint8_t low_byte_ = 0;  // first byte of an entry split across pieces
  uint32_t placed_ = 0;
  bool invalid_ = false;
};

}  // namespace nodefl::fedwalk
