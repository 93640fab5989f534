// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// FedWalkHctRole end to end, in process: a scripted server encodes Welcome,
// JobStart and chunked artefacts (protocol::ChunkSender over test-made bytes)
// for a small graph, a real DeviceSession runs the role, and every frame the
// device writes is decoded and checked; uploads are received with the
// ordinary protocol::ChunkReceiver, as the server does. Noise is reproduced
// independently from the deterministic DRBG seed.
#include "nodefl/fedwalk/hct_role.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "fedwalk_test_artefacts.h"
#include "heap_counter.h"
#include "nodefl/device/device_session.h"
#include "nodefl/protocol/fedwalk/hct_format.h"
#include "nodefl/fedwalk/tree_index.h"
#include "nodefl/fedwalk/walk_role.h"
#include "nodefl/privacy/count_noise.h"
#include "nodefl/privacy/discrete_laplace.h"
#include "nodefl/fedwalk/degree_features.h"
#include "nodefl/protocol/chunk.h"
#include "nodefl/protocol/envelope_codec.h"
#include "nodefl/protocol/frame.h"
#include "scripted_server.h"
#include "stat_util.h"

namespace nodefl::fedwalk {
namespace {

using namespace fedwalk::testing;  // NOLINT: artefact builders
using device::DeviceSession;
using device::SessionBuffers;
using device::SessionOptions;
using device::SessionState;

constexpr size_t kMaxFrame = protocol::kFrameHeaderBytes + protocol::kMaxFramePayloadBytes;
constexpr uint64_t kJob = 0x51;
constexpr uint64_t kSeed = 777;

// ---- The server's side -------------------------------------------------------------------

using nodefl::testing::ScriptedServer;

// The scripted server runs HCT jobs (no heartbeats, no idle timeout).
ScriptedServer::Options HctServer() {
  ScriptedServer::Options o;
  o.job_kind = nodefl_wire_JobKind_JOB_KIND_FEDWALK_HCT;
  return o;
}

// What the device sent, decoded: uploads received with protocol::ChunkReceiver.
struct Collected {
  struct Upload {
    uint32_t round = 0;
    uint32_t artefact = 0;
    uint64_t transfer_id = 0;
    std::vector<uint8_t> bytes;
    bool complete = false;
  };
  struct Report {
    uint32_t round = 0;
    uint64_t job = 0;
    nodefl_wire_JobReport body;
  };
  std::vector<Upload> uploads;
  std::vector<Report> reports;
  size_t other_frames = 0;

  Collected() : receiver(&Sink, this) {}

  static Status Sink(void* ctx, uint64_t offset, ConstByteSpan data) {
    auto& bytes = static_cast<Collected*>(ctx)->uploads.back().bytes;
    if (offset + data.size() > bytes.size()) return Status::OutOfRange();
    std::memcpy(bytes.data() + offset, data.data(), data.size());
    return Status::Ok();
  }

  void Take(const nodefl_wire_Envelope& e) {
    switch (e.which_body) {
      case nodefl_wire_Envelope_chunk_header_tag: {
        Upload u;
        u.round = e.round;
        u.artefact = e.body.chunk_header.artefact;
        u.transfer_id = e.body.chunk_header.transfer_id;
        u.bytes.resize(e.body.chunk_header.total_bytes);
        uploads.push_back(u);
        EXPECT_EQ(e.job_id, kJob);
        EXPECT_TRUE(receiver.OnHeader(e.body.chunk_header).ok());
        uploads.back().complete = receiver.complete();
        break;
      }
      case nodefl_wire_Envelope_chunk_tag:
        ASSERT_FALSE(uploads.empty());
        EXPECT_TRUE(receiver.OnChunk(e.body.chunk).ok()) << "chunk " << e.body.chunk.index;
        uploads.back().complete = receiver.complete();
        break;
      case nodefl_wire_Envelope_job_report_tag:
        reports.push_back(Report{e.round, e.job_id, e.body.job_report});
        break;
      default:
        ++other_frames;
    }
  }
  // The connection broke: a server forgets the transfer in flight.
  void ConnectionLost() { receiver.Reset(); }

  protocol::ChunkReceiver receiver;
};


// ---- The graph ----------------------------------------------------------------------------

// n = 40 vertices, k = 4 bins, device 7. Its neighbours include 30 (not in
// the job: absent from the bin plan and NaN in the dictionary), 23 (in the
// plan but without a degree vector: NaN row), 45 (beyond the vertex range)
// and 11/19, whose rows are equal (a degree tie broken by id).
struct Scenario {
  uint32_t n = 40;
  uint8_t bins = 4;
  uint16_t k = 4;
  uint32_t own = 7;
  std::vector<uint32_t> neighbours = {1, 2, 5, 11, 12, 19, 23, 30, 31, 38, 45};
  std::vector<uint8_t> plan;
  std::vector<std::vector<float>> rows;
  std::vector<bool> absent;  // in the dictionary
  std::vector<TestCodebookRow> codebook_rows;
  std::vector<uint8_t> dictionary, tree, codebook;

  Scenario() {
    plan.resize(n);
    for (uint32_t v = 0; v < n; ++v) plan[v] = static_cast<uint8_t>((v * 3) % bins);
    plan[30] = kAbsentBin;
    absent.assign(n, false);
    rows.resize(n);
    for (uint32_t v = 0; v < n; ++v) {
      for (uint32_t i = 0; i < bins; ++i) {
        rows[v].push_back(static_cast<float>((v * 37 + i * 11) % 17) * 0.5f - 2.0f + 0.01f * static_cast<float>(v));
      }
    }
    rows[19] = rows[11];
    for (uint32_t v : {23u, 30u}) {
      rows[v] = NanRow(bins);
      absent[v] = true;
    }
    dictionary = EncodeDictionary(rows);
    std::vector<uint32_t> leaves;
    for (uint32_t v = 0; v < n; ++v) {
      if (!absent[v]) leaves.push_back(v);
    }
    tree = CaterpillarTree(leaves);
    codebook_rows = MakeCodebookRows(n, k, absent);
    codebook = EncodeCodebook(n, k, codebook_rows);
  }

  HctParameters Params(PrivacyMode mode) const {
    HctParameters p;
    p.mode = mode;
    p.bins = bins;
    p.buckets = 8;
    p.vertex_count = n;
    p.epsilon_bins = 1.5;
    p.epsilon_upload = 1.0;
    p.codebook_k = k;
    return p;
  }
  static std::vector<uint8_t> Encoded(const HctParameters& p) {
    std::vector<uint8_t> out(kHctParametersBytes);
    EXPECT_TRUE(EncodeHctParameters(p, out).ok());
    return out;
  }

  std::vector<uint32_t> TrueCounts() const {
    std::vector<uint32_t> c(bins, 0);
    for (uint32_t u : neighbours) {
      if (u < n && plan[u] != kAbsentBin) ++c[plan[u]];
    }
    return c;
  }
  std::vector<uint32_t> Present() const {
    std::vector<uint32_t> out;
    for (uint32_t u : neighbours) {
      if (u < n && !absent[u]) out.push_back(u);
    }
    return out;
  }
  double RowSum(uint32_t v) const {
    double s = 0;
    for (float x : rows[v]) s += static_cast<double>(x);
    return s;
  }
  // Eq. 5: u32 m, then the present neighbours' rows by ascending row sum,
  // ties by id.
  std::vector<uint8_t> ExpectedMatrix() const {
    std::vector<uint32_t> order = Present();
    std::sort(order.begin(), order.end(), [this](uint32_t a, uint32_t b) {
      const double sa = RowSum(a), sb = RowSum(b);
      return sa != sb ? sa < sb : a < b;
    });
    std::vector<uint8_t> out;
    PutU32(out, static_cast<uint32_t>(order.size()));
    for (uint32_t u : order) {
      out.insert(out.end(), dictionary.begin() + u * bins * 4, dictionary.begin() + (u + 1) * bins * 4);
    }
    return out;
  }
};

// ---- The device ---------------------------------------------------------------------------

struct DeviceSetup {
  size_t pool_entries = SIZE_MAX;  // default: degree x K
  size_t tree_bytes = 4096;
  size_t plan_bytes = 4096;
  uint32_t extra_degree = 0;  // real degree above the neighbours given (capped by the storage)
  // Most tests run both modes' mechanisms as published; the budget's own
  // tests set one.
  PrivacyBudget budget = PrivacyBudget::Unlimited();
};

class Device {
 public:
  Device(const Scenario& s, const DeviceSetup& setup = {})
      : neighbours_(s.neighbours.size()),
        pool_(setup.pool_entries == SIZE_MAX ? s.neighbours.size() * s.k : setup.pool_entries),
        tree_(setup.tree_bytes),
        plan_(setup.plan_bytes),
        ledger_entries_(8),
        ledger(ledger_entries_, setup.budget),
        role(s.own, Storage(s), rng, ledger),
        frame_(kMaxFrame),
        output_(4 * kMaxFrame),
        session(Options(s.own), SessionBuffers{Span<uint8_t>(frame_), Span<uint8_t>(output_)}) {
    EXPECT_TRUE(rng.SeedDeterministic(kSeed, s.own).ok());
    EXPECT_TRUE(role.Init(static_cast<uint32_t>(s.neighbours.size()) + setup.extra_degree).ok());
    EXPECT_TRUE(session.AddRole(role).ok());
    EXPECT_TRUE(session.Start(now).ok());
    ScriptedServer::Read(session);  // Hello
    EXPECT_TRUE(Feed(server.Welcome(false)).ok());
    EXPECT_EQ(session.state(), SessionState::kReady);
  }

  Status Feed(const std::vector<uint8_t>& frame) {
    size_t consumed = 0;
    Status s;
    NODEFL_EXPECT_NO_HEAP(s = session.OnReceived(frame, now, &consumed));
    if (s.ok()) {
      EXPECT_EQ(consumed, frame.size());
    }
    return s;
  }
  Status FeedAll(const std::vector<std::vector<uint8_t>>& frames) {
    for (const auto& f : frames) NODEFL_TRY(Feed(f));
    return Status::Ok();
  }
  // Polls and collects until the device has nothing more to send.
  Status Pump() {
    for (;;) {
      Status s;
      NODEFL_EXPECT_NO_HEAP(s = session.Poll(now));
      if (!s.ok()) return s;
      const auto frames = ScriptedServer::Read(session);
      for (const auto& e : frames) got.Take(e);
      if (frames.empty()) return Status::Ok();
    }
  }
  // The transport breaks; the device reconnects and the server resumes it.
  void Reconnect() {
    ASSERT_TRUE(session.Reconnect(now).ok());
    ScriptedServer::Read(session);  // Hello; the old connection's output is gone
    got.ConnectionLost();
    server.Restart();
    ASSERT_TRUE(Feed(server.Welcome(true)).ok());
  }

  // Round helpers: JobStart and the round's artefacts, then pump.
  void Round1(const Scenario& s, const HctParameters& p) {
    ASSERT_TRUE(Feed(server.JobStart(kJob, kRoundBinning, Scenario::Encoded(p))).ok());
    ASSERT_TRUE(FeedAll(server.Artefact(kJob, kRoundBinning, HctArtefact::kBinPlan, s.plan, 7)).ok());
    ASSERT_TRUE(Pump().ok());
  }
  void Round2(const Scenario& s) {
    ASSERT_TRUE(Feed(server.JobStart(kJob, kRoundMatrix, {})).ok());
    ASSERT_TRUE(FeedAll(server.Artefact(kJob, kRoundMatrix, HctArtefact::kDictionary, s.dictionary, 50)).ok());
    ASSERT_TRUE(Pump().ok());
  }
  void Round3(const Scenario& s, const std::vector<uint8_t>& codebook) {
    ASSERT_TRUE(Feed(server.JobStart(kJob, kRoundPublish, {})).ok());
    ASSERT_TRUE(FeedAll(server.Artefact(kJob, kRoundPublish, HctArtefact::kTree, s.tree, 4096)).ok());
    ASSERT_TRUE(FeedAll(server.Artefact(kJob, kRoundPublish, HctArtefact::kCodebook, codebook, 13)).ok());
    ASSERT_TRUE(Pump().ok());
  }

  size_t IndexOf(uint32_t id) const {
    for (size_t i = 0; i < neighbours_.size(); ++i) {
      if (neighbours_[i].id == id) return i;
    }
    return SIZE_MAX;
  }

 private:
  HctStorage Storage(const Scenario& s) {
    for (size_t i = 0; i < s.neighbours.size(); ++i) neighbours_[i].id = s.neighbours[i];
    return HctStorage{neighbours_, pool_, tree_, plan_};
  }
  static SessionOptions Options(uint32_t id) {
    SessionOptions o;
    o.device_id = id;
    return o;
  }

  std::vector<HctNeighbour> neighbours_;
  std::vector<CodebookEntry> pool_;
  std::vector<uint8_t> tree_, plan_;
  std::vector<LedgerEntry> ledger_entries_;

 public:
  Drbg rng;
  PrivacyLedger ledger;
  FedWalkHctRole role;

 private:
  std::vector<uint8_t> frame_, output_;

 public:
  DeviceSession session;
  ScriptedServer server{HctServer()};
  Collected got;
  uint64_t now = 1'000;
};

std::vector<float> Floats(const std::vector<uint8_t>& bytes) {
  std::vector<float> out;
  for (size_t at = 0; at + 4 <= bytes.size(); at += 4) out.push_back(GetF32(bytes.data() + at));
  return out;
}

// The device's draws, replayed: the same DRBG stream, the same calls.
struct Replica {
  Drbg rng;
  explicit Replica(uint32_t own) { EXPECT_TRUE(rng.SeedDeterministic(kSeed, own).ok()); }
  std::vector<float> DegreeVector(const Scenario& s, const HctParameters& p, double* spent) {
    const std::vector<uint32_t> counts = s.TrueCounts();
    std::vector<double> noised(counts.size());
    EXPECT_TRUE(NoiseCounts(rng, p.mode, p.epsilon_bins, counts, noised, spent).ok());
    return std::vector<float>(noised.begin(), noised.end());
  }
};

double DiscreteLaplaceVariance(double epsilon, uint32_t sensitivity) {
  Result<DiscreteLaplaceScale> scale = DiscreteLaplaceScaleFor(epsilon, sensitivity);
  EXPECT_TRUE(scale.ok());
  const double t = static_cast<double>(scale->numerator) / static_cast<double>(scale->denominator);
  const double q = std::exp(-1.0 / t);
  return 2.0 * q / ((1.0 - q) * (1.0 - q));
}

// ---- End to end -----------------------------------------------------------------------------

TEST(FedWalkHctRoleTest, PaperModeRunsAllThreeRounds) {
  const Scenario s;
  const HctParameters p = s.Params(PrivacyMode::kPaper);
  Device d(s);

  // Round 1: c_v = true counts + continuous Laplace, as the replica draws it.
  d.Round1(s, p);
  ASSERT_EQ(d.got.uploads.size(), 1u);
  const auto& up1 = d.got.uploads[0];
  EXPECT_EQ(up1.round, kRoundBinning);
  EXPECT_EQ(up1.artefact, static_cast<uint32_t>(HctArtefact::kDegreeVector));
  ASSERT_TRUE(up1.complete);
  ASSERT_EQ(up1.bytes.size(), s.bins * 4u);
  Replica replica(s.own);
  double spent = 0;
  const std::vector<float> expected_vector = replica.DegreeVector(s, p, &spent);
  EXPECT_EQ(Floats(up1.bytes), expected_vector);
  int non_integers = 0;
  for (float v : Floats(up1.bytes)) non_integers += std::floor(v) != v ? 1 : 0;
  EXPECT_EQ(non_integers, s.bins);  // continuous noise
  EXPECT_EQ(std::vector<float>(d.role.degree_vector().begin(), d.role.degree_vector().end()), expected_vector);
  EXPECT_EQ(d.role.stats().neighbours_binned, 9u);  // all but 30 (absent) and 45 (beyond n)

  ASSERT_EQ(d.got.reports.size(), 1u);
  const auto& r1 = d.got.reports[0];
  EXPECT_EQ(r1.round, kRoundBinning);
  EXPECT_EQ(r1.job, kJob);
  EXPECT_EQ(r1.body.kind, nodefl_wire_JobKind_JOB_KIND_FEDWALK_HCT);
  EXPECT_EQ(r1.body.code, 0u);
  EXPECT_EQ(r1.body.releases, 1u);
  EXPECT_EQ(r1.body.epsilon, p.epsilon_bins);
  EXPECT_FALSE(r1.body.unbounded);
  EXPECT_EQ(r1.body.expected, 0u);
  ASSERT_EQ(d.ledger.entries().size(), 1u);
  EXPECT_EQ(d.ledger.entries()[0].phase, kPhaseBinning);
  EXPECT_EQ(d.ledger.entries()[0].mechanism, Mechanism::kLaplace);
  EXPECT_EQ(d.ledger.entries()[0].mode, PrivacyMode::kPaper);
  EXPECT_EQ(d.ledger.entries()[0].releases, 1u);
  EXPECT_EQ(d.ledger.total_epsilon(), p.epsilon_bins);
  EXPECT_EQ(std::vector<uint8_t>(d.role.bin_plan().begin(), d.role.bin_plan().end()), s.plan);

  // Round 2: M_v has exactly the present neighbours' rows, Eq. 5 order.
  d.Round2(s);
  ASSERT_EQ(d.got.uploads.size(), 2u);
  const auto& up2 = d.got.uploads[1];
  EXPECT_EQ(up2.round, kRoundMatrix);
  EXPECT_EQ(up2.artefact, static_cast<uint32_t>(HctArtefact::kOrderedMatrix));
  ASSERT_TRUE(up2.complete);
  EXPECT_EQ(up2.bytes, s.ExpectedMatrix());
  EXPECT_EQ(GetU32(up2.bytes.data()), 8u);  // 23 (NaN), 30 (NaN), 45 (beyond n) left out
  EXPECT_FALSE(d.role.neighbours()[d.IndexOf(23)].in_dictionary);
  EXPECT_TRUE(d.role.neighbours()[d.IndexOf(19)].in_dictionary);
  ASSERT_EQ(d.got.reports.size(), 2u);
  const auto& r2 = d.got.reports[1];
  EXPECT_EQ(r2.round, kRoundMatrix);
  EXPECT_EQ(r2.body.code, 0u);
  EXPECT_EQ(r2.body.releases, 1u);
  EXPECT_EQ(r2.body.epsilon, 0.0);
  EXPECT_TRUE(r2.body.unbounded);
  EXPECT_TRUE(d.role.unbounded_release());
  // The ledger books it as an exact release: no epsilon, unbounded.
  ASSERT_EQ(d.ledger.entries().size(), 2u);
  EXPECT_EQ(d.ledger.entries()[1].mechanism, Mechanism::kExact);
  EXPECT_TRUE(d.ledger.entries()[1].unbounded);
  EXPECT_TRUE(d.ledger.unbounded());
  EXPECT_EQ(d.ledger.total_epsilon(), p.epsilon_bins);

  // Round 3: the tree is kept, the neighbours' codebook rows and only those.
  d.Round3(s, s.codebook);
  EXPECT_EQ(d.got.uploads.size(), 2u);
  ASSERT_EQ(d.got.reports.size(), 3u);
  const auto& r3 = d.got.reports[2];
  EXPECT_EQ(r3.round, kRoundPublish);
  EXPECT_EQ(r3.body.code, 0u);
  EXPECT_EQ(r3.body.expected, 8u);  // paper mode: M_v already revealed the neighbour set
  EXPECT_EQ(r3.body.received, 8u);
  EXPECT_EQ(r3.body.releases, 0u);
  EXPECT_TRUE(d.role.finished());
  EXPECT_EQ(std::vector<uint8_t>(d.role.tree().begin(), d.role.tree().end()), s.tree);
  size_t expected_pool = 0;
  for (size_t i = 0; i < s.neighbours.size(); ++i) {
    const uint32_t u = s.neighbours[i];
    const Span<const CodebookEntry> row = d.role.CodebookRow(i);
    if (u >= s.n || s.absent[u]) {
      EXPECT_TRUE(row.empty()) << u;
      continue;
    }
    const auto& want = s.codebook_rows[u].entries;
    ASSERT_EQ(row.size(), want.size()) << u;
    for (size_t j = 0; j < want.size(); ++j) {
      EXPECT_EQ(row[j].vertex, want[j].vertex);
      EXPECT_EQ(row[j].accept_q31, want[j].accept_q31);
      EXPECT_EQ(row[j].alias, want[j].alias);
    }
    EXPECT_EQ(d.role.neighbours()[i].truncated_mass, s.codebook_rows[u].truncated_mass);
    expected_pool += want.size();
  }
  // The device's own row is kept too (for walks that jump to it).
  const Span<const CodebookEntry> own = d.role.OwnCodebookRow();
  const auto& own_want = s.codebook_rows[s.own].entries;
  ASSERT_EQ(own.size(), own_want.size());
  for (size_t j = 0; j < own_want.size(); ++j) {
    EXPECT_EQ(own[j].vertex, own_want[j].vertex);
    EXPECT_EQ(own[j].accept_q31, own_want[j].accept_q31);
    EXPECT_EQ(own[j].alias, own_want[j].alias);
  }
  expected_pool += own_want.size();
  EXPECT_EQ(d.role.stats().pool_used, expected_pool);
  // What the walk job takes from here (walk_role.h), and the kept tree
  // indexes for the 2-hop predictor.
  const WalkInputs in = WalkInputsFrom(d.role);
  EXPECT_EQ(in.neighbours.size(), s.neighbours.size());
  EXPECT_EQ(in.own_row.data(), own.data());
  EXPECT_EQ(in.own_row.size(), own.size());
  EXPECT_EQ(in.codebook_pool.data(), d.role.CodebookRow(0).data());
  EXPECT_EQ(in.tree.size(), s.tree.size());
  EXPECT_EQ(in.bin_plan.size(), s.n);
  EXPECT_EQ(in.bins, s.bins);
  EXPECT_EQ(in.vertex_count, s.n);
  std::vector<uint32_t> parent(TreeIndex::NodeCount(s.n)), leaf_of(s.n);
  TreeIndex index;
  ASSERT_TRUE(index.Build(in.tree, in.vertex_count, parent, leaf_of).ok());
  EXPECT_EQ(index.leaves(), 38u);          // 23 and 30 are not in the tree
  EXPECT_EQ(index.LeafOf(23), TreeIndex::kNone);
  EXPECT_EQ(d.role.stats().codebook_rows_kept, 8u);
  EXPECT_EQ(d.role.stats().failures, 0u);
  EXPECT_EQ(d.got.other_frames, 0u);
}

TEST(FedWalkHctRoleTest, OwnCodebookRowIsKeptOnlyWhenPresentAndWhole) {
  {
    // The device is absent from the codebook (count 0): no own row, and
    // that is not an error.
    Scenario s;
    s.codebook_rows[s.own].entries.clear();
    const auto codebook = EncodeCodebook(s.n, s.k, s.codebook_rows);
    Device d(s);
    d.Round1(s, s.Params(PrivacyMode::kStrict));
    d.Round2(s);
    d.Round3(s, codebook);
    ASSERT_EQ(d.got.reports.size(), 3u);
    EXPECT_EQ(d.got.reports[2].body.code, 0u);
    EXPECT_TRUE(d.role.OwnCodebookRow().empty());
    EXPECT_EQ(d.role.stats().codebook_rows_kept, 8u);
  }
  {
    // A corrupt row anywhere drops the own row with the rest.
    Scenario s;
    auto rows = s.codebook_rows;
    rows[39].entries[0].alias = 50;  // the last row, after the own row
    const auto corrupt = EncodeCodebook(s.n, s.k, rows);
    Device d(s);
    d.Round1(s, s.Params(PrivacyMode::kStrict));
    d.Round2(s);
    d.Round3(s, corrupt);
    ASSERT_EQ(d.got.reports.size(), 3u);
    EXPECT_EQ(d.got.reports[2].body.code, static_cast<uint32_t>(StatusCode::kDataLoss));
    EXPECT_TRUE(d.role.OwnCodebookRow().empty());
  }
  {
    // A small pool shared in vertex order: rows 1 and 2 take 4 + 3
    // entries, 5's 4 do not fit, the own row (7) takes 2, 11's 2 do not
    // fit, 12's single entry fills the pool.
    const Scenario s;
    ASSERT_EQ(s.codebook_rows[s.own].entries.size(), 2u);
    Device d(s, DeviceSetup{/*pool_entries=*/10});
    d.Round1(s, s.Params(PrivacyMode::kStrict));
    d.Round2(s);
    d.Round3(s, s.codebook);
    ASSERT_EQ(d.got.reports.size(), 3u);
    EXPECT_EQ(d.got.reports[2].body.code, static_cast<uint32_t>(StatusCode::kResourceExhausted));
    EXPECT_EQ(d.role.OwnCodebookRow().size(), 2u);
    EXPECT_EQ(d.role.stats().pool_used, 10u);
  }
}

TEST(FedWalkHctRoleTest, StrictModeReleasesOnlyExactDiscreteNoise) {
  const Scenario s;
  const HctParameters p = s.Params(PrivacyMode::kStrict);
  Device d(s);
  d.Round1(s, p);
  ASSERT_EQ(d.got.uploads.size(), 1u);
  Replica replica(s.own);
  double spent1 = 0;
  const std::vector<float> expected_vector = replica.DegreeVector(s, p, &spent1);
  const std::vector<float> got = Floats(d.got.uploads[0].bytes);
  EXPECT_EQ(got, expected_vector);
  for (float v : got) EXPECT_EQ(std::floor(v), v);  // integers
  ASSERT_EQ(d.got.reports.size(), 1u);
  EXPECT_EQ(d.got.reports[0].body.epsilon, spent1);
  EXPECT_LE(spent1, p.epsilon_bins);
  EXPECT_GE(spent1, p.epsilon_bins * (1 - 1e-6));
  ASSERT_EQ(d.ledger.entries().size(), 1u);
  EXPECT_EQ(d.ledger.entries()[0].mechanism, Mechanism::kDiscreteLaplace);
  EXPECT_EQ(d.ledger.entries()[0].mode, PrivacyMode::kStrict);
  EXPECT_EQ(d.ledger.entries()[0].epsilon, spent1);

  // Round 2: H_v, bins x buckets, = the true histogram + the replica's noise.
  d.Round2(s);
  ASSERT_EQ(d.got.uploads.size(), 2u);
  const auto& up = d.got.uploads[1];
  EXPECT_EQ(up.artefact, static_cast<uint32_t>(HctArtefact::kDegreeHistogram));
  ASSERT_EQ(up.bytes.size(), size_t{s.bins} * p.buckets * 4);
  std::vector<int32_t> hist;
  for (size_t at = 0; at < up.bytes.size(); at += 4) hist.push_back(static_cast<int32_t>(GetU32(up.bytes.data() + at)));
  std::vector<int32_t> expected(size_t{s.bins} * p.buckets, 0);
  const std::vector<uint32_t> present = s.Present();
  for (uint32_t u : present) {
    for (uint32_t i = 0; i < s.bins; ++i) ++expected[i * p.buckets + HistogramBucket(s.rows[u][i], p.buckets)];
  }
  double spent2 = 0;
  ASSERT_TRUE(NoiseHistogram(replica.rng, p.epsilon_upload, s.bins, expected, &spent2).ok());
  EXPECT_EQ(hist, expected);
  // Each bin's total is the number of present neighbours plus `buckets`
  // independent discrete Laplace draws with t = bins / epsilon.
  const double sd = std::sqrt(p.buckets * DiscreteLaplaceVariance(p.epsilon_upload, s.bins));
  for (uint32_t i = 0; i < s.bins; ++i) {
    int64_t total = 0;
    for (uint32_t b = 0; b < p.buckets; ++b) total += hist[i * p.buckets + b];
    EXPECT_LT(std::fabs(static_cast<double>(total) - present.size()), ::nodefl::testing::ZBound() * sd);
  }
  ASSERT_EQ(d.got.reports.size(), 2u);
  EXPECT_EQ(d.got.reports[1].body.releases, 1u);
  EXPECT_EQ(d.got.reports[1].body.epsilon, spent2);
  EXPECT_FALSE(d.got.reports[1].body.unbounded);
  EXPECT_FALSE(d.role.unbounded_release());
  ASSERT_EQ(d.ledger.entries().size(), 2u);
  EXPECT_EQ(d.ledger.entries()[1].phase, kPhaseMatrix);
  EXPECT_EQ(d.ledger.entries()[1].mechanism, Mechanism::kDiscreteLaplace);
  EXPECT_DOUBLE_EQ(d.ledger.total_epsilon(), spent1 + spent2);

  // Round 3: rows kept as in paper mode, but the report does not disclose
  // neighbour counts.
  d.Round3(s, s.codebook);
  ASSERT_EQ(d.got.reports.size(), 3u);
  EXPECT_EQ(d.got.reports[2].body.code, 0u);
  EXPECT_EQ(d.got.reports[2].body.expected, 0u);
  EXPECT_EQ(d.got.reports[2].body.received, 0u);
  EXPECT_EQ(d.role.stats().codebook_rows_kept, 8u);
  EXPECT_TRUE(d.role.finished());
}

TEST(FedWalkHctRoleTest, LargeDegreeMatrixIsStreamedWithoutABuffer) {
  // 3,992 neighbours x 9 bins: M_v is 143,716 bytes, the device's session
  // output holds 4 frames, and nothing allocates.
  Scenario s;
  s.n = 5000;
  s.bins = 9;
  s.own = 4999;
  s.neighbours.clear();
  for (uint32_t v = 0; v < s.n - 1 && s.neighbours.size() < 3992; ++v) {
    if (v % 5 != 0) s.neighbours.push_back(v);
  }
  s.plan.assign(s.n, 0);
  for (uint32_t v = 0; v < s.n; ++v) s.plan[v] = static_cast<uint8_t>(v % s.bins);
  s.absent.assign(s.n, false);
  s.rows.assign(s.n, {});
  for (uint32_t v = 0; v < s.n; ++v) {
    for (uint32_t i = 0; i < s.bins; ++i) {
      s.rows[v].push_back(static_cast<float>(((v * 2654435761u) >> (i + 3)) % 23) * 0.25f);
    }
  }
  s.dictionary = EncodeDictionary(s.rows);
  const HctParameters p = s.Params(PrivacyMode::kPaper);
  Device d(s, DeviceSetup{/*pool_entries=*/0, /*tree_bytes=*/0, /*plan_bytes=*/0});
  d.Round1(s, p);
  d.Round2(s);
  ASSERT_EQ(d.got.uploads.size(), 2u);
  EXPECT_EQ(d.got.uploads[1].bytes.size(), 4 + 3992u * 9 * 4);
  EXPECT_TRUE(d.got.uploads[1].complete);
  EXPECT_EQ(d.got.uploads[1].bytes, s.ExpectedMatrix());
  // What a device pays per neighbour and for the role itself.
  EXPECT_LE(sizeof(HctNeighbour), 96u);
  EXPECT_LT(sizeof(FedWalkHctRole), 3000u);
  EXPECT_TRUE(d.role.bin_plan().empty());  // no room offered: only the neighbours' bins
}

// ---- Re-sends, reconnects -----------------------------------------------------------------

TEST(FedWalkHctRoleTest, ReconnectResendsTheSameReleaseWithoutRenoising) {
  const Scenario s;
  const HctParameters p = s.Params(PrivacyMode::kStrict);
  Device d(s);
  d.Round1(s, p);
  ASSERT_EQ(d.got.uploads.size(), 1u);
  const std::vector<uint8_t> first = d.got.uploads[0].bytes;
  const double total = d.ledger.total_epsilon();

  // The connection breaks after the upload: all of it goes out again.
  d.Reconnect();
  ASSERT_TRUE(d.Pump().ok());
  ASSERT_EQ(d.got.uploads.size(), 2u);
  EXPECT_EQ(d.got.uploads[1].bytes, first);
  EXPECT_TRUE(d.got.uploads[1].complete);
  EXPECT_NE(d.got.uploads[1].transfer_id, d.got.uploads[0].transfer_id);
  ASSERT_EQ(d.got.reports.size(), 2u);
  // The server repeats round 1's JobStart on the new connection: the upload
  // already went out on it, so only the report is repeated.
  ASSERT_TRUE(d.Feed(d.server.JobStart(kJob, kRoundBinning, Scenario::Encoded(p))).ok());
  ASSERT_TRUE(d.Pump().ok());
  EXPECT_EQ(d.got.uploads.size(), 2u);
  ASSERT_EQ(d.got.reports.size(), 3u);

  // Reconnect, and the repeated JobStart arrives before the device polls:
  // exactly one more upload, and the re-sent bin plan is only verified.
  d.Reconnect();
  ASSERT_TRUE(d.Feed(d.server.JobStart(kJob, kRoundBinning, Scenario::Encoded(p))).ok());
  ASSERT_TRUE(d.FeedAll(d.server.Artefact(kJob, kRoundBinning, HctArtefact::kBinPlan, s.plan, 7)).ok());
  ASSERT_TRUE(d.Pump().ok());
  ASSERT_EQ(d.got.uploads.size(), 3u);
  EXPECT_EQ(d.got.uploads[2].bytes, first);
  for (const auto& r : d.got.reports) {
    EXPECT_EQ(r.round, kRoundBinning);
    EXPECT_EQ(r.body.code, 0u);
    EXPECT_EQ(r.body.releases, 1u);
    EXPECT_EQ(r.body.epsilon, d.got.reports[0].body.epsilon);
  }
  // One release, booked once.
  EXPECT_EQ(d.ledger.total_epsilon(), total);
  ASSERT_EQ(d.ledger.entries().size(), 1u);
  EXPECT_EQ(d.ledger.entries()[0].releases, 1u);

  // The same for round 2's histogram.
  d.Round2(s);
  ASSERT_EQ(d.got.uploads.size(), 4u);
  const std::vector<uint8_t> histogram = d.got.uploads[3].bytes;
  const double total2 = d.ledger.total_epsilon();
  d.Reconnect();
  ASSERT_TRUE(d.Feed(d.server.JobStart(kJob, kRoundMatrix, {})).ok());
  ASSERT_TRUE(d.Pump().ok());
  ASSERT_EQ(d.got.uploads.size(), 5u);
  EXPECT_EQ(d.got.uploads[4].bytes, histogram);
  EXPECT_EQ(d.ledger.total_epsilon(), total2);
  EXPECT_EQ(d.role.stats().failures, 0u);
}

TEST(FedWalkHctRoleTest, ReconnectMidDownloadRestartsTheRound) {
  const Scenario s;
  const HctParameters p = s.Params(PrivacyMode::kPaper);
  Device d(s);
  ASSERT_TRUE(d.Feed(d.server.JobStart(kJob, kRoundBinning, Scenario::Encoded(p))).ok());
  const auto frames = d.server.Artefact(kJob, kRoundBinning, HctArtefact::kBinPlan, s.plan, 7);
  ASSERT_GT(frames.size(), 4u);
  for (size_t i = 0; i < 3; ++i) ASSERT_TRUE(d.Feed(frames[i]).ok());
  ASSERT_TRUE(d.Pump().ok());
  EXPECT_TRUE(d.got.uploads.empty());
  d.Reconnect();
  ASSERT_TRUE(d.Feed(d.server.JobStart(kJob, kRoundBinning, Scenario::Encoded(p))).ok());
  ASSERT_TRUE(d.FeedAll(d.server.Artefact(kJob, kRoundBinning, HctArtefact::kBinPlan, s.plan, 7)).ok());
  ASSERT_TRUE(d.Pump().ok());
  ASSERT_EQ(d.got.uploads.size(), 1u);
  Replica replica(s.own);
  double spent = 0;
  EXPECT_EQ(Floats(d.got.uploads[0].bytes), replica.DegreeVector(s, p, &spent));
  ASSERT_EQ(d.got.reports.size(), 1u);
  EXPECT_EQ(d.ledger.entries().size(), 1u);
}

TEST(FedWalkHctRoleTest, StaleChunkAfterReconnectIsRefused) {
  const Scenario s;
  Device d(s);
  ASSERT_TRUE(d.Feed(d.server.JobStart(kJob, kRoundBinning, Scenario::Encoded(s.Params(PrivacyMode::kPaper)))).ok());
  const ScriptedServer::Transfer t = d.server.Cut(HctArtefact::kBinPlan, s.plan, 7);
  ASSERT_TRUE(d.Feed(d.server.Header(kJob, kRoundBinning, t.header)).ok());
  ASSERT_TRUE(d.Feed(d.server.Chunk(kJob, kRoundBinning, t.chunks[0])).ok());
  d.Reconnect();
  EXPECT_EQ(d.Feed(d.server.Chunk(kJob, kRoundBinning, t.chunks[1])), Status::FailedPrecondition());
}

// ---- Protocol violations close the connection ----------------------------------------------

TEST(FedWalkHctRoleTest, TruncatedOrDamagedTransfersCloseTheConnection) {
  const Scenario s;
  const auto params = Scenario::Encoded(s.Params(PrivacyMode::kPaper));
  {
    // A new transfer announced while chunks of the last are still missing.
    Device d(s);
    ASSERT_TRUE(d.Feed(d.server.JobStart(kJob, kRoundBinning, params)).ok());
    const auto t = d.server.Cut(HctArtefact::kBinPlan, s.plan, 7);
    ASSERT_TRUE(d.Feed(d.server.Header(kJob, kRoundBinning, t.header)).ok());
    ASSERT_TRUE(d.Feed(d.server.Chunk(kJob, kRoundBinning, t.chunks[0])).ok());
    const auto again = d.server.Cut(HctArtefact::kBinPlan, s.plan, 7);
    EXPECT_EQ(d.Feed(d.server.Header(kJob, kRoundBinning, again.header)), Status::FailedPrecondition());
    EXPECT_TRUE(d.got.uploads.empty());
  }
  {
    // A gap in the chunk indices.
    Device d(s);
    ASSERT_TRUE(d.Feed(d.server.JobStart(kJob, kRoundBinning, params)).ok());
    const auto t = d.server.Cut(HctArtefact::kBinPlan, s.plan, 7);
    ASSERT_TRUE(d.Feed(d.server.Header(kJob, kRoundBinning, t.header)).ok());
    EXPECT_EQ(d.Feed(d.server.Chunk(kJob, kRoundBinning, t.chunks[1])), Status::OutOfRange());
  }
  {
    // Damaged data: the digest check at the end fails.
    Device d(s);
    ASSERT_TRUE(d.Feed(d.server.JobStart(kJob, kRoundBinning, params)).ok());
    auto t = d.server.Cut(HctArtefact::kBinPlan, s.plan, 7);
    t.chunks[2].data.bytes[0] ^= 1;
    ASSERT_TRUE(d.Feed(d.server.Header(kJob, kRoundBinning, t.header)).ok());
    Status last = Status::Ok();
    for (const auto& c : t.chunks) last = d.Feed(d.server.Chunk(kJob, kRoundBinning, c));
    EXPECT_EQ(last, Status::DataLoss());
    ASSERT_TRUE(d.Pump().ok());  // the failed transfer is never used
    EXPECT_TRUE(d.got.uploads.empty());
    EXPECT_TRUE(d.ledger.entries().empty());
  }
}

TEST(FedWalkHctRoleTest, UnexpectedArtefactsAndRoundsCloseTheConnection) {
  const Scenario s;
  const auto params = Scenario::Encoded(s.Params(PrivacyMode::kPaper));
  struct Case {
    const char* what;
    HctArtefact kind;
    size_t size;
    uint32_t round;
    Status expected;
  };
  const Case cases[] = {
      {"dictionary in round 1", HctArtefact::kDictionary, s.dictionary.size(), kRoundBinning, Status::InvalidArgument()},
      {"a device-side kind", HctArtefact::kDegreeVector, s.bins * 4u, kRoundBinning, Status::InvalidArgument()},
      {"bin plan of the wrong size", HctArtefact::kBinPlan, s.n + 1u, kRoundBinning, Status::InvalidArgument()},
      {"bin plan marked round 2", HctArtefact::kBinPlan, s.n, kRoundMatrix, Status::FailedPrecondition()},
  };
  for (const Case& c : cases) {
    Device d(s);
    ASSERT_TRUE(d.Feed(d.server.JobStart(kJob, kRoundBinning, params)).ok());
    const auto frames = d.server.Artefact(kJob, c.round, c.kind, std::vector<uint8_t>(c.size, 0), 4096);
    // The error comes back from OnReceived: the app closes the connection.
    EXPECT_EQ(d.Feed(frames[0]), c.expected) << c.what;
  }
  {
    Device d(s);
    auto bad = s.Params(PrivacyMode::kPaper);
    auto encoded = Scenario::Encoded(bad);
    encoded[2] = kMaxBins + 1;  // bins out of range
    EXPECT_EQ(d.Feed(d.server.JobStart(kJob, kRoundBinning, encoded)), Status::InvalidArgument());
  }
  {
    Device d(s);  // round 2 of a job the device never started
    EXPECT_EQ(d.Feed(d.server.JobStart(kJob, kRoundMatrix, {})), Status::FailedPrecondition());
  }
  {
    Device d(s);  // changed parameters for the same job
    ASSERT_TRUE(d.Feed(d.server.JobStart(kJob, kRoundBinning, params)).ok());
    auto other = s.Params(PrivacyMode::kPaper);
    other.epsilon_bins = 3.0;
    EXPECT_EQ(d.Feed(d.server.JobStart(kJob, kRoundBinning, Scenario::Encoded(other))), Status::InvalidArgument());
  }
}

// ---- Reported failures ----------------------------------------------------------------------

TEST(FedWalkHctRoleTest, CorruptCodebookIsReportedAndNothingIsKept) {
  Scenario s;
  auto rows = s.codebook_rows;
  rows[5].entries[0].alias = 50;  // a neighbour's row, alias out of range
  const auto corrupt = EncodeCodebook(s.n, s.k, rows);
  Device d(s);
  d.Round1(s, s.Params(PrivacyMode::kPaper));
  d.Round2(s);
  d.Round3(s, corrupt);
  ASSERT_EQ(d.got.reports.size(), 3u);
  EXPECT_EQ(d.got.reports[2].round, kRoundPublish);
  EXPECT_EQ(d.got.reports[2].body.code, static_cast<uint32_t>(StatusCode::kDataLoss));
  for (size_t i = 0; i < s.neighbours.size(); ++i) EXPECT_TRUE(d.role.CodebookRow(i).empty());
  EXPECT_EQ(d.role.stats().pool_used, 0u);
  EXPECT_EQ(d.role.stats().failures, 1u);
  EXPECT_TRUE(d.role.finished());
  EXPECT_EQ(d.session.state(), SessionState::kReady);  // content errors do not close
}

TEST(FedWalkHctRoleTest, PoolTooSmallIsReportedWithTheRowsThatFit) {
  const Scenario s;
  Device d(s, DeviceSetup{/*pool_entries=*/5});
  d.Round1(s, s.Params(PrivacyMode::kStrict));
  d.Round2(s);
  d.Round3(s, s.codebook);
  ASSERT_EQ(d.got.reports.size(), 3u);
  EXPECT_EQ(d.got.reports[2].body.code, static_cast<uint32_t>(StatusCode::kResourceExhausted));
  EXPECT_GT(d.role.stats().codebook_rows_kept, 0u);
  EXPECT_LT(d.role.stats().codebook_rows_kept, 8u);
  EXPECT_LE(d.role.stats().pool_used, 5u);
}

TEST(FedWalkHctRoleTest, ACappedDeviceTakesPartAndRecordsTwiceTheEpsilon) {
  // Degree above the storage: the app kept the neighbours it has room for
  // (NeighbourCap's public order). No refusal (it would tell the server
  // "degree > capacity"); every release costs twice the nominal epsilon.
  const Scenario s;
  for (const PrivacyMode mode : {PrivacyMode::kStrict, PrivacyMode::kPaper}) {
    Device d(s, DeviceSetup{SIZE_MAX, 4096, 4096, /*extra_degree=*/3});
    const HctParameters p = s.Params(mode);
    ASSERT_TRUE(d.Feed(d.server.JobStart(kJob, kRoundBinning, Scenario::Encoded(p))).ok());
    ASSERT_TRUE(d.FeedAll(d.server.Artefact(kJob, kRoundBinning, HctArtefact::kBinPlan, s.plan, 7)).ok());
    ASSERT_TRUE(d.Pump().ok());
    ASSERT_EQ(d.got.uploads.size(), 1u);
    ASSERT_EQ(d.got.reports.size(), 1u);
    EXPECT_EQ(d.got.reports[0].body.code, 0u);
    EXPECT_TRUE(d.role.truncated());
    EXPECT_EQ(d.role.sensitivity_factor(), 2u);
    ASSERT_EQ(d.ledger.entries().size(), 1u);
    // Discrete Laplace delivers at most the nominal epsilon (a hair less);
    // Laplace exactly it.
    EXPECT_LE(d.ledger.total_epsilon(), 2 * p.epsilon_bins + 1e-12);
    EXPECT_GE(d.ledger.total_epsilon(), 2 * p.epsilon_bins * (1 - 1e-5));
    EXPECT_DOUBLE_EQ(d.got.reports[0].body.epsilon, d.ledger.total_epsilon());
  }
  // A device holding all its neighbours with no cap pays the nominal epsilon.
  Device whole(s);
  const HctParameters p = s.Params(PrivacyMode::kPaper);
  ASSERT_TRUE(whole.Feed(whole.server.JobStart(kJob, kRoundBinning, Scenario::Encoded(p))).ok());
  ASSERT_TRUE(whole.FeedAll(whole.server.Artefact(kJob, kRoundBinning, HctArtefact::kBinPlan, s.plan, 7)).ok());
  ASSERT_TRUE(whole.Pump().ok());
  EXPECT_EQ(whole.role.sensitivity_factor(), 1u);
  EXPECT_DOUBLE_EQ(whole.ledger.total_epsilon(), p.epsilon_bins);
}

TEST(FedWalkHctRoleTest, TheDevicesBudgetRefusesReleasesAndExactUploads) {
  const Scenario s;
  // A budget below one degree vector: round 1 is refused before any noise.
  {
    DeviceSetup setup;
    setup.budget = PrivacyBudget();
    setup.budget.job_epsilon = s.Params(PrivacyMode::kStrict).epsilon_bins / 2;
    Device d(s, setup);
    ASSERT_TRUE(d.Feed(d.server.JobStart(kJob, kRoundBinning, Scenario::Encoded(s.Params(PrivacyMode::kStrict)))).ok());
    ASSERT_TRUE(d.FeedAll(d.server.Artefact(kJob, kRoundBinning, HctArtefact::kBinPlan, s.plan, 7)).ok());
    ASSERT_TRUE(d.Pump().ok());
    EXPECT_TRUE(d.got.uploads.empty());
    ASSERT_EQ(d.got.reports.size(), 1u);
    EXPECT_EQ(d.got.reports[0].body.code, static_cast<uint32_t>(StatusCode::kPermissionDenied));
    EXPECT_TRUE(d.ledger.entries().empty());
    EXPECT_TRUE(d.role.degree_vector().empty());
  }
  // The default budget refuses paper mode's exact M_v: round 1 goes out,
  // round 2 is refused and nothing is uploaded.
  {
    DeviceSetup setup;
    setup.budget = PrivacyBudget();
    Device d(s, setup);
    const std::vector<uint8_t> params = Scenario::Encoded(s.Params(PrivacyMode::kPaper));
    ASSERT_TRUE(d.Feed(d.server.JobStart(kJob, kRoundBinning, params)).ok());
    ASSERT_TRUE(d.FeedAll(d.server.Artefact(kJob, kRoundBinning, HctArtefact::kBinPlan, s.plan, 7)).ok());
    ASSERT_TRUE(d.Pump().ok());
    ASSERT_EQ(d.got.uploads.size(), 1u);
    ASSERT_TRUE(d.Feed(d.server.JobStart(kJob, kRoundMatrix, params)).ok());
    ASSERT_TRUE(d.FeedAll(d.server.Artefact(kJob, kRoundMatrix, HctArtefact::kDictionary, s.dictionary, 64)).ok());
    ASSERT_TRUE(d.Pump().ok());
    EXPECT_EQ(d.got.uploads.size(), 1u);
    ASSERT_EQ(d.got.reports.size(), 2u);
    EXPECT_EQ(d.got.reports[1].body.code, static_cast<uint32_t>(StatusCode::kPermissionDenied));
    EXPECT_FALSE(d.role.unbounded_release());
    EXPECT_FALSE(d.ledger.unbounded());
  }
}

TEST(FedWalkHctRoleTest, InitChecksTheNeighbourList) {
  const Scenario s;
  Drbg rng;
  std::vector<LedgerEntry> entries(2);
  PrivacyLedger ledger(entries);
  auto init = [&](std::vector<uint32_t> ids, uint32_t degree) {
    std::vector<HctNeighbour> n(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) n[i].id = ids[i];
    FedWalkHctRole role(7, HctStorage{n, {}, {}, {}}, rng, ledger);
    return role.Init(degree);
  };
  EXPECT_TRUE(init({1, 2, 9}, 3).ok());
  EXPECT_TRUE(init({1, 2, 9}, 10).ok());  // over capacity: allowed, refuses jobs
  EXPECT_EQ(init({1, 2, 9}, 2), Status::InvalidArgument());
  EXPECT_EQ(init({2, 1}, 2), Status::InvalidArgument());
  EXPECT_EQ(init({1, 1}, 2), Status::InvalidArgument());
  EXPECT_EQ(init({1, 7}, 2), Status::InvalidArgument());  // own id
}

TEST(FedWalkHctRoleTest, DeadlineExpiryIsReportedOnceAndTheRoundCanRestart) {
  const Scenario s;
  const HctParameters p = s.Params(PrivacyMode::kStrict);
  Device d(s);
  ASSERT_TRUE(d.Feed(d.server.JobStart(kJob, kRoundBinning, Scenario::Encoded(p), /*deadline_ms=*/1000)).ok());
  ASSERT_TRUE(d.Pump().ok());  // the deadline starts now: 1 s from d.now
  d.now += 900'000;
  ASSERT_TRUE(d.Pump().ok());
  EXPECT_TRUE(d.got.reports.empty());
  d.now += 200'000;
  ASSERT_TRUE(d.Pump().ok());
  ASSERT_EQ(d.got.reports.size(), 1u);
  EXPECT_EQ(d.got.reports[0].body.code, static_cast<uint32_t>(StatusCode::kDeadlineExceeded));
  d.now += 5'000'000;
  ASSERT_TRUE(d.Pump().ok());
  EXPECT_EQ(d.got.reports.size(), 1u);  // once
  // A late bin plan is verified and dropped: no release.
  ASSERT_TRUE(d.FeedAll(d.server.Artefact(kJob, kRoundBinning, HctArtefact::kBinPlan, s.plan, 7)).ok());
  ASSERT_TRUE(d.Pump().ok());
  EXPECT_TRUE(d.got.uploads.empty());
  EXPECT_EQ(d.got.reports.size(), 1u);
  EXPECT_TRUE(d.ledger.entries().empty());
  // The server restarts the round for this device: it runs normally.
  ASSERT_TRUE(d.Feed(d.server.JobStart(kJob, kRoundBinning, Scenario::Encoded(p))).ok());
  ASSERT_TRUE(d.FeedAll(d.server.Artefact(kJob, kRoundBinning, HctArtefact::kBinPlan, s.plan, 7)).ok());
  ASSERT_TRUE(d.Pump().ok());
  ASSERT_EQ(d.got.uploads.size(), 1u);
  ASSERT_EQ(d.got.reports.size(), 2u);
  EXPECT_EQ(d.got.reports[1].body.code, 0u);
  EXPECT_EQ(d.ledger.entries().size(), 1u);
  EXPECT_EQ(d.role.stats().failures, 1u);
}

}  // namespace
}  // namespace nodefl::fedwalk
