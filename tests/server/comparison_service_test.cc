// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The server's comparison-session bookkeeping without a network: pacing
// holds the per-device bound and still schedules everything, sessions
// settle only on agreement, aborts and timeouts cancel the other party,
// and confused or foreign reports change nothing.
#include "nodefl/server/compare_service/comparison_service.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <utility>

namespace nodefl::server::compare_service {
namespace {

namespace cmp = nodefl::compare;
using Outcome = ComparisonService::ResultOutcome;

// 2 bits per comparison: bit 0 [x > y], bit 1 [x = y], LSB first.
std::vector<uint8_t> PackBits(const std::vector<std::pair<bool, bool>>& gt_eq) {
  std::vector<uint8_t> bits((2 * gt_eq.size() + 7) / 8, 0);
  for (size_t i = 0; i < gt_eq.size(); ++i) {
    if (gt_eq[i].first) bits[(2 * i) / 8] |= static_cast<uint8_t>(1u << ((2 * i) % 8));
    if (gt_eq[i].second) bits[(2 * i + 1) / 8] |= static_cast<uint8_t>(1u << ((2 * i + 1) % 8));
  }
  return bits;
}

cmp::SessionResult Result(uint32_t session, bool done, uint16_t count, const std::vector<uint8_t>& bits = {},
                          uint32_t bytes_sent = 100, uint16_t messages = 3) {
  cmp::SessionResult r;
  r.session = session;
  r.done = done;
  r.code = done ? 0 : 7;
  r.count = count;
  r.bytes_sent = bytes_sent;
  r.bytes_received = 50;
  r.messages_sent = messages;
  std::copy(bits.begin(), bits.end(), r.bits);
  r.bit_bytes = static_cast<uint16_t>(bits.size());
  return r;
}

ServiceOptions Options(uint32_t max_sessions, uint64_t timeout_us = 1'000'000) {
  ServiceOptions o;
  o.max_sessions_per_device = max_sessions;
  o.session_timeout_us = timeout_us;
  return o;
}

// Plays the devices: starts sessions as the service schedules them, and
// finishes running ones in random order (each party reporting separately,
// also in random order), checking the bound and the schedule's maximality
// after every step. A device holds a session from its start until it has
// reported it, as the SDK's role does; with `abort_probability` some
// reports are aborts, and a cancelled party then reports an abort too.
void RunToCompletion(ComparisonService& service, const std::vector<std::pair<uint32_t, uint32_t>>& edges,
                     uint32_t max_sessions, uint64_t seed, double abort_probability = 0) {
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution aborts(abort_probability);
  std::map<uint32_t, std::set<uint32_t>> running_on;     // the devices' own view
  std::vector<std::pair<uint32_t, uint32_t>> to_report;  // (device, session)
  std::set<std::pair<uint32_t, uint32_t>> cancelled;     // (device, session)
  std::map<uint32_t, int> starts_seen;
  uint64_t now = 0;
  auto schedule = [&] {
    for (const auto& [device, ids] : service.TakeCancels()) {
      for (uint32_t id : ids) {
        EXPECT_EQ(running_on[device].count(id), 1u) << "cancel for a session " << device << " does not run";
        cancelled.emplace(device, id);
      }
    }
    for (const auto& [device, starts] : service.Schedule(now)) {
      for (const cmp::SessionStart& st : starts) {
        const Session& s = service.session(st.session);
        EXPECT_EQ(st.role == cmp::Role::kA ? s.a : s.b, device);
        EXPECT_EQ(st.peer, st.role == cmp::Role::kA ? s.b : s.a);
        EXPECT_EQ(st.count, 1);
        EXPECT_TRUE(running_on[device].insert(st.session).second);
        EXPECT_LE(running_on[device].size(), max_sessions) << "device " << device;
        ++starts_seen[st.session];
        to_report.emplace_back(device, st.session);
      }
    }
    // Maximal: no pending session has room on both sides.
    for (const Session& s : service.sessions()) {
      if (s.state != SessionState::kPending) continue;
      EXPECT_TRUE(service.RunningOn(s.a) == max_sessions || service.RunningOn(s.b) == max_sessions)
          << "session " << s.id << " could have started";
    }
  };
  schedule();
  while (!to_report.empty()) {
    std::uniform_int_distribution<size_t> pick(0, to_report.size() - 1);
    const size_t i = pick(rng);
    const auto [device, session] = to_report[i];
    to_report.erase(to_report.begin() + static_cast<std::ptrdiff_t>(i));
    ++now;
    const bool done = cancelled.count({device, session}) == 0 && !aborts(rng);
    const Outcome outcome = service.OnResult(device, Result(session, done, 1, PackBits({{false, true}})), now);
    EXPECT_NE(outcome, Outcome::kRejected);
    running_on[device].erase(session);
    EXPECT_EQ(service.RunningOn(device), running_on[device].size());
    schedule();
  }
  EXPECT_TRUE(service.all_settled());
  EXPECT_EQ(service.totals().done + service.totals().aborted, edges.size());
  if (abort_probability == 0) {
    EXPECT_EQ(service.totals().done, edges.size());
    EXPECT_TRUE(cancelled.empty());
  } else {
    EXPECT_GT(service.totals().aborted, 0u);
    EXPECT_FALSE(cancelled.empty());
    EXPECT_EQ(service.totals().aborted_by_reason.at(AbortReason::kPartyAborted), service.totals().aborted);
  }
  EXPECT_EQ(service.totals().protocol_errors, 0u);
  EXPECT_EQ(starts_seen.size(), edges.size());
  for (const auto& [session, n] : starts_seen) EXPECT_EQ(n, 2) << "session " << session;  // one per party
  EXPECT_LE(service.totals().peak_running_per_device, max_sessions);
}

TEST(ComparisonServiceTest, StarGraphIsPacedAtTheHubAndCompletes) {
  constexpr uint32_t kMax = 3;
  ComparisonService service(Options(kMax));
  std::vector<std::pair<uint32_t, uint32_t>> edges;
  for (uint32_t leaf = 1; leaf <= 30; ++leaf) {
    edges.emplace_back(0, leaf);
    EXPECT_EQ(service.Add(0, leaf), leaf);  // ids are dense from 1
  }
  // The hub takes exactly kMax at first, the lowest ids.
  const auto first = service.Schedule(0);
  ASSERT_EQ(first.at(0).size(), kMax);
  for (uint32_t i = 0; i < kMax; ++i) EXPECT_EQ(first.at(0)[i].session, i + 1);
  EXPECT_EQ(service.totals().running, kMax);
  EXPECT_EQ(service.totals().pending, 30 - kMax);
  // Finish those three, then let the simulation run the rest.
  for (uint32_t id = 1; id <= kMax; ++id) {
    service.OnResult(0, Result(id, true, 1, PackBits({{false, true}})), 1);
    service.OnResult(id, Result(id, true, 1, PackBits({{false, true}})), 1);
  }
  EXPECT_EQ(service.totals().done, kMax);
  ComparisonService fresh(Options(kMax));
  for (uint32_t leaf = 1; leaf <= 30; ++leaf) fresh.Add(0, leaf);
  RunToCompletion(fresh, edges, kMax, 1);
  EXPECT_EQ(fresh.totals().peak_running_per_device, kMax);
}

TEST(ComparisonServiceTest, RandomGraphIsPacedAndCompletes) {
  for (uint64_t seed : {2u, 3u, 4u}) {
    constexpr uint32_t kMax = 2;
    std::mt19937_64 rng(seed);
    std::set<std::pair<uint32_t, uint32_t>> edge_set;
    std::uniform_int_distribution<uint32_t> vertex(0, 39);
    while (edge_set.size() < 150) {
      uint32_t a = vertex(rng), b = vertex(rng);
      if (a == b) continue;
      edge_set.emplace(std::min(a, b), std::max(a, b));
    }
    const std::vector<std::pair<uint32_t, uint32_t>> edges(edge_set.begin(), edge_set.end());
    ComparisonService service(Options(kMax));
    for (const auto& [a, b] : edges) service.Add(a, b);
    RunToCompletion(service, edges, kMax, seed);
    // Again with aborts: cancelled parties keep their slot until they
    // answer, so no device ever holds more than the bound.
    ComparisonService with_aborts(Options(kMax));
    for (const auto& [a, b] : edges) with_aborts.Add(a, b);
    RunToCompletion(with_aborts, edges, kMax, seed + 100, 0.2);
  }
}

TEST(ComparisonServiceTest, AFullDeviceDoesNotBlockOthersAndLowIdsGoFirst) {
  ComparisonService service(Options(1));
  service.Add(0, 1);  // 1
  service.Add(0, 2);  // 2: waits for 0
  service.Add(3, 4);  // 3: independent of 0
  service.Add(0, 3);  // 4: waits for 0 and 3
  auto starts = service.Schedule(0);
  ASSERT_EQ(starts.size(), 4u);  // devices 0, 1, 3, 4
  EXPECT_EQ(starts.at(0)[0].session, 1u);
  EXPECT_EQ(starts.at(3)[0].session, 3u);
  EXPECT_EQ(service.session(2).state, SessionState::kPending);
  // 0 frees: session 2 (lower id) goes before session 4.
  service.OnResult(0, Result(1, true, 1), 1);
  service.OnResult(1, Result(1, true, 1), 1);
  starts = service.Schedule(1);
  ASSERT_EQ(starts.count(0), 1u);
  EXPECT_EQ(starts.at(0)[0].session, 2u);
  EXPECT_EQ(service.session(4).state, SessionState::kPending);
}

TEST(ComparisonServiceTest, AgreementSettlesDoneWithTheResultBits) {
  ComparisonService service(Options(4));
  const uint32_t id = service.Add(5, 9, 3);
  const auto starts = service.Schedule(10);
  ASSERT_EQ(starts.at(5).size(), 1u);
  EXPECT_EQ(starts.at(5)[0].role, cmp::Role::kA);
  EXPECT_EQ(starts.at(5)[0].peer, 9u);
  EXPECT_EQ(starts.at(9)[0].role, cmp::Role::kB);
  EXPECT_EQ(starts.at(9)[0].peer, 5u);
  EXPECT_EQ(starts.at(9)[0].count, 3);
  const auto bits = PackBits({{true, false}, {false, true}, {false, false}});
  EXPECT_EQ(service.OnResult(9, Result(id, true, 3, bits, 300, 4), 20), Outcome::kRecorded);
  EXPECT_EQ(service.session(id).state, SessionState::kRunning);
  // B reported: its slot is free although A still runs the session.
  EXPECT_EQ(service.RunningOn(9), 0u);
  EXPECT_EQ(service.RunningOn(5), 1u);
  EXPECT_EQ(service.OnResult(5, Result(id, true, 3, bits, 200, 5), 30), Outcome::kSettled);
  const Session& s = service.session(id);
  EXPECT_EQ(s.state, SessionState::kDone);
  ASSERT_TRUE(s.has_result());
  EXPECT_TRUE(s.greater(0));
  EXPECT_FALSE(s.equal(0));
  EXPECT_FALSE(s.greater(1));
  EXPECT_TRUE(s.equal(1));
  EXPECT_FALSE(s.greater(2));
  EXPECT_FALSE(s.equal(2));
  EXPECT_EQ(s.report_a.bytes_sent, 200u);
  EXPECT_EQ(s.report_b.bytes_sent, 300u);
  EXPECT_EQ(service.totals().bytes_sent, 500u);
  EXPECT_EQ(service.totals().messages_sent, 9u);
  EXPECT_EQ(service.totals().comparisons, 3u);
  EXPECT_EQ(service.RunningOn(5), 0u);
  EXPECT_TRUE(service.TakeCancels().empty());
  EXPECT_TRUE(service.all_settled());
}

TEST(ComparisonServiceTest, PrivateResultsSettleDoneWithoutBits) {
  ComparisonService service(Options(4));
  const uint32_t id = service.Add(1, 2);
  service.Schedule(0);
  service.OnResult(1, Result(id, true, 1), 1);
  service.OnResult(2, Result(id, true, 1), 2);
  EXPECT_EQ(service.session(id).state, SessionState::kDone);
  EXPECT_FALSE(service.session(id).has_result());
}

TEST(ComparisonServiceTest, DisagreementAborts) {
  ComparisonService service(Options(4));
  const uint32_t bits_differ = service.Add(1, 2);
  const uint32_t count_differs = service.Add(3, 4, 2);
  const uint32_t one_without_bits = service.Add(5, 6);
  service.Schedule(0);
  service.OnResult(1, Result(bits_differ, true, 1, PackBits({{true, false}})), 1);
  EXPECT_EQ(service.OnResult(2, Result(bits_differ, true, 1, PackBits({{false, false}})), 2), Outcome::kSettled);
  service.OnResult(3, Result(count_differs, true, 2, PackBits({{true, false}, {true, false}})), 1);
  service.OnResult(4, Result(count_differs, true, 1, PackBits({{true, false}})), 2);
  service.OnResult(5, Result(one_without_bits, true, 1, PackBits({{true, false}})), 1);
  service.OnResult(6, Result(one_without_bits, true, 1), 2);
  for (uint32_t id : {bits_differ, count_differs, one_without_bits}) {
    EXPECT_EQ(service.session(id).state, SessionState::kAborted) << id;
    EXPECT_EQ(service.session(id).reason, AbortReason::kDisagreement) << id;
  }
  EXPECT_EQ(service.totals().aborted_by_reason.at(AbortReason::kDisagreement), 3u);
  // Both parties reported: nobody is left to cancel, and no slot is held.
  EXPECT_TRUE(service.TakeCancels().empty());
  for (uint32_t d = 1; d <= 6; ++d) EXPECT_EQ(service.RunningOn(d), 0u);
}

TEST(ComparisonServiceTest, AnAbortReportCancelsTheOtherParty) {
  ComparisonService service(Options(1));
  const uint32_t id = service.Add(1, 2);
  const uint32_t waiting = service.Add(2, 3);  // needs 2's only slot
  service.Schedule(0);
  EXPECT_EQ(service.OnResult(1, Result(id, false, 1), 5), Outcome::kSettled);
  EXPECT_EQ(service.session(id).state, SessionState::kAborted);
  EXPECT_EQ(service.session(id).reason, AbortReason::kPartyAborted);
  const auto cancels = service.TakeCancels();
  ASSERT_EQ(cancels.size(), 1u);
  EXPECT_EQ(cancels.at(2), std::vector<uint32_t>{id});
  EXPECT_TRUE(service.TakeCancels().empty());  // taken once
  EXPECT_EQ(service.RunningOn(1), 0u);
  // 2 still runs the session until it answers the cancel: no new session
  // may take its slot before that.
  EXPECT_EQ(service.RunningOn(2), 1u);
  EXPECT_TRUE(service.Schedule(6).empty());
  EXPECT_EQ(service.session(waiting).state, SessionState::kPending);
  // 2's answer is accepted harmlessly and frees the slot.
  EXPECT_EQ(service.OnResult(2, Result(id, false, 1), 7), Outcome::kLate);
  EXPECT_EQ(service.totals().late_reports, 1u);
  EXPECT_EQ(service.totals().protocol_errors, 0u);
  const auto starts = service.Schedule(8);
  ASSERT_EQ(starts.count(2), 1u);
  EXPECT_EQ(starts.at(2)[0].session, waiting);
  EXPECT_EQ(service.RunningOn(2), 1u);  // now running `waiting`
}

TEST(ComparisonServiceTest, TimeoutAbortsAndCancelsThePartiesStillRunning) {
  ComparisonService service(Options(4, /*timeout_us=*/1000));
  const uint32_t slow = service.Add(1, 2);
  service.Schedule(100);
  const uint32_t later = service.Add(3, 4);
  service.Schedule(600);
  service.OnResult(1, Result(slow, true, 1), 700);  // 1 finished, 2 did not
  service.Poll(1100);  // exactly at the timeout: still running
  EXPECT_EQ(service.session(slow).state, SessionState::kRunning);
  service.Poll(1101);
  EXPECT_EQ(service.session(slow).state, SessionState::kAborted);
  EXPECT_EQ(service.session(slow).reason, AbortReason::kDeadline);
  EXPECT_EQ(service.session(later).state, SessionState::kRunning);
  const auto cancels = service.TakeCancels();
  ASSERT_EQ(cancels.size(), 1u);  // 1 already reported
  EXPECT_EQ(cancels.at(2), std::vector<uint32_t>{slow});
  EXPECT_EQ(service.RunningOn(1), 0u);
  EXPECT_EQ(service.RunningOn(2), 1u);  // until it answers the cancel
  EXPECT_EQ(service.OnResult(2, Result(slow, false, 1), 1200), Outcome::kLate);
  EXPECT_EQ(service.RunningOn(2), 0u);
  service.Poll(1601);
  EXPECT_EQ(service.session(later).reason, AbortReason::kDeadline);
  EXPECT_EQ(service.TakeCancels().size(), 2u);
  EXPECT_TRUE(service.all_settled());
  EXPECT_EQ(service.totals().aborted_by_reason.at(AbortReason::kDeadline), 2u);
}

TEST(ComparisonServiceTest, AnUnreachableDeviceAbortsItsSessions) {
  ComparisonService service(Options(1));
  const uint32_t running = service.Add(1, 2);
  const uint32_t pending = service.Add(2, 3);
  const uint32_t other = service.Add(4, 5);
  service.Schedule(0);
  ASSERT_EQ(service.session(pending).state, SessionState::kPending);
  service.MarkUnreachable(2);
  EXPECT_EQ(service.session(running).state, SessionState::kAborted);
  EXPECT_EQ(service.session(running).reason, AbortReason::kOffline);
  EXPECT_EQ(service.session(pending).state, SessionState::kAborted);
  EXPECT_EQ(service.session(pending).reason, AbortReason::kOffline);
  EXPECT_EQ(service.session(other).state, SessionState::kRunning);
  // Only the reachable party of the running session is told; 3 never started.
  const auto cancels = service.TakeCancels();
  ASSERT_EQ(cancels.size(), 1u);
  EXPECT_EQ(cancels.at(1), std::vector<uint32_t>{running});
  EXPECT_EQ(service.RunningOn(2), 0u);  // gone, with its slots
  EXPECT_EQ(service.RunningOn(1), 1u);  // until it answers the cancel
  // New sessions with it abort at once and are never started.
  const uint32_t added = service.Add(2, 6);
  EXPECT_EQ(service.session(added).state, SessionState::kAborted);
  EXPECT_TRUE(service.Schedule(1).empty());
  EXPECT_EQ(service.totals().aborted_by_reason.at(AbortReason::kOffline), 3u);
}

TEST(ComparisonServiceTest, DuplicateForeignAndUnknownReportsAreIgnored) {
  ComparisonService service(Options(1));
  const uint32_t id = service.Add(1, 2);
  const uint32_t unstarted = service.Add(1, 3);
  service.Schedule(0);
  const auto bits = PackBits({{true, false}});
  EXPECT_EQ(service.OnResult(7, Result(id, false, 1), 1), Outcome::kRejected);  // not a party
  EXPECT_EQ(service.OnResult(1, Result(99, true, 1, bits), 1), Outcome::kRejected);  // unknown id
  EXPECT_EQ(service.OnResult(1, Result(0, true, 1, bits), 1), Outcome::kRejected);
  EXPECT_EQ(service.OnResult(3, Result(unstarted, false, 1), 1), Outcome::kRejected);  // never started
  EXPECT_EQ(service.session(unstarted).state, SessionState::kPending);
  EXPECT_EQ(service.session(id).state, SessionState::kRunning);
  EXPECT_EQ(service.OnResult(1, Result(id, true, 1, bits), 2), Outcome::kRecorded);
  // A second report (here: an abort) from the same party changes nothing.
  EXPECT_EQ(service.OnResult(1, Result(id, false, 1), 3), Outcome::kRejected);
  EXPECT_TRUE(service.TakeCancels().empty());
  EXPECT_EQ(service.OnResult(2, Result(id, true, 1, bits), 4), Outcome::kSettled);
  EXPECT_EQ(service.session(id).state, SessionState::kDone);
  EXPECT_EQ(service.OnResult(2, Result(id, true, 1, bits), 5), Outcome::kRejected);
  EXPECT_EQ(service.totals().protocol_errors, 6u);
  EXPECT_EQ(service.totals().late_reports, 0u);
  EXPECT_EQ(service.totals().bytes_sent, 200u);  // ignored reports are not accounted
}

TEST(ComparisonServiceTest, AbortUnsettledEndsEverythingLeft) {
  ComparisonService service(Options(1));
  const uint32_t running = service.Add(1, 2);
  const uint32_t pending = service.Add(1, 3);
  service.Schedule(0);
  service.AbortUnsettled(AbortReason::kRoundEnded);
  EXPECT_TRUE(service.all_settled());
  EXPECT_EQ(service.session(running).reason, AbortReason::kRoundEnded);
  EXPECT_EQ(service.session(pending).reason, AbortReason::kRoundEnded);
  EXPECT_EQ(service.TakeCancels().size(), 2u);  // both parties of the running one
}

}  // namespace
}  // namespace nodefl::server::compare_service
