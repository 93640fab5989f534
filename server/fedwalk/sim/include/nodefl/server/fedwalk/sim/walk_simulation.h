// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// In-process stand-in for FedWalk's paper mode end to end, minus the
// transport: the HCT job (every device's upload by the SDK's device code,
// SimulateHctUploads; the server pipeline the job runs), then every
// device's state after round 3 (filled by the SDK's own artefact filters,
// walk_devices.h), then γ walks per vertex carried device to device by the
// SDK's RunWalkStep (FedWalk Alg. 1, Sec. 4.3). The result is the corpus
// the walk job would collect, plus exact counts that say what each part of
// the protocol did to it. Used by nodefl-fedwalk-walk-sim to decompose the
// gap to centralized DeepWalk without thousands of TLS devices.
//
// What differs from the job over TLS, on purpose: no relay, keys, queues or
// deadlines, so no walk is dropped for want of a key or a slot (the TLS
// runs re-issue the few that are); a device's DRBG serves its walks in a
// fixed order (walk_scheduler.h) instead of network arrival order, so the
// corpus is a function of the seed alone.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "nodefl/protocol/fedwalk/walk_format.h"
#include "nodefl/server/fedwalk/hct/linkage.h"
#include "nodefl/server/fedwalk/pipeline/hct_pipeline.h"
#include "nodefl/server/fedwalk/skipgram/walk_corpus.h"

namespace nodefl::server::fedwalk {

struct WalkSimulationOptions {
  // The HCT job, with the defaults of `nodefl-server --job fedwalk
  // --fedwalk_mode paper` (FedWalkJobConfig): k = floor(ln n) bins, ε = 2
  // for the degree vectors and for Eq. 12, K = 256, average linkage, the
  // raw Eq. 12 score (fedwalk_encoder auto = raw in paper mode), no clip.
  uint32_t bins = 0;  // 0: floor(ln n), at most 16
  double epsilon_bins = 2.0;
  double epsilon_walk = 2.0;
  uint32_t codebook_k = 256;
  Linkage linkage = Linkage::kAverage;
  bool scaled_encoder = false;
  double score_clip = 0;
  // The codebook pool each device gives the HCT role, as the emulator and
  // the board client size it (HctSizing): entries per neighbour plus a
  // spare. A row that does not fit is not kept, and that neighbour then
  // takes no part in walks (codebook_stream.h). 0 entries per neighbour:
  // room for every row.
  uint32_t codebook_entries_per_neighbour = 8;
  uint32_t codebook_spare_entries = 1024;

  // The walks (FedWalkJobConfig defaults): γ per vertex in γ rounds over
  // the vertices in a fresh random order, l entries each, predictor
  // probability p, jumps to the predictor's pick (kTree: the paper's).
  uint32_t walks_per_vertex = 80;
  uint32_t walk_length = 40;
  double p = 0.2;
  nodefl::fedwalk::JumpPredictor predictor = nodefl::fedwalk::JumpPredictor::kNeighbours;

  // Ablations, off by default (off = the job's FedWalk):
  // the identity codebook (Enc(x) = x), streamed to the devices in place of
  // Eq. 12's, so every encoding keeps its vertex;
  bool exact_encoder = false;
  // a 2-hop jump lands on a uniformly chosen true neighbour of the skipped
  // neighbour u instead of the tree's pick (taken only where the protocol
  // jumps, so the messages per walk are unchanged): isolates how well the
  // tree predicts from what skipping a device costs.
  bool oracle_predictor = false;

  // Bin plan, device noise, walk order and every device's walk DRBG.
  uint64_t seed = 1;
  unsigned threads = 2;  // 0: hardware threads
};

// Where the simulation is, readable from another thread (a progress line).
struct WalkSimulationProgress {
  enum Stage : int { kUploads, kPipeline, kDevices, kWalks, kStatistics, kDone };
  std::atomic<int> stage{kUploads};
  HctPipelineProgress pipeline;        // during kPipeline
  std::atomic<uint64_t> done{0};       // kDevices: devices; kWalks: entries; kStatistics: walks
  std::atomic<uint64_t> total{0};
};

// How a pair of vertices (a, b) sits in the true graph.
struct DistanceCounts {
  uint64_t same = 0;     // a == b
  uint64_t edge = 0;     // {a, b} is an edge
  uint64_t two_hop = 0;  // distance exactly 2
  uint64_t farther = 0;  // distance >= 3, or unreachable
  uint64_t total() const { return same + edge + two_hop + farther; }
  DistanceCounts& operator+=(const DistanceCounts& o);
};

struct WalkSimulationStats {
  // Every walk slot ends in exactly one of the three.
  uint64_t walks = 0;      // γ x n
  uint64_t completed = 0;  // l entries
  uint64_t dead_ends = 0;  // fewer: a device without walk neighbours
  uint64_t dropped = 0;    // a jump to a device that kept no own codebook row
  uint64_t tokens = 0;
  // Forwards, by kind. A triggered predictor with an empty pool forwards to
  // the neighbour (walk_format.h, step 4): counted in neighbour_hops and in
  // empty_pool_hops.
  uint64_t neighbour_hops = 0;
  uint64_t predicted_hops = 0;
  uint64_t empty_pool_hops = 0;
  uint64_t pool_entries = 0;  // summed over predicted hops: the pools jumps drew from
  // Encodings: Enc(u) of the chosen neighbour, and Enc(w) a device owes
  // itself after a jump; substituted = the encoding is another vertex.
  uint64_t neighbour_encodings = 0;
  uint64_t neighbour_substitutions = 0;
  uint64_t self_encodings = 0;
  uint64_t self_substitutions = 0;
  // Consecutive entries (a, b) of the output walks.
  DistanceCounts consecutive;
  // Each jump's landing vertex u', against the device w that jumped (a
  // true 2-hop vertex of w is what Alg. 1 aims at) and against the
  // neighbour u it skipped (u' a true neighbour of u: the tree guessed
  // right).
  DistanceCounts jump_vs_previous;
  DistanceCounts jump_vs_skipped;
  // Device-to-device messages per completed walk (as the job summarises
  // them) and Theorem 4.2's recurrence at (l, p).
  double messages_mean = 0;
  double messages_stderr = 0;
  double messages_recurrence = 0;

  // The HCT job as the devices received it.
  uint32_t bins = 0;
  uint64_t tree_bytes = 0;
  uint64_t codebook_bytes = 0;
  double max_truncated_mass = 0;
  double score_sensitivity = 0;
  double epsilon_per_encoding = 0;
  // Neighbour rows the devices' pools could not hold (those edges take no
  // part in walks), and devices that kept no own row (a jump to them is
  // dropped). Both 0 unless the pool sizing above is too small.
  uint64_t rows_not_kept = 0;
  uint64_t devices_without_own_row = 0;
  uint64_t devices_without_walk_neighbours = 0;
};

struct WalkSimulationSeconds {
  double uploads = 0;
  double dissimilarity = 0, clustering = 0, codebook = 0;  // the pipeline's parts
  double pipeline = 0;
  double devices = 0;
  double walks = 0;
  double statistics = 0;
};

struct WalkSimulationResult {
  std::string error;  // empty on success
  // The walks the server would collect, in issue order; like the job, a
  // walk that ended with no entry is counted (dead_ends) but not added.
  WalkCorpus corpus;
  WalkSimulationStats stats;
  WalkSimulationSeconds seconds;
};

// `neighbours[v]`: sorted, duplicate-free neighbour list of vertex v, not
// containing v (ids < neighbours.size()). Every vertex takes part.
// `progress` may be null.
WalkSimulationResult SimulateWalks(const std::vector<std::vector<uint32_t>>& neighbours,
                                   const WalkSimulationOptions& options, WalkSimulationProgress* progress = nullptr);

}  // namespace nodefl::server::fedwalk
