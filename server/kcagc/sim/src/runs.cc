// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/kcagc/sim/runs.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>

#include "nodefl/kcagc/local_cluster.h"
#include "nodefl/kcagc/projection.h"
#include "nodefl/kcagc/range.h"
#include "nodefl/kcagc/rng.h"
#include "nodefl/kcagc/spectral.h"
#include "nodefl/server/kcagc/intersections.h"
#include "nodefl/server/kcagc/secure_sums.h"
#include "nodefl/server/kcagc/sim/joint.h"
#include "nodefl/server/kcagc/sim/range_round.h"
#include "nodefl/server/kcagc/tree.h"

namespace nodefl::server::kcagc {

using nodefl::kcagc::Assignment;
using nodefl::kcagc::Intersections;
using nodefl::kcagc::LocalClustering;
using nodefl::kcagc::Matrix;

namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Stream ids of the run's randomness (rng.h's StreamSeed).
constexpr uint64_t kLocalStream = 0x100;       // + participant: Protocol 1's k-means++
constexpr uint64_t kProjectionStream = 0x200;  // + participant: subspace iteration's start

template <typename... Args>
void Say(const RunOptions& o, const char* format, Args... args) {
  if (!o.progress) return;
  char line[256];
  std::snprintf(line, sizeof line, format, args...);
  o.progress(line);
}

nodefl::kcagc::ProjectionOptions ProjectionFor(const RunOptions& o, uint32_t participant) {
  nodefl::kcagc::ProjectionOptions p;
  p.method = o.projection_method;
  p.seed = nodefl::kcagc::StreamSeed(o.seed, kProjectionStream + participant);
  return p;
}

// Joins the slices side by side (kCentral), freeing each once copied.
Matrix Concatenate(std::vector<Matrix>* slices) {
  Eigen::Index columns = 0;
  for (const Matrix& s : *slices) columns += s.cols();
  Matrix whole(slices->front().rows(), columns);
  Eigen::Index at = 0;
  for (Matrix& s : *slices) {
    whole.middleCols(at, s.cols()) = s;
    at += s.cols();
    s = Matrix();
  }
  return whole;
}

// Protocol 1 lines 1-3 on every slice; ‖L_s‖ once for all (same graph).
Status FilterAll(const nodefl::kcagc::GraphView& graph, const RunOptions& o, std::vector<Matrix>* slices) {
  nodefl::kcagc::FilterOptions filter = o.filter;
  if (filter.kind == nodefl::kcagc::FilterKind::kNorm && filter.laplacian_norm <= 0.0) {
    NODEFL_TRY_ASSIGN(filter.laplacian_norm, nodefl::kcagc::LaplacianNorm(graph, filter.self_loops));
  }
  for (size_t l = 0; l < slices->size(); ++l) {
    Say(o, "filtering slice %zu/%zu (%ld columns, order %u)", l + 1, slices->size(),
        static_cast<long>((*slices)[l].cols()), filter.order);
    NODEFL_TRY(nodefl::kcagc::ApplyGraphFilter(graph, filter, &(*slices)[l]));
  }
  return Status::Ok();
}

// The range round: one secure sum of B_l, then the working code.
Status RangeRound(const std::vector<Matrix>& slices, Aggregator* aggregator, RunReport* report) {
  std::vector<double> bounds;
  for (const Matrix& s : slices) bounds.push_back(nodefl::kcagc::DistanceBound(s));
  NODEFL_TRY_ASSIGN(RangeRoundResult range, RunRangeRound(bounds, aggregator));
  report->bounds = std::move(range.bounds);
  report->clip = range.clip;
  report->code = range.code;
  return Status::Ok();
}

// One collaborative stage, recorded in the report.
Result<StageResult> Stage(std::span<const Matrix> points, std::span<const Matrix> projected,
                          std::span<const double> weights, uint32_t centres, uint64_t stage, uint32_t tree_node,
                          uint32_t depth, const RunOptions& o, Aggregator* aggregator, RunReport* report) {
  StageOptions so;
  so.centres = centres;
  so.iterations = o.iterations;
  so.seeding = o.seeding;
  so.seed = o.seed;
  so.stage = stage;
  so.restarts = o.global_restarts;
  const AggregationCounters before = aggregator->counters();
  NODEFL_TRY_ASSIGN(StageResult result,
                    CollaborativeKMeans(points, projected, weights, so, report->code, aggregator));
  StageReport s;
  s.tree_node = tree_node;
  s.depth = depth;
  s.participants = static_cast<uint32_t>(points.size());
  s.points = static_cast<uint64_t>(points.front().rows());
  s.centres = centres;
  s.iterations = result.iterations;
  s.restarts = o.global_restarts;
  s.lloyd_iterations_total = result.lloyd_iterations_total;
  s.converged = result.converged;
  s.unassigned_after_one_ninth = result.unassigned_after_one_ninth;
  s.cost = aggregator->counters() - before;
  s.expected_secure_sums = StageSecureSums(s.points, centres, result.lloyd_iterations_total, o.global_restarts);
  report->stages.push_back(s);
  Say(o, "stage: %u participants, %llu points, %u centres: %u unassigned by the 1/9 step, %u Lloyd iterations%s, %llu secure sums",
      s.participants, static_cast<unsigned long long>(s.points), centres, s.unassigned_after_one_ninth, s.iterations,
      s.converged ? " (converged)" : "", static_cast<unsigned long long>(s.cost.scalars));
  return result;
}

// who: the party that clusters, for the progress lines (null: participant l).
Result<std::vector<LocalClustering>> LocalClusterAll(const std::vector<Matrix>& slices, uint32_t clusters,
                                                     const RunOptions& o, RunReport* report,
                                                     const char* who = nullptr) {
  std::vector<LocalClustering> locals;
  for (uint32_t l = 0; l < slices.size(); ++l) {
    nodefl::kcagc::LocalClusterOptions lo;
    lo.clusters = clusters;
    lo.iterations = o.iterations;
    lo.seed = nodefl::kcagc::StreamSeed(o.seed, kLocalStream + l);
    lo.restarts = o.local_restarts;
    lo.projection = ProjectionFor(o, l);
    NODEFL_TRY_ASSIGN(LocalClustering local, nodefl::kcagc::LocalCluster(slices[l], lo));
    report->local_iterations_max = std::max(report->local_iterations_max, local.iterations);
    report->local_unassigned_max = std::max(report->local_unassigned_max, local.unassigned_after_one_ninth);
    const std::string party = who != nullptr ? std::string(who) : "participant " + std::to_string(l + 1);
    Say(o, "%s: Protocol 1, %u clusters, %u unassigned by the 1/9 step, %u Lloyd iterations", party.c_str(), clusters,
        local.unassigned_after_one_ninth, local.iterations);
    locals.push_back(std::move(local));
  }
  return locals;
}

// Protocol 1 on one matrix held whole, k clusters: the central run's
// clustering step, which kJoint repeats at the server on the joint space.
Status RunCentral(const std::vector<Matrix>& whole, const RunOptions& o, RunReport* report, const char* who) {
  NODEFL_TRY_ASSIGN(std::vector<LocalClustering> locals, LocalClusterAll(whole, o.clusters, o, report, who));
  report->assignment = std::move(locals.front().assignment);
  return Status::Ok();
}

// kJoint: the joint whitened space through secure sums, then the central
// run's clustering step on it. The start block is the central run's
// (ProjectionFor(o, 0)), so with exact sums the two would see the same
// products.
Status RunJoint(const std::vector<Matrix>& slices, uint32_t dims, const RunOptions& o, Aggregator* aggregator,
                RunReport* report) {
  uint64_t m = 0;
  for (const Matrix& s : slices) m += static_cast<uint64_t>(s.cols());
  JointSpaceOptions jo;
  // As the central run's whitened space: at most min(n, m) directions.
  jo.dims = static_cast<uint32_t>(std::min<uint64_t>({dims, static_cast<uint64_t>(slices.front().rows()), m}));
  jo.projection = ProjectionFor(o, 0);
  jo.progress = o.progress;
  NODEFL_TRY_ASSIGN(JointSpace space, JointSpectralSpace(slices, jo, aggregator));
  report->bounds = std::move(space.range.bounds);
  report->clip = space.range.clip;
  report->code = space.range.code;
  report->spectral_steps = space.steps;
  report->spectral_block = space.block;
  report->spectral_converged = space.converged;
  report->singular_values = space.singular_values;
  Say(o, "joint space: %u steps of block %u%s, sigma_1 %.6g, sigma_%zu %.6g", space.steps, space.block,
      space.converged ? " (converged)" : " (step cap)", space.singular_values.front(),
      space.singular_values.size(), space.singular_values.back());
  report->embedding = space.basis;
  std::vector<Matrix> embedding;
  embedding.push_back(std::move(space.basis));
  return RunCentral(embedding, o, report, "server, on the joint space");
}

Status RunBasic(const std::vector<Matrix>& slices, const RunOptions& o, Aggregator* aggregator, RunReport* report) {
  std::vector<Matrix> projected;
  for (uint32_t l = 0; l < slices.size(); ++l) {
    // Protocol 2 line 5 with the k of the clustering sought (basic kCAGC has
    // no k̂): Awasthi and Sheffet's rank-k projection.
    const auto dims = static_cast<uint32_t>(
        std::min<Eigen::Index>({static_cast<Eigen::Index>(o.clusters), slices[l].rows(), slices[l].cols()}));
    NODEFL_TRY_ASSIGN(const Matrix basis, nodefl::kcagc::TopRightSingularVectors(slices[l], dims, ProjectionFor(o, l)));
    NODEFL_TRY_ASSIGN(Matrix p, nodefl::kcagc::Project(slices[l], basis));
    projected.push_back(std::move(p));
  }
  NODEFL_TRY_ASSIGN(StageResult stage, Stage(slices, projected, {}, o.clusters, 1, 0, 0, o, aggregator, report));
  report->assignment = std::move(stage.assignment);
  return Status::Ok();
}

// Virtual nodes of the participants first .. first + count - 1 over
// `groups`; centre_of(l) gives the clusters behind part part_of(l).
template <typename CentresOf, typename PartOf>
Status VirtualNodes(const std::vector<Matrix>& slices, const std::vector<LocalClustering>& locals,
                    const Intersections& groups, uint32_t first, uint32_t count, CentresOf centres_of, PartOf part_of,
                    const RunOptions& o, std::vector<Matrix>* rows, std::vector<Matrix>* projected) {
  for (uint32_t l = first; l < first + count; ++l) {
    NODEFL_TRY_ASSIGN(Matrix y, nodefl::kcagc::VirtualNodeRows(slices[l], centres_of(l), groups, part_of(l),
                                                               o.virtual_nodes));
    NODEFL_TRY_ASSIGN(Matrix p, nodefl::kcagc::Project(y, locals[l].basis));
    rows->push_back(std::move(y));
    projected->push_back(std::move(p));
  }
  return Status::Ok();
}

Status RunKcagc(const std::vector<Matrix>& slices, const RunOptions& o, uint32_t k_hat, Aggregator* aggregator,
                RunReport* report) {
  // Protocol 3 lines 1-3.
  NODEFL_TRY_ASSIGN(const std::vector<LocalClustering> locals, LocalClusterAll(slices, k_hat, o, report));
  // Lines 4-10 at P_L.
  std::vector<Assignment> parts;
  for (const LocalClustering& local : locals) parts.push_back(local.assignment);
  NODEFL_TRY_ASSIGN(const Intersections groups, Intersect(parts));
  report->intersections = report->max_intersections = groups.size();
  Say(o, "%u intersections of %zu participants' %u local clusters", groups.size(), slices.size(), k_hat);
  // Lines 11-15 at every participant, line 16 together, line 17 at P_L.
  std::vector<Matrix> rows, projected;
  NODEFL_TRY(VirtualNodes(
      slices, locals, groups, 0, static_cast<uint32_t>(slices.size()),
      [&](uint32_t l) -> const Matrix& { return locals[l].centres; }, [](uint32_t l) { return l; }, o, &rows,
      &projected));
  const std::vector<double> weights = nodefl::kcagc::IntersectionWeights(groups);
  NODEFL_TRY_ASSIGN(const StageResult stage,
                    Stage(rows, projected, weights, o.clusters, 1, 0, 0, o, aggregator, report));
  report->assignment = SpreadToNodes(groups, stage.assignment, static_cast<uint32_t>(slices.front().rows()));
  return Status::Ok();
}

Status RunTree(const std::vector<Matrix>& slices, const RunOptions& o, uint32_t k_hat, Aggregator* aggregator,
               RunReport* report) {
  const auto parties = static_cast<uint32_t>(slices.size());
  const auto n = static_cast<uint32_t>(slices.front().rows());
  NODEFL_TRY_ASSIGN(const Tree tree, BuildTree(parties));
  report->internal_nodes = tree.internal_count();
  NODEFL_TRY_ASSIGN(const std::vector<LocalClustering> locals, LocalClusterAll(slices, k_hat, o, report));
  // What every tree node hands its parent: its clustering of the nodes and
  // each participant's slice of its centres (index l - node.first).
  struct Output {
    Assignment assignment;
    std::vector<Matrix> centres;
  };
  std::vector<Output> out(tree.nodes.size());
  for (uint32_t l = 0; l < parties; ++l) out[l] = {locals[l].assignment, {locals[l].centres}};
  for (const uint32_t index : tree.internal_order) {
    const TreeNode& node = tree.nodes[index];
    const auto left = static_cast<uint32_t>(node.left), right = static_cast<uint32_t>(node.right);
    const std::vector<Assignment> parts = {out[left].assignment, out[right].assignment};
    NODEFL_TRY_ASSIGN(const Intersections groups, Intersect(parts));
    report->intersections += groups.size();
    report->max_intersections = std::max<uint64_t>(report->max_intersections, groups.size());
    const uint32_t split = tree.nodes[right].first;
    std::vector<Matrix> rows, projected;
    NODEFL_TRY(VirtualNodes(
        slices, locals, groups, node.first, node.count,
        [&](uint32_t l) -> const Matrix& {
          return l < split ? out[left].centres[l - tree.nodes[left].first] : out[right].centres[l - split];
        },
        [&](uint32_t l) { return l < split ? 0u : 1u; }, o, &rows, &projected));
    const std::vector<double> weights = nodefl::kcagc::IntersectionWeights(groups);
    const uint32_t centres = index == tree.root ? o.clusters : k_hat;
    Say(o, "tree node %u (depth %u, participants %u-%u): %u intersections", index, node.depth, node.first + 1,
        node.first + node.count, groups.size());
    NODEFL_TRY_ASSIGN(StageResult stage, Stage(rows, projected, weights, centres, 1 + index, index, node.depth, o,
                                               aggregator, report));
    out[index] = {SpreadToNodes(groups, stage.assignment, n), std::move(stage.centres)};
    out[left] = Output();
    out[right] = Output();
  }
  report->assignment = std::move(out[tree.root].assignment);
  return Status::Ok();
}

}  // namespace

const char* ModeName(Mode mode) {
  switch (mode) {
    case Mode::kCentral: return "central";
    case Mode::kBasic: return "basic";
    case Mode::kKcagc: return "kcagc";
    case Mode::kTree: return "tree";
    case Mode::kJoint: return "joint";
  }
  return "?";
}

Result<RunReport> RunSimulation(const nodefl::kcagc::GraphView& graph, std::vector<Matrix> slices,
                                const RunOptions& o, Aggregator* aggregator) {
  const Clock::time_point start = Clock::now();
  const uint32_t n = graph.num_nodes;
  const uint32_t k_hat = o.local_clusters == 0 ? o.clusters : o.local_clusters;
  if (slices.empty() || o.clusters == 0 || o.clusters > n || k_hat > n || o.iterations == 0 ||
      o.local_restarts == 0 || o.global_restarts == 0 ||
      (o.mode != Mode::kCentral && aggregator == nullptr) || (o.mode == Mode::kTree && slices.size() < 2) ||
      (o.mode == Mode::kJoint && o.space != nodefl::kcagc::ClusterSpace::kWhitened)) {
    return Status::InvalidArgument();
  }
  for (const Matrix& s : slices) {
    if (s.rows() != static_cast<Eigen::Index>(n) || s.cols() == 0) return Status::InvalidArgument();
  }
  NODEFL_TRY(nodefl::kcagc::ValidateGraph(graph));
  RunReport report;
  report.participants = o.mode == Mode::kCentral ? 1 : static_cast<uint32_t>(slices.size());

  const Clock::time_point filter_start = Clock::now();
  NODEFL_TRY(FilterAll(graph, o, &slices));
  report.filter_seconds = Since(filter_start);
  if (o.mode == Mode::kCentral && slices.size() > 1) {
    Matrix whole = Concatenate(&slices);
    slices.clear();
    slices.push_back(std::move(whole));
  }
  const uint32_t dims = o.space_dims != 0 ? o.space_dims : o.clusters;
  if (o.mode == Mode::kJoint) {
    // The slices stay as filtered: the space is computed from them jointly.
    const AggregationCounters before = aggregator->counters();
    NODEFL_TRY(RunJoint(slices, dims, o, aggregator, &report));
    report.cost = aggregator->counters() - before;
    report.expected_secure_sums = JointSecureSums(n, report.spectral_block, report.spectral_steps);
    report.seconds = Since(start);
    return report;
  }
  if (o.mode == Mode::kCentral && o.space == nodefl::kcagc::ClusterSpace::kWhitened) {
    // The whole matrix's U, by the iteration kJoint runs through secure sums.
    nodefl::kcagc::IterationSummary summary;
    NODEFL_TRY(nodefl::kcagc::ToCentralWhitenedSpace(dims, ProjectionFor(o, 0), &slices[0], &summary));
    report.spectral_steps = summary.steps;
    report.spectral_block = summary.block;
    report.spectral_converged = summary.converged;
    report.embedding = slices[0];
  } else {
    for (uint32_t l = 0; l < slices.size(); ++l) {
      NODEFL_TRY(nodefl::kcagc::ToClusterSpace(o.space, dims, ProjectionFor(o, l), &slices[l]));
    }
  }

  if (o.mode == Mode::kCentral) {
    NODEFL_TRY(RunCentral(slices, o, &report, "central"));
    report.seconds = Since(start);
    return report;
  }
  const AggregationCounters before = aggregator->counters();
  NODEFL_TRY(RangeRound(slices, aggregator, &report));
  Say(o, "range round: clip %.6g, scale 2^%d", static_cast<double>(report.clip),
      static_cast<int>(std::lround(std::log2(report.code.scale))));
  const auto parties = static_cast<uint32_t>(slices.size());
  switch (o.mode) {
    case Mode::kBasic:
      NODEFL_TRY(RunBasic(slices, o, aggregator, &report));
      report.paper_secure_sums = PaperBasicSecureSums(n, o.clusters, o.iterations);
      break;
    case Mode::kKcagc:
      NODEFL_TRY(RunKcagc(slices, o, k_hat, aggregator, &report));
      report.paper_secure_sums = PaperKcagcSecureSums(o.clusters, k_hat, parties, o.iterations);
      break;
    case Mode::kTree:
      NODEFL_TRY(RunTree(slices, o, k_hat, aggregator, &report));
      report.paper_secure_sums = PaperTreeSecureSums(k_hat, parties, o.iterations);
      break;
    case Mode::kCentral:
    case Mode::kJoint:
      break;
  }
  report.cost = aggregator->counters() - before;
  report.expected_secure_sums = kRangeRoundSums;
  for (const StageReport& s : report.stages) report.expected_secure_sums += s.expected_secure_sums;
  report.seconds = Since(start);
  return report;
}

}  // namespace nodefl::server::kcagc
