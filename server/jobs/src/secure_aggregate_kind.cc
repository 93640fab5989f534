// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/jobs/secure_aggregate_kind.h"

#include <array>
#include <cmath>
#include <utility>

#include "nodefl/server/core/os_random.h"
#include "nodefl/server/jobs/secure_aggregate_job.h"

namespace nodefl::server::jobs {
namespace {

using C = SecureAggregateJobConfig;
namespace sa = nodefl::secagg;

constexpr std::array<OptionSpec<C>, 13> kSpecs = {{
    {"secagg_length", &C::length, "secure-aggregate: words per vector (1..16777216)"},
    {"secagg_mode", &C::mode,
     "secure-aggregate: robust (pairwise and self masks, secrets Shamir-shared, dropouts survived) or paper "
     "(kCAGC Protocol 4: pairwise masks only, nobody may drop)"},
    {"secagg_graph", &C::graph, "secure-aggregate mask graph: sparse (about secagg_peers random peers each) or full"},
    {"secagg_peers", &C::peers, "secure-aggregate sparse graph: peers per device (0 = 2 * ceil(log2 n))"},
    {"secagg_threshold", &C::threshold, "secure-aggregate: shares that rebuild a secret (0 = a strict majority of the peers)"},
    {"secagg_min_reporters", &C::min_reporters,
     "secure-aggregate: fewer reporters abort before anything is revealed (0 = max(threshold, 2))"},
    {"secagg_aggregations", &C::aggregations, "secure-aggregate: aggregations run one after another (1..1000)"},
    {"secagg_step_timeout_ms", &C::step_timeout_ms, "secure-aggregate: deadline of each step (keys, uploads, reveals)"},
    {"secagg_input_seed", &C::input_seed, "secure-aggregate: seed of the synthetic inputs the server checks"},
    {"secagg_graph_seed", &C::graph_seed, "secure-aggregate: seed of the sparse mask graph (public)"},
    {"secagg_drop_fraction", &C::drop_fraction,
     "secure-aggregate: fraction of devices the job cuts off at secagg_drop_step, as if they dropped (0..0.9)"},
    {"secagg_drop_step", &C::drop_step, "secure-aggregate: keys, uploads or reveals"},
    {"secagg_drop_seed", &C::drop_seed, "secure-aggregate: seed of the dropout draw"},
}};

std::string Validate(const C& c, const ServerConfig&) {
  if (c.length == 0 || c.length > sa::kMaxAggLength) {
    return "secagg_length: " + std::to_string(c.length) + " is outside 1.." + std::to_string(sa::kMaxAggLength);
  }
  if (c.mode != "robust" && c.mode != "paper") return "secagg_mode: '" + c.mode + "' is not robust or paper";
  if (c.graph != "sparse" && c.graph != "full") return "secagg_graph: '" + c.graph + "' is not sparse or full";
  if (c.peers > sa::kMaxAggPeers) return "secagg_peers: at most " + std::to_string(sa::kMaxAggPeers);
  if (c.aggregations == 0 || c.aggregations > 1000) return "secagg_aggregations: must be 1..1000";
  if (c.step_timeout_ms == 0) return "secagg_step_timeout_ms: must be at least 1";
  if (!(c.drop_fraction >= 0 && c.drop_fraction <= 0.9)) return "secagg_drop_fraction: must be 0..0.9";
  if (c.drop_step != "keys" && c.drop_step != "uploads" && c.drop_step != "reveals") {
    return "secagg_drop_step: '" + c.drop_step + "' is not keys, uploads or reveals";
  }
  if (c.mode == "paper" && c.drop_fraction > 0) {
    return "secagg_drop_fraction: paper mode survives no dropout (kCAGC Protocol 4); use secagg_mode=robust";
  }
  return {};
}

bool Provides(std::string_view job) { return job == "secure-aggregate"; }

std::vector<std::string> Stages(const ServerConfig&) { return {"secure-aggregate"}; }

std::unique_ptr<Job> Make(const ServerConfig& config, std::string_view stage, uint64_t job_id,
                          std::vector<uint32_t> participants, const Job*) {
  if (stage != "secure-aggregate") return nullptr;
  const C& c = Options<C>(config);
  SecureAggregateOptions o;
  o.job_id = job_id;
  // A fresh public salt per job (the devices' job keys, seal/job_keys.h).
  FillFromOsEntropy(std::span<uint8_t>(o.params.salt, sa::kAggregateSaltBytes));
  o.params.input_seed = c.input_seed;
  o.aggregations = c.aggregations;
  o.request.length = c.length;
  o.request.mode = c.mode == "paper" ? sa::AggMode::kPaper : sa::AggMode::kRobust;
  const size_t n = participants.size();
  if (c.graph == "full") {
    o.request.peers = 0;
  } else if (c.peers != 0) {
    o.request.peers = c.peers;
  } else {
    // Bell et al. (CCS'20) need O(log n) peers; 2 * ceil(log2 n) keeps a
    // majority threshold well clear of the dropouts the tests ask for.
    o.request.peers = 2 * static_cast<uint32_t>(std::ceil(std::log2(static_cast<double>(std::max<size_t>(n, 2)))));
  }
  o.request.threshold = c.threshold;
  o.request.min_reporters = c.min_reporters;
  o.request.step_timeout_us = uint64_t{c.step_timeout_ms} * 1000;
  o.request.graph_seed = c.graph_seed;
  o.drop_fraction = c.drop_fraction;
  o.drop_step = c.drop_step == "keys"      ? secagg::AggregationStep::kKeys
                : c.drop_step == "reveals" ? secagg::AggregationStep::kReveals
                                           : secagg::AggregationStep::kUploads;
  o.drop_seed = c.drop_seed;
  o.report_deadline_ms = config.job_round_deadline_ms;
  return std::make_unique<SecureAggregateJob>(std::move(o), std::move(participants));
}

constexpr JobKind kKind{"secure-aggregate",
                        "secure aggregation of synthetic vectors, every sum checked (docs/secure-aggregation.md)",
                        &Stages, &Make};

}  // namespace

template <>
std::unique_ptr<TableOptionGroup<C>> MakeOptionGroup<C>() {
  return std::make_unique<TableOptionGroup<C>>(kSpecs, &Validate, &Provides);
}

const JobKind& SecureAggregateKind() { return kKind; }

}  // namespace nodefl::server::jobs
