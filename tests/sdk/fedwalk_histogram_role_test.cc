// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// FedWalkHistogramRole end to end, in process: a scripted server encodes
// Welcome, JobStart and the chunked partition, a real DeviceSession runs
// the role, and every frame the device writes is decoded; uploads are
// received with the ordinary protocol::ChunkReceiver, as the server does. The
// noise is reproduced independently from the deterministic DRBG seed.
#include "nodefl/fedwalk/histogram_role.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "heap_counter.h"
#include "nodefl/device/device_session.h"
#include "nodefl/fedwalk/cluster_histogram.h"
#include "nodefl/protocol/fedwalk/histogram_format.h"
#include "nodefl/protocol/chunk.h"
#include "nodefl/protocol/envelope_codec.h"
#include "nodefl/protocol/frame.h"
#include "scripted_server.h"

namespace nodefl::fedwalk {
namespace {

using device::DeviceSession;
using device::SessionBuffers;
using device::SessionOptions;
using device::SessionState;

constexpr size_t kMaxFrame = protocol::kFrameHeaderBytes + protocol::kMaxFramePayloadBytes;
constexpr uint64_t kJob = 0x61;
constexpr uint64_t kSeed = 4242;

// ---- The server's side -------------------------------------------------------------------

using nodefl::testing::ScriptedServer;

// The scripted server runs cluster-histogram jobs (no heartbeats, no idle
// timeout).
ScriptedServer::Options HistogramServer() {
  ScriptedServer::Options o;
  o.job_kind = nodefl_wire_JobKind_JOB_KIND_FEDWALK_HISTOGRAMS;
  o.first_transfer_id = 300;
  return o;
}

// A JobStart's parameters for `p`.
std::vector<uint8_t> Encoded(const HistogramParameters& p) {
  std::vector<uint8_t> params(kHistogramParametersBytes);
  EXPECT_TRUE(EncodeHistogramParameters(p, params).ok());
  return params;
}

struct Collected {
  struct Upload {
    uint32_t round = 0;
    uint32_t artefact = 0;
    std::vector<uint8_t> bytes;
    bool complete = false;
  };
  std::vector<Upload> uploads;
  std::vector<std::pair<uint32_t, nodefl_wire_JobReport>> reports;
  size_t other_frames = 0;
  protocol::ChunkReceiver receiver;

  Collected() : receiver(&Sink, this) {}
  static Status Sink(void* ctx, uint64_t offset, ConstByteSpan data) {
    auto& bytes = static_cast<Collected*>(ctx)->uploads.back().bytes;
    if (offset + data.size() > bytes.size()) return Status::OutOfRange();
    std::memcpy(bytes.data() + offset, data.data(), data.size());
    return Status::Ok();
  }
  void Take(const nodefl_wire_Envelope& e) {
    switch (e.which_body) {
      case nodefl_wire_Envelope_chunk_header_tag:
        uploads.push_back(Upload{e.round, e.body.chunk_header.artefact,
                                 std::vector<uint8_t>(e.body.chunk_header.total_bytes), false});
        EXPECT_EQ(e.job_id, kJob);
        EXPECT_TRUE(receiver.OnHeader(e.body.chunk_header).ok());
        uploads.back().complete = receiver.complete();
        break;
      case nodefl_wire_Envelope_chunk_tag:
        ASSERT_FALSE(uploads.empty());
        EXPECT_TRUE(receiver.OnChunk(e.body.chunk).ok());
        uploads.back().complete = receiver.complete();
        break;
      case nodefl_wire_Envelope_job_report_tag:
        reports.emplace_back(e.round, e.body.job_report);
        break;
      default:
        ++other_frames;
    }
  }
};


std::vector<int32_t> Cells(const std::vector<uint8_t>& bytes) {
  std::vector<int32_t> out;
  for (size_t at = 0; at + 4 <= bytes.size(); at += 4) {
    out.push_back(static_cast<int32_t>(uint32_t{bytes[at]} | uint32_t{bytes[at + 1]} << 8 |
                                       uint32_t{bytes[at + 2]} << 16 | uint32_t{bytes[at + 3]} << 24));
  }
  return out;
}

// ---- The graph ----------------------------------------------------------------------------

// n = 60 vertices, device 9; its neighbours include 44 (absent from the
// partition) and 70 (beyond the vertex range). Two rounds with different
// partitions, cluster counts and epsilons.
struct Scenario {
  uint32_t n = 60;
  uint32_t own = 9;
  std::vector<uint32_t> neighbours = {0, 3, 4, 10, 17, 23, 44, 51, 59, 70};
  std::vector<uint16_t> partition1, partition2;
  HistogramParameters p1, p2;

  Scenario() {
    for (uint32_t v = 0; v < n; ++v) {
      partition1.push_back(static_cast<uint16_t>(v % 5));
      partition2.push_back(static_cast<uint16_t>((v * 11) % 13));
    }
    partition1[44] = partition2[44] = kAbsentCluster;
    p1.release = 1;
    p1.releases = 2;
    p1.vertex_count = n;
    p1.clusters = 5;
    p1.epsilon = 1.5;
    p2 = p1;
    p2.release = 2;
    p2.clusters = 13;
    p2.epsilon = 2.5;
  }
  static std::vector<uint8_t> Encode(const std::vector<uint16_t>& partition) {
    std::vector<uint8_t> out;
    for (uint16_t c : partition) {
      out.push_back(static_cast<uint8_t>(c));
      out.push_back(static_cast<uint8_t>(c >> 8));
    }
    return out;
  }
  std::vector<HistogramNeighbour> Placed(const std::vector<uint16_t>& partition) const {
    std::vector<HistogramNeighbour> out;
    for (uint32_t u : neighbours) {
      HistogramNeighbour nb;
      nb.id = u;
      nb.cluster = u < n ? partition[u] : kAbsentCluster;
      out.push_back(nb);
    }
    return out;
  }
};

// The device's draws, replayed from the same deterministic stream.
std::vector<int32_t> Replay(Drbg& rng, const std::vector<HistogramNeighbour>& placed, const HistogramParameters& p,
                            double* spent) {
  std::vector<int32_t> cells(p.clusters);
  EXPECT_TRUE(MakeClusterHistogram(rng, p.epsilon, placed, cells, spent).ok());
  return cells;
}

// ---- The device ---------------------------------------------------------------------------

class Device {
 public:
  explicit Device(const Scenario& s, size_t cells = 64, uint32_t extra_degree = 0, size_t ledger_entries = 8)
      : neighbours_(s.neighbours.size()),
        cells_(cells),
        ledger_entries_(ledger_entries),
        ledger(ledger_entries_),
        role(s.own, Storage(s), rng, ledger),
        frame_(kMaxFrame),
        output_(4 * kMaxFrame),
        session(Options(s.own), SessionBuffers{Span<uint8_t>(frame_), Span<uint8_t>(output_)}) {
    EXPECT_TRUE(rng.SeedDeterministic(kSeed, s.own).ok());
    EXPECT_TRUE(role.Init(static_cast<uint32_t>(s.neighbours.size()) + extra_degree).ok());
    EXPECT_TRUE(session.AddRole(role).ok());
    EXPECT_TRUE(session.Start(now).ok());
    ScriptedServer::Read(session, /*expect_whole_frames=*/false);  // Hello
    EXPECT_TRUE(Feed(server.Welcome(false)).ok());
    EXPECT_EQ(session.state(), SessionState::kReady);
  }

  Status Feed(const std::vector<uint8_t>& frame) {
    size_t consumed = 0;
    Status s;
    NODEFL_EXPECT_NO_HEAP(s = session.OnReceived(frame, now, &consumed));
    return s;
  }
  Status FeedAll(const std::vector<std::vector<uint8_t>>& frames) {
    for (const auto& f : frames) NODEFL_TRY(Feed(f));
    return Status::Ok();
  }
  Status Pump() {
    for (;;) {
      Status s;
      NODEFL_EXPECT_NO_HEAP(s = session.Poll(now));
      if (!s.ok()) return s;
      const auto frames = ScriptedServer::Read(session, /*expect_whole_frames=*/false);
      for (const auto& e : frames) got.Take(e);
      if (frames.empty()) return Status::Ok();
    }
  }
  void Round(const HistogramParameters& p, const std::vector<uint16_t>& partition, size_t chunk = 9) {
    ASSERT_TRUE(Feed(server.JobStart(kJob, p.release, Encoded(p))).ok());
    ASSERT_TRUE(FeedAll(server.Artefact(kJob, p.release, static_cast<uint32_t>(HistogramArtefact::kPartition),
                                        Scenario::Encode(partition), chunk))
                    .ok());
    ASSERT_TRUE(Pump().ok());
  }
  void Reconnect() {
    ASSERT_TRUE(session.Reconnect(now).ok());
    ScriptedServer::Read(session, /*expect_whole_frames=*/false);
    got.receiver.Reset();
    server.Restart();
    ASSERT_TRUE(Feed(server.Welcome(true)).ok());
  }

 private:
  HistogramStorage Storage(const Scenario& s) {
    for (size_t i = 0; i < s.neighbours.size(); ++i) neighbours_[i].id = s.neighbours[i];
    return HistogramStorage{neighbours_, cells_};
  }
  static SessionOptions Options(uint32_t id) {
    SessionOptions o;
    o.device_id = id;
    return o;
  }
  std::vector<HistogramNeighbour> neighbours_;
  std::vector<int32_t> cells_;
  std::vector<LedgerEntry> ledger_entries_;

 public:
  Drbg rng;
  PrivacyLedger ledger;
  FedWalkHistogramRole role;

 private:
  std::vector<uint8_t> frame_, output_;

 public:
  DeviceSession session;
  ScriptedServer server{HistogramServer()};
  Collected got;
  uint64_t now = 1'000;
};

// ---- End to end -----------------------------------------------------------------------------

TEST(FedWalkHistogramRoleTest, TwoReleasesAreNoisedRecordedAndUploaded) {
  const Scenario s;
  Device d(s);
  Drbg replica;
  ASSERT_TRUE(replica.SeedDeterministic(kSeed, s.own).ok());

  d.Round(s.p1, s.partition1);
  ASSERT_EQ(d.got.uploads.size(), 1u);
  EXPECT_EQ(d.got.uploads[0].round, 1u);
  EXPECT_EQ(d.got.uploads[0].artefact, static_cast<uint32_t>(HistogramArtefact::kClusterHistogram));
  ASSERT_TRUE(d.got.uploads[0].complete);
  double spent1 = 0;
  EXPECT_EQ(Cells(d.got.uploads[0].bytes), Replay(replica, s.Placed(s.partition1), s.p1, &spent1));
  EXPECT_EQ(d.role.stats().neighbours_placed, 8u);  // all but 44 (absent) and 70 (beyond n)
  ASSERT_EQ(d.got.reports.size(), 1u);
  EXPECT_EQ(d.got.reports[0].second.code, 0u);
  EXPECT_EQ(d.got.reports[0].second.releases, 1u);
  EXPECT_EQ(d.got.reports[0].second.epsilon, spent1);
  EXPECT_EQ(d.got.reports[0].second.expected, 0u);  // never the degree
  EXPECT_FALSE(d.role.finished());

  d.Round(s.p2, s.partition2, 4096);
  ASSERT_EQ(d.got.uploads.size(), 2u);
  double spent2 = 0;
  EXPECT_EQ(Cells(d.got.uploads[1].bytes), Replay(replica, s.Placed(s.partition2), s.p2, &spent2));
  EXPECT_EQ(d.got.uploads[1].bytes.size(), 13u * 4);
  ASSERT_EQ(d.got.reports.size(), 2u);
  EXPECT_EQ(d.got.reports[1].first, 2u);
  EXPECT_EQ(d.got.reports[1].second.epsilon, spent2);
  EXPECT_TRUE(d.role.finished());
  // The ledger: two discrete-Laplace releases in the histogram phase, summed.
  EXPECT_DOUBLE_EQ(d.ledger.phase_epsilon(kPhaseClusterHistogram), spent1 + spent2);
  EXPECT_DOUBLE_EQ(d.ledger.total_epsilon(), spent1 + spent2);
  EXPECT_DOUBLE_EQ(d.role.job_epsilon(), spent1 + spent2);
  EXPECT_LE(spent1 + spent2, s.p1.epsilon + s.p2.epsilon);
  EXPECT_EQ(d.got.other_frames, 0u);  // nothing to other devices, no key requests
}

TEST(FedWalkHistogramRoleTest, ARepeatedRoundResendsTheSameReleaseWithoutNoisingAgain) {
  const Scenario s;
  Device d(s);
  d.Round(s.p1, s.partition1);
  ASSERT_EQ(d.got.uploads.size(), 1u);
  const std::vector<uint8_t> first = d.got.uploads[0].bytes;
  // The connection breaks; the server repeats the round's start.
  d.Reconnect();
  d.Round(s.p1, s.partition1);
  ASSERT_EQ(d.got.uploads.size(), 2u);
  EXPECT_EQ(d.got.uploads[1].bytes, first);
  EXPECT_EQ(d.role.stats().releases, 1u);
  ASSERT_EQ(d.ledger.entries().size(), 1u);
  EXPECT_EQ(d.ledger.entries()[0].releases, 1u);
}

TEST(FedWalkHistogramRoleTest, AFullLedgerMeansNoUpload) {
  const Scenario s;
  Device d(s, 64, 0, /*ledger_entries=*/0);
  d.Round(s.p1, s.partition1);
  EXPECT_TRUE(d.got.uploads.empty());
  ASSERT_EQ(d.got.reports.size(), 1u);
  EXPECT_EQ(d.got.reports[0].second.code, static_cast<uint32_t>(StatusCode::kResourceExhausted));
  EXPECT_EQ(d.got.reports[0].second.releases, 0u);
  EXPECT_TRUE(d.role.histogram().empty());
  EXPECT_TRUE(d.role.finished());
}

TEST(FedWalkHistogramRoleTest, ABadPartitionEntryIsReportedAndNothingReleased) {
  Scenario s;
  s.partition1[12] = 5;  // == clusters
  Device d(s);
  d.Round(s.p1, s.partition1);
  EXPECT_TRUE(d.got.uploads.empty());
  ASSERT_EQ(d.got.reports.size(), 1u);
  EXPECT_EQ(d.got.reports[0].second.code, static_cast<uint32_t>(StatusCode::kDataLoss));
  EXPECT_EQ(d.ledger.total_epsilon(), 0.0);
}

TEST(FedWalkHistogramRoleTest, ACappedNeighbourListReleasesAtHalfTheEpsilonPerCell) {
  // The real degree is above the 10 neighbours the app kept: no refusal.
  // One edge can now move two cells, so the noise is drawn for epsilon / 2
  // and the ledger still records (at most) epsilon.
  const Scenario s;
  Device d(s, 64, /*extra_degree=*/5);
  d.Round(s.p1, s.partition1);
  EXPECT_TRUE(d.role.truncated());
  EXPECT_EQ(d.role.sensitivity_factor(), 2u);
  ASSERT_EQ(d.got.uploads.size(), 1u);
  Drbg replica;
  ASSERT_TRUE(replica.SeedDeterministic(kSeed, s.own).ok());
  HistogramParameters half = s.p1;
  half.epsilon = s.p1.epsilon / 2;
  double spent_half = 0;
  EXPECT_EQ(Cells(d.got.uploads[0].bytes), Replay(replica, s.Placed(s.partition1), half, &spent_half));
  ASSERT_EQ(d.got.reports.size(), 1u);
  EXPECT_EQ(d.got.reports[0].second.code, 0u);
  EXPECT_DOUBLE_EQ(d.got.reports[0].second.epsilon, 2 * spent_half);
  EXPECT_LE(d.got.reports[0].second.epsilon, s.p1.epsilon);
  EXPECT_DOUBLE_EQ(d.ledger.total_epsilon(), 2 * spent_half);
}

TEST(FedWalkHistogramRoleTest, PublicLimitsRefuseWithoutARelease) {
  const Scenario s;
  {
    Device d(s, /*cells=*/12);  // round 2 has 13 clusters
    d.Round(s.p1, s.partition1);
    d.Round(s.p2, s.partition2);
    ASSERT_EQ(d.got.reports.size(), 2u);
    EXPECT_EQ(d.got.reports[1].second.code, static_cast<uint32_t>(StatusCode::kResourceExhausted));
    EXPECT_EQ(d.got.uploads.size(), 1u);
    EXPECT_EQ(d.role.stats().releases, 1u);
  }
  {
    // A budget below the job's two releases: the second is refused by the
    // ledger before any noise is drawn.
    Device d(s);
    PrivacyBudget budget;
    budget.job_epsilon = 3.0;  // round 1 costs 1.5, round 2 would bring 4.0
    d.ledger.set_budget(budget);
    d.Round(s.p1, s.partition1);
    d.Round(s.p2, s.partition2);
    ASSERT_EQ(d.got.reports.size(), 2u);
    EXPECT_EQ(d.got.reports[0].second.code, 0u);
    EXPECT_EQ(d.got.reports[1].second.code, static_cast<uint32_t>(StatusCode::kPermissionDenied));
    EXPECT_EQ(d.got.uploads.size(), 1u);
    EXPECT_LE(d.ledger.job_epsilon(), 3.0);
  }
}

TEST(FedWalkHistogramRoleTest, AMissedDeadlineReleasesNothing) {
  const Scenario s;
  Device d(s);
  ASSERT_TRUE(d.Feed(d.server.JobStart(kJob, 1, Encoded(s.p1), /*deadline_ms=*/5)).ok());
  ASSERT_TRUE(d.Pump().ok());  // arms the deadline
  d.now += 6'000;
  ASSERT_TRUE(d.Pump().ok());
  ASSERT_EQ(d.got.reports.size(), 1u);
  EXPECT_EQ(d.got.reports[0].second.code, static_cast<uint32_t>(StatusCode::kDeadlineExceeded));
  // The partition arriving late is verified and dropped.
  ASSERT_TRUE(d.FeedAll(d.server.Artefact(kJob, 1, static_cast<uint32_t>(HistogramArtefact::kPartition),
                                          Scenario::Encode(s.partition1), 64))
                  .ok());
  ASSERT_TRUE(d.Pump().ok());
  EXPECT_TRUE(d.got.uploads.empty());
  EXPECT_EQ(d.ledger.total_epsilon(), 0.0);
}

TEST(FedWalkHistogramRoleTest, ProtocolViolationsCloseTheConnection) {
  const Scenario s;
  {
    Device d(s);
    ASSERT_TRUE(d.Feed(d.server.JobStart(kJob, 1, Encoded(s.p1))).ok());
    // An artefact of the wrong size.
    std::vector<uint8_t> wrong = Scenario::Encode(s.partition1);
    wrong.resize(wrong.size() - 2);
    EXPECT_FALSE(d.FeedAll(d.server.Artefact(kJob, 1, static_cast<uint32_t>(HistogramArtefact::kPartition), wrong,
                                             64))
                     .ok());
  }
  {
    Device d(s);
    // A job may not start with its second round, and round numbers must
    // match the parameters.
    EXPECT_FALSE(d.Feed(d.server.JobStart(kJob, 2, Encoded(s.p2))).ok());
  }
  {
    Device d(s);
    d.Round(s.p1, s.partition1);
    HistogramParameters changed = s.p1;
    changed.epsilon = 9;
    EXPECT_FALSE(d.Feed(d.server.JobStart(kJob, 1, Encoded(changed))).ok());
  }
}

}  // namespace
}  // namespace nodefl::fedwalk
