// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/jobs/fedwalk_kind.h"

#include <algorithm>
#include <array>
#include <thread>
#include <utility>

#include "nodefl/protocol/fedwalk/hct_format.h"
#include "nodefl/protocol/fedwalk/histogram_format.h"
#include "nodefl/protocol/fedwalk/walk_format.h"
#include "nodefl/server/jobs/fedwalk_hct_job.h"
#include "nodefl/server/jobs/fedwalk_histogram_job.h"
#include "nodefl/server/jobs/fedwalk_walk_handoff.h"
#include "nodefl/server/jobs/fedwalk_walk_job.h"

namespace nodefl::server::jobs {
namespace {

using C = FedWalkJobConfig;
namespace contract = nodefl::fedwalk;

// The help text below spells out the contract's bounds.
static_assert(contract::kMaxBins == 16 && contract::kMinBuckets == 2 && contract::kMaxBuckets == 24 &&
                  contract::kMaxWalkLength == 1000 && contract::kMaxClusters == 65535,
              "update the fedwalk keys' help");

constexpr std::array<OptionSpec<C>, 27> kSpecs = {{
    {"fedwalk_mode", &C::mode, "fedwalk-hct privacy mode: strict (edge-DP uploads) or paper (the paper's exact M_v)"},
    {"fedwalk_bins", &C::bins, "fedwalk-hct bins k (0 = floor(ln |V|), at most 16)"},
    {"fedwalk_buckets", &C::buckets, "fedwalk-hct strict histogram buckets per bin (2..24)"},
    {"fedwalk_epsilon_bins", &C::epsilon_bins, "fedwalk-hct epsilon of each degree vector"},
    {"fedwalk_epsilon_upload", &C::epsilon_upload, "fedwalk-hct epsilon of each strict-mode histogram"},
    {"fedwalk_epsilon_walk", &C::epsilon_walk, "fedwalk-hct epsilon of the Eq. 12 codebook"},
    {"fedwalk_codebook_k", &C::codebook_k,
     "fedwalk-hct most codebook entries per vertex (entries below 1e-12 are dropped)"},
    {"fedwalk_linkage", &C::linkage, "fedwalk-hct HCT linkage: average, complete or single"},
    {"fedwalk_encoder", &C::encoder,
     "Eq. 12 encoder: raw (paper, 2*eps*du per draw), scaled (eps per draw) or auto (by fedwalk_mode)"},
    {"fedwalk_score_clip", &C::score_clip,
     "clip Eq. 10's score to [-B, 0] with this B, making the score's sensitivity B (0 = no clip, the "
     "paper's raw score, sensitivity = the run's largest |score|)"},
    {"fedwalk_walk_length", &C::walk_length, "fedwalk walk length l (2..1000)"},
    {"fedwalk_walks_per_vertex", &C::walks_per_vertex, "fedwalk walks started per vertex (gamma)"},
    {"fedwalk_p", &C::p, "fedwalk 2-hop predictor probability p (0..1)"},
    {"fedwalk_predictor", &C::predictor,
     "fedwalk: where a 2-hop jump goes, neighbours (one of the device's other neighbours: no stranger's "
     "key, messages only along edges) or tree (the paper's: near the skipped neighbour in the HCT)"},
    {"fedwalk_walks_in_flight", &C::walks_in_flight, "fedwalk walks in flight at once (0 = 4 per device)"},
    {"fedwalk_walk_timeout_ms", &C::walk_timeout_ms, "fedwalk: a walk without a result by then is lost"},
    {"fedwalk_walk_stall_factor", &C::walk_stall_factor,
     "fedwalk: a walk without a result after this many times the recent walks' 99th-percentile latency "
     "(and at least fedwalk_walk_stall_floor_ms) is lost as stalled and re-issued (0 = off)"},
    {"fedwalk_walk_stall_floor_ms", &C::walk_stall_floor_ms, "fedwalk: the shortest stall window"},
    {"fedwalk_dim", &C::dim, "fedwalk SkipGram embedding dimension"},
    {"fedwalk_window", &C::window, "fedwalk SkipGram window"},
    {"fedwalk_negative", &C::negative, "fedwalk SkipGram negative samples"},
    {"fedwalk_epochs", &C::epochs,
     "fedwalk SkipGram passes over the walks (0 = enough for 32 occurrences of each edge the walks crossed)"},
    {"fedwalk_seed", &C::seed, "fedwalk seed of walk order and training (0 = random)"},
    {"fedwalk_strict_epsilon", &C::strict_epsilon,
     "strict fedwalk: total epsilon per device over its histogram releases (0.001..1000)"},
    {"fedwalk_strict_partition", &C::strict_partition,
     "strict fedwalk: random (one release) or refined (random release, spectral clusters, second release)"},
    {"fedwalk_strict_clusters", &C::strict_clusters,
     "strict fedwalk: clusters of the last release (0 = one vertex per cluster, at most 65535)"},
    {"fedwalk_strict_walk_rule", &C::strict_walk_rule,
     "strict fedwalk: walk rule on the histograms, reciprocal (both endpoints) or direct"},
}};

std::string Validate(const C& c, const ServerConfig&) {
  const auto fail = [](std::string_view key, const std::string& what) { return std::string(key) + ": " + what; };
  if (c.mode != "strict" && c.mode != "paper") return fail("fedwalk_mode", "'" + c.mode + "' is not strict or paper");
  // Ranges of the contract (protocol/fedwalk/*_format.h): the devices refuse
  // anything outside them.
  if (c.bins > contract::kMaxBins) {
    return fail("fedwalk_bins", std::to_string(c.bins) + " is above " + std::to_string(contract::kMaxBins));
  }
  if (c.buckets < contract::kMinBuckets || c.buckets > contract::kMaxBuckets) {
    return fail("fedwalk_buckets", std::to_string(c.buckets) + " is outside " + std::to_string(contract::kMinBuckets) +
                                       ".." + std::to_string(contract::kMaxBuckets));
  }
  for (const auto& [key, value] : {std::pair{"fedwalk_epsilon_bins", c.epsilon_bins},
                                   std::pair{"fedwalk_epsilon_upload", c.epsilon_upload},
                                   std::pair{"fedwalk_epsilon_walk", c.epsilon_walk},
                                   std::pair{"fedwalk_strict_epsilon", c.strict_epsilon}}) {
    // Discrete Laplace needs a representable scale; 1e-3..1e3 is far wider
    // than any meaningful privacy budget.
    if (!(value >= 1e-3 && value <= 1e3)) return fail(key, "must be a number in 0.001..1000");
  }
  if (c.codebook_k == 0 || c.codebook_k > contract::kMaxCodebookK) {
    return fail("fedwalk_codebook_k", "must be 1.." + std::to_string(contract::kMaxCodebookK));
  }
  if (c.linkage != "average" && c.linkage != "complete" && c.linkage != "single") {
    return fail("fedwalk_linkage", "'" + c.linkage + "' is not average, complete or single");
  }
  if (c.encoder != "auto" && c.encoder != "raw" && c.encoder != "scaled") {
    return fail("fedwalk_encoder", "'" + c.encoder + "' is not auto, raw or scaled");
  }
  // 0 or a bound well inside double's range: the codebook scales by 1/(2B).
  if (!(c.score_clip == 0 || (c.score_clip >= 1e-6 && c.score_clip <= 1e12))) {
    return fail("fedwalk_score_clip", "must be 0 (no clip) or a number in 0.000001..1e12");
  }
  if (c.walk_length < 2 || c.walk_length > contract::kMaxWalkLength) {
    return fail("fedwalk_walk_length", "must be 2.." + std::to_string(contract::kMaxWalkLength));
  }
  if (c.walks_per_vertex == 0) return fail("fedwalk_walks_per_vertex", "must be at least 1");
  if (!(c.p >= 0 && c.p <= 1)) return fail("fedwalk_p", "must be a number in 0..1");
  if (!contract::ParseJumpPredictor(c.predictor.c_str()).ok()) {
    return fail("fedwalk_predictor", "'" + c.predictor + "' is not tree or neighbours");
  }
  if (c.walk_timeout_ms == 0) return fail("fedwalk_walk_timeout_ms", "must be at least 1");
  if (c.dim == 0 || c.dim > 4096) return fail("fedwalk_dim", "must be 1..4096");
  if (c.window == 0) return fail("fedwalk_window", "must be at least 1");
  if (c.negative == 0) return fail("fedwalk_negative", "must be at least 1");
  if (c.epochs > 1000) return fail("fedwalk_epochs", "must be 0 (chosen from the walks)..1000");
  if (c.strict_partition != "random" && c.strict_partition != "refined") {
    return fail("fedwalk_strict_partition", "'" + c.strict_partition + "' is not random or refined");
  }
  if (c.strict_clusters > contract::kMaxClusters) {
    return fail("fedwalk_strict_clusters", "must be 0.." + std::to_string(contract::kMaxClusters));
  }
  if (c.strict_walk_rule != "reciprocal" && c.strict_walk_rule != "direct") {
    return fail("fedwalk_strict_walk_rule", "'" + c.strict_walk_rule + "' is not reciprocal or direct");
  }
  return {};
}

bool Provides(std::string_view job) {
  return job == "fedwalk" || job == "fedwalk-hct" || job == "fedwalk-histograms";
}

unsigned ComputeThreads(const ServerConfig& config) {
  return config.compute_threads != 0 ? config.compute_threads : std::max(1u, std::thread::hardware_concurrency());
}

std::unique_ptr<Job> MakeHct(const ServerConfig& config, uint64_t job_id, std::vector<uint32_t> participants) {
  const C& c = Options<C>(config);
  FedWalkHctOptions options;
  options.job_id = job_id;
  options.params.mode = c.mode == "paper" ? PrivacyMode::kPaper : PrivacyMode::kStrict;
  options.params.bins = static_cast<uint8_t>(c.bins);
  options.params.buckets = static_cast<uint8_t>(c.buckets);
  options.params.epsilon_bins = c.epsilon_bins;
  options.params.epsilon_upload = c.epsilon_upload;
  options.params.epsilon_walk = c.epsilon_walk;
  options.params.codebook_k = static_cast<uint16_t>(c.codebook_k);
  options.linkage = c.linkage;
  options.round_deadline_ms = config.job_round_deadline_ms;
  options.compute_threads = ComputeThreads(config);
  options.output_dir = config.output_dir;
  options.scaled_encoder =
      c.encoder == "scaled" || (c.encoder == "auto" && options.params.mode == PrivacyMode::kStrict);
  options.score_clip = c.score_clip;
  return std::make_unique<FedWalkHctJob>(options, std::move(participants));
}

std::unique_ptr<Job> MakeHistograms(const ServerConfig& config, uint64_t job_id, std::vector<uint32_t> participants) {
  // Strict FedWalk (docs/fedwalk.md): Validate() checked every value.
  const C& c = Options<C>(config);
  FedWalkHistogramOptions options;
  options.job_id = job_id;
  options.plan.total_epsilon = c.strict_epsilon;
  options.plan.scheme = fedwalk::ParsePartitionScheme(c.strict_partition).value_or(fedwalk::PartitionScheme::kRandom);
  options.plan.clusters = c.strict_clusters;
  options.walks.rule =
      fedwalk::ParseHistogramWalkRule(c.strict_walk_rule).value_or(fedwalk::HistogramWalkRule::kReciprocal);
  options.walks.walks_per_vertex = c.walks_per_vertex;
  options.walks.walk_length = c.walk_length;
  options.skipgram.dim = c.dim;
  options.skipgram.window = c.window;
  options.skipgram.negative = c.negative;
  options.skipgram.epochs = c.epochs;
  options.round_deadline_ms = config.job_round_deadline_ms;
  options.compute_threads = ComputeThreads(config);
  options.seed = c.seed;
  options.output_dir = config.output_dir;
  return std::make_unique<FedWalkHistogramJob>(options, std::move(participants));
}

std::unique_ptr<Job> MakeWalks(const ServerConfig& config, uint64_t job_id, const Job* previous) {
  // From the HCT job's hand-off: the finished job itself, or what a server
  // kept of it to continue the walk job after a restart.
  WalkHandOff hct;
  if (previous == nullptr || !previous->finished() || !DecodeWalkHandOff(previous->HandOff(), &hct)) return nullptr;
  const C& c = Options<C>(config);
  FedWalkWalkOptions options;
  options.job_id = job_id;
  options.vertex_count = hct.vertex_count;
  options.params.mode = hct.mode;
  options.params.length = static_cast<uint16_t>(c.walk_length);
  options.params.p = c.p;
  options.params.predictor = contract::ParseJumpPredictor(c.predictor.c_str()).value_or(contract::JumpPredictor::kTree);
  options.params.epsilon = c.epsilon_walk;
  options.params.epsilon_per_encoding = hct.epsilon_per_encoding;
  // A cap only: each device holds as many walks as its own memory allows
  // (hubs are visited in proportion to their degree and need the room).
  options.params.max_pending_walks = contract::kMaxPendingWalks;
  options.walks_per_vertex = c.walks_per_vertex;
  options.max_in_flight = c.walks_in_flight;
  options.walk_timeout_ms = c.walk_timeout_ms;
  options.stall_factor = c.walk_stall_factor;
  options.stall_floor_ms = c.walk_stall_floor_ms;
  options.round_deadline_ms = config.job_round_deadline_ms;
  options.dim = c.dim;
  options.window = c.window;
  options.negative = c.negative;
  options.epochs = c.epochs;
  options.threads = ComputeThreads(config);
  options.seed = c.seed;
  options.output_dir = config.output_dir;
  options.score_sensitivity = hct.score_sensitivity;
  options.scaled_encoder = hct.scaled_encoder;
  // Only devices that hold the tree and codebook can walk.
  return std::make_unique<FedWalkWalkJob>(options, std::move(hct.devices));
}

std::unique_ptr<Job> Make(const ServerConfig& config, std::string_view stage, uint64_t job_id,
                          std::vector<uint32_t> participants, const Job* previous) {
  if (stage == "fedwalk-hct") return MakeHct(config, job_id, std::move(participants));
  if (stage == "fedwalk-histograms") return MakeHistograms(config, job_id, std::move(participants));
  if (stage == "fedwalk-walks") return MakeWalks(config, job_id, previous);
  return nullptr;
}

// Paper mode: the tree, then walks by the devices that hold it; strict
// mode: the cluster-histogram job alone.
std::vector<std::string> FedWalkStages(const ServerConfig& config) {
  if (Options<C>(config).mode == "strict") return {"fedwalk-histograms"};
  return {"fedwalk-hct", "fedwalk-walks"};
}
std::vector<std::string> HctStages(const ServerConfig&) { return {"fedwalk-hct"}; }
std::vector<std::string> HistogramStages(const ServerConfig&) { return {"fedwalk-histograms"}; }

constexpr JobKind kFedWalk{"fedwalk",
                           "paper mode: tree, walks, SkipGram; strict mode: cluster histograms, server-side walks, "
                           "SkipGram",
                           &FedWalkStages, &Make};
constexpr JobKind kHct{"fedwalk-hct", "the FedWalk tree and codebook only", &HctStages, &Make};
constexpr JobKind kHistograms{"fedwalk-histograms", "strict FedWalk by name", &HistogramStages, &Make};

}  // namespace

template <>
std::unique_ptr<TableOptionGroup<C>> MakeOptionGroup<C>() {
  return std::make_unique<TableOptionGroup<C>>(kSpecs, &Validate, &Provides);
}

const JobKind& FedWalkKind() { return kFedWalk; }
const JobKind& FedWalkHctKind() { return kHct; }
const JobKind& FedWalkHistogramsKind() { return kHistograms; }

}  // namespace nodefl::server::jobs
