// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/jobs/job_factory.h"

#include <thread>

#include "nodefl/server/jobs/fedwalk_hct_job.h"
#include "nodefl/server/jobs/fedwalk_histogram_job.h"
#include "nodefl/server/jobs/fedwalk_walk_job.h"
#include "nodefl/server/jobs/neighbour_echo_runner_job.h"
#include "nodefl/server/jobs/secure_compare_job.h"
#include "nodefl/server/core/os_random.h"

namespace nodefl::server::jobs {

std::vector<std::string> JobStages(const std::string& job) {
  if (job == "fedwalk") return {"fedwalk-hct", "fedwalk-walks"};
  if (job == "none" || job.empty()) return {};
  return {job};
}

std::vector<std::string> JobStages(const ServerConfig& config) {
  if (config.job == "fedwalk" && config.fedwalk_mode == "strict") return {"fedwalk-histograms"};
  return JobStages(config.job);
}

std::unique_ptr<Job> MakeJob(const ServerConfig& config, const std::string& stage, uint64_t job_id,
                             std::vector<uint32_t> participants, const Job* previous) {
  const unsigned compute_threads =
      config.compute_threads != 0 ? config.compute_threads : std::max(1u, std::thread::hardware_concurrency());
  if (stage == "neighbour-echo") {
    // A fresh public salt per job, from the OS (never a seeded generator);
    // the devices' ephemeral keys make their job keys unique whatever it is
    // (sdk/seal/public/nodefl/seal/job_keys.h).
    std::vector<uint8_t> salt(16);
    FillFromOsEntropy(salt);
    NeighbourEchoJob::Options options;
    options.job_id = job_id;
    options.round1_deadline_ms = config.job_round_deadline_ms;
    options.round2_deadline_ms = config.job_round_deadline_ms;
    return std::make_unique<NeighbourEchoRunnerJob>(options, std::move(participants), std::move(salt),
                                                    config.job_messages_per_edge, config.job_payload_bytes);
  }
  if (stage == "secure-compare") {
    // ValidateConfig checked every value; the job draws its own salt.
    SecureCompareOptions options;
    options.job_id = job_id;
    options.params.width = static_cast<uint8_t>(config.compare_width);
    options.params.digit_bits = static_cast<uint8_t>(config.compare_digit_bits);
    options.params.mode =
        config.compare_mode == "extension" ? nodefl::compare::OtMode::kExtension : nodefl::compare::OtMode::kBase;
    options.params.value = config.compare_value == "degree" ? nodefl::compare::CompareValue::kDegree
                                                            : nodefl::compare::CompareValue::kLogDegree;
    options.params.results_public = config.compare_results_public == "true";
    options.params.max_sessions = static_cast<uint16_t>(config.compare_max_sessions);
    options.round_deadline_ms = config.job_round_deadline_ms;
    options.session_timeout_ms = config.compare_session_timeout_ms;
    options.output_dir = config.output_dir;
    return std::make_unique<SecureCompareJob>(options, std::move(participants));
  }
  if (stage == "fedwalk-hct") {
    FedWalkHctOptions options;
    options.job_id = job_id;
    options.params.mode = config.fedwalk_mode == "paper" ? PrivacyMode::kPaper : PrivacyMode::kStrict;
    options.params.bins = static_cast<uint8_t>(config.fedwalk_bins);
    options.params.buckets = static_cast<uint8_t>(config.fedwalk_buckets);
    options.params.epsilon_bins = config.fedwalk_epsilon_bins;
    options.params.epsilon_upload = config.fedwalk_epsilon_upload;
    options.params.epsilon_walk = config.fedwalk_epsilon_walk;
    options.params.codebook_k = static_cast<uint16_t>(config.fedwalk_codebook_k);
    options.linkage = config.fedwalk_linkage;
    options.round_deadline_ms = config.job_round_deadline_ms;
    options.compute_threads = compute_threads;
    options.output_dir = config.output_dir;
    options.scaled_encoder = config.fedwalk_encoder == "scaled" ||
                             (config.fedwalk_encoder == "auto" && options.params.mode == PrivacyMode::kStrict);
    options.score_clip = config.fedwalk_score_clip;
    return std::make_unique<FedWalkHctJob>(options, std::move(participants));
  }
  if (stage == "fedwalk-histograms") {
    // Strict FedWalk (docs/fedwalk.md): ValidateConfig checked every value.
    FedWalkHistogramOptions options;
    options.job_id = job_id;
    options.plan.total_epsilon = config.fedwalk_strict_epsilon;
    options.plan.scheme = fedwalk::ParsePartitionScheme(config.fedwalk_strict_partition)
                              .value_or(fedwalk::PartitionScheme::kRandom);
    options.plan.clusters = config.fedwalk_strict_clusters;
    options.walks.rule = fedwalk::ParseHistogramWalkRule(config.fedwalk_strict_walk_rule)
                             .value_or(fedwalk::HistogramWalkRule::kReciprocal);
    options.walks.walks_per_vertex = config.fedwalk_walks_per_vertex;
    options.walks.walk_length = config.fedwalk_walk_length;
    options.skipgram.dim = config.fedwalk_dim;
    options.skipgram.window = config.fedwalk_window;
    options.skipgram.negative = config.fedwalk_negative;
    options.round_deadline_ms = config.job_round_deadline_ms;
    options.compute_threads = compute_threads;
    options.seed = config.fedwalk_seed;
    options.output_dir = config.output_dir;
    return std::make_unique<FedWalkHistogramJob>(options, std::move(participants));
  }
  if (stage == "fedwalk-walks") {
    const auto* hct = dynamic_cast<const FedWalkHctJob*>(previous);
    if (hct == nullptr || !hct->finished() || !hct->compute_error().empty()) return nullptr;
    FedWalkWalkOptions options;
    options.job_id = job_id;
    options.vertex_count = hct->parameters().vertex_count;
    options.params.mode = hct->parameters().mode;
    options.params.length = static_cast<uint16_t>(config.fedwalk_walk_length);
    options.params.p = config.fedwalk_p;
    options.params.epsilon = config.fedwalk_epsilon_walk;
    options.params.epsilon_per_encoding = hct->summary().epsilon_per_encoding;
    // A cap only: each device holds as many walks as its own memory allows
    // (hubs are visited in proportion to their degree and need the room).
    options.params.max_pending_walks = nodefl::fedwalk::kMaxPendingWalks;
    options.walks_per_vertex = config.fedwalk_walks_per_vertex;
    options.max_in_flight = config.fedwalk_walks_in_flight;
    options.walk_timeout_ms = config.fedwalk_walk_timeout_ms;
    options.round_deadline_ms = config.job_round_deadline_ms;
    options.dim = config.fedwalk_dim;
    options.window = config.fedwalk_window;
    options.negative = config.fedwalk_negative;
    options.threads = compute_threads;
    options.seed = config.fedwalk_seed;
    options.output_dir = config.output_dir;
    options.score_sensitivity = hct->summary().score_sensitivity;
    options.scaled_encoder = hct->scaled_encoder();
    // Only devices that hold the tree and codebook can walk.
    (void)participants;
    return std::make_unique<FedWalkWalkJob>(options, hct->CompletedDevices());
  }
  return nullptr;
}

}  // namespace nodefl::server::jobs
