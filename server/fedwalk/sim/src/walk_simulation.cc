// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/fedwalk/sim/walk_simulation.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <optional>
#include <random>
#include <thread>

#include "graph_distance.h"
#include "identity_codebook.h"
#include "nodefl/core/little_endian.h"
#include "nodefl/protocol/fedwalk/hct_format.h"
#include "nodefl/protocol/fedwalk/walk_format.h"
#include "nodefl/server/fedwalk/common/walk_messages.h"
#include "nodefl/server/fedwalk/sim/hct_simulation.h"
#include "parallel_chunks.h"
#include "walk_devices.h"
#include "walk_scheduler.h"

namespace nodefl::server::fedwalk {

namespace fw = nodefl::fedwalk;
using Clock = std::chrono::steady_clock;

namespace {

double SecondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

void SetStage(WalkSimulationProgress* progress, int stage, uint64_t total) {
  if (progress == nullptr) return;
  progress->done.store(0);
  progress->total.store(total);
  progress->stage.store(stage);
}

std::string CheckOptions(const std::vector<std::vector<uint32_t>>& neighbours, const WalkSimulationOptions& o) {
  if (neighbours.empty()) return "the graph has no vertex";
  if (neighbours.size() >= fw::kAbsentVertex) return "too many vertices";
  for (size_t v = 0; v < neighbours.size(); ++v) {
    const std::vector<uint32_t>& list = neighbours[v];
    for (size_t j = 0; j < list.size(); ++j) {
      if (list[j] >= neighbours.size() || list[j] == v || (j > 0 && list[j] <= list[j - 1])) {
        return "neighbour list of vertex " + std::to_string(v) + " is not sorted, unique and without v";
      }
    }
  }
  if (o.bins > fw::kMaxBins) return "bins must be 0 .. " + std::to_string(fw::kMaxBins);
  if (o.codebook_k == 0 || o.codebook_k > fw::kMaxCodebookK) {
    return "codebook K must be 1 .. " + std::to_string(fw::kMaxCodebookK);
  }
  if (!(o.epsilon_bins > 0) || !(o.epsilon_walk > 0) || !std::isfinite(o.epsilon_bins) ||
      !std::isfinite(o.epsilon_walk)) {
    return "epsilons must be positive numbers";
  }
  if (o.walk_length < 2 || o.walk_length > fw::kMaxWalkLength) {
    return "walk length must be 2 .. " + std::to_string(fw::kMaxWalkLength);
  }
  if (o.walks_per_vertex == 0) return "walks per vertex must be at least 1";
  if (!(o.p >= 0 && o.p <= 1)) return "p must be in 0 .. 1";
  return {};
}

// The job's schedule (FedWalkWalkJob::StartWalkRound): γ rounds over the
// vertices, each in a fresh random order from one generator.
std::vector<uint32_t> WalkStarts(uint32_t n, uint32_t gamma, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint32_t> order(n), starts;
  starts.reserve(size_t{n} * gamma);
  for (uint32_t g = 0; g < gamma; ++g) {
    std::iota(order.begin(), order.end(), 0u);
    std::shuffle(order.begin(), order.end(), rng);
    starts.insert(starts.end(), order.begin(), order.end());
  }
  return starts;
}

// The artefacts rounds 1-3 stream, from the simulated job and the pipeline.
walk_sim::HctArtefacts Artefacts(const SimulatedJob& job, const HctPipelineResult& r, bool exact_encoder) {
  walk_sim::HctArtefacts a;
  a.vertex_count = job.transcript.vertex_count;
  a.bins = job.transcript.bins;
  a.bin_plan = job.transcript.bin_plan;
  a.dictionary.resize(job.transcript.dictionary.size() * 4);
  for (size_t i = 0; i < job.transcript.dictionary.size(); ++i) {
    StoreF32Le(job.transcript.dictionary[i], a.dictionary.data() + 4 * i);
  }
  a.tree = r.tree->Serialize();
  if (exact_encoder) {
    std::vector<bool> in_tree(a.vertex_count, false);
    for (uint32_t v : job.leaves) in_tree[v] = true;
    a.codebook = walk_sim::IdentityCodebookArtefact(in_tree);
  } else {
    a.codebook = r.codebook->Serialize();
  }
  return a;
}

// Corpus, outcome counts, messages per walk and the consecutive-entry
// classes, from the finished walks.
std::string Summarise(const walk_sim::WalkRun& run, const std::vector<std::vector<uint32_t>>& neighbours,
                      uint32_t l, unsigned threads, WalkSimulationProgress* progress, WalkSimulationResult* out) {
  WalkSimulationStats& s = out->stats;
  const size_t walks = run.headers.size();
  const auto n = static_cast<uint32_t>(neighbours.size());
  s.walks = walks;
  std::vector<uint32_t> tokens;
  std::vector<uint64_t> offsets{0};
  double sum = 0, sum2 = 0;
  for (size_t i = 0; i < walks; ++i) {
    const fw::WalkHeader& h = run.headers[i];
    switch (run.outcomes[i]) {
      case fw::WalkOutcome::kComplete: {
        ++s.completed;
        const double hops = h.hops;
        sum += hops;
        sum2 += hops * hops;
        break;
      }
      case fw::WalkOutcome::kDeadEnd: ++s.dead_ends; break;
      case fw::WalkOutcome::kDropped: ++s.dropped; break;
    }
    // As the job: a walk with no entry trains nothing and is not kept.
    if (h.count == 0) continue;
    const ConstByteSpan ids(run.ids.data() + i * 4 * size_t{l}, 4 * size_t{h.count});
    for (size_t j = 0; j < h.count; ++j) tokens.push_back(fw::WalkIdAt(ids, j));
    offsets.push_back(tokens.size());
  }
  s.tokens = tokens.size();
  if (s.completed > 0) {
    const auto c = static_cast<double>(s.completed);
    s.messages_mean = sum / c;
    const double var = s.completed > 1 ? std::max(0.0, (sum2 - sum * sum / c) / (c - 1)) : 0.0;
    s.messages_stderr = std::sqrt(var / c);
  }
  std::string error;
  std::optional<WalkCorpus> corpus = WalkCorpus::FromCsr(n, std::move(tokens), std::move(offsets), &error);
  if (!corpus) return "corpus: " + error;
  out->corpus = std::move(*corpus);

  const walk_sim::GraphDistance distance(neighbours);
  SetStage(progress, WalkSimulationProgress::kStatistics, out->corpus.num_walks());
  std::vector<DistanceCounts> per_worker(std::max(1u, threads));
  walk_sim::ForChunks(out->corpus.num_walks(), 256, threads, [&](unsigned worker, size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      const auto walk = out->corpus.Walk(i);
      for (size_t j = 1; j < walk.size(); ++j) distance.Count(walk[j - 1], walk[j], &per_worker[worker]);
    }
    if (progress != nullptr) progress->done.fetch_add(end - begin);
  });
  for (const DistanceCounts& c : per_worker) s.consecutive += c;
  return {};
}

}  // namespace

WalkSimulationResult SimulateWalks(const std::vector<std::vector<uint32_t>>& neighbours,
                                   const WalkSimulationOptions& options, WalkSimulationProgress* progress) {
  WalkSimulationResult out;
  if (std::string error = CheckOptions(neighbours, options); !error.empty()) {
    out.error = error;
    return out;
  }
  const auto n = static_cast<uint32_t>(neighbours.size());
  const unsigned threads =
      options.threads != 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  WalkSimulationStats& s = out.stats;
  WalkSimulationSeconds& t = out.seconds;

  // Rounds 1 and 2 on every device (paper mode: noised degree vectors,
  // then the exact ordered matrices M_v).
  SetStage(progress, WalkSimulationProgress::kUploads, n);
  auto t0 = Clock::now();
  fw::HctParameters params;
  params.mode = PrivacyMode::kPaper;
  params.bins = static_cast<uint8_t>(options.bins);
  params.epsilon_bins = options.epsilon_bins;
  params.epsilon_walk = options.epsilon_walk;
  params.codebook_k = static_cast<uint16_t>(options.codebook_k);
  const SimulatedJob job = SimulateHctUploads(neighbours, params, options.seed);
  t.uploads = SecondsSince(t0);
  if (!job.error.empty()) {
    out.error = "HCT uploads: " + job.error;
    return out;
  }

  // The server's computation, with the options FedWalkHctJob::RunCompute uses.
  SetStage(progress, WalkSimulationProgress::kPipeline, 0);
  t0 = Clock::now();
  HctPipelineOptions pipeline;
  pipeline.linkage = options.linkage;
  pipeline.codebook.epsilon = options.epsilon_walk;
  pipeline.codebook.k = options.codebook_k;
  pipeline.codebook.score_clip = options.score_clip;
  pipeline.threads = threads;
  pipeline.scaled_encoder = options.scaled_encoder;
  const HctPipelineResult r =
      RunHctPipeline(job.transcript, job.leaves, pipeline, progress != nullptr ? &progress->pipeline : nullptr);
  t.pipeline = SecondsSince(t0);
  t.dissimilarity = r.seconds_dissimilarity;
  t.clustering = r.seconds_clustering;
  t.codebook = r.seconds_codebook;
  if (!r.error.empty()) {
    out.error = "HCT pipeline: " + r.error;
    return out;
  }
  s.bins = job.transcript.bins;
  s.max_truncated_mass = r.codebook->max_truncated_mass();
  s.score_sensitivity = r.score_sensitivity;
  s.epsilon_per_encoding = r.epsilon_per_encoding;

  // Round 3 on every device: what each keeps of the artefacts.
  SetStage(progress, WalkSimulationProgress::kDevices, n);
  t0 = Clock::now();
  const walk_sim::HctArtefacts artefacts = Artefacts(job, r, options.exact_encoder);
  s.tree_bytes = artefacts.tree.size();
  s.codebook_bytes = artefacts.codebook.size();
  walk_sim::SimulatedDevices devices;
  const walk_sim::DevicePoolSizing sizing{options.codebook_entries_per_neighbour, options.codebook_spare_entries};
  if (std::string error = devices.Build(neighbours, artefacts, sizing, options.p, options.predictor, threads,
                                        progress != nullptr ? &progress->done : nullptr);
      !error.empty()) {
    out.error = "devices: " + error;
    return out;
  }
  s.rows_not_kept = devices.rows_not_kept();
  s.devices_without_own_row = devices.devices_without_own_row();
  s.devices_without_walk_neighbours = devices.devices_without_walk_neighbours();
  t.devices = SecondsSince(t0);

  // The walks.
  const std::vector<uint32_t> starts = WalkStarts(n, options.walks_per_vertex, options.seed);
  SetStage(progress, WalkSimulationProgress::kWalks, starts.size() * uint64_t{options.walk_length});
  t0 = Clock::now();
  walk_sim::WalkRunOptions run_options;
  run_options.walk_length = options.walk_length;
  run_options.oracle_predictor = options.oracle_predictor;
  run_options.seed = options.seed;
  run_options.threads = threads;
  walk_sim::WalkRun run;
  if (std::string error = walk_sim::RunWalks(devices, neighbours, starts, run_options, &run,
                                             progress != nullptr ? &progress->done : nullptr);
      !error.empty()) {
    out.error = "walks: " + error;
    return out;
  }
  t.walks = SecondsSince(t0);
  const walk_sim::StepCounters& k = run.counters;
  s.neighbour_hops = k.neighbour_hops;
  s.predicted_hops = k.predicted_hops;
  s.empty_pool_hops = k.empty_pool_hops;
  s.pool_entries = k.pool_entries;
  s.neighbour_encodings = k.neighbour_encodings;
  s.neighbour_substitutions = k.neighbour_substitutions;
  s.self_encodings = k.self_encodings;
  s.self_substitutions = k.self_substitutions;
  s.jump_vs_previous = k.jump_vs_previous;
  s.jump_vs_skipped = k.jump_vs_skipped;
  s.messages_recurrence = ExpectedMessagesPerWalk(options.walk_length, options.p);

  t0 = Clock::now();
  if (std::string error = Summarise(run, neighbours, options.walk_length, threads, progress, &out); !error.empty()) {
    out.error = error;
    return out;
  }
  t.statistics = SecondsSince(t0);
  SetStage(progress, WalkSimulationProgress::kDone, 0);
  return out;
}

}  // namespace nodefl::server::fedwalk
