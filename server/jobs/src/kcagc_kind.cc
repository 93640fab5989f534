// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/jobs/kcagc_kind.h"

#include <array>
#include <charconv>
#include <utility>

#include "nodefl/server/core/os_random.h"
#include "nodefl/server/jobs/kcagc_job.h"
#include "nodefl/server/jobs/kcagc_labels.h"

namespace nodefl::server::jobs {
namespace {

using C = KcagcJobConfig;
namespace kw = nodefl::kcagc;

constexpr std::array<OptionSpec<C>, 17> kSpecs = {{
    {"kcagc_mode", &C::mode,
     "kcagc: basic (Protocol 2: every node a point of the joint k-means), kcagc (Protocol 3: local clusters, "
     "intersections, weighted virtual nodes), tree (Protocol 3 at every internal node of a binary tree) or joint "
     "(not the paper's: the whitened space of all columns through secure sums, revealed to the server and every "
     "participant, which the server clusters; docs/kcagc.md)"},
    {"kcagc_clusters", &C::clusters, "kcagc: k, the clusters sought (0: the classes in kcagc_labels)"},
    {"kcagc_local_clusters", &C::local_clusters,
     "kcagc: k-hat, each participant's local clusters (kcagc, tree): a number, or a multiple of k like 2k"},
    {"kcagc_filter", &C::filter, "kcagc: the graph filter, half ((1 - l/2)^psi, AGC's) or norm ((1 - l/||L_s||)^psi)"},
    {"kcagc_filter_order", &C::filter_order, "kcagc: the filter's order psi"},
    {"kcagc_self_loops", &C::self_loops, "kcagc: filter with A + I, as AGC does (true or false)"},
    {"kcagc_space", &C::space,
     "kcagc: the rows clustered, whitened (the top left singular vectors, AGC's embedding), projected or full"},
    {"kcagc_space_dims", &C::space_dims, "kcagc: dimensions of the whitened or projected space (0: k)"},
    {"kcagc_seeding", &C::seeding,
     "kcagc: joint (k-means++ over securely summed distances) or local (Protocol 2 line 6: each participant "
     "seeds alone)"},
    {"kcagc_virtual", &C::virtual_nodes,
     "kcagc: virtual nodes, intersection (the mean of its rows) or centre (Protocol 3 line 13: its local centre)"},
    {"kcagc_iterations", &C::iterations, "kcagc: Q, Lloyd iterations at most in every k-means (1..10000)"},
    {"kcagc_restarts", &C::restarts, "kcagc: Protocol 1's restarts on every participant (joint: the server's, on U), least inertia kept "
     "(1..1000)"},
    {"kcagc_global_restarts", &C::global_restarts,
     "kcagc: restarts of the collaborative k-means, each with its own secure sums (1..1000; 1 is the paper's)"},
    {"kcagc_seed", &C::seed, "kcagc: seeding and projection streams (the emulator's column split takes the same)"},
    {"kcagc_secagg_mode", &C::secagg_mode,
     "kcagc: secure aggregation, robust (self masks, Shamir-shared secrets) or paper (kCAGC Protocol 4: pairwise "
     "masks only); every participant must report either way"},
    {"kcagc_step_timeout_ms", &C::step_timeout_ms,
     "kcagc: deadline of each aggregation step, of the participants' preparation and of their local clusters"},
    {"kcagc_labels", &C::labels,
     "kcagc: labels.tsv to score the clustering against (accuracy, NMI, macro-F1); evaluation only, never sent"},
}};

// k̂ from "7" or "2k" (k times 2) or "k"; 0 when malformed.
uint64_t LocalClusters(const std::string& text, uint32_t k) {
  std::string digits = text;
  const bool factor = !digits.empty() && (digits.back() == 'k' || digits.back() == 'K');
  if (factor) digits.pop_back();
  uint64_t x = 1;
  if (!digits.empty()) {
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), x);
    if (error != std::errc() || end != digits.data() + digits.size() || x == 0 || x > kw::kKcagcMaxClusters) return 0;
  } else if (!factor) {
    return 0;
  }
  return factor ? x * k : x;
}

std::string OneOf(std::string_view key, const std::string& value, std::initializer_list<std::string_view> allowed) {
  std::string list;
  for (std::string_view a : allowed) {
    if (value == a) return {};
    list += (list.empty() ? "" : ", ") + std::string(a);
  }
  return std::string(key) + ": '" + value + "' is not one of " + list;
}

std::string Validate(const C& c, const ServerConfig& config) {
  for (const std::string& e : {OneOf("kcagc_mode", c.mode, {"basic", "kcagc", "tree", "joint"}),
                               OneOf("kcagc_filter", c.filter, {"half", "norm"}),
                               OneOf("kcagc_space", c.space, {"whitened", "projected", "full"}),
                               OneOf("kcagc_seeding", c.seeding, {"joint", "local"}),
                               OneOf("kcagc_virtual", c.virtual_nodes, {"intersection", "centre"}),
                               OneOf("kcagc_secagg_mode", c.secagg_mode, {"robust", "paper"})}) {
    if (!e.empty()) return e;
  }
  if (c.mode == "joint" && c.space != "whitened") {
    // The server holds no features: the space it computes is all it can cluster.
    return "kcagc_space: kcagc_mode=joint computes the whitened space only, not '" + c.space + "'";
  }
  if (LocalClusters(c.local_clusters, 1) == 0) {
    return "kcagc_local_clusters: '" + c.local_clusters + "' is not a positive number or a multiple of k like 2k";
  }
  if (c.clusters > kw::kKcagcMaxClusters) return "kcagc_clusters: at most " + std::to_string(kw::kKcagcMaxClusters);
  if (c.filter_order > 10000) return "kcagc_filter_order: at most 10000";
  if (c.space_dims > kw::kKcagcMaxClusters) return "kcagc_space_dims: at most " + std::to_string(kw::kKcagcMaxClusters);
  if (c.iterations == 0 || c.iterations > 10000) return "kcagc_iterations: must be 1..10000";
  if (c.restarts == 0 || c.restarts > 1000) return "kcagc_restarts: must be 1..1000";
  if (c.global_restarts == 0 || c.global_restarts > 1000) return "kcagc_global_restarts: must be 1..1000";
  if (c.step_timeout_ms == 0) return "kcagc_step_timeout_ms: must be at least 1";
  if (config.job != "kcagc") return {};
  uint32_t k = c.clusters;
  if (!c.labels.empty()) {
    KcagcLabels labels;
    if (std::string error = ReadKcagcLabels(c.labels, &labels); !error.empty()) return "kcagc_labels: " + error;
    if (k == 0) k = labels.classes;
  }
  // k = 0 without labels passes here (every job validates with its
  // defaults); the job then ends at once, saying so (KcagcJobOptions::error).
  if (LocalClusters(c.local_clusters, k) > kw::kKcagcMaxClusters) {
    return "kcagc_local_clusters: " + c.local_clusters + " is more than " + std::to_string(kw::kKcagcMaxClusters);
  }
  return {};
}

bool Provides(std::string_view job) { return job == "kcagc"; }

std::vector<std::string> Stages(const ServerConfig&) { return {"kcagc"}; }

std::unique_ptr<Job> Make(const ServerConfig& config, std::string_view stage, uint64_t job_id,
                          std::vector<uint32_t> participants, const Job*) {
  if (stage != "kcagc") return nullptr;
  const C& c = Options<C>(config);
  KcagcJobOptions o;
  o.job_id = job_id;
  KcagcLabels labels;
  if (!c.labels.empty() && ReadKcagcLabels(c.labels, &labels).empty()) {
    o.labels = std::move(labels.of_node);
    o.labels_path = c.labels;
  }
  const uint32_t k = c.clusters != 0 ? c.clusters : labels.classes;
  if (k == 0) o.error = "kcagc_clusters is 0 and there is no kcagc_labels to count classes in: give kcagc_clusters=K";
  const auto k_hat = static_cast<uint32_t>(LocalClusters(c.local_clusters, k));
  KcagcRunSettings& s = o.settings;
  s.mode = c.mode == "basic"   ? KcagcRunMode::kBasic
           : c.mode == "tree"  ? KcagcRunMode::kTree
           : c.mode == "joint" ? KcagcRunMode::kJoint
                               : KcagcRunMode::kKcagc;
  s.clusters = k;
  // Basic kCAGC and the joint mode have no local clusters.
  s.local_clusters = s.mode == KcagcRunMode::kBasic || s.mode == KcagcRunMode::kJoint ? k : k_hat;
  s.seeding = c.seeding == "local" ? KcagcSeedingRule::kLocal : KcagcSeedingRule::kJoint;
  s.iterations = c.iterations;
  s.global_restarts = c.global_restarts;
  s.seed = c.seed;
  s.space_dims = c.space_dims;
  s.local_restarts = c.restarts;
  kw::KcagcParameters& p = o.params;
  // A fresh public salt per job (the participants' job keys, seal/job_keys.h).
  FillFromOsEntropy(std::span<uint8_t>(p.salt, kw::kKcagcSaltBytes));
  p.mode = s.mode == KcagcRunMode::kBasic   ? kw::KcagcMode::kBasic
           : s.mode == KcagcRunMode::kTree  ? kw::KcagcMode::kTree
           : s.mode == KcagcRunMode::kJoint ? kw::KcagcMode::kJoint
                                            : kw::KcagcMode::kKcagc;
  p.clusters = k;
  p.local_clusters = s.local_clusters;
  p.filter = c.filter == "norm" ? kw::KcagcFilter::kNorm : kw::KcagcFilter::kHalf;
  p.filter_order = c.filter_order;
  p.self_loops = c.self_loops;
  p.space = c.space == "full" ? kw::KcagcSpace::kFull : c.space == "projected" ? kw::KcagcSpace::kProjected
                                                                               : kw::KcagcSpace::kWhitened;
  p.space_dims = c.space_dims;
  p.seeding = s.seeding == KcagcSeedingRule::kLocal ? kw::KcagcSeeding::kLocal : kw::KcagcSeeding::kJoint;
  p.virtual_nodes = c.virtual_nodes == "centre" ? kw::KcagcVirtual::kCentre : kw::KcagcVirtual::kIntersection;
  p.iterations = c.iterations;
  p.local_restarts = c.restarts;
  p.seed = c.seed;
  p.aggregation = c.secagg_mode == "paper" ? nodefl::secagg::AggMode::kPaper : nodefl::secagg::AggMode::kRobust;
  o.step_timeout_us = uint64_t{c.step_timeout_ms} * 1000;
  o.report_deadline_ms = config.job_round_deadline_ms;
  o.output_dir = config.output_dir;
  return std::make_unique<KcagcJob>(std::move(o), std::move(participants));
}

constexpr JobKind kKind{"kcagc",
                        "kCAGC collaborative attributed graph clustering among L participants over secure sums "
                        "(docs/kcagc.md)",
                        &Stages, &Make};

}  // namespace

template <>
std::unique_ptr<TableOptionGroup<C>> MakeOptionGroup<C>() {
  return std::make_unique<TableOptionGroup<C>>(kSpecs, &Validate, &Provides);
}

const JobKind& KcagcKind() { return kKind; }

}  // namespace nodefl::server::jobs
