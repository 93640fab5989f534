// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/kcagc/participant_engine.h"

#include <algorithm>
#include <limits>

#include "nodefl/kcagc/kmeans.h"
#include "nodefl/kcagc/range.h"
#include "nodefl/kcagc/rng.h"
#include "nodefl/kcagc/spectral.h"

namespace nodefl::kcagc {
namespace {

// The random streams of a run (rng.h's StreamSeed), numbered as the
// one-process runs number them (server/kcagc/sim runs.cc), so that a job
// and a simulation with the same seed draw the same numbers.
constexpr uint64_t kLocalStream = 0x100;       // + participant: Protocol 1's k-means++
constexpr uint64_t kProjectionStream = 0x200;  // + participant: subspace iteration's start

ProjectionOptions ProjectionFor(uint64_t seed, uint32_t participant) {
  ProjectionOptions p;
  p.seed = StreamSeed(seed, kProjectionStream + participant);
  return p;
}

Span<const double> AsSpan(const std::vector<double>& w) { return Span<const double>(w.data(), w.size()); }

// The longest column a block Q_t may have: 1 up to float rounding, with
// room to spare (an entry rounds by 2^-24 relative).
constexpr double kMaxBlockColumnNorm = 1.0 + 1.0 / 1024;

}  // namespace

uint32_t MaxSpectralBlock(uint32_t nodes, const EngineSettings& s) {
  const uint32_t dims = s.space_dims != 0 ? s.space_dims : s.clusters;
  return SpectralBlockSize(nodes, std::numeric_limits<uint64_t>::max(), dims);
}

ParticipantEngine::ParticipantEngine(const GraphView& graph, Matrix raw_slice, uint32_t index)
    : graph_(graph), slice_(std::move(raw_slice)), index_(index), columns_(static_cast<uint32_t>(slice_.cols())) {}

Status ParticipantEngine::Prepare(const EngineSettings& s) {
  const uint32_t n = graph_.num_nodes;
  if (prepared_) return Status::FailedPrecondition();
  if (s.clusters == 0 || s.local_clusters == 0 || s.clusters > n || s.local_clusters > n || s.iterations == 0 ||
      s.local_restarts == 0 || slice_.rows() != static_cast<Eigen::Index>(n) || slice_.cols() == 0 ||
      (s.joint && s.space != ClusterSpace::kWhitened)) {
    return Status::InvalidArgument();
  }
  NODEFL_TRY(ValidateGraph(graph_));
  settings_ = s;
  // Protocol 1 lines 1-3. Every participant holds the same graph, so each
  // computes the same ‖L_s‖ for the kNorm filter.
  FilterOptions filter = s.filter;
  if (filter.kind == FilterKind::kNorm && filter.laplacian_norm <= 0.0) {
    NODEFL_TRY_ASSIGN(filter.laplacian_norm, LaplacianNorm(graph_, filter.self_loops));
  }
  NODEFL_TRY(ApplyGraphFilter(graph_, filter, &slice_));
  if (s.joint) {
    // The space is the server's, computed from every slice as filtered.
    prepared_ = true;
    return Status::Ok();
  }
  const uint32_t dims = s.space_dims != 0 ? s.space_dims : s.clusters;
  NODEFL_TRY(ToClusterSpace(s.space, dims, ProjectionFor(s.seed, index_), &slice_));
  prepared_ = true;
  return Status::Ok();
}

Result<float> ParticipantEngine::RangeBound(const secagg::FixedPoint& range_code) const {
  if (!prepared_) return Status::FailedPrecondition();
  return RangeSubmission(settings_.joint ? GramBound(slice_) : DistanceBound(slice_), range_code);
}

Result<Assignment> ParticipantEngine::LocalClusters() {
  if (!prepared_ || settings_.joint) return Status::FailedPrecondition();
  LocalClusterOptions lo;
  lo.clusters = settings_.local_clusters;
  lo.iterations = settings_.iterations;
  lo.seed = StreamSeed(settings_.seed, kLocalStream + index_);
  lo.restarts = settings_.local_restarts;
  lo.projection = ProjectionFor(settings_.seed, index_);
  NODEFL_TRY_ASSIGN(local_, LocalCluster(slice_, lo));
  have_local_ = true;
  return local_.assignment;
}

const Matrix* ParticipantEngine::ChildCentres(uint32_t child) const {
  if (child == index_) return have_local_ ? &local_.centres : nullptr;
  const auto it = stage_centres_.find(child);
  return it == stage_centres_.end() ? nullptr : &it->second;
}

Status ParticipantEngine::BeginStage(const EngineStage& stage) {
  if (!prepared_ || settings_.joint) return Status::FailedPrecondition();
  restarts_.clear();
  points_ = nullptr;
  if (!stage.virtual_nodes) {
    // Protocol 2 line 5 with the k of the clustering sought (basic kCAGC
    // has no k̂): the rank-k projection seeding and the 1/9 step use.
    const auto dims = static_cast<uint32_t>(
        std::min<Eigen::Index>({static_cast<Eigen::Index>(settings_.clusters), slice_.rows(), slice_.cols()}));
    NODEFL_TRY_ASSIGN(const Matrix basis, TopRightSingularVectors(slice_, dims, ProjectionFor(settings_.seed, index_)));
    NODEFL_TRY_ASSIGN(projected_, Project(slice_, basis));
    weights_.clear();
    points_ = &slice_;
    stage_ = stage;
    return Status::Ok();
  }
  // Protocol 3 lines 11-15: one row per intersection on this participant's
  // columns, projected with its Protocol 1 basis.
  const Matrix* centres = ChildCentres(stage.child);
  if (stage.groups == nullptr || centres == nullptr || !have_local_) return Status::FailedPrecondition();
  NODEFL_TRY_ASSIGN(virtual_rows_, VirtualNodeRows(slice_, *centres, *stage.groups, stage.part, settings_.virtual_nodes));
  NODEFL_TRY_ASSIGN(projected_, Project(virtual_rows_, local_.basis));
  weights_ = IntersectionWeights(*stage.groups);
  points_ = &virtual_rows_;
  stage_ = stage;
  return Status::Ok();
}

Result<std::vector<float>> ParticipantEngine::SeedDistances(uint32_t seed) const {
  if (points_ == nullptr) return Status::FailedPrecondition();
  return SeedContributions(projected_, seed);
}

Status ParticipantEngine::CentresFromSeeds(Span<const uint32_t> seeds) {
  if (points_ == nullptr) return Status::FailedPrecondition();
  if (seeds.size() == 0) return Status::InvalidArgument();
  Matrix centres(static_cast<Eigen::Index>(seeds.size()), points_->cols());
  for (size_t r = 0; r < seeds.size(); ++r) {
    if (seeds[r] >= points_->rows()) return Status::InvalidArgument();
    centres.row(static_cast<Eigen::Index>(r)) = points_->row(seeds[r]);
  }
  restarts_.push_back(std::move(centres));
  return Status::Ok();
}

Result<std::vector<float>> ParticipantEngine::LocalSeeding(uint32_t c, uint64_t stream) {
  if (points_ == nullptr) return Status::FailedPrecondition();
  if (c == 0 || c > points_->rows()) return Status::InvalidArgument();
  NODEFL_TRY_ASSIGN(const std::vector<uint32_t> own,
                    KMeansPlusPlus(projected_, AsSpan(weights_), c, StreamSeed(stream, 1 + stage_.position)));
  Matrix seed_rows(c, projected_.cols());
  Matrix centres(c, points_->cols());
  for (uint32_t r = 0; r < c; ++r) {
    seed_rows.row(r) = projected_.row(own[r]);
    centres.row(r) = points_->row(own[r]);
  }
  restarts_.push_back(std::move(centres));
  return DistanceContributions(projected_, seed_rows);
}

Status ParticipantEngine::UpdateCentres(const Assignment& assignment) {
  if (points_ == nullptr || restarts_.empty()) return Status::FailedPrecondition();
  if (assignment.size() != static_cast<size_t>(points_->rows())) return Status::InvalidArgument();
  const auto c = static_cast<int32_t>(restarts_.back().rows());
  for (int32_t a : assignment) {
    if (a != kUnassigned && (a < 0 || a >= c)) return Status::InvalidArgument();
  }
  NODEFL_TRY_ASSIGN(const std::vector<double> mass,
                    kcagc::UpdateCentres(*points_, AsSpan(weights_), assignment, &restarts_.back()));
  (void)mass;
  return Status::Ok();
}

Result<std::vector<float>> ParticipantEngine::Distances(uint32_t centres) const {
  if (points_ == nullptr || restarts_.empty()) return Status::FailedPrecondition();
  if (restarts_.back().rows() != static_cast<Eigen::Index>(centres)) return Status::InvalidArgument();
  return DistanceContributions(*points_, restarts_.back());
}

Status ParticipantEngine::EndStage(uint32_t kept_restart) {
  if (points_ == nullptr) return Status::FailedPrecondition();
  if (kept_restart >= restarts_.size()) return Status::InvalidArgument();
  stage_centres_[stage_.tree_node] = std::move(restarts_[kept_restart]);
  restarts_.clear();
  points_ = nullptr;
  return Status::Ok();
}

Status ParticipantEngine::TakeSpectralBlock(uint32_t step, Matrix block) {
  if (!prepared_ || !settings_.joint || step != spectral_steps_) return Status::FailedPrecondition();
  if (block.rows() != slice_.rows() || block.cols() == 0 ||
      block.cols() > static_cast<Eigen::Index>(MaxSpectralBlock(graph_.num_nodes, settings_)) || !block.allFinite()) {
    return Status::InvalidArgument();
  }
  for (Eigen::Index j = 0; j < block.cols(); ++j) {
    if (block.col(j).cast<double>().norm() > kMaxBlockColumnNorm) return Status::InvalidArgument();
  }
  block_ = std::move(block);
  ++spectral_steps_;
  return Status::Ok();
}

Result<std::vector<float>> ParticipantEngine::SpectralProduct(uint32_t step) const {
  if (!settings_.joint || spectral_steps_ == 0) return Status::FailedPrecondition();
  // Only the block just taken: a product of an older one would be summed
  // with the others' products of the new one.
  if (step + 1 != spectral_steps_) return Status::InvalidArgument();
  return JointSpectralContribution(slice_, block_);
}

}  // namespace nodefl::kcagc
