// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The secure-compare job (Lumos's greedy initialisation) without a network:
// fake devices request their edges, answer every session start with the
// comparison computed in plaintext, and the job's kept neighbours must
// equal Lumos's rule; pacing holds on the devices' side; aborted and
// disputed sessions keep their edge on both sides; a device silent in
// round 1 is recorded missed and its edges are never started.
#include "nodefl/server/jobs/job_catalog.h"
#include "nodefl/server/jobs/secure_compare_job.h"
#include "nodefl/server/jobs/secure_compare_kind.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <sstream>
#include <tuple>

#include <unistd.h>

#include "nodefl/core/little_endian.h"
#include "nodefl/server/core/config.h"
#include "nodefl/server/jobs/job_factory.h"

namespace nodefl::server::jobs {
namespace {

namespace cmp = nodefl::compare;
namespace svc = nodefl::server::compare_service;

using Edges = std::vector<std::pair<uint32_t, uint32_t>>;

// Zachary's karate club, 0-based (78 edges).
Edges Karate() {
  const std::vector<std::vector<uint32_t>> adj1 = {
      {1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14, 18, 20, 22, 32}, {2, 3, 4, 8, 14, 18, 20, 22, 31},
      {3, 4, 8, 9, 10, 14, 28, 29, 33}, {4, 8, 13, 14}, {5, 7, 11}, {6, 7, 11, 17}, {7, 17},
      {9, 31, 33, 34}, {10, 34}, {14, 34}, {15, 33, 34}, {16, 33, 34}, {19, 33, 34}, {20, 34},
      {21, 33, 34}, {23, 33, 34}, {24, 26, 28, 30, 33, 34}, {25, 26, 28, 32}, {26, 32}, {27, 30, 34},
      {28, 34}, {29, 32, 34}, {30, 33, 34}, {31, 33, 34}, {32, 33, 34}, {33, 34}};
  Edges edges;
  for (const auto& row : adj1) {
    for (size_t i = 1; i < row.size(); ++i) edges.emplace_back(row[0] - 1, row[i] - 1);
  }
  return edges;
}

nodefl_wire_JobReport Report(uint32_t sent = 0, uint32_t rejected = 0) {
  nodefl_wire_JobReport r = nodefl_wire_JobReport_init_zero;
  r.kind = nodefl_wire_JobKind_JOB_KIND_SECURE_COMPARE;
  r.sent = sent;
  r.rejected = rejected;
  return r;
}

std::vector<uint8_t> U32s(const std::vector<uint32_t>& ids) {
  std::vector<uint8_t> bytes(4 * ids.size());
  for (size_t i = 0; i < ids.size(); ++i) StoreU32Le(ids[i], bytes.data() + 4 * i);
  return bytes;
}

SecureCompareOptions Options(uint16_t max_sessions, const std::string& output_dir = {}) {
  SecureCompareOptions o;
  o.job_id = 9;
  o.params.max_sessions = max_sessions;
  o.round_deadline_ms = 1000;
  o.session_round_deadline_ms = 10'000;
  o.session_timeout_ms = 500;
  o.output_dir = output_dir;
  return o;
}

// Devices of a graph, played in process. Each compares round(ln deg).
class Fleet {
 public:
  Fleet(SecureCompareJob& job, const Edges& edges, uint32_t max_sessions, uint64_t seed)
      : job_(job), max_sessions_(max_sessions), rng_(seed) {
    for (const auto& [u, v] : edges) {
      neighbours_[u].insert(v);
      neighbours_[v].insert(u);
    }
  }

  uint32_t Value(uint32_t device) const {
    auto it = neighbours_.find(device);
    const size_t degree = it == neighbours_.end() ? 0 : it->second.size();
    return degree == 0 ? 0 : static_cast<uint32_t>(std::lround(std::log(static_cast<double>(degree))));
  }
  // Lumos Alg. 1 in plaintext: u keeps v iff value(v) >= value(u).
  std::vector<uint32_t> PlainKept(uint32_t u) const {
    std::vector<uint32_t> kept;
    auto it = neighbours_.find(u);
    if (it == neighbours_.end()) return kept;
    for (uint32_t v : it->second) {
      if (Value(v) >= Value(u)) kept.push_back(v);
    }
    return kept;
  }

  void Take(std::vector<RoundStart> starts) {
    for (RoundStart& r : starts) rounds_.push_back(std::move(r));
  }

  // Round 1 for `device`: its higher neighbours, split over two records
  // when there are several, then its report.
  void SendRequests(uint32_t device, uint64_t now) {
    std::vector<uint32_t> higher;
    for (uint32_t v : neighbours_[device]) {
      if (v > device) higher.push_back(v);
    }
    const size_t half = higher.size() / 2;
    for (const auto& part : {std::vector<uint32_t>(higher.begin(), higher.begin() + static_cast<std::ptrdiff_t>(half)),
                             std::vector<uint32_t>(higher.begin() + static_cast<std::ptrdiff_t>(half), higher.end())}) {
      if (!part.empty()) Take(job_.OnUpload(device, 1, cmp::kSessionRequests, U32s(part), now));
    }
    Take(job_.OnReport(device, 1, Report(), now));
  }

  // Reads everything the job sent: starts (checking the bound each device
  // sees) and cancels (a device running the session aborts and reports).
  void Drain(uint64_t now) {
    for (;;) {
      std::vector<DeviceData> data = job_.TakeData();
      if (data.empty()) return;
      for (const DeviceData& d : data) {
        EXPECT_EQ(d.round, 2u);
        EXPECT_LE(d.bytes.size(), 4096u);
        data_devices_.insert(d.device);
        if (d.kind == cmp::kSessionStart) {
          ASSERT_EQ(d.bytes.size() % cmp::kSessionStartBytes, 0u);
          for (size_t at = 0; at < d.bytes.size(); at += cmp::kSessionStartBytes) {
            Result<cmp::SessionStart> s =
                cmp::DecodeSessionStart(ConstByteSpan(d.bytes.data() + at, cmp::kSessionStartBytes));
            ASSERT_TRUE(s.ok());
            EXPECT_TRUE(running_[d.device].emplace(s->session, *s).second);
            peak_ = std::max<uint32_t>(peak_, static_cast<uint32_t>(running_[d.device].size()));
            EXPECT_LE(running_[d.device].size(), max_sessions_) << "device " << d.device;
            queue_.emplace_back(d.device, s->session);
          }
        } else if (d.kind == cmp::kSessionCancel) {
          ASSERT_EQ(d.bytes.size() % 4, 0u);
          for (size_t at = 0; at < d.bytes.size(); at += 4) {
            const uint32_t session = LoadU32Le(d.bytes.data() + at);
            cancels_.emplace(d.device, session);
            auto it = running_[d.device].find(session);
            if (it == running_[d.device].end()) continue;
            const cmp::SessionStart start = it->second;
            std::erase(queue_, std::pair{d.device, session});
            Finish(d.device, start, /*done=*/false, now);
          }
        } else {
          ADD_FAILURE() << "unexpected record kind " << d.kind;
        }
      }
    }
  }

  // Answers queued sessions until none is left, in the order `pick` chooses.
  void AnswerAll(uint64_t& now, const std::function<size_t(const std::vector<std::pair<uint32_t, uint32_t>>&)>& pick) {
    Drain(now);
    while (!queue_.empty()) {
      const size_t i = pick(queue_);
      const auto [device, session] = queue_[i];
      queue_.erase(queue_.begin() + static_cast<std::ptrdiff_t>(i));
      const cmp::SessionStart start = running_[device].at(session);
      now += 10;
      Finish(device, start, !abort_with_.count({device, start.peer}), now);
      Drain(now);
    }
  }
  void AnswerAllRandomly(uint64_t& now) {
    AnswerAll(now, [this](const auto& q) { return std::uniform_int_distribution<size_t>(0, q.size() - 1)(rng_); });
  }

  // Reports round 3 for every device the job started round 3 on.
  void ReportRound3(uint64_t now) {
    const std::vector<uint32_t> devices = LastRound(3).devices;  // Take() may move the rounds
    for (uint32_t device : devices) Take(job_.OnReport(device, 3, Report(), now));
  }

  const RoundStart& LastRound(uint32_t round) const {
    for (auto it = rounds_.rbegin(); it != rounds_.rend(); ++it) {
      if (it->round == round) return *it;
    }
    static const RoundStart none;
    ADD_FAILURE() << "no round " << round;
    return none;
  }
  bool HasRound(uint32_t round) const {
    return std::any_of(rounds_.begin(), rounds_.end(), [round](const RoundStart& r) { return r.round == round; });
  }

  std::set<std::pair<uint32_t, uint32_t>> abort_with_;     // (device, peer): the device aborts
  std::set<std::pair<uint32_t, uint32_t>> flip_with_;      // (device, peer): the device lies about gt
  std::set<std::pair<uint32_t, uint32_t>> cancels_;        // (device, session) received
  std::set<uint32_t> data_devices_;                        // devices that got any record
  uint32_t peak_ = 0;

 private:
  void Finish(uint32_t device, const cmp::SessionStart& start, bool done, uint64_t now) {
    running_[device].erase(start.session);
    cmp::SessionResult r;
    r.session = start.session;
    r.done = done;
    r.code = done ? 0 : 9;
    r.count = start.count;
    r.bytes_sent = 1000 + device;
    r.bytes_received = 1000;
    r.messages_sent = 4;
    if (done) {
      const uint32_t x = start.role == cmp::Role::kA ? Value(device) : Value(start.peer);
      const uint32_t y = start.role == cmp::Role::kA ? Value(start.peer) : Value(device);
      bool gt = x > y;
      if (flip_with_.count({device, start.peer})) gt = !gt;
      r.bits[0] = static_cast<uint8_t>((gt ? 1u : 0u) | (x == y ? 2u : 0u));
      r.bit_bytes = 1;
    }
    std::vector<uint8_t> bytes(cmp::kSessionResultHeaderBytes + r.bit_bytes);
    ASSERT_TRUE(cmp::EncodeSessionResult(r, ByteSpan(bytes)).ok());
    Take(job_.OnUpload(device, 2, cmp::kSessionResult, std::move(bytes), now));
  }

  SecureCompareJob& job_;
  uint32_t max_sessions_;
  std::mt19937_64 rng_;
  std::map<uint32_t, std::set<uint32_t>> neighbours_;
  std::map<uint32_t, std::map<uint32_t, cmp::SessionStart>> running_;
  std::vector<std::pair<uint32_t, uint32_t>> queue_;  // (device, session) to answer
  std::vector<RoundStart> rounds_;
};

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::filesystem::path TempDir(const std::string& name) {
  // The process id keeps concurrent test runs apart.
  const auto dir =
      std::filesystem::temp_directory_path() / ("nodefl-secure-compare-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir;
}

std::vector<uint32_t> Range(uint32_t n) {
  std::vector<uint32_t> ids(n);
  for (uint32_t i = 0; i < n; ++i) ids[i] = i;
  return ids;
}

TEST(SecureCompareJobTest, KarateGreedyInitMatchesThePlaintextRule) {
  const auto dir = TempDir("karate");
  constexpr uint16_t kMax = 2;
  SecureCompareJob job(Options(kMax, dir.string()), Range(34));
  Fleet fleet(job, Karate(), kMax, 11);
  fleet.Take(job.Begin(0));
  const RoundStart& round1 = fleet.LastRound(1);
  EXPECT_EQ(round1.devices.size(), 34u);
  Result<cmp::CompareJobParameters> params = cmp::DecodeCompareParameters(ConstByteSpan(round1.parameters));
  ASSERT_TRUE(params.ok());
  EXPECT_EQ(params->max_sessions, kMax);
  EXPECT_EQ(params->value, cmp::CompareValue::kLogDegree);
  EXPECT_TRUE(params->results_public);
  EXPECT_TRUE(std::any_of(std::begin(params->salt), std::end(params->salt), [](uint8_t b) { return b != 0; }));

  uint64_t now = 100;
  for (uint32_t d = 0; d < 34; ++d) fleet.SendRequests(d, now);
  ASSERT_TRUE(fleet.HasRound(2));
  EXPECT_EQ(fleet.LastRound(2).devices.size(), 34u);
  EXPECT_EQ(job.summary().requested_edges, 78u);
  EXPECT_EQ(job.sessions().totals().sessions, 78u);
  fleet.AnswerAllRandomly(now);
  ASSERT_TRUE(fleet.HasRound(3));
  EXPECT_TRUE(fleet.cancels_.empty());
  fleet.ReportRound3(now + 10);
  ASSERT_TRUE(job.finished());
  EXPECT_TRUE(job.succeeded());

  EXPECT_EQ(job.sessions().totals().done, 78u);
  EXPECT_EQ(fleet.peak_, kMax);  // the hubs were paced, at the bound
  EXPECT_EQ(job.sessions().totals().peak_running_per_device, kMax);
  // Edges are compared once, with the lower id as party A.
  for (const svc::Session& s : job.sessions().sessions()) EXPECT_LT(s.a, s.b);
  const auto kept = job.KeptNeighbours();
  ASSERT_EQ(kept.size(), 34u);
  std::string expected_file;
  uint64_t kept_total = 0;
  for (uint32_t u = 0; u < 34; ++u) {
    EXPECT_EQ(kept.at(u), fleet.PlainKept(u)) << "device " << u;
    kept_total += kept.at(u).size();
    expected_file += std::to_string(u) + "\t";
    for (size_t i = 0; i < kept.at(u).size(); ++i) expected_file += (i ? "," : "") + std::to_string(kept.at(u)[i]);
    expected_file += "\n";
  }
  const SecureCompareSummary& s = job.summary();
  EXPECT_EQ(s.edges_kept_both + s.edges_kept_one, 78u);
  EXPECT_EQ(kept_total, 2 * s.edges_kept_both + s.edges_kept_one);
  EXPECT_GT(s.edges_kept_one, 0u);  // the graph has both kinds
  EXPECT_GT(s.edges_kept_both, 0u);
  EXPECT_EQ(ReadFile(dir / "greedy-init.tsv"), expected_file);
  const std::string sessions = ReadFile(dir / "secure-compare-sessions.tsv");
  EXPECT_EQ(std::count(sessions.begin(), sessions.end(), '\n'), 79);  // header + 78
  EXPECT_EQ(sessions.rfind("session\ta\tb\tstate\treason\tgt\teq\tbytes_a\tbytes_b\tmessages_a\tmessages_b\n", 0), 0u);
  // Session 1 is edge (0, 1): degrees 16 and 9, round(ln) 3 and 2, so x > y.
  EXPECT_NE(sessions.find("\n1\t0\t1\tdone\t-\t1\t0\t1000\t1001\t4\t4\n"), std::string::npos);
  EXPECT_EQ(job.sessions().totals().bytes_sent, [&] {
    uint64_t sum = 0;
    for (const svc::Session& x : job.sessions().sessions()) sum += 2000 + x.a + x.b;
    return sum;
  }());
  EXPECT_EQ(job.ProgressLine(), "finished");
  std::filesystem::remove_all(dir);
}

TEST(SecureCompareJobTest, AbortedAndDisputedSessionsKeepTheEdgeOnBothSides) {
  // A star: the hub (degree 3, round(ln 3) = 1) keeps no leaf by the rule
  // (leaves have round(ln 1) = 0); every leaf keeps the hub.
  SecureCompareJob job(Options(4), Range(4));
  Fleet fleet(job, {{0, 1}, {0, 2}, {0, 3}}, 4, 5);
  fleet.abort_with_.insert({1, 0});  // leaf 1 aborts its session
  fleet.flip_with_.insert({2, 0});   // leaf 2 reports a wrong gt bit
  fleet.Take(job.Begin(0));
  uint64_t now = 10;
  for (uint32_t d = 0; d < 4; ++d) fleet.SendRequests(d, now);
  ASSERT_TRUE(fleet.HasRound(2));
  // Leaves answer before the hub, so the hub is still running session 1
  // when leaf 1 aborts it: it must be cancelled.
  fleet.AnswerAll(now, [](const auto& q) {
    for (size_t i = 0; i < q.size(); ++i) {
      if (q[i].first != 0) return i;
    }
    return size_t{0};
  });
  EXPECT_EQ(fleet.cancels_, (std::set<std::pair<uint32_t, uint32_t>>{{0, 1}}));
  ASSERT_TRUE(fleet.HasRound(3));
  fleet.ReportRound3(now);
  ASSERT_TRUE(job.finished());
  EXPECT_FALSE(job.succeeded());
  EXPECT_EQ(job.sessions().session(1).reason, svc::AbortReason::kPartyAborted);
  EXPECT_EQ(job.sessions().session(2).reason, svc::AbortReason::kDisagreement);
  EXPECT_EQ(job.sessions().session(3).state, svc::SessionState::kDone);
  EXPECT_EQ(job.sessions().totals().late_reports, 1u);  // the hub's answer to the cancel
  EXPECT_EQ(job.sessions().totals().protocol_errors, 0u);
  const auto kept = job.KeptNeighbours();
  EXPECT_EQ(kept.at(0), (std::vector<uint32_t>{1, 2}));  // the rule alone would keep none
  EXPECT_EQ(kept.at(1), std::vector<uint32_t>{0});
  EXPECT_EQ(kept.at(2), std::vector<uint32_t>{0});
  EXPECT_EQ(kept.at(3), std::vector<uint32_t>{0});
  EXPECT_EQ(fleet.PlainKept(0), std::vector<uint32_t>{});
  EXPECT_EQ(job.summary().edges_kept_aborted, 2u);
  EXPECT_EQ(job.summary().edges_kept_one, 1u);
}

TEST(SecureCompareJobTest, ADeviceSilentInRound1IsMissedAndItsEdgesNeverStart) {
  // A 4-cycle plus a chord; device 3 never answers.
  const Edges edges = {{0, 1}, {1, 2}, {2, 3}, {0, 3}, {0, 2}};
  SecureCompareJob job(Options(1), Range(4));
  Fleet fleet(job, edges, 1, 7);
  fleet.Take(job.Begin(0));
  for (uint32_t d = 0; d < 3; ++d) fleet.SendRequests(d, 10);
  EXPECT_FALSE(fleet.HasRound(2));
  fleet.Take(job.Poll(1'000'000));  // exactly at the deadline: still waiting
  EXPECT_FALSE(fleet.HasRound(2));
  fleet.Take(job.Poll(1'000'001));
  ASSERT_TRUE(fleet.HasRound(2));
  EXPECT_EQ(fleet.LastRound(2).devices, (std::vector<uint32_t>{0, 1, 2}));
  EXPECT_EQ(job.summary().missed_round1, std::vector<uint32_t>{3});
  uint64_t now = 1'000'010;
  fleet.AnswerAllRandomly(now);
  EXPECT_EQ(fleet.data_devices_.count(3), 0u);  // nothing was sent to it
  ASSERT_TRUE(fleet.HasRound(3));
  EXPECT_EQ(fleet.LastRound(3).devices, (std::vector<uint32_t>{0, 1, 2}));
  fleet.ReportRound3(now);
  ASSERT_TRUE(job.finished());
  EXPECT_FALSE(job.succeeded());
  const svc::ServiceTotals& t = job.sessions().totals();
  EXPECT_EQ(t.sessions, 5u);
  EXPECT_EQ(t.done, 3u);
  EXPECT_EQ(t.aborted_by_reason.at(svc::AbortReason::kOffline), 2u);
  for (const svc::Session& s : job.sessions().sessions()) {
    if (s.b == 3) {
      EXPECT_EQ(s.state, svc::SessionState::kAborted);
      EXPECT_FALSE(s.started);
    }
  }
  // Its edges stay in both trees.
  const auto kept = job.KeptNeighbours();
  EXPECT_EQ(kept.at(3), (std::vector<uint32_t>{0, 2}));
  for (uint32_t u : {0u, 2u}) {
    EXPECT_TRUE(std::count(kept.at(u).begin(), kept.at(u).end(), 3u)) << u;
  }
}

TEST(SecureCompareJobTest, BadRequestsAndRecordsAreRefusedAndCounted) {
  SecureCompareJob job(Options(4), Range(4));
  (void)job.Begin(0);
  // Own id, a lower id, a repeat, a non-participant: refused; 3 accepted.
  job.OnUpload(2, 1, cmp::kSessionRequests, U32s({2, 1, 3, 3, 99}), 1);
  EXPECT_EQ(job.summary().requested_edges, 1u);
  EXPECT_EQ(job.summary().refused_requests, 4u);
  job.OnUpload(50, 1, cmp::kSessionRequests, U32s({51}), 1);               // not a participant
  job.OnUpload(0, 1, cmp::kSessionRequests, {1, 0, 0}, 1);                 // not whole ids
  job.OnUpload(0, 1, cmp::kSessionResult, std::vector<uint8_t>(20, 0), 1);  // wrong round for results
  EXPECT_EQ(job.summary().protocol_errors, 3u);
  job.OnReport(0, 1, Report(), 2);
  job.OnUpload(0, 1, cmp::kSessionRequests, U32s({1}), 2);  // after its report
  EXPECT_EQ(job.summary().protocol_errors, 4u);
  EXPECT_EQ(job.summary().requested_edges, 1u);
  for (uint32_t d = 1; d < 4; ++d) job.OnReport(d, 1, Report(), 3);
  job.OnReport(1, 1, Report(), 3);  // repeated
  EXPECT_EQ(job.summary().ignored_reports, 1u);
  job.OnUpload(1, 1, cmp::kSessionRequests, U32s({3}), 3);  // round 1 is over: late, not an error
  EXPECT_EQ(job.summary().late_requests, 1u);
  EXPECT_EQ(job.summary().protocol_errors, 4u);
  EXPECT_EQ(job.sessions().totals().sessions, 1u);
  // A malformed result and a result for a session the device is not in.
  job.OnUpload(0, 2, cmp::kSessionResult, {1, 2, 3}, 4);
  EXPECT_EQ(job.summary().protocol_errors, 5u);
  cmp::SessionResult r;
  r.session = 1;
  r.done = true;
  r.count = 1;
  std::vector<uint8_t> bytes(cmp::kSessionResultHeaderBytes);
  ASSERT_TRUE(cmp::EncodeSessionResult(r, ByteSpan(bytes)).ok());
  job.OnUpload(0, 2, cmp::kSessionResult, bytes, 5);
  EXPECT_EQ(job.sessions().totals().protocol_errors, 1u);
  EXPECT_EQ(job.sessions().session(1).state, svc::SessionState::kRunning);
}

TEST(SecureCompareJobTest, AnUnreachableDeviceAbortsItsSessionsAndCancelsThePeer) {
  SecureCompareJob job(Options(1), Range(3));
  Fleet fleet(job, {{0, 1}, {0, 2}, {1, 2}}, 1, 3);
  fleet.Take(job.Begin(0));
  for (uint32_t d = 0; d < 3; ++d) fleet.SendRequests(d, 10);
  ASSERT_TRUE(fleet.HasRound(2));
  // Session 1 (0, 1) runs; (0, 2) and (1, 2) wait for 0's and 1's slot.
  ASSERT_EQ(job.sessions().session(1).state, svc::SessionState::kRunning);
  (void)job.TakeData();  // the first starts
  job.OnUndeliverable(1, 20);
  EXPECT_EQ(job.sessions().session(1).reason, svc::AbortReason::kOffline);
  EXPECT_EQ(job.sessions().session(3).reason, svc::AbortReason::kOffline);
  // 0 is told to stop session 1; its one slot stays taken until it answers
  // (its device frees the context only then), and (0, 2) starts after.
  std::vector<DeviceData> data = job.TakeData();
  ASSERT_EQ(data.size(), 1u);
  EXPECT_EQ(data[0].device, 0u);
  EXPECT_EQ(data[0].kind, cmp::kSessionCancel);
  EXPECT_EQ(data[0].bytes, U32s({1}));
  EXPECT_EQ(job.sessions().session(2).state, svc::SessionState::kPending);
  cmp::SessionResult r;
  r.session = 1;
  r.done = false;
  r.count = 1;
  std::vector<uint8_t> bytes(cmp::kSessionResultHeaderBytes);
  ASSERT_TRUE(cmp::EncodeSessionResult(r, ByteSpan(bytes)).ok());
  job.OnUpload(0, 2, cmp::kSessionResult, bytes, 30);
  data = job.TakeData();
  ASSERT_EQ(data.size(), 2u);  // the start, to 0 and to 2
  EXPECT_EQ(data[0].kind, cmp::kSessionStart);
  EXPECT_EQ(job.sessions().session(2).state, svc::SessionState::kRunning);
  EXPECT_EQ(job.sessions().totals().late_reports, 1u);
}

TEST(SecureCompareJobTest, ASilentSessionTimesOutAndEndsTheRound) {
  SecureCompareJob job(Options(4), Range(2));
  Fleet fleet(job, {{0, 1}}, 4, 3);
  fleet.Take(job.Begin(0));
  for (uint32_t d = 0; d < 2; ++d) fleet.SendRequests(d, 10);
  ASSERT_TRUE(fleet.HasRound(2));
  (void)job.TakeData();
  fleet.Take(job.Poll(10 + 500'000));
  EXPECT_FALSE(fleet.HasRound(3));
  fleet.Take(job.Poll(10 + 500'001));
  EXPECT_EQ(job.sessions().session(1).reason, svc::AbortReason::kDeadline);
  // That settled the last session: round 3 starts, and no round-2 cancel
  // trails its JobStart (the round-3 start ends the session on devices).
  ASSERT_TRUE(fleet.HasRound(3));
  EXPECT_TRUE(job.TakeData().empty());
  EXPECT_EQ(job.KeptNeighbours().at(0), std::vector<uint32_t>{1});
  EXPECT_EQ(job.KeptNeighbours().at(1), std::vector<uint32_t>{0});
}

TEST(SecureCompareJobTest, FactoryAndConfigBuildTheStage) {
  ServerConfig config = DefaultServerConfigWithJobs();
  config.tls_ca_cert = config.tls_server_cert = config.tls_server_key = config.credentials_dir = "x";
  config.job = "secure-compare";
  EXPECT_EQ(JobStages(config), std::vector<std::string>{"secure-compare"});
  SecureCompareJobConfig& compare = jobs::Options<SecureCompareJobConfig>(config);
  compare.width = 12;
  compare.mode = "extension";
  compare.value = "degree";
  compare.results_public = false;
  compare.max_sessions = 3;
  EXPECT_TRUE(ValidateConfig(config).ok) << ValidateConfig(config).message;
  std::unique_ptr<Job> job = MakeJob(config, "secure-compare", 4, {3, 1, 2});
  ASSERT_NE(job, nullptr);
  EXPECT_EQ(job->kind(), nodefl_wire_JobKind_JOB_KIND_SECURE_COMPARE);
  const std::vector<RoundStart> starts = job->Begin(0);
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].devices, (std::vector<uint32_t>{1, 2, 3}));
  Result<cmp::CompareJobParameters> p = cmp::DecodeCompareParameters(ConstByteSpan(starts[0].parameters));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->width, 12);
  EXPECT_EQ(p->mode, cmp::OtMode::kExtension);
  EXPECT_EQ(p->value, cmp::CompareValue::kDegree);
  EXPECT_FALSE(p->results_public);
  EXPECT_EQ(p->max_sessions, 3);
  // Every job draws its own salt.
  std::unique_ptr<Job> other = MakeJob(config, "secure-compare", 5, {1, 2});
  const std::vector<RoundStart> other_starts = other->Begin(0);
  ASSERT_EQ(other_starts.size(), 1u);
  EXPECT_NE(std::vector<uint8_t>(starts[0].parameters.begin(), starts[0].parameters.begin() + 16),
            std::vector<uint8_t>(other_starts[0].parameters.begin(), other_starts[0].parameters.begin() + 16));
  // Without public results the server cannot know who keeps what.
  EXPECT_TRUE(static_cast<const SecureCompareJob&>(*job).KeptNeighbours().empty());

  for (const auto& [key, value, message] :
       {std::tuple{"compare_width", "33", "compare_width: 33 is outside 1..32"},
        std::tuple{"compare_digit_bits", "9", "compare_digit_bits: 9 is outside 0..8"},
        std::tuple{"compare_mode", "fast", "compare_mode: 'fast' is not base or extension"},
        std::tuple{"compare_value", "age", "compare_value: 'age' is not log-degree or degree"},
        std::tuple{"compare_max_sessions", "0", "compare_max_sessions: 0 is outside 1..65535"},
        std::tuple{"compare_session_timeout_ms", "0", "compare_session_timeout_ms: must be at least 1"}}) {
    ServerConfig bad = config;
    ASSERT_TRUE(SetConfigValue(bad, key, value).ok) << key;
    const ConfigStatus status = ValidateConfig(bad);
    EXPECT_FALSE(status.ok) << key;
    EXPECT_EQ(status.message, message);
  }
  // A boolean now: anything but true/false is refused when parsed.
  ServerConfig bad = config;
  const ConfigStatus not_bool = SetConfigValue(bad, "compare_results_public", "yes");
  EXPECT_FALSE(not_bool.ok);
  EXPECT_EQ(not_bool.message, "compare_results_public: 'yes' is not true or false");
}

}  // namespace
}  // namespace nodefl::server::jobs
