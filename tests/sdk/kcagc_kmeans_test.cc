// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// kCAGC's k-means pieces (Protocol 1): k-means++ and Lloyd recover
// well-separated blobs (also through LocalCluster, with weights, and with
// virtual nodes); the 1/9 step leaves ambiguous points unassigned; an empty
// cluster keeps its centre; seeding is deterministic and copes with fewer
// distinct points than clusters; the range rule's codes and bounds hold.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "nodefl/kcagc/kmeans.h"
#include "nodefl/kcagc/local_cluster.h"
#include "nodefl/kcagc/participant.h"
#include "nodefl/kcagc/range.h"
#include "nodefl/kcagc/rng.h"

namespace nodefl::kcagc {
namespace {

double Gauss(SplitMix64& rng) {
  const double u1 = rng.Uniform() + 1e-12, u2 = rng.Uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

// `blobs` Gaussian blobs of `size` points in `dims` dimensions, centres 20
// apart on the axes, unit spread; truth[i] = blob of point i.
Matrix Blobs(uint32_t blobs, uint32_t size, uint32_t dims, uint64_t seed, std::vector<int>* truth) {
  SplitMix64 rng(seed);
  Matrix x(blobs * size, dims);
  truth->clear();
  for (uint32_t b = 0; b < blobs; ++b) {
    for (uint32_t i = 0; i < size; ++i) {
      const uint32_t row = b * size + i;
      for (uint32_t d = 0; d < dims; ++d) x(row, d) = static_cast<float>(Gauss(rng) + (d == b % dims ? 20.0 * (1 + b / dims) : 0.0));
      truth->push_back(static_cast<int>(b));
    }
  }
  return x;
}

// Every blob lies in one cluster and no two blobs share one.
bool Recovers(const Assignment& a, const std::vector<int>& truth) {
  std::map<int, std::set<int32_t>> clusters_of_blob;
  std::map<int32_t, std::set<int>> blobs_of_cluster;
  for (size_t i = 0; i < a.size(); ++i) {
    clusters_of_blob[truth[i]].insert(a[i]);
    blobs_of_cluster[a[i]].insert(truth[i]);
  }
  for (auto& [b, c] : clusters_of_blob) {
    if (c.size() != 1 || *c.begin() < 0) return false;
  }
  for (auto& [c, b] : blobs_of_cluster) {
    if (b.size() != 1) return false;
  }
  return true;
}

TEST(KMeansTest, KMeansPlusPlusAndLloydRecoverSeparatedBlobs) {
  std::vector<int> truth;
  const Matrix x = Blobs(5, 60, 8, 11, &truth);
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    const Result<std::vector<uint32_t>> seeds = KMeansPlusPlus(x, {}, 5, seed);
    ASSERT_TRUE(seeds.ok());
    Matrix centres(5, x.cols());
    for (int r = 0; r < 5; ++r) centres.row(r) = x.row(seeds.value()[r]);
    const Result<LloydResult> lloyd = Lloyd(x, {}, &centres, 10, nullptr);
    ASSERT_TRUE(lloyd.ok());
    EXPECT_TRUE(Recovers(lloyd->assignment, truth)) << "seed " << seed;
    EXPECT_TRUE(lloyd->converged) << "seed " << seed;
  }
}

TEST(KMeansTest, LocalClusterIsProtocolOneEndToEnd) {
  std::vector<int> truth;
  const Matrix x = Blobs(4, 50, 12, 12, &truth);
  LocalClusterOptions o;
  o.clusters = 4;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    o.seed = seed;
    const Result<LocalClustering> c = LocalCluster(x, o);
    ASSERT_TRUE(c.ok());
    EXPECT_TRUE(Recovers(c->assignment, truth)) << seed;
    EXPECT_EQ(c->centres.rows(), 4);
    EXPECT_EQ(c->centres.cols(), 12);
    EXPECT_EQ(c->basis.cols(), 4);
    // Well separated: the 1/9 step already places almost every point.
    EXPECT_LT(c->unassigned_after_one_ninth, 10u) << seed;
  }
  o.clusters = 0;
  EXPECT_EQ(LocalCluster(x, o).status().code(), StatusCode::kInvalidArgument);
  o.clusters = 4;
  o.restarts = 0;
  EXPECT_EQ(LocalCluster(x, o).status().code(), StatusCode::kInvalidArgument);
  o.clusters = 1000;
  EXPECT_EQ(LocalCluster(x, o).status().code(), StatusCode::kInvalidArgument);
}

TEST(KMeansTest, RestartsKeepTheLeastInertia) {
  // Overlapping blobs (centres 4 apart): single runs land in different optima.
  SplitMix64 rng(16);
  Matrix x(300, 3);
  for (int i = 0; i < 300; ++i) {
    for (int d = 0; d < 3; ++d) x(i, d) = static_cast<float>(Gauss(rng) + (d == i % 3 ? 4.0 : 0.0));
  }
  LocalClusterOptions o;
  o.clusters = 6;
  double worst = 0, best_single = 1e300;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    o.seed = seed;
    o.restarts = 1;
    const LocalClustering one = LocalCluster(x, o).value();
    EXPECT_NEAR(one.inertia, Inertia(x, {}, one.assignment, one.centres), 1e-6 * one.inertia);
    worst = std::max(worst, one.inertia);
    best_single = std::min(best_single, one.inertia);
    o.restarts = 8;
    const LocalClustering many = LocalCluster(x, o).value();
    EXPECT_LE(many.inertia, one.inertia) << seed;  // restart 0 is the single run
    EXPECT_LT(many.restart, 8u);
  }
  EXPECT_GT(worst, best_single);  // the restarts had something to choose from
}

TEST(KMeansTest, OneNinthRuleLeavesAmbiguousPointsUnassigned) {
  // Rows of distances to two centres.
  const std::vector<float> d = {1.0f, 9.0f,    // exactly 1/9: assigned to 0
                                1.0f, 8.9f,    // not 9 times closer: unassigned
                                5.0f, 5.0f,    // a tie: unassigned
                                20.0f, 1.0f,   // 20 >= 9: assigned to 1
                                0.0f, 0.0f,    // on both centres: 0 <= 0, the first
                                0.0f, 3.0f};   // on centre 0
  const Assignment a = AssignOneNinth(d, 6, 2);
  EXPECT_EQ(a, (Assignment{0, kUnassigned, kUnassigned, 1, 0, 0}));
  // Nearest never leaves a point out; ties go to the lowest index.
  EXPECT_EQ(AssignNearest(d, 6, 2), (Assignment{0, 0, 0, 1, 0, 0}));

  // Geometrically: centres at 0 and 10 on a line; a point is assigned only
  // within 10/4 = 2.5 of a centre (d_r <= d_s/9 <=> |x - c_r| <= |x - c_s|/3).
  Matrix points(5, 1);
  points << 1.0f, 2.4f, 2.6f, 5.0f, 9.0f;
  Matrix centres(2, 1);
  centres << 0.0f, 10.0f;
  const std::vector<float> dist = SquaredDistances(points, centres);
  EXPECT_EQ(AssignOneNinth(dist, 5, 2), (Assignment{0, 0, kUnassigned, kUnassigned, 1}));
}

TEST(KMeansTest, UpdateCentresIsAWeightedMeanAndKeepsEmptyClusters) {
  Matrix points(4, 2);
  points << 0, 0, 2, 0, 10, 10, 5, 5;
  Matrix centres(3, 2);
  centres << 1, 1, 2, 2, 7, 7;
  const std::vector<double> w = {1.0, 3.0, 2.0, 0.0};
  const Result<std::vector<double>> mass = UpdateCentres(points, w, Assignment{0, 0, kUnassigned, 0}, &centres);
  ASSERT_TRUE(mass.ok());
  EXPECT_EQ(mass.value(), (std::vector<double>{4.0, 0.0, 0.0}));
  EXPECT_FLOAT_EQ(centres(0, 0), 1.5f);  // (0*1 + 2*3) / 4; the zero-weight point counts for nothing
  EXPECT_FLOAT_EQ(centres(0, 1), 0.0f);
  EXPECT_FLOAT_EQ(centres(1, 0), 2.0f);  // empty: unchanged
  EXPECT_FLOAT_EQ(centres(2, 1), 7.0f);
  EXPECT_EQ(UpdateCentres(points, w, Assignment{0, 5, 0, 0}, &centres).status().code(), StatusCode::kInvalidArgument);
}

TEST(KMeansTest, WeightedPointsActAsRepeatedPoints) {
  // Virtual nodes (kCAGC Sec. 3.4): a point of weight w counts as w copies.
  std::vector<int> truth;
  const Matrix x = Blobs(3, 40, 6, 13, &truth);
  // Collapse each blob into 4 virtual points of weight 10.
  Matrix v(12, x.cols());
  std::vector<double> w(12, 10.0);
  std::vector<int> vtruth;
  for (int g = 0; g < 12; ++g) {
    v.row(g) = x.middleRows(g * 10, 10).colwise().mean();
    vtruth.push_back(g / 4);
  }
  const Result<std::vector<uint32_t>> seeds = KMeansPlusPlus(v, w, 3, 5);
  ASSERT_TRUE(seeds.ok());
  Matrix c(3, v.cols());
  for (int r = 0; r < 3; ++r) c.row(r) = v.row(seeds.value()[r]);
  const Result<LloydResult> weighted = Lloyd(v, w, &c, 10, nullptr);
  ASSERT_TRUE(weighted.ok());
  EXPECT_TRUE(Recovers(weighted->assignment, vtruth));
  // The weighted centres are the blobs' means.
  for (int r = 0; r < 3; ++r) {
    const int blob = vtruth[static_cast<size_t>(std::find(weighted->assignment.begin(), weighted->assignment.end(), r) -
                                                weighted->assignment.begin())];
    EXPECT_LT((c.row(r) - x.middleRows(blob * 40, 40).colwise().mean()).norm(), 1e-4);
  }
}

TEST(KMeansTest, SeedingIsDeterministicAndCopesWithDuplicatePoints) {
  std::vector<int> truth;
  const Matrix x = Blobs(3, 30, 4, 14, &truth);
  EXPECT_EQ(KMeansPlusPlus(x, {}, 3, 9).value(), KMeansPlusPlus(x, {}, 3, 9).value());
  // Three distinct points (each twice), five clusters: every distinct point
  // becomes a seed before any repeats, and no seed is chosen twice.
  Matrix dup(6, 2);
  dup << 0, 0, 0, 0, 5, 5, 5, 5, 9, 1, 9, 1;
  const Result<std::vector<uint32_t>> s = KMeansPlusPlus(dup, {}, 5, 3);
  ASSERT_TRUE(s.ok());
  std::set<std::pair<float, float>> distinct;
  for (int i = 0; i < 3; ++i) distinct.insert({dup(s.value()[i], 0), dup(s.value()[i], 1)});
  EXPECT_EQ(distinct.size(), 3u);
  EXPECT_EQ(std::set<uint32_t>(s.value().begin(), s.value().end()).size(), 5u);
  // Zero-weight points are never seeds while weight remains.
  const std::vector<double> w = {0, 0, 1, 1, 0, 0};
  for (uint64_t seed = 1; seed < 20; ++seed) {
    const uint32_t first = KMeansPlusPlus(dup, w, 1, seed).value()[0];
    EXPECT_TRUE(first == 2 || first == 3) << first;
  }
}

TEST(KMeansTest, VirtualNodeRowsOfBothKinds) {
  Matrix x(4, 2);
  x << 0, 0, 2, 0, 10, 10, 12, 10;
  Matrix centres(2, 2);
  centres << 1, 1, 11, 11;
  Intersections g;
  g.parts = 2;
  g.offsets = {0, 1, 2, 4};
  g.nodes = {0, 1, 2, 3};
  g.keys = {0, 0, 0, 1, 1, 1};  // group 0: clusters (0, 0); group 1: (0, 1); group 2: (1, 1)
  const Result<Matrix> centre_rows = VirtualNodeRows(x, centres, g, 0, VirtualNodeKind::kCentre);
  ASSERT_TRUE(centre_rows.ok());
  EXPECT_EQ(Matrix(centre_rows->row(1)), Matrix(centres.row(0)));
  EXPECT_EQ(Matrix(centre_rows->row(2)), Matrix(centres.row(1)));
  const Result<Matrix> means = VirtualNodeRows(x, centres, g, 1, VirtualNodeKind::kIntersection);
  ASSERT_TRUE(means.ok());
  EXPECT_FLOAT_EQ((*means)(1, 0), 2.0f);
  EXPECT_FLOAT_EQ((*means)(2, 0), 11.0f);
  EXPECT_EQ(IntersectionWeights(g), (std::vector<double>{1, 1, 2}));
  EXPECT_EQ(VirtualNodeRows(x, centres, g, 2, VirtualNodeKind::kCentre).status().code(), StatusCode::kInvalidArgument);
}

TEST(RangeTest, CodesAreTheLargestPowerOfTwoThatCannotWrap) {
  for (uint32_t parties : {1u, 2u, 3u, 4u, 16u, 100u}) {
    for (float clip : {0.001f, 1.0f, 165.9f, 3.0e5f}) {
      const Result<secagg::FixedPoint> code = CodeForClip(clip, parties);
      ASSERT_TRUE(code.ok()) << parties << " " << clip;
      const double s = code->scale;
      EXPECT_EQ(std::exp2(std::round(std::log2(s))), s);  // a power of two
      EXPECT_LT(parties * double{clip} * s, 2147483648.0);
      EXPECT_GE(parties * double{clip} * 2 * s, 2147483648.0 * 0.999);  // twice would not fit
      EXPECT_GE(secagg::MaxSummands(*code), parties);
    }
  }
  EXPECT_FALSE(CodeForClip(0.0f, 2).ok());
  EXPECT_FALSE(CodeForClip(1.0f, 0).ok());
}

TEST(RangeTest, SubmissionsRoundUpAndBoundsCoverEveryDistance) {
  const secagg::FixedPoint range = RangeCode(4).value();
  EXPECT_EQ(range.clip, 65536.0f);
  const float up = RangeSubmission(3.1, range).value();
  EXPECT_GE(up, 3.1f);
  EXPECT_LE(up, 3.1f + 1.0f / range.scale);
  EXPECT_EQ(RangeSubmission(1e5, range).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(ClipFromRangeSum(0.0f), 1.0f);
  EXPECT_GT(ClipFromRangeSum(100.0f), 100.0f);

  // Distances among rows and convex combinations of rows stay below B.
  std::vector<int> truth;
  const Matrix x = Blobs(3, 20, 5, 15, &truth);
  const double bound = DistanceBound(x);
  Matrix mixes(10, x.cols());
  SplitMix64 rng(1);
  for (int r = 0; r < 10; ++r) {
    Eigen::VectorXd w(x.rows());
    for (Eigen::Index i = 0; i < w.size(); ++i) w(i) = rng.Uniform();
    w /= w.sum();
    mixes.row(r) = (w.transpose() * x.cast<double>()).cast<float>();
  }
  double largest = 0;
  for (const float d : SquaredDistances(x, x)) largest = std::max(largest, double{d});
  for (const float d : SquaredDistances(x, mixes)) largest = std::max(largest, double{d});
  EXPECT_LE(largest, bound);
  EXPECT_GT(largest, bound / 8);  // and the bound is not absurdly loose here
}

}  // namespace
}  // namespace nodefl::kcagc
