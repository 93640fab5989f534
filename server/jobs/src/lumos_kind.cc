// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/jobs/lumos_kind.h"

#include <array>
#include <cmath>
#include <utility>

#include "nodefl/gnn/model_shape.h"
#include "nodefl/protocol/secagg/aggregation_format.h"
#include "nodefl/server/jobs/lumos_mcmc_job.h"
#include "nodefl/server/jobs/lumos_train_job.h"
#include "nodefl/server/jobs/lumos_trim_job.h"
#include "nodefl/server/jobs/secure_compare_job.h"
#include "nodefl/server/jobs/secure_compare_kind.h"

namespace nodefl::server::jobs {
namespace {

using C = LumosJobConfig;

constexpr std::array<OptionSpec<C>, 25> kSpecs = {{
    {"lumos_privacy", &C::privacy,
     "lumos-trees: strict (comparison results and kept lists stay on the devices) or paper (both reported)"},
    {"lumos_method", &C::method,
     "lumos-trees trimming: exact (drains to public thresholds, docs/lumos.md) or mcmc (Lumos Alg. 2/3 over "
     "secure comparisons; needs lumos_privacy=paper)"},
    {"lumos_step_deadline_ms", &C::step_deadline_ms,
     "lumos-trees: deadline of one drain step (exact) or of one comparison step, move or revert (mcmc)"},
    {"lumos_mcmc_iterations", &C::mcmc_iterations,
     "lumos-trees mcmc: iterations of Lumos Alg. 2 (300: the paper's LastFM setting)"},
    {"lumos_mcmc_seed", &C::mcmc_seed, "lumos-trees mcmc: seed of the server's picks and Eq. 18 draws (0: random)"},
    {"lumos_train", &C::train,
     "lumos-trees: off (trees only), node (then train the tree GNN for node classification, Lumos Sec. VI) or "
     "link (link prediction, Lumos Sec. VI-C: edges split 80/5/15, ROC-AUC)"},
    {"lumos_model", &C::model, "lumos-trees training: gcn or gat"},
    {"lumos_epochs", &C::epochs, "lumos-trees training: epochs (300: Lumos Sec. VIII-A)"},
    {"lumos_epsilon", &C::epsilon, "lumos-trees training: the feature budget epsilon (2: Lumos Sec. VIII-A)"},
    {"lumos_label_epsilon", &C::label_epsilon,
     "lumos-trees training, strict privacy: the budget of the label's one randomised-response release"},
    {"lumos_tree", &C::tree, "lumos-trees training: tree (Lumos) or ego (the ego network, Lumos w.o. VN)"},
    {"lumos_epoch_deadline_ms", &C::epoch_deadline_ms, "lumos-trees training: deadline of one epoch"},
    {"lumos_train_seed", &C::train_seed, "lumos-trees training: seed of the parameters' initialisation (0: random)"},
    {"lumos_split_seed", &C::split_seed,
     "lumos-trees training: seed of the 50/25/25 node split (link: of the server's random partner draw)"},
    {"lumos_features", &C::features,
     "lumos-trees training: the dataset's feature dimension (required with lumos_train=node or link)"},
    {"lumos_classes", &C::classes, "lumos-trees training: the dataset's classes (required with lumos_train=node)"},
    {"lumos_negatives", &C::negatives,
     "lumos-trees link training: training partners (negative samples) per device at most, 1..32"},
    {"lumos_eval_negatives", &C::eval_negatives,
     "lumos-trees link training: evaluation partners (the AUC's negatives) per device at most, 1..32"},
    {"lumos_edge_seed", &C::edge_seed, "lumos-trees link training: seed of the 80/5/15 edge split the devices apply"},
    {"lumos_projection", &C::projection,
     "lumos-trees training: dimensions of the public random projection of the features before encoding (0: none)"},
    {"lumos_projection_seed", &C::projection_seed, "lumos-trees training: seed of that projection"},
    {"lumos_secure_sum", &C::secure_sum,
     "lumos-trees training (node or link): sum the devices' gradients and metrics through secure aggregation, so "
     "that the server learns only their sums: the strict way to hide each device's gradient (robust mode, sparse "
     "mask graph; docs/lumos.md)"},
    {"lumos_secure_clip", &C::secure_clip,
     "lumos-trees training with lumos_secure_sum: each value of a device's gradient contribution is clipped to "
     "+-this before the fixed-point code (the clipped values are counted); the code's scale follows from it and the "
     "devices asked (1024: above the largest value measured on Cora, 520)"},
    {"lumos_secure_peers", &C::secure_peers,
     "lumos-trees training with lumos_secure_sum: mask peers per device (0 = 2 * ceil(log2 n))"},
    {"lumos_secure_threshold", &C::secure_threshold,
     "lumos-trees training with lumos_secure_sum: shares that rebuild a secret (0 = a strict majority of the peers)"},
}};

gnn::ModelShape ShapeOf(const C& c) {
  gnn::ModelShape shape;  // Lumos Sec. VIII-A's hidden, out, heads and dropout
  shape.layer = c.model == "gat" ? gnn::LayerKind::kGat : gnn::LayerKind::kGcn;
  shape.features = c.features;
  shape.classes = c.train == "link" ? 0 : c.classes;  // link prediction has no classifier
  return shape;
}

std::string ValidateTraining(const C& c) {
  if (c.train != "off" && c.train != "node" && c.train != "link") {
    return "lumos_train: '" + c.train + "' is not off, node or link";
  }
  if (c.model != "gcn" && c.model != "gat") return "lumos_model: '" + c.model + "' is not gcn or gat";
  if (c.tree != "tree" && c.tree != "ego") return "lumos_tree: '" + c.tree + "' is not tree or ego";
  if (c.train == "off") {
    if (c.secure_sum) return "lumos_secure_sum: needs lumos_train=node or link (it sums the training's gradients)";
    return {};
  }
  if (c.features == 0) {
    return "lumos_features: required with lumos_train=" + c.train + " (the dataset's feature dimension)";
  }
  const bool link = c.train == "link";
  if (!link && c.classes == 0) {
    return "lumos_classes: required with lumos_train=node (the dataset's number of classes)";
  }
  if (!link && c.classes > 0xffff) return "lumos_classes: at most 65535";
  // The wire carries them in a byte each (train_format.h); 32 keeps a
  // device's partner keys and messages per epoch small.
  if (c.negatives < 1 || c.negatives > 32) return "lumos_negatives: must be 1 .. 32";
  if (c.eval_negatives < 1 || c.eval_negatives > 32) return "lumos_eval_negatives: must be 1 .. 32";
  if (c.epochs == 0) return "lumos_epochs: must be at least 1";
  if (c.projection > 65535) return "lumos_projection: at most 65535 (0: no projection)";
  // The wire carries float32 (train_format.h).
  if (!std::isfinite(c.epsilon) || c.epsilon <= 0 || c.epsilon > 1e6) {
    return "lumos_epsilon: must be positive and finite";
  }
  if (!std::isfinite(c.label_epsilon) || c.label_epsilon <= 0 || c.label_epsilon > 1e6) {
    return "lumos_label_epsilon: must be positive and finite";
  }
  if (c.epoch_deadline_ms == 0) return "lumos_epoch_deadline_ms: must be at least 1";
  // The contract carries the clip as float32 and a scale of at least 2^-120.
  if (!std::isfinite(c.secure_clip) || c.secure_clip <= 0 || c.secure_clip > 1e30) {
    return "lumos_secure_clip: must be positive and finite";
  }
  if (c.secure_peers > nodefl::secagg::kMaxAggPeers) {
    return "lumos_secure_peers: at most " + std::to_string(nodefl::secagg::kMaxAggPeers);
  }
  if (c.secure_peers != 0 && c.secure_threshold > c.secure_peers) {
    return "lumos_secure_threshold: at most lumos_secure_peers (a secret is shared among the peers)";
  }
  gnn::ModelShape model = ShapeOf(c);
  if (c.projection != 0) model.features = c.projection;
  if (!gnn::LayoutOf(model).ok()) {
    return "lumos_features/lumos_classes: the model does not fit (more than 2^24 parameters)";
  }
  return {};
}

std::string Validate(const C& c, const ServerConfig&) {
  if (c.privacy != "strict" && c.privacy != "paper") return "lumos_privacy: '" + c.privacy + "' is not strict or paper";
  if (c.method != "exact" && c.method != "mcmc") return "lumos_method: '" + c.method + "' is not exact or mcmc";
  if (c.method == "mcmc" && c.privacy != "paper") {
    // Alg. 3 picks the maximum from comparison results the server reads.
    return "lumos_method: mcmc needs lumos_privacy=paper (the server learns every workload comparison result; "
           "Lumos Alg. 3 needs them public)";
  }
  if (c.step_deadline_ms == 0) return "lumos_step_deadline_ms: must be at least 1";
  if (c.mcmc_iterations == 0) return "lumos_mcmc_iterations: must be at least 1";
  return ValidateTraining(c);
}

bool Provides(std::string_view job) { return job == "lumos-trees"; }

bool Mcmc(const ServerConfig& config) { return Options<C>(config).method == "mcmc"; }

std::vector<std::string> Stages(const ServerConfig& config) {
  std::vector<std::string> stages = {"secure-compare", Mcmc(config) ? "lumos-mcmc" : "lumos-trim"};
  if (Options<C>(config).train != "off") stages.emplace_back("lumos-train");
  return stages;
}

// Lumos Sec. VI on the trees the trimming stage left on the devices; every
// participant of the plan is asked (a device without a trimming result
// refuses setup and takes no part).
std::unique_ptr<Job> MakeTrain(const ServerConfig& config, uint64_t job_id, const Job* previous) {
  const std::vector<uint32_t>* participants = nullptr;
  if (const auto* trim = dynamic_cast<const LumosTrimJob*>(previous)) participants = &trim->participants();
  if (const auto* mcmc = dynamic_cast<const LumosMcmcJob*>(previous)) participants = &mcmc->participants();
  if (participants == nullptr || !previous->finished()) return nullptr;
  const C& c = Options<C>(config);
  LumosTrainOptions options;
  options.job_id = job_id;
  options.shape = ShapeOf(c);
  options.paper = c.privacy == "paper";
  options.ego_star = c.tree == "ego";
  options.epsilon = static_cast<float>(c.epsilon);
  options.label_epsilon = static_cast<float>(c.label_epsilon);
  options.epochs = c.epochs;
  options.seed = c.train_seed;
  options.split_seed = c.split_seed;
  options.projection = static_cast<uint16_t>(c.projection);  // <= 65535 (Validate)
  options.projection_seed = c.projection_seed;
  options.secure_sum = c.secure_sum;
  options.secure_clip = static_cast<float>(c.secure_clip);  // positive, finite, within float (Validate)
  options.secure_peers = c.secure_peers;
  options.secure_threshold = c.secure_threshold;
  if (c.train == "link") {
    options.task = nodefl::lumos::TrainTask::kLink;
    options.negatives = static_cast<uint8_t>(c.negatives);  // 1 .. 32 (Validate)
    options.eval_negatives = static_cast<uint8_t>(c.eval_negatives);
    options.edge_seed = c.edge_seed;
  }
  options.round_deadline_ms = config.job_round_deadline_ms;
  options.epoch_deadline_ms = c.epoch_deadline_ms;
  options.output_dir = config.output_dir;
  return std::make_unique<LumosTrainJob>(options, *participants);
}

// Lumos Alg. 2/3 from the greedy job's result; the comparisons run as the
// greedy job's did (OT mode, pacing, digits, session timeout), on 16-bit
// workloads instead of 5-bit log-degrees.
std::unique_ptr<Job> MakeMcmc(const ServerConfig& config, uint64_t job_id, const SecureCompareJob& greedy) {
  const C& c = Options<C>(config);
  const SecureCompareOptions compare = SecureCompareOptionsFrom(config, job_id);
  LumosMcmcOptions options;
  options.job_id = job_id;
  options.iterations = c.mcmc_iterations;
  options.seed = c.mcmc_seed;
  options.round_deadline_ms = config.job_round_deadline_ms;
  options.step_deadline_ms = c.step_deadline_ms;
  options.session_timeout_ms = compare.session_timeout_ms;
  options.digit_bits = compare.params.digit_bits;
  options.mode = compare.params.mode;
  options.max_sessions = compare.params.max_sessions;
  options.upload_kept = true;  // mcmc is paper mode only (Validate)
  options.output_dir = config.output_dir;
  std::vector<std::pair<uint32_t, uint32_t>> edges(greedy.edges().begin(), greedy.edges().end());
  return std::make_unique<LumosMcmcJob>(options, greedy.participants(), std::move(edges));
}

std::unique_ptr<Job> Make(const ServerConfig& config, std::string_view stage, uint64_t job_id,
                          std::vector<uint32_t> participants, const Job* previous) {
  const C& c = Options<C>(config);
  const bool paper = c.privacy == "paper";
  if (stage == "secure-compare") {
    SecureCompareOptions options = SecureCompareOptionsFrom(config, job_id);
    // The plan's privacy decides whether the greedy results are reported.
    options.params.results_public = paper;
    return std::make_unique<SecureCompareJob>(options, std::move(participants));
  }
  if (stage == "lumos-train") return MakeTrain(config, job_id, previous);
  if (stage != "lumos-trim" && stage != "lumos-mcmc") return nullptr;
  const auto* greedy = dynamic_cast<const SecureCompareJob*>(previous);
  if (greedy == nullptr || !greedy->finished()) return nullptr;
  if (stage == "lumos-mcmc") return MakeMcmc(config, job_id, *greedy);
  LumosTrimOptions options;
  options.job_id = job_id;
  options.round_deadline_ms = config.job_round_deadline_ms;
  options.step_deadline_ms = c.step_deadline_ms;
  options.upload_kept = paper;
  options.output_dir = config.output_dir;
  std::vector<std::pair<uint32_t, uint32_t>> edges(greedy->edges().begin(), greedy->edges().end());
  return std::make_unique<LumosTrimJob>(options, greedy->participants(), std::move(edges));
}

constexpr JobKind kKind{"lumos-trees",
                        "Lumos tree construction: greedy by secure comparisons, then exact trimming or the paper's MCMC; "
                        "optionally tree-GNN training (lumos_train=node or link)",
                        &Stages, &Make};

}  // namespace

template <>
std::unique_ptr<TableOptionGroup<C>> MakeOptionGroup<C>() {
  return std::make_unique<TableOptionGroup<C>>(kSpecs, &Validate, &Provides);
}

const JobKind& LumosTreesKind() { return kKind; }

}  // namespace nodefl::server::jobs
