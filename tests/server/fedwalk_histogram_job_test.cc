// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// FedWalkHistogramJob as a state machine, in process: the tests play the
// devices (releases made with the SDK's MakeClusterHistogram) and check the
// rounds it starts, how it treats late, malformed, repeated and over-budget
// devices, and what it reports.
#include "nodefl/server/jobs/fedwalk_histogram_job.h"

#include <gtest/gtest.h>

#include <chrono>
#include <deque>
#include <numeric>
#include <thread>

#include "nodefl/core/little_endian.h"
#include "nodefl/fedwalk/cluster_histogram.h"
#include "nodefl/protocol/fedwalk/histogram_format.h"
#include "nodefl/random/drbg.h"

namespace nodefl::server::jobs {
namespace {

namespace fw = nodefl::fedwalk;

// A ring of 12 vertices with chords v +- 1, v +- 3.
std::vector<uint32_t> Neighbours(uint32_t v) {
  std::vector<uint32_t> out;
  for (uint32_t d : {1u, 3u, 9u, 11u}) out.push_back((v + d) % 12);
  std::sort(out.begin(), out.end());
  return out;
}

// Job compute runs on this executor: a test decides when it runs, so no
// test waits on a thread or sleeps.
ManualExecutor& Compute() {
  static ManualExecutor executor;
  return executor;
}

FedWalkHistogramOptions Options(fedwalk::PartitionScheme scheme = fedwalk::PartitionScheme::kRandom) {
  FedWalkHistogramOptions o;
  o.executor = &Compute();
  o.plan.total_epsilon = 8;
  o.plan.scheme = scheme;
  o.plan.clusters = scheme == fedwalk::PartitionScheme::kRefined ? 3 : 0;
  o.walks.walks_per_vertex = 5;
  o.walks.walk_length = 8;
  o.skipgram.dim = 8;
  o.round_deadline_ms = 1000;
  o.compute_threads = 1;
  o.seed = 7;
  return o;
}

struct Device {
  uint32_t id;
  Drbg rng;
  explicit Device(uint32_t v) : id(v) { EXPECT_TRUE(rng.SeedDeterministic(5, v).ok()); }
  // The device's release for a round start, as the SDK makes it.
  std::vector<uint8_t> Release(const RoundStart& start, double* spent) {
    Result<fw::HistogramParameters> p = fw::DecodeHistogramParameters(ConstByteSpan(start.parameters));
    EXPECT_TRUE(p.ok());
    const std::vector<uint8_t>& partition = *start.artefacts.at(0).bytes;
    std::vector<fw::HistogramNeighbour> nb;
    for (uint32_t u : Neighbours(id)) nb.push_back({u, LoadU16Le(partition.data() + 2 * u)});
    std::vector<int32_t> cells(p->clusters);
    EXPECT_TRUE(fw::MakeClusterHistogram(rng, p->epsilon, Span<const fw::HistogramNeighbour>(nb.data(), nb.size()),
                                         Span<int32_t>(cells), spent)
                    .ok());
    std::vector<uint8_t> bytes(4 * cells.size());
    for (size_t c = 0; c < cells.size(); ++c) StoreI32Le(cells[c], bytes.data() + 4 * c);
    return bytes;
  }
};

nodefl_wire_JobReport Report(uint32_t code, double epsilon, uint32_t releases = 1) {
  nodefl_wire_JobReport r = nodefl_wire_JobReport_init_zero;
  r.kind = nodefl_wire_JobKind_JOB_KIND_FEDWALK_HISTOGRAMS;
  r.code = code;
  r.epsilon = epsilon;
  r.releases = releases;
  return r;
}

// Runs the walks and training, then polls: the job finishes.
void PollUntilFinished(FedWalkHistogramJob& job, uint64_t now_us) {
  EXPECT_EQ(Compute().RunAll(), 1u);
  (void)job.Poll(now_us);
  ASSERT_TRUE(job.finished());
}

std::vector<uint32_t> Everyone() {
  std::vector<uint32_t> ids(12);
  std::iota(ids.begin(), ids.end(), 0u);
  return ids;
}

TEST(FedWalkHistogramJobTest, OneRoundWithOneVertexPerClusterThenWalksAndTraining) {
  FedWalkHistogramJob job(Options(), Everyone());
  std::vector<RoundStart> starts = job.Begin(0);
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].round, 1u);
  EXPECT_EQ(starts[0].devices, Everyone());
  ASSERT_EQ(starts[0].artefacts.size(), 1u);
  EXPECT_EQ(starts[0].artefacts[0].kind, static_cast<uint32_t>(fw::HistogramArtefact::kPartition));
  const auto params = fw::DecodeHistogramParameters(ConstByteSpan(starts[0].parameters));
  ASSERT_TRUE(params.ok());
  EXPECT_EQ(params->clusters, 12u);  // the default: one vertex per cluster
  EXPECT_EQ(params->releases, 1);
  EXPECT_EQ(params->epsilon, 8.0);
  for (uint32_t v = 0; v < 12; ++v) {
    Device d(v);
    double spent = 0;
    EXPECT_TRUE(job.OnUpload(v, 1, static_cast<uint32_t>(fw::HistogramArtefact::kClusterHistogram),
                             d.Release(starts[0], &spent), 10)
                    .empty());
    (void)job.OnReport(v, 1, Report(0, spent), 20);
  }
  PollUntilFinished(job, 30);
  const HistogramJobSummary& s = job.summary();
  EXPECT_TRUE(job.succeeded()) << s.error;
  EXPECT_EQ(s.completed, 12u);
  EXPECT_EQ(s.walks.walks, 60u);
  EXPECT_EQ(s.over_plan, 0u);
  EXPECT_LE(s.epsilon_max, 8.0);
  EXPECT_GE(s.epsilon_max, 8.0 * (1 - 1e-6));
  // At epsilon 8 noise almost never reaches 1: the stored rows are the
  // adjacency (4 positive cells per vertex).
  uint64_t cells = 0;
  for (uint32_t v = 0; v < 12; ++v) cells += job.histograms().row(v).size();
  EXPECT_NEAR(static_cast<double>(cells), 48.0, 2.0);
}

TEST(FedWalkHistogramJobTest, TheRefinedPlanStartsASecondRoundAgainstTheNewPartition) {
  FedWalkHistogramJob job(Options(fedwalk::PartitionScheme::kRefined), Everyone());
  std::vector<RoundStart> first = job.Begin(0);
  ASSERT_EQ(first.size(), 1u);
  std::deque<Device> devices;  // Drbg is neither copied nor moved
  for (uint32_t v = 0; v < 12; ++v) devices.emplace_back(v);
  for (uint32_t v = 0; v < 12; ++v) {
    double spent = 0;
    (void)job.OnUpload(v, 1, static_cast<uint32_t>(fw::HistogramArtefact::kClusterHistogram),
                       devices[v].Release(first[0], &spent), 10);
    (void)job.OnReport(v, 1, Report(0, spent), 20);
  }
  // The refinement (spectral clusters of the first release) runs, then
  // the second release starts.
  EXPECT_EQ(Compute().RunAll(), 1u);
  std::vector<RoundStart> second = job.Poll(30);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].round, 2u);
  const auto params = fw::DecodeHistogramParameters(ConstByteSpan(second[0].parameters));
  ASSERT_TRUE(params.ok());
  EXPECT_EQ(params->release, 2);
  EXPECT_EQ(params->clusters, 3u);
  EXPECT_DOUBLE_EQ(params->epsilon, 4.0);
  for (uint32_t v = 0; v < 12; ++v) {
    double spent = 0;
    (void)job.OnUpload(v, 2, static_cast<uint32_t>(fw::HistogramArtefact::kClusterHistogram),
                       devices[v].Release(second[0], &spent), 40);
    (void)job.OnReport(v, 2, Report(0, spent), 50);
  }
  PollUntilFinished(job, 60);
  EXPECT_TRUE(job.succeeded()) << job.summary().error;
  EXPECT_LE(job.summary().epsilon_max, 8.0);
  EXPECT_EQ(job.histograms().clusters(), 3u);
}

TEST(FedWalkHistogramJobTest, LateMalformedSilentAndOverBudgetDevicesAreLeftOutOrFlagged) {
  FedWalkHistogramJob job(Options(), Everyone());
  std::vector<RoundStart> starts = job.Begin(0);
  ASSERT_EQ(starts.size(), 1u);
  const uint32_t kind = static_cast<uint32_t>(fw::HistogramArtefact::kClusterHistogram);
  for (uint32_t v = 0; v < 12; ++v) {
    Device d(v);
    double spent = 0;
    std::vector<uint8_t> bytes = d.Release(starts[0], &spent);
    if (v == 0) continue;  // never answers: misses the deadline
    if (v == 1) bytes.resize(bytes.size() - 4);  // malformed
    if (v == 2) {
      (void)job.OnReport(v, 1, Report(0, spent), 10);  // reports without an upload
      continue;
    }
    (void)job.OnUpload(v, 1, kind, bytes, 10);
    if (v == 3) (void)job.OnUpload(v, 1, kind, bytes, 11);  // re-sent after a reconnect
    (void)job.OnReport(v, 1, Report(0, v == 4 ? 9.0 : spent), 20);  // 4 claims more than planned
  }
  EXPECT_FALSE(job.finished());
  (void)job.Poll(500'000);  // before the deadline: still waiting for device 0
  EXPECT_EQ(job.devices().at(0).state, HistogramDeviceRecord::State::kReleasing);
  (void)job.Poll(1'100'000);  // past it
  PollUntilFinished(job, 1'200'000);
  const HistogramJobSummary& s = job.summary();
  EXPECT_FALSE(job.succeeded());
  EXPECT_EQ(job.devices().at(0).state, HistogramDeviceRecord::State::kMissed);
  EXPECT_EQ(job.devices().at(1).state, HistogramDeviceRecord::State::kFailed);
  EXPECT_EQ(job.devices().at(2).state, HistogramDeviceRecord::State::kFailed);
  EXPECT_EQ(job.devices().at(3).state, HistogramDeviceRecord::State::kDone);
  EXPECT_EQ(s.missed, 1u);
  EXPECT_EQ(s.failed, 2u);
  EXPECT_EQ(s.completed, 9u);
  EXPECT_EQ(s.repeated_uploads, 1u);
  EXPECT_EQ(s.over_plan, 1u);
  // The walks still ran on the devices that released.
  EXPECT_TRUE(s.error.empty()) << s.error;
  EXPECT_FALSE(job.histograms().present(0));
  EXPECT_FALSE(job.histograms().present(1));
  EXPECT_TRUE(job.histograms().present(3));
  EXPECT_EQ(s.walks.walks, 9u * 5);  // from the 9 vertices whose release the server holds (not 0, 1, 2)
}

TEST(FedWalkHistogramJobTest, UploadsFromStrangersOrOfTheWrongKindAreProtocolErrors) {
  FedWalkHistogramJob job(Options(), {1, 2, 3});
  std::vector<RoundStart> starts = job.Begin(0);
  ASSERT_EQ(starts.size(), 1u);
  (void)job.OnUpload(99, 1, static_cast<uint32_t>(fw::HistogramArtefact::kClusterHistogram), {}, 1);
  (void)job.OnUpload(1, 1, static_cast<uint32_t>(fw::HistogramArtefact::kPartition), {}, 1);
  EXPECT_EQ(job.summary().protocol_errors, 2u);
  EXPECT_EQ(job.devices().at(1).state, HistogramDeviceRecord::State::kFailed);
}

}  // namespace
}  // namespace nodefl::server::jobs
