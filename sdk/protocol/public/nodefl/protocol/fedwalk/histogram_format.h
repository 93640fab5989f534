// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Strict FedWalk's contract between devices and the server: the
// cluster-histogram job (JOB_KIND_FEDWALK_HISTOGRAMS; docs/fedwalk.md,
// "Strict mode: cluster histograms"). It replaces the paper's
// device-to-device walks (FedWalk Sec. 4.3, Alg. 1), whose walks the relay
// can follow, by one or a few uploads per device; the server then generates
// the walks itself from those uploads (post-processing) and trains SkipGram
// as FedWalk Sec. 4.4 does.
//
// Each release round r = 1 .. releases:
//   server -> device  JobStart{HistogramParameters of round r} and the
//                     artefact kPartition: a public assignment of every
//                     vertex to one of C clusters.
//   device v          keeps the clusters of its own neighbours while the
//                     artefact streams by (it never asks for rows), counts
//                     h_v[c] = #neighbours of v in cluster c, adds exact
//                     discrete Laplace noise of scale 1/epsilon to every
//                     cell, records the release in its ledger, then uploads
//                     kClusterHistogram and reports.
// Sensitivity: adding or removing one of v's edges (v, u) changes exactly
// one cell, h_v[cluster(u)], by exactly 1; the L1 sensitivity is 1 whatever
// the partition, so each release is epsilon-edge-DP for v's neighbour set
// given the partition. A later round's partition may depend on earlier
// releases (the server refines it from them): that is adaptive sequential
// composition, and the device's total is the sum of its rounds' epsilons.
//
// Artefacts (ChunkHeader.artefact):
//   kPartition        server -> device  vertex_count x u16: the cluster of
//                                       vertex v (0 .. clusters-1), or
//                                       kAbsentCluster for an id that takes
//                                       no part in the release.
//   kClusterHistogram device -> server  clusters x i32: the noised h_v.
// Every multi-byte value is little-endian. Vertex ids are device ids
// 0 .. vertex_count-1.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/result.h"
#include "nodefl/core/span.h"
#include "nodefl/core/status.h"

namespace nodefl::fedwalk {

// Ledger phase (PrivacyLedger::Record) of the cluster histograms; the HCT
// job uses 1 and 2, the walk job 3.
inline constexpr uint16_t kPhaseClusterHistogram = 4;

enum class HistogramArtefact : uint32_t {
  kPartition = 1,
  kClusterHistogram = 2,
};

// Most release rounds of one job, and the cluster id range (a u16 per
// vertex; kAbsentCluster is not a cluster).
inline constexpr uint8_t kMaxHistogramReleases = 4;
inline constexpr uint32_t kMaxClusters = 0xFFFF;
inline constexpr uint16_t kAbsentCluster = 0xFFFF;
inline constexpr size_t kPartitionEntryBytes = 2;
inline constexpr size_t kHistogramCellBytes = 4;

// JobStart.parameters of release round `release` (every round carries its
// own: the partition, and with it C and the epsilon, change per round).
struct HistogramParameters {
  uint8_t release = 1;        // this round, 1 .. releases (= Envelope.round)
  uint8_t releases = 1;       // rounds in the job; the device is done after the last
  uint32_t vertex_count = 0;  // n; ids 0 .. n-1, the same in every round
  uint32_t clusters = 0;      // C of this round's partition, 1 .. kMaxClusters
  double epsilon = 1.0;       // of this round's release (the noise scale is 1/epsilon)
};
// Layout (24 bytes): u8 version (kHistogramParametersVersion), u8 release,
// u8 releases, u8 reserved (0), u32 vertex_count, u32 clusters, u32
// reserved (0), f64 epsilon.
inline constexpr size_t kHistogramParametersBytes = 24;
inline constexpr uint8_t kHistogramParametersVersion = 1;

// Ranges: 1 <= release <= releases <= kMaxHistogramReleases;
// 1 <= vertex_count < kAbsentVertex (hct_format.h); 1 <= clusters <=
// kMaxClusters; epsilon finite and > 0.
Status CheckHistogramParameters(const HistogramParameters& params);
// kInvalidArgument for `out` shorter than kHistogramParametersBytes or a
// field out of range.
Status EncodeHistogramParameters(const HistogramParameters& params, ByteSpan out);
// kInvalidArgument for a wrong size or version, non-zero reserved bytes or a
// field out of range.
Result<HistogramParameters> DecodeHistogramParameters(ConstByteSpan bytes);

constexpr uint64_t PartitionArtefactBytes(uint64_t vertex_count) { return vertex_count * kPartitionEntryBytes; }
constexpr uint64_t ClusterHistogramBytes(uint64_t clusters) { return clusters * kHistogramCellBytes; }

}  // namespace nodefl::fedwalk
