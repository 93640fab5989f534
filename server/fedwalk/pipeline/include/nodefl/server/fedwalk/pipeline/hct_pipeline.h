// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The server's math for the FedWalk HCT (FedWalk
// Sec. 4.2 and Eq. 12), from the devices' round-2 uploads to the published
// tree and codebook: feature store -> all-pairs dissimilarity (DTW in paper
// mode, histogram EMD in strict mode) -> agglomerative clustering (NN-chain)
// -> HctTree -> codebook. One function, used by the job and the benchmark,
// so both measure the same code.
//
// Memory: the condensed float32 dissimilarity matrix (n(n-1)/2 x 4 bytes)
// and one working copy that clustering consumes: 2 x 213 MB for n = 10,312.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nodefl/server/fedwalk/hct/codebook.h"
#include "nodefl/server/fedwalk/common/hct_transcript.h"
#include "nodefl/server/fedwalk/hct/hct_tree.h"
#include "nodefl/server/fedwalk/hct/linkage.h"

namespace nodefl::server::fedwalk {

struct HctPipelineOptions {
  Linkage linkage = Linkage::kAverage;
  // score_scale is set by the pipeline; score_clip (B, 0 = none) is used as
  // given, and with a clip the sensitivity is B.
  CodebookOptions codebook;
  unsigned threads = 2;
  // false: Eq. 12 as printed (raw score; each draw is 2·ε·Δu-DP).
  // true: the score divided by 2Δu (each draw ε-DP, the textbook
  // exponential mechanism), at a large cost in utility.
  bool scaled_encoder = false;
};

// Progress readable from another thread while the pipeline runs.
struct HctPipelineProgress {
  std::atomic<int> stage{0};  // 0 dissimilarity, 1 clustering, 2 codebook, 3 done
  std::atomic<uint64_t> done_pairs{0};
  std::atomic<uint64_t> total_pairs{0};
};

struct HctPipelineResult {
  std::string error;  // empty on success
  std::optional<HctTree> tree;
  std::optional<Codebook> codebook;
  double seconds_dissimilarity = 0, seconds_clustering = 0, seconds_codebook = 0;
  uint64_t dissimilarity_bytes = 0;
  uint64_t feature_bytes = 0;
  uint64_t work_cells = 0;  // DP cells (paper) or histogram cells (strict) over all pairs
  double score_sensitivity = 0;     // Δu: score_clip if set, else the largest |dissim x |leaves(LCA)||
  double max_abs_score = 0;         // the largest unclipped |u| (equals Δu without a clip)
  double epsilon_per_encoding = 0;  // 2·ε·Δu (raw) or ε (scaled)
};

// `leaves`: device ids whose upload is in `transcript` (paper mode: its
// ordered_matrices; strict: its histograms), in the order they become
// leaves 0 .. m-1.
HctPipelineResult RunHctPipeline(const HctTranscript& transcript, const std::vector<uint32_t>& leaves,
                                 const HctPipelineOptions& options, HctPipelineProgress* progress = nullptr);

// "average" / "complete" / "single".
std::optional<Linkage> ParseLinkage(const std::string& name);

}  // namespace nodefl::server::fedwalk
