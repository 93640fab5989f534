// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/fedwalk/pipeline/hct_pipeline.h"

#include <chrono>
#include <utility>

#include "nodefl/server/fedwalk/dissimilarity/dissimilarity.h"
#include "nodefl/server/fedwalk/dissimilarity/features.h"

namespace nodefl::server::fedwalk {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

std::optional<Linkage> ParseLinkage(const std::string& name) {
  if (name == "average") return Linkage::kAverage;
  if (name == "complete") return Linkage::kComplete;
  if (name == "single") return Linkage::kSingle;
  return std::nullopt;
}

HctPipelineResult RunHctPipeline(const HctTranscript& t, const std::vector<uint32_t>& leaves,
                                 const HctPipelineOptions& options, HctPipelineProgress* progress) {
  HctPipelineResult result;
  const bool paper = t.mode == PrivacyMode::kPaper;
  const uint32_t k = t.bins;
  if (leaves.size() < 2) {
    result.error = "fewer than two vertices to cluster";
    return result;
  }
  Result<FeatureStore> made = paper ? FeatureStore::OrderedMatrices(k) : FeatureStore::Histograms(k, t.buckets);
  if (!made.ok()) {
    result.error = std::string("feature store: ") + made.status().str();
    return result;
  }
  FeatureStore store = std::move(*made);
  for (uint32_t id : leaves) {
    Status added;
    if (paper) {
      auto it = t.ordered_matrices.find(id);
      if (it == t.ordered_matrices.end()) {
        result.error = "no ordered matrix from device " + std::to_string(id);
        return result;
      }
      added = store.AddOrderedMatrix(it->second, static_cast<uint32_t>(it->second.size() / k));
    } else {
      auto it = t.histograms.find(id);
      if (it == t.histograms.end()) {
        result.error = "no histogram from device " + std::to_string(id);
        return result;
      }
      added = store.AddHistogram(it->second);
    }
    if (!added.ok()) {
      result.error = "upload of device " + std::to_string(id) + " refused: " + added.str();
      return result;
    }
  }
  result.feature_bytes = store.bytes();
  result.work_cells = DissimilarityWorkCells(store);

  auto t0 = Clock::now();
  if (progress != nullptr) progress->stage.store(0);
  CondensedMatrix dissim = ComputeDissimilarities(store, options.threads, [progress](uint64_t done, uint64_t total) {
    if (progress == nullptr) return;
    progress->done_pairs.store(done, std::memory_order_relaxed);
    progress->total_pairs.store(total, std::memory_order_relaxed);
  });
  result.seconds_dissimilarity = SecondsSince(t0);
  result.dissimilarity_bytes = dissim.bytes();
  store = FeatureStore::Histograms(1, nodefl::fedwalk::kMinBuckets).value();  // free the features

  if (progress != nullptr) progress->stage.store(1);
  t0 = Clock::now();
  CondensedMatrix working = dissim;  // clustering consumes its matrix; the codebook needs the original
  std::optional<std::vector<Merge>> merges = ClusterNnChain(std::move(working), options.linkage);
  if (!merges) {
    result.error = "clustering refused the dissimilarities (not finite)";
    return result;
  }
  result.tree = HctTree::FromMerges(*merges, leaves);
  result.seconds_clustering = SecondsSince(t0);
  if (!result.tree) {
    result.error = "clustering produced an invalid tree";
    return result;
  }

  if (progress != nullptr) progress->stage.store(2);
  t0 = Clock::now();
  CodebookOptions cb = options.codebook;
  cb.threads = options.threads;
  // With a clip B the sensitivity is B before any score is seen, so the
  // scaled codebook takes one pass.
  const bool clipped = cb.score_clip > 0;
  cb.score_scale = options.scaled_encoder && clipped ? 1.0 / (2 * cb.score_clip) : 1.0;
  result.codebook = Codebook::Build(dissim, *result.tree, t.vertex_count, cb);
  if (result.codebook) {
    result.score_sensitivity = result.codebook->score_sensitivity();
    result.max_abs_score = result.codebook->max_abs_score();
    result.epsilon_per_encoding = 2 * cb.epsilon * result.score_sensitivity;
    if (options.scaled_encoder && clipped) {
      result.epsilon_per_encoding = cb.epsilon;
    } else if (options.scaled_encoder && result.score_sensitivity > 0) {
      // Without a clip the sensitivity is known only once every score has
      // been seen, so the scaled codebook is a second pass.
      cb.score_scale = 1.0 / (2 * result.score_sensitivity);
      result.codebook = Codebook::Build(dissim, *result.tree, t.vertex_count, cb);
      result.epsilon_per_encoding = cb.epsilon;
    }
  }
  result.seconds_codebook = SecondsSince(t0);
  if (!result.codebook) result.error = "codebook construction failed";
  if (progress != nullptr) progress->stage.store(3);
  return result;
}

}  // namespace nodefl::server::fedwalk
