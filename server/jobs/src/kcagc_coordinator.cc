// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/jobs/kcagc_coordinator.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "nodefl/kcagc/kmeans.h"
#include "nodefl/kcagc/local_cluster.h"
#include "nodefl/kcagc/participant.h"
#include "nodefl/kcagc/range.h"
#include "nodefl/kcagc/rng.h"
#include "nodefl/kcagc/spectral.h"
#include "nodefl/server/kcagc/assignment.h"
#include "nodefl/server/kcagc/intersections.h"
#include "nodefl/server/kcagc/secure_sums.h"
#include "nodefl/server/kcagc/tree.h"

namespace nodefl::server::jobs {
namespace {

namespace kc = nodefl::server::kcagc;
using nodefl::kcagc::Assignment;
using nodefl::kcagc::Intersections;
using nodefl::kcagc::Matrix;

// The joint mode's random streams (rng.h's StreamSeed), numbered as the
// one-process run numbers participant 0's (server/kcagc/sim runs.cc), whose
// streams its server-side steps take: the subspace iteration's start block
// and Protocol 1's k-means++.
constexpr uint64_t kLocalStream = 0x100;
constexpr uint64_t kProjectionStream = 0x200;

template <typename... Args>
void Say(const KcagcRunSettings& s, const char* format, Args... args) {
  if (!s.progress) return;
  char line[256];
  std::snprintf(line, sizeof line, format, args...);
  s.progress(line);
}

// Counts every sum the way the simulation's Aggregator does (a round per
// sum, its length in scalars, 4 bytes per scalar per participant taking
// part), checking the length the participants' sum came back with.
class Counted {
 public:
  Counted(KcagcParticipants& p, kc::AggregationCounters* cost) : p_(p), cost_(cost) {}

  Result<std::vector<float>> Check(Result<std::vector<float>> sum, size_t length, uint32_t members) {
    if (!sum.ok()) return sum;
    if (sum->size() != length) return Status::DataLoss();
    cost_->rounds += 1;
    cost_->scalars += length;
    cost_->uploaded_bytes += 4u * length * members;
    return sum;
  }

  KcagcParticipants& p_;
  kc::AggregationCounters* cost_;
};

struct StageRun {
  Assignment assignment;
  uint32_t unassigned_after_one_ninth = 0;
  uint32_t iterations = 0;
  bool converged = false;
  double inertia = 0.0;
};

// The points of one stage, as the server knows them.
struct StagePoints {
  uint32_t n = 0;                // N
  uint32_t members = 0;
  std::vector<double> weights;   // empty: all ones
};

Span<const double> AsSpan(const std::vector<double>& w) { return Span<const double>(w.data(), w.size()); }

// Protocol 2 lines 22-37 (server/kcagc/sim CollaborativeLloyd).
Status Lloyd(Counted& c, const StagePoints& pts, uint32_t centres, uint32_t max_iterations,
             const nodefl::secagg::FixedPoint& code, StageRun* run) {
  for (uint32_t t = 0; t < max_iterations; ++t) {
    // Lines 24-29: every participant's d^l_{i,r}, summed securely.
    NODEFL_TRY_ASSIGN(const std::vector<float> sums,
                      c.Check(c.p_.SumDistances(centres, code), size_t{pts.n} * centres, pts.members));
    // Line 30: P_L assigns and tells everyone.
    NODEFL_TRY_ASSIGN(kc::AssignmentStep step, kc::AssignFromSums(sums, pts.n, centres, kc::AssignRule::kNearest,
                                                                  run->assignment.empty() ? nullptr : &run->assignment));
    ++run->iterations;
    run->inertia = 0.0;
    for (size_t i = 0; i < pts.n; ++i) {
      run->inertia += (pts.weights.empty() ? 1.0 : pts.weights[i]) * sums[i * centres + static_cast<size_t>(step.assignment[i])];
    }
    if (step.assignment == run->assignment) {
      run->converged = true;
      break;
    }
    run->assignment = std::move(step.assignment);
    // Lines 32-36: each participant updates its slice of the centres.
    NODEFL_TRY(c.p_.UpdateCentres(run->assignment));
  }
  return Status::Ok();
}

// One run of a stage from one seeding (server/kcagc/sim OneRun).
Result<StageRun> OneRun(Counted& c, const StagePoints& pts, uint32_t centres, const KcagcRunSettings& s,
                        uint64_t stream, const nodefl::secagg::FixedPoint& code) {
  const uint32_t n = pts.n;
  std::vector<float> distances(size_t{n} * centres);
  if (s.seeding == KcagcSeedingRule::kJoint) {
    // k-means++ over the summed distances: the server draws each seed, the
    // participants sum their distances to it.
    nodefl::kcagc::SeedSampler sampler(n, AsSpan(pts.weights), stream);
    uint32_t seed = sampler.First();
    for (uint32_t r = 0; r < centres; ++r) {
      NODEFL_TRY_ASSIGN(const std::vector<float> sums, c.Check(c.p_.SumSeedDistances(seed, code), n, pts.members));
      for (uint32_t i = 0; i < n; ++i) distances[size_t{i} * centres + r] = sums[i];
      NODEFL_TRY(sampler.Observe(Span<const float>(sums.data(), sums.size())));
      if (r + 1 < centres) seed = sampler.Next();
    }
    const std::vector<uint32_t>& seeds = sampler.seeds();
    NODEFL_TRY(c.p_.SeedCentres(std::span<const uint32_t>(seeds.data(), seeds.size())));
  } else {
    // Protocol 2 line 6 per participant, then lines 8-14 in one secure sum.
    NODEFL_TRY_ASSIGN(distances, c.Check(c.p_.SumLocalSeedDistances(centres, stream, code), size_t{n} * centres,
                                         pts.members));
  }
  // Line 15: the 1/9 step; lines 17-21: centres from S.
  NODEFL_TRY_ASSIGN(kc::AssignmentStep first, kc::AssignFromSums(distances, n, centres, kc::AssignRule::kOneNinth));
  StageRun run;
  run.unassigned_after_one_ninth = first.unassigned;
  NODEFL_TRY(c.p_.UpdateCentres(first.assignment));
  run.assignment = std::move(first.assignment);
  NODEFL_TRY(Lloyd(c, pts, centres, s.iterations, code, &run));
  return run;
}

// Seeding + 1/9 step + Lloyd, over the restarts, the least inertia kept
// (server/kcagc/sim CollaborativeKMeans), recorded in the summary.
Result<Assignment> Stage(Counted& c, const KcagcStageSetup& setup, uint32_t centres, uint64_t stage, uint32_t depth,
                         const KcagcRunSettings& s, const nodefl::secagg::FixedPoint& code, KcagcRunSummary* summary) {
  const kc::AggregationCounters before = *c.cost_;
  StagePoints pts;
  pts.n = setup.points(c.p_.nodes());
  pts.members = setup.count;
  if (setup.groups != nullptr) pts.weights = nodefl::kcagc::IntersectionWeights(*setup.groups);
  NODEFL_TRY(c.p_.BeginStage(setup));
  const uint64_t stage_stream = nodefl::kcagc::StreamSeed(s.seed, stage);
  StageRun best;
  uint32_t kept = 0, total = 0;
  for (uint32_t r = 0; r < s.global_restarts; ++r) {
    NODEFL_TRY_ASSIGN(StageRun run, OneRun(c, pts, centres, s, nodefl::kcagc::StreamSeed(stage_stream, r), code));
    total += run.iterations;
    if (r == 0 || run.inertia < best.inertia) {
      kept = r;
      best = std::move(run);
    }
  }
  NODEFL_TRY(c.p_.EndStage(kept));
  KcagcStageSummary st;
  st.tree_node = setup.tree_node;
  st.depth = depth;
  st.participants = setup.count;
  st.points = pts.n;
  st.centres = centres;
  st.iterations = best.iterations;
  st.lloyd_iterations_total = total;
  st.converged = best.converged;
  st.unassigned_after_one_ninth = best.unassigned_after_one_ninth;
  st.rounds = c.cost_->rounds - before.rounds;
  st.secure_sums = c.cost_->scalars - before.scalars;
  summary->stages.push_back(st);
  summary->expected_secure_sums += kc::StageSecureSums(pts.n, centres, total, s.global_restarts);
  Say(s, "stage: %u participants, %u points, %u centres: %u unassigned by the 1/9 step, %u Lloyd iterations%s, "
         "%llu secure sums",
      st.participants, pts.n, centres, st.unassigned_after_one_ninth, st.iterations, st.converged ? " (converged)" : "",
      static_cast<unsigned long long>(st.secure_sums));
  return std::move(best.assignment);
}

// The local clusterings, checked: one cluster in [0, k̂) per node each.
Result<std::vector<Assignment>> LocalClusterings(KcagcParticipants& p, uint32_t k_hat) {
  NODEFL_TRY_ASSIGN(std::vector<Assignment> locals, p.LocalClusters(k_hat));
  if (locals.size() != p.count()) return Status::DataLoss();
  for (const Assignment& a : locals) {
    if (a.size() != p.nodes()) return Status::DataLoss();
    for (int32_t c : a) {
      if (c < 0 || static_cast<uint32_t>(c) >= k_hat) return Status::DataLoss();
    }
  }
  return locals;
}

Status RunBasic(Counted& c, const KcagcRunSettings& s, const nodefl::secagg::FixedPoint& code, KcagcRunSummary* summary) {
  KcagcStageSetup setup;
  setup.count = c.p_.count();
  NODEFL_TRY_ASSIGN(summary->assignment, Stage(c, setup, s.clusters, 1, 0, s, code, summary));
  return Status::Ok();
}

Status RunKcagc(Counted& c, const KcagcRunSettings& s, const nodefl::secagg::FixedPoint& code, KcagcRunSummary* summary) {
  // Protocol 3 lines 1-3, then 4-10 at P_L.
  NODEFL_TRY_ASSIGN(const std::vector<Assignment> parts, LocalClusterings(c.p_, s.local_clusters));
  NODEFL_TRY_ASSIGN(Intersections groups, kc::Intersect(parts));
  summary->intersections = summary->max_intersections = groups.size();
  Say(s, "%u intersections of %u participants' %u local clusters", groups.size(), c.p_.count(), s.local_clusters);
  // Lines 11-16 with the participants, line 17 at P_L.
  KcagcStageSetup setup;
  setup.count = c.p_.count();
  setup.groups = std::make_shared<const Intersections>(std::move(groups));
  for (uint32_t l = 0; l < setup.count; ++l) {
    setup.parts.push_back(l);
    setup.children.push_back(l);
  }
  NODEFL_TRY_ASSIGN(const Assignment virtual_clusters, Stage(c, setup, s.clusters, 1, 0, s, code, summary));
  summary->assignment = kc::SpreadToNodes(*setup.groups, virtual_clusters, c.p_.nodes());
  return Status::Ok();
}

Status RunTree(Counted& c, const KcagcRunSettings& s, const nodefl::secagg::FixedPoint& code, KcagcRunSummary* summary) {
  const uint32_t n = c.p_.nodes();
  NODEFL_TRY_ASSIGN(const kc::Tree tree, kc::BuildTree(c.p_.count()));
  summary->internal_nodes = tree.internal_count();
  NODEFL_TRY_ASSIGN(std::vector<Assignment> out, LocalClusterings(c.p_, s.local_clusters));
  out.resize(tree.nodes.size());  // leaves first: node l is participant l
  for (const uint32_t index : tree.internal_order) {
    const kc::TreeNode& node = tree.nodes[index];
    const auto left = static_cast<uint32_t>(node.left), right = static_cast<uint32_t>(node.right);
    const std::vector<Assignment> parts = {out[left], out[right]};
    NODEFL_TRY_ASSIGN(Intersections groups, kc::Intersect(parts));
    summary->intersections += groups.size();
    summary->max_intersections = std::max<uint64_t>(summary->max_intersections, groups.size());
    Say(s, "tree node %u (depth %u, participants %u-%u): %u intersections", index, node.depth, node.first + 1,
        node.first + node.count, groups.size());
    KcagcStageSetup setup;
    setup.tree_node = index;
    setup.first = node.first;
    setup.count = node.count;
    setup.groups = std::make_shared<const Intersections>(std::move(groups));
    const uint32_t split = tree.nodes[right].first;
    for (uint32_t l = node.first; l < node.first + node.count; ++l) {
      setup.parts.push_back(l < split ? 0u : 1u);
      setup.children.push_back(l < split ? left : right);
    }
    const uint32_t centres = index == tree.root ? s.clusters : s.local_clusters;
    NODEFL_TRY_ASSIGN(const Assignment virtual_clusters,
                      Stage(c, setup, centres, 1 + index, node.depth, s, code, summary));
    out[index] = kc::SpreadToNodes(*setup.groups, virtual_clusters, n);
    out[left] = Assignment();
    out[right] = Assignment();
  }
  summary->assignment = std::move(out[tree.root]);
  return Status::Ok();
}

// X X^T Q as the participants' secure sum, one aggregation per block: the
// simulation's SecureGram (server/kcagc/sim joint.cc) over the interface.
class RemoteGram final : public nodefl::kcagc::GramOperator {
 public:
  RemoteGram(Counted& c, const nodefl::secagg::FixedPoint& code, const KcagcRunSettings& s)
      : c_(c), code_(code), s_(s) {}

  Result<Matrix> Apply(const Matrix& block) override {
    const size_t length = static_cast<size_t>(block.rows()) * static_cast<size_t>(block.cols());
    NODEFL_TRY_ASSIGN(const std::vector<float> sum,
                      c_.Check(c_.p_.SumSpectralStep(steps_, block, code_), length, c_.p_.count()));
    ++steps_;
    Say(s_, "joint space: step %u, %zu secure sums", steps_, sum.size());
    return Matrix(Eigen::Map<const Matrix>(sum.data(), block.rows(), block.cols()));
  }

 private:
  Counted& c_;
  nodefl::secagg::FixedPoint code_;
  const KcagcRunSettings& s_;
  uint32_t steps_ = 0;
};

nodefl::kcagc::ProjectionOptions JointProjection(uint64_t seed) {
  nodefl::kcagc::ProjectionOptions p;
  p.seed = nodefl::kcagc::StreamSeed(seed, kProjectionStream);
  return p;
}

// The joint mode (server/kcagc/sim RunJoint): U by the subspace iteration,
// every product a secure sum, then Protocol 1 on U in the clear.
Status RunJoint(Counted& c, const KcagcRunSettings& s, const nodefl::secagg::FixedPoint& code,
                KcagcRunSummary* summary) {
  const uint32_t n = c.p_.nodes();
  const uint64_t m = c.p_.columns();
  // As the centralized whitened space: at most min(n, m) directions.
  const uint32_t wanted = s.space_dims != 0 ? s.space_dims : s.clusters;
  const auto dims = static_cast<uint32_t>(std::min<uint64_t>({wanted, n, m}));
  RemoteGram gram(c, code, s);
  NODEFL_TRY_ASSIGN(nodefl::kcagc::LeftSingularVectors u,
                    nodefl::kcagc::IterateLeftSubspace(n, m, dims, JointProjection(s.seed), &gram));
  summary->spectral_steps = u.summary.steps;
  summary->spectral_block = u.summary.block;
  summary->spectral_converged = u.summary.converged;
  summary->singular_values = u.singular_values;
  summary->expected_secure_sums = kc::JointSecureSums(n, u.summary.block, u.summary.steps);
  Say(s, "joint space: %u steps of block %u%s, sigma_1 %.6g, sigma_%zu %.6g", u.summary.steps, u.summary.block,
      u.summary.converged ? " (converged)" : " (step cap)", u.singular_values.front(), u.singular_values.size(),
      u.singular_values.back());
  // The centralized run's clustering step (k clusters on U), with the
  // streams the simulation gives it.
  nodefl::kcagc::LocalClusterOptions lo;
  lo.clusters = s.clusters;
  lo.iterations = s.iterations;
  lo.seed = nodefl::kcagc::StreamSeed(s.seed, kLocalStream);
  lo.restarts = s.local_restarts;
  lo.projection = JointProjection(s.seed);
  NODEFL_TRY_ASSIGN(nodefl::kcagc::LocalClustering local, nodefl::kcagc::LocalCluster(u.basis, lo));
  summary->local_iterations = local.iterations;
  summary->local_unassigned_after_one_ninth = local.unassigned_after_one_ninth;
  Say(s, "server, on the joint space: Protocol 1, %u clusters, %u unassigned by the 1/9 step, %u Lloyd iterations",
      s.clusters, local.unassigned_after_one_ninth, local.iterations);
  summary->assignment = std::move(local.assignment);
  return Status::Ok();
}

}  // namespace

const char* KcagcRunModeName(KcagcRunMode mode) {
  switch (mode) {
    case KcagcRunMode::kBasic: return "basic";
    case KcagcRunMode::kKcagc: return "kcagc";
    case KcagcRunMode::kTree: return "tree";
    case KcagcRunMode::kJoint: return "joint";
  }
  return "?";
}

Result<KcagcRunSummary> RunKcagcCoordinator(const KcagcRunSettings& s, KcagcParticipants& participants) {
  const uint32_t n = participants.nodes(), parties = participants.count();
  const bool local = s.mode == KcagcRunMode::kKcagc || s.mode == KcagcRunMode::kTree;
  if (s.clusters == 0 || s.clusters > n || parties < 2 || s.iterations == 0 || s.global_restarts == 0 ||
      (local && (s.local_clusters == 0 || s.local_clusters > n)) ||
      (s.mode == KcagcRunMode::kJoint && (s.local_restarts == 0 || participants.columns() == 0))) {
    return Status::InvalidArgument();
  }
  KcagcRunSummary summary;
  summary.participants = parties;
  Counted c(participants, &summary.cost);
  // The range round: one secure sum of B_l (the joint mode: G_l), then the
  // working code (nodefl/kcagc/range.h).
  NODEFL_TRY_ASSIGN(const nodefl::secagg::FixedPoint range_code, nodefl::kcagc::RangeCode(parties));
  NODEFL_TRY_ASSIGN(const std::vector<float> range, c.Check(participants.SumRangeBounds(range_code), 1, parties));
  summary.clip = nodefl::kcagc::ClipFromRangeSum(range[0]);
  NODEFL_TRY_ASSIGN(summary.code, nodefl::kcagc::CodeForClip(summary.clip, parties));
  Say(s, "range round: clip %.6g, scale 2^%d", static_cast<double>(summary.clip),
      static_cast<int>(std::lround(std::log2(summary.code.scale))));
  summary.expected_secure_sums = kc::kRangeRoundSums;
  switch (s.mode) {
    case KcagcRunMode::kBasic:
      NODEFL_TRY(RunBasic(c, s, summary.code, &summary));
      summary.paper_secure_sums = kc::PaperBasicSecureSums(n, s.clusters, s.iterations);
      break;
    case KcagcRunMode::kKcagc:
      NODEFL_TRY(RunKcagc(c, s, summary.code, &summary));
      summary.paper_secure_sums = kc::PaperKcagcSecureSums(s.clusters, s.local_clusters, parties, s.iterations);
      break;
    case KcagcRunMode::kTree:
      NODEFL_TRY(RunTree(c, s, summary.code, &summary));
      summary.paper_secure_sums = kc::PaperTreeSecureSums(s.local_clusters, parties, s.iterations);
      break;
    case KcagcRunMode::kJoint:
      NODEFL_TRY(RunJoint(c, s, summary.code, &summary));
      break;
  }
  NODEFL_TRY(participants.Finish(summary.assignment));
  return summary;
}

}  // namespace nodefl::server::jobs
