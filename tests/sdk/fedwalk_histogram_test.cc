// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Strict FedWalk's cluster-histogram release, device side: the parameters'
// wire layout, the streaming partition filter, the counts' sensitivity and
// the noise's distribution. Statistical checks use fixed seeds and
// tolerances derived from the sampling distributions (stat_util.h), each
// with a power check showing that a plausible bug would fail it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "heap_counter.h"
#include "nodefl/fedwalk/cluster_histogram.h"
#include "nodefl/protocol/fedwalk/histogram_format.h"
#include "nodefl/fedwalk/partition_filter.h"
#include "nodefl/privacy/discrete_laplace.h"
#include "stat_util.h"

namespace nodefl::fedwalk {
namespace {

// ---- Parameters ---------------------------------------------------------------------

HistogramParameters Params() {
  HistogramParameters p;
  p.release = 2;
  p.releases = 2;
  p.vertex_count = 10312;
  p.clusters = 2578;
  p.epsilon = 3.5;
  return p;
}

TEST(HistogramFormatTest, ParametersRoundTripInTheDocumentedLayout) {
  std::vector<uint8_t> bytes(kHistogramParametersBytes);
  ASSERT_TRUE(EncodeHistogramParameters(Params(), bytes).ok());
  EXPECT_EQ(bytes[0], kHistogramParametersVersion);
  EXPECT_EQ(bytes[1], 2);
  EXPECT_EQ(bytes[2], 2);
  EXPECT_EQ(bytes[4] | bytes[5] << 8, 10312);
  EXPECT_EQ(bytes[8] | bytes[9] << 8, 2578);
  Result<HistogramParameters> back = DecodeHistogramParameters(bytes);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->release, 2);
  EXPECT_EQ(back->releases, 2);
  EXPECT_EQ(back->vertex_count, 10312u);
  EXPECT_EQ(back->clusters, 2578u);
  EXPECT_EQ(back->epsilon, 3.5);
}

TEST(HistogramFormatTest, OutOfRangeFieldsAreRefused) {
  auto refused = [](void (*mutate)(HistogramParameters&)) {
    HistogramParameters p = Params();
    mutate(p);
    std::vector<uint8_t> bytes(kHistogramParametersBytes);
    return !EncodeHistogramParameters(p, bytes).ok() && !CheckHistogramParameters(p).ok();
  };
  EXPECT_TRUE(refused([](HistogramParameters& p) { p.release = 0; }));
  EXPECT_TRUE(refused([](HistogramParameters& p) { p.release = 3; }));
  EXPECT_TRUE(refused([](HistogramParameters& p) { p.releases = kMaxHistogramReleases + 1; p.release = 1; }));
  EXPECT_TRUE(refused([](HistogramParameters& p) { p.vertex_count = 0; }));
  EXPECT_TRUE(refused([](HistogramParameters& p) { p.clusters = 0; }));
  EXPECT_TRUE(refused([](HistogramParameters& p) { p.clusters = kMaxClusters + 1; }));
  EXPECT_TRUE(refused([](HistogramParameters& p) { p.epsilon = 0; }));
  EXPECT_TRUE(refused([](HistogramParameters& p) { p.epsilon = -1; }));
  EXPECT_TRUE(refused([](HistogramParameters& p) { p.epsilon = NAN; }));
  EXPECT_TRUE(refused([](HistogramParameters& p) { p.epsilon = INFINITY; }));

  std::vector<uint8_t> bytes(kHistogramParametersBytes);
  ASSERT_TRUE(EncodeHistogramParameters(Params(), bytes).ok());
  for (size_t at : {size_t{0}, size_t{3}, size_t{12}, size_t{15}}) {
    std::vector<uint8_t> bad = bytes;
    bad[at] ^= 0x01;
    EXPECT_FALSE(DecodeHistogramParameters(bad).ok()) << "byte " << at;
  }
  bytes.push_back(0);
  EXPECT_FALSE(DecodeHistogramParameters(bytes).ok());
  std::vector<uint8_t> short_out(kHistogramParametersBytes - 1);
  EXPECT_FALSE(EncodeHistogramParameters(Params(), short_out).ok());
}

// ---- The partition filter -------------------------------------------------------------

std::vector<uint8_t> EncodePartition(const std::vector<uint16_t>& clusters) {
  std::vector<uint8_t> out;
  for (uint16_t c : clusters) {
    out.push_back(static_cast<uint8_t>(c));
    out.push_back(static_cast<uint8_t>(c >> 8));
  }
  return out;
}

struct Filtered {
  Status status;
  std::vector<uint16_t> clusters;  // per neighbour
  uint32_t placed = 0;
};

Filtered Filter(std::vector<HistogramNeighbour> neighbours, uint32_t clusters, uint32_t n,
                const std::vector<uint8_t>& artefact, size_t piece) {
  PartitionFilter f;
  f.Begin(neighbours, clusters, n);
  for (size_t at = 0; at < artefact.size(); at += piece) {
    const size_t len = std::min(piece, artefact.size() - at);
    f.Feed(at, ConstByteSpan(artefact.data() + at, len));
  }
  Filtered out;
  out.status = f.Finish();
  out.placed = f.neighbours_placed();
  for (const auto& nb : neighbours) out.clusters.push_back(nb.cluster);
  return out;
}

std::vector<HistogramNeighbour> Neighbours(const std::vector<uint32_t>& ids) {
  std::vector<HistogramNeighbour> out(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) out[i].id = ids[i];
  return out;
}

TEST(PartitionFilterTest, KeepsTheNeighboursClustersForEveryPieceSize) {
  const uint32_t n = 301, c = 17;
  std::vector<uint16_t> partition(n);
  for (uint32_t v = 0; v < n; ++v) partition[v] = static_cast<uint16_t>((v * 7 + 3) % c);
  partition[40] = kAbsentCluster;
  const std::vector<uint8_t> artefact = EncodePartition(partition);
  // 40 is absent, 301 and 999 are beyond the vertex range.
  const std::vector<uint32_t> ids = {0, 1, 2, 40, 41, 150, 299, 300, 301, 999};
  for (size_t piece : {size_t{1}, size_t{2}, size_t{3}, size_t{7}, size_t{64}, size_t{4096}}) {
    const Filtered f = Filter(Neighbours(ids), c, n, artefact, piece);
    ASSERT_TRUE(f.status.ok()) << "piece " << piece;
    for (size_t i = 0; i < ids.size(); ++i) {
      const uint16_t want = ids[i] < n ? partition[ids[i]] : kAbsentCluster;
      EXPECT_EQ(f.clusters[i], want) << "neighbour " << ids[i] << ", piece " << piece;
    }
    EXPECT_EQ(f.placed, 7u);
  }
}

TEST(PartitionFilterTest, ABadEntryAnywhereInvalidatesThePartition) {
  const uint32_t n = 50, c = 4;
  std::vector<uint16_t> partition(n, 1);
  partition[33] = 4;  // == clusters: not a cluster, not absent (no neighbour of ours)
  const Filtered f = Filter(Neighbours({1, 2, 3}), c, n, EncodePartition(partition), 3);
  EXPECT_EQ(f.status.code(), StatusCode::kDataLoss);
  for (uint16_t got : f.clusters) EXPECT_EQ(got, kAbsentCluster);

  partition[33] = 1;
  std::vector<uint8_t> short_artefact = EncodePartition(partition);
  short_artefact.pop_back();
  EXPECT_EQ(Filter(Neighbours({1}), c, n, short_artefact, 5).status.code(), StatusCode::kDataLoss);
  std::vector<uint8_t> long_artefact = EncodePartition(partition);
  long_artefact.push_back(0);
  long_artefact.push_back(0);
  EXPECT_EQ(Filter(Neighbours({1}), c, n, long_artefact, 5).status.code(), StatusCode::kDataLoss);
}

// ---- Counts and their sensitivity -----------------------------------------------------

TEST(ClusterHistogramTest, CountsNeighboursPerClusterAndSkipsAbsentOnes) {
  std::vector<HistogramNeighbour> nb = Neighbours({3, 5, 8, 13, 21});
  const uint16_t clusters[] = {2, 0, 2, kAbsentCluster, 1};
  for (size_t i = 0; i < nb.size(); ++i) nb[i].cluster = clusters[i];
  std::vector<int32_t> cells(4, 99);
  ASSERT_TRUE(CountClusterNeighbours(nb, cells).ok());
  EXPECT_EQ(cells, (std::vector<int32_t>{1, 1, 2, 0}));
  nb[0].cluster = 4;  // beyond the cells: a caller error
  EXPECT_EQ(CountClusterNeighbours(nb, cells).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(cells, (std::vector<int32_t>(4, 0)));
}

TEST(ClusterHistogramTest, OneEdgeMovesExactlyOneCellByOne) {
  // The L1 sensitivity the noise scale assumes, checked on random
  // neighbour sets and partitions: removing any one neighbour changes the
  // counts by exactly 1 in L1 (0 when it is absent from the partition).
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(11, 0).ok());
  for (int trial = 0; trial < 200; ++trial) {
    const uint32_t c = 1 + rng.UniformBelow(40);
    const uint32_t degree = 1 + rng.UniformBelow(60);
    std::vector<HistogramNeighbour> nb(degree);
    for (uint32_t i = 0; i < degree; ++i) {
      nb[i].id = i;
      const uint32_t draw = rng.UniformBelow(c + 1);
      nb[i].cluster = draw == c ? kAbsentCluster : static_cast<uint16_t>(draw);
    }
    std::vector<int32_t> full(c);
    ASSERT_TRUE(CountClusterNeighbours(nb, full).ok());
    const uint32_t drop = rng.UniformBelow(degree);
    std::vector<HistogramNeighbour> fewer = nb;
    fewer.erase(fewer.begin() + drop);
    std::vector<int32_t> less(c);
    ASSERT_TRUE(CountClusterNeighbours(fewer, less).ok());
    int64_t l1 = 0;
    for (uint32_t j = 0; j < c; ++j) l1 += std::llabs(int64_t{full[j]} - less[j]);
    EXPECT_EQ(l1, nb[drop].cluster == kAbsentCluster ? 0 : 1) << "trial " << trial;
  }
}

// ---- The noise ---------------------------------------------------------------------------

// P(k) = (1 - q)/(1 + q) q^|k|, q = exp(-epsilon').
double Pmf(int64_t k, double q) { return (1 - q) / (1 + q) * std::pow(q, static_cast<double>(std::llabs(k))); }
double UpperTail(int64_t k, double q) { return std::pow(q, static_cast<double>(k + 1)) / (1 + q); }

// Pearson chi-square of `noise` against the pmf, cells [-K, K] plus both
// tails, K the largest with every expected count >= 5.
bool FitsDiscreteLaplace(const std::vector<int64_t>& noise, double q, double* statistic = nullptr) {
  const double n = static_cast<double>(noise.size());
  int64_t k_max = -1;
  while (n * Pmf(k_max + 1, q) >= 5 && n * UpperTail(k_max + 1, q) >= 5) ++k_max;
  if (k_max < 0) return false;
  const size_t cells = static_cast<size_t>(2 * k_max + 3);
  std::vector<double> observed(cells, 0), expected(cells, 0);
  expected.front() = expected.back() = n * UpperTail(k_max, q);
  for (int64_t k = -k_max; k <= k_max; ++k) expected[static_cast<size_t>(k + k_max + 1)] = n * Pmf(k, q);
  for (int64_t x : noise) {
    observed[x < -k_max ? 0 : (x > k_max ? cells - 1 : static_cast<size_t>(x + k_max + 1))] += 1;
  }
  const double s = testing::ChiSquareStatistic(observed, expected);
  if (statistic != nullptr) *statistic = s;
  return s < testing::ChiSquareCritical(static_cast<int>(cells) - 1);
}

// Draws `rounds` releases of `counts` and returns every cell's noise
// (released value - true count), and the epsilon each release reported.
std::vector<int64_t> ReleaseNoise(Drbg& rng, double epsilon, const std::vector<HistogramNeighbour>& nb,
                                  size_t clusters, int rounds, double* spent) {
  std::vector<int32_t> truth(clusters);
  EXPECT_TRUE(CountClusterNeighbours(nb, truth).ok());
  std::vector<int32_t> cells(clusters);
  std::vector<int64_t> noise;
  for (int r = 0; r < rounds; ++r) {
    EXPECT_TRUE(MakeClusterHistogram(rng, epsilon, nb, cells, spent).ok());
    for (size_t j = 0; j < clusters; ++j) noise.push_back(int64_t{cells[j]} - truth[j]);
  }
  return noise;
}

std::vector<HistogramNeighbour> SomeNeighbourhood(size_t clusters, uint32_t degree) {
  std::vector<HistogramNeighbour> nb(degree);
  for (uint32_t i = 0; i < degree; ++i) {
    nb[i].id = i;
    nb[i].cluster = static_cast<uint16_t>((i * i + 3 * i) % clusters);
  }
  return nb;
}

TEST(ClusterHistogramTest, NoiseIsExactDiscreteLaplaceWithScaleOneOverEpsilon) {
  for (double epsilon : {0.5, 1.0, 4.0}) {
    Drbg rng;
    ASSERT_TRUE(rng.SeedDeterministic(21, static_cast<uint32_t>(epsilon * 10)).ok());
    double spent = 0;
    const std::vector<int64_t> noise = ReleaseNoise(rng, epsilon, SomeNeighbourhood(64, 90), 64, 500, &spent);
    // The ledger figure: delivered epsilon' in [epsilon (1 - 1e-6), epsilon].
    EXPECT_LE(spent, epsilon);
    EXPECT_GE(spent, epsilon * (1 - 1e-6));
    double chi = 0;
    EXPECT_TRUE(FitsDiscreteLaplace(noise, std::exp(-spent), &chi)) << "epsilon " << epsilon << " chi2 " << chi;
    // Mean zero: z test with sigma^2 = 2q/(1-q)^2.
    const double q = std::exp(-spent);
    double sum = 0;
    for (int64_t x : noise) sum += static_cast<double>(x);
    const double sd = std::sqrt(2 * q / ((1 - q) * (1 - q)) / static_cast<double>(noise.size()));
    EXPECT_LT(std::fabs(sum / static_cast<double>(noise.size())), testing::ZBound() * sd) << "epsilon " << epsilon;
  }
}

TEST(ClusterHistogramTest, NoiseDoesNotDependOnTheCounts) {
  // The same noise law for an empty neighbourhood and for a hub whose counts
  // reach hundreds: both fit the pmf of epsilon' (a count-dependent scale,
  // e.g. one tied to the degree, would make the hub's fit fail).
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(22, 0).ok());
  double spent = 0;
  const std::vector<int64_t> empty = ReleaseNoise(rng, 1.0, {}, 32, 1000, &spent);
  const std::vector<int64_t> hub = ReleaseNoise(rng, 1.0, SomeNeighbourhood(32, 5000), 32, 1000, &spent);
  EXPECT_TRUE(FitsDiscreteLaplace(empty, std::exp(-spent)));
  EXPECT_TRUE(FitsDiscreteLaplace(hub, std::exp(-spent)));
}

TEST(ClusterHistogramTest, PowerAWrongScaleIsRejected) {
  // Noise drawn at sensitivity 2 (scale 2/epsilon), checked against the
  // epsilon-DP law the release claims: the fit must fail.
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(23, 0).ok());
  Result<DiscreteLaplaceScale> wrong = DiscreteLaplaceScaleFor(1.0, 2);
  ASSERT_TRUE(wrong.ok());
  std::vector<int64_t> noise(64 * 500);
  for (int64_t& x : noise) x = SampleDiscreteLaplace(rng, *wrong);
  EXPECT_FALSE(FitsDiscreteLaplace(noise, std::exp(-1.0)));
}

TEST(ClusterHistogramTest, OutputRatioOfNeighbouringInputsStaysWithinEpsilon) {
  // The guarantee itself, empirically, on the one cell an edge moves: the
  // frequencies of each released value with and without the edge differ by
  // at most a factor e^epsilon (tolerance from the counts' binomial sd,
  // propagated to the log ratio), for every value seen often enough.
  const double epsilon = 1.0;
  const int draws = 200000;
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(24, 0).ok());
  std::vector<HistogramNeighbour> with = Neighbours({1, 2, 3});
  for (auto& nb : with) nb.cluster = 0;
  const std::vector<HistogramNeighbour> without(with.begin(), with.begin() + 2);
  std::vector<double> a(31, 0), b(31, 0);
  std::vector<int32_t> cells(1);
  double spent = 0;
  for (int i = 0; i < draws; ++i) {
    ASSERT_TRUE(MakeClusterHistogram(rng, epsilon, with, cells, &spent).ok());
    if (cells[0] >= -12 && cells[0] <= 18) a[static_cast<size_t>(cells[0] + 12)] += 1;
    ASSERT_TRUE(MakeClusterHistogram(rng, epsilon, without, cells, &spent).ok());
    if (cells[0] >= -12 && cells[0] <= 18) b[static_cast<size_t>(cells[0] + 12)] += 1;
  }
  int checked = 0;
  for (size_t k = 0; k < a.size(); ++k) {
    if (a[k] < 400 || b[k] < 400) continue;
    const double log_ratio = std::fabs(std::log(a[k] / b[k]));
    const double sd = std::sqrt(1 / a[k] + 1 / b[k]);  // delta method
    EXPECT_LE(log_ratio, spent + testing::ZBound() * sd) << "value " << static_cast<int>(k) - 12;
    ++checked;
  }
  EXPECT_GE(checked, 8);
}

TEST(ClusterHistogramTest, BadInputsReleaseNothing) {
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(25, 0).ok());
  std::vector<int32_t> cells = {4, 5, 6};
  double spent = 7;
  EXPECT_EQ(NoiseClusterHistogram(rng, 0.0, cells, &spent).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(cells, (std::vector<int32_t>(3, 0)));
  EXPECT_EQ(spent, 0.0);
  cells = {4, 5, 6};
  EXPECT_EQ(NoiseClusterHistogram(rng, NAN, cells, &spent).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(NoiseClusterHistogram(rng, 1.0, cells, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(NoiseClusterHistogram(rng, 1.0, Span<int32_t>(), &spent).code(), StatusCode::kInvalidArgument);
}

TEST(ClusterHistogramTest, AFailedDrbgReleasesNothing) {
  Drbg rng;  // never seeded: failed
  std::vector<int32_t> cells = {4, 5, 6};
  double spent = 7;
  EXPECT_FALSE(NoiseClusterHistogram(rng, 1.0, cells, &spent).ok());
  EXPECT_EQ(cells, (std::vector<int32_t>(3, 0)));
  EXPECT_EQ(spent, 0.0);
}

TEST(ClusterHistogramTest, NeverAllocates) {
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(26, 0).ok());
  std::vector<HistogramNeighbour> nb = SomeNeighbourhood(100, 500);
  std::vector<int32_t> cells(100);
  std::vector<uint8_t> artefact(2 * 600, 0);
  double spent = 0;
  PartitionFilter f;
  NODEFL_EXPECT_NO_HEAP({
    f.Begin(nb, 100, 600);
    f.Feed(0, artefact);
    (void)f.Finish();
    (void)MakeClusterHistogram(rng, 2.0, nb, cells, &spent);
  });
  EXPECT_GT(spent, 0);
}

}  // namespace
}  // namespace nodefl::fedwalk
