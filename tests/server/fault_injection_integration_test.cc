// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Every device-to-device job over TLS with the emulator's injected faults
// (emulator/fault_plan.h): 10% of karate's devices killed in the middle of
// their part of the job, for good or brought back a second later. The job
// must end (no phase waits past its deadline for the dead), account for
// every walk, comparison and message by cause, and leave no surviving
// device with a silently wrong result.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <map>
#include <ostream>
#include <sstream>
#include <string>

#include "nodefl/compare/compare_role.h"
#include "nodefl/emulator/emulated_device.h"
#include "nodefl/emulator/fault_plan.h"
#include "nodefl/server/jobs/fedwalk_kind.h"
#include "nodefl/server/jobs/lumos_kind.h"
#include "nodefl/server/jobs/secure_compare_kind.h"
#include "fleet_test_support.h"
#include "transport_test_support.h"

namespace nodefl::transport_test {
namespace {

using std::chrono::milliseconds;

// The fields of the last `event` line in the server's log (key=value pairs).
std::map<std::string, std::string> LastLine(const std::string& log, const std::string& event) {
  std::map<std::string, std::string> fields;
  std::istringstream lines(log);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.find("event=" + event + " ") == std::string::npos) continue;
    fields.clear();
    std::istringstream words(line);
    std::string word;
    while (words >> word) {
      const size_t eq = word.find('=');
      if (eq != std::string::npos) fields[word.substr(0, eq)] = word.substr(eq + 1);
    }
  }
  return fields;
}

// The fields of the first `event` line of job `job` (empty if it has none):
// the job of an earlier stage, when a later stage logs the same event.
std::map<std::string, std::string> JobLine(const std::string& log, const std::string& event, uint64_t job) {
  const size_t at = log.find("event=" + event + " job=" + std::to_string(job) + " ");
  if (at == std::string::npos) return {};
  return LastLine(log.substr(0, log.find('\n', at)), event);
}

uint64_t Number(const std::map<std::string, std::string>& fields, const std::string& key) {
  const auto it = fields.find(key);
  EXPECT_NE(it, fields.end()) << "no field " << key;
  return it == fields.end() ? 0 : std::stoull(it->second);
}

struct Case {
  const char* name;
  const char* job;    // echo, fedwalk, compare, lumos
  const char* faults;  // the --faults spec
  bool revived() const { return std::string(faults).find("revive=") != std::string::npos; }
  bool kills() const { return std::string(faults).find("kill=") != std::string::npos; }
  // Connections are cut and nothing else: every device comes back on a
  // resumed session.
  bool only_cuts() const {
    const std::string f(faults);
    return f.rfind("cut=", 0) == 0 && f.find(',') == std::string::npos;
  }
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

// What the plan does: three of karate's 34 devices (round(3.4)).
constexpr uint32_t kKilled = 3;

void RunWithFaults(EmulatedFleet& f, const Case& c) {
  const std::string job = c.job;
  FleetPlan plan;
  plan.dataset = "karate";
  plan.pki_seed = 83;
  emulator::FaultPlan faults;
  const auto why = emulator::ParseFaultPlan(c.faults, &faults);
  ASSERT_FALSE(why.has_value()) << *why;
  plan.faults = faults;
  // A device offline for offline_grace_ms while it owes a report misses
  // the round at once, long before the round deadlines; the grace is longer
  // than a revival (1 s), so revived devices take part again.
  // The round deadline is a cap the runs do not reach when all goes well
  // (the kill cases check that nobody waits for it). Under wire faults a hub
  // loses its connection mid-keys several times and asks for its peers'
  // keys again each time: 8 s was too short for karate's hubs under
  // ThreadSanitizer on a loaded machine (two missed round 1 in one run).
  plan.configure_server = [&](server::ServerConfig& config) {
    config.job_round_deadline_ms = 20000;
    config.offline_grace_ms = 2500;
    config.peer_key_wait_ms = 4000;
    config.max_devices = 64;
    if (job == "echo") config.job = "neighbour-echo";
    if (job == "fedwalk") {
      config.job = "fedwalk";
      auto& o = server::jobs::Options<server::jobs::FedWalkJobConfig>(config);
      o.mode = "paper";
      // 272 slots, two waves of 136 in flight: with jumps to neighbours
      // (no keys fetched) the walks take about 0.2 s on karate, so the kill
      // 50 ms into them lands mid-phase.
      o.walks_per_vertex = 8;
      // Ten dead devices' worth of walks end at this deadline: on a graph
      // of 34, few walks of 40 hops avoid three dead nodes, and too few
      // finish for the stall window (recent_latencies.h) to arm.
      o.walk_timeout_ms = 5000;
      o.walk_stall_floor_ms = 3000;
      o.seed = 5;
    }
    if (job == "compare" || job == "lumos") {
      config.job = job == "compare" ? "secure-compare" : "lumos-trees";
      server::jobs::Options<server::jobs::SecureCompareJobConfig>(config).session_timeout_ms = 4000;
    }
    if (job == "lumos") server::jobs::Options<server::jobs::LumosJobConfig>(config).step_deadline_ms = 4000;
  };
  plan.configure_devices = [&](emulator::FleetSetup& fleet, const server::ServerConfig& config) {
    fleet.job = job == "echo" ? "neighbour-echo" : job == "compare" ? "secure-compare" : job == "lumos" ? "lumos-trees" : "fedwalk";
    if (job == "fedwalk") {
      fleet.fedwalk_mode = "paper";
      fleet.keep_tree_and_bin_plan = true;
      fleet.budget = PrivacyBudget::Unlimited();
    }
    if (job == "compare" || job == "lumos") {
      fleet.shared_pair_keys = &f.shared_keys;
      fleet.compare_contexts = server::jobs::Options<server::jobs::SecureCompareJobConfig>(config).max_sessions;
    }
  };
  plan.concurrent_connects = 34;
  plan.timeout = milliseconds(120000);
  plan.exit_wait = milliseconds(5000);
  // A job that lost devices for good ends unverified. Revived devices
  // finish the echo (and nearly every walk: see the walk checks); comparison sessions that were running
  // when a party died stay aborted (recorded, not retried), so whether
  // those jobs verify depends on the timing: the test checks their lines.
  if (!c.kills()) {
    // Wire faults: what a device wrote into a connection that broke is
    // lost unless it is a kept sealed message (docs/reliability.md, "Known
    // gaps"); the test checks that the job records what went missing.
    plan.expected_exit = std::nullopt;
  } else if (!c.revived()) {
    plan.expected_exit = 1;
  } else if (job == "echo") {
    plan.expected_exit = 0;
  } else {
    plan.expected_exit = std::nullopt;
  }
  plan.second_io_thread = true;
  RunEmulatedFleet(f, plan);
}

class FaultInjectionTest : public ::testing::TestWithParam<Case> {};

TEST_P(FaultInjectionTest, TheJobEndsAndAccountsForEverything) {
  const Case& c = GetParam();
  EmulatedFleet f;
  RunWithFaults(f, c);
  if (HasFatalFailure()) return;
  const std::string log = f.server->LogText();
  const std::string job = c.job;
  // The accounting, in the test's output (docs/reliability.md quotes it).
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("event=job_finished") != std::string::npos) std::printf("%s\n", line.c_str());
  }
  std::printf("devices: killed %llu, revived %llu, finished before their kill %llu, finished %llu, failed %llu\n",
              static_cast<unsigned long long>(f.stats.faults_killed.load()),
              static_cast<unsigned long long>(f.stats.faults_revived.load()),
              static_cast<unsigned long long>(f.stats.faults_kill_missed.load()),
              static_cast<unsigned long long>(f.stats.finished.load()),
              static_cast<unsigned long long>(f.stats.failed.load()));

  // The plan did what it says: three devices killed (or, having finished
  // before their kill time, spared and counted).
  EXPECT_EQ(f.stats.faults_killed + f.stats.faults_kill_missed, c.kills() ? kKilled : 0u);
  if (c.kills()) {
    EXPECT_GE(f.stats.faults_killed, 1u) << "the kill phase came too late to test anything";
  } else {
    // Wire faults: connections did break, and every device came back.
    EXPECT_GT(f.stats.faults_dropped + f.stats.faults_corrupted + f.stats.faults_cut, 0u);
    EXPECT_GT(f.stats.reconnects, 0u);
  }
  if (c.revived()) {
    EXPECT_EQ(f.stats.faults_revived, f.stats.faults_killed);
  } else {
    EXPECT_EQ(f.stats.faults_revived, 0u);
  }
  // Every device the plan never touched finished; the dead are failed, not
  // hung. A revived device finishes unless the job ended without it (it
  // came back too late), which the job records as a miss.
  uint32_t dead = 0, revived_unfinished = 0;
  for (const auto& d : f.devices) {
    if (d->killed_for_good()) {
      ++dead;
      EXPECT_FALSE(d->finished());
    } else if (d->was_killed()) {
      revived_unfinished += d->finished() ? 0 : 1;
    } else if (c.kills()) {
      EXPECT_TRUE(d->finished()) << "device " << d->id() << ": " << d->last_error();
    } else {
      revived_unfinished += d->finished() ? 0 : 1;  // wire faults: a missed round must be recorded
      if (!d->finished()) std::printf("device %u did not finish: %s\n", d->id(), d->last_error());
    }
  }
  EXPECT_EQ(dead, c.revived() ? 0u : uint32_t(f.stats.faults_killed));
  EXPECT_EQ(f.stats.finished + f.stats.failed, 34u);
  {
    const auto last = LastLine(log, "job_finished");
    uint64_t missed = 0;
    for (const char* key : {"missed_round1", "missed_round2", "missed_round3", "missed_report", "missed"}) {
      if (last.count(key) != 0) missed += std::stoull(last.at(key));
    }
    EXPECT_LE(revived_unfinished, missed) << "a device did not finish and the job did not record it\n" << log;
  }

  if (job == "echo") {
    const auto s = LastLine(log, "job_finished");
    EXPECT_EQ(s.at("kind"), "neighbour-echo");
    // Every message is accounted: what arrived verified, at most what was
    // expected, and nothing forged or replayed.
    EXPECT_LE(Number(s, "received_verified"), Number(s, "expected_messages"));
    EXPECT_EQ(Number(s, "duplicates"), 0u);
    EXPECT_EQ(Number(s, "rejected"), 0u);
    if (c.revived()) {
      EXPECT_EQ(s.at("verified"), "true") << log;
      EXPECT_EQ(Number(s, "received_verified"), Number(s, "expected_messages"));
    } else if (c.kills()) {
      const bool after_keys = std::string(c.faults).find("@echo-keys") != std::string::npos;
      size_t gone = 0;
      for (size_t at = log.find("event=job_device_gone"); at != std::string::npos;
           at = log.find("event=job_device_gone", at + 1)) {
        ++gone;
      }
      if (after_keys) {
        // Killed between the rounds: each misses round 1 (its report died
        // with it) or round 2 (its start could not be delivered).
        EXPECT_EQ(Number(s, "missed_round1") + Number(s, "missed_round2"), dead) << log;
        EXPECT_LE(gone, dead) << log;
        // Their neighbours hold their keys and expected their messages:
        // told that they are gone, they abandoned those and reported.
        EXPECT_GT(Number(s, "abandoned"), 0u) << log;
        EXPECT_GT(Number(s, "gone_notices"), 0u) << log;
      } else {
        EXPECT_EQ(Number(s, "missed_round2"), dead) << log;
        // The dead were given up after the grace, not at the deadline.
        EXPECT_EQ(gone, dead) << log;
      }
      // Nobody waited for the round's deadline (20 s; devices 18 s).
      EXPECT_LT(std::stod(s.at("seconds_send")), 15.0) << log;
      // Every survivor settled: what it expected arrived or was abandoned.
      // (The summary's expected_messages also holds the dead's round-1
      // figures, so the identity is checked per device.)
      for (const auto& d : f.devices) {
        if (d->killed_for_good() || d->stats() == nullptr) continue;
        EXPECT_EQ(d->stats()->received + d->stats()->abandoned, d->stats()->expected) << "device " << d->id();
      }
    } else {
      // Broken connections: the server sends a round's start again to a
      // device that comes back before reporting it, so no round is missed.
      // Sealed messages written into a connection that broke before the
      // server read them are kept and written again after the resume
      // (docs/protocol.md, "Kept sends"); a device whose session is not
      // resumed drops them, and their receivers report them missing.
      // (A device whose connection breaks as its send round's deadline
      // ends can still miss that round: it is on record.)
      EXPECT_EQ(Number(s, "missed_round1"), 0u) << log;
      EXPECT_EQ(Number(s, "keys_ready"), 34u) << log;
      EXPECT_EQ(Number(s, "reported") + Number(s, "missed_round2"), 34u) << log;
    }
    for (const auto& d : f.devices) {
      if (d->killed_for_good()) continue;
      EXPECT_EQ(d->stats()->duplicates, 0u);
      EXPECT_EQ(d->stats()->rejected, 0u);
    }
  }
  if (job == "fedwalk" && std::string(c.faults).find("@tree") != std::string::npos) {
    // The tree (job 1): the dead miss a round, given up once unreachable
    // rather than at the round's 20 s deadline; the revived come back
    // within the round, get its start and artefacts again and finish.
    const auto t = JobLine(log, "job_finished", 1);
    ASSERT_EQ(t.count("kind"), 1u) << log;
    ASSERT_EQ(t.at("kind"), "fedwalk-hct") << log;
    EXPECT_EQ(Number(t, "failed"), 0u) << log;
    EXPECT_EQ(Number(t, "protocol_errors"), 0u) << log;
    EXPECT_EQ(Number(t, "completed") + Number(t, "missed"), 34u) << log;
    if (c.revived()) {
      EXPECT_EQ(Number(t, "missed"), 0u) << log;
      EXPECT_EQ(t.at("verified"), "true") << log;
      EXPECT_GT(Number(JobLine(log, "job_reconnects", 1), "starts_resent"), 0u) << log;
    } else {
      EXPECT_EQ(Number(t, "missed"), dead) << log;
      EXPECT_EQ(Number(t, "unreachable"), dead) << log;
      EXPECT_LT(std::stod(t.at("seconds_matrix")) + std::stod(t.at("seconds_publish")), 15.0) << log;
    }
  }
  if (job == "fedwalk") {
    const auto s = LastLine(log, "job_finished");
    ASSERT_EQ(s.count("kind"), 1u) << log;
    EXPECT_EQ(s.at("kind"), "fedwalk-walks") << log;
    // Every walk slot ends complete, as a dead end or lost by a named cause.
    const uint64_t slots = Number(s, "walk_slots"), lost = Number(s, "lost");
    EXPECT_EQ(Number(s, "completed") + Number(s, "dead_ends") + lost, slots) << log;
    // Every issue that failed has its cause; it was issued again or its
    // slot lost.
    EXPECT_EQ(Number(s, "lost_offline") + Number(s, "lost_dropped") + Number(s, "lost_deadline") +
                  Number(s, "lost_stalled"),
              Number(s, "reissued") + lost)
        << log;
    EXPECT_EQ(Number(s, "bad_results"), 0u);
    EXPECT_EQ(Number(s, "protocol_errors"), 0u);
    // (With devices dead for good, a walk of 40 hops rarely avoids them,
    // (1 - 0.1)^40 = 1.5%: none may complete, so no count is asserted.)
    // Devices that came back carry on the walks queued for them; what they
    // lost with their connection is issued again.
    // A slot is lost only when both its issues fail: on a loaded machine
    // (ctest -j2 beside other fleets) a re-issue can still run into a
    // device that is reconnecting, so a few are allowed, not most.
    if (c.revived()) {
      EXPECT_LE(lost, slots / 50) << log;
    }
  }
  if (job == "compare" || job == "lumos") {
    // The comparison stage (job 1): every session settled, done or aborted
    // by a named cause.
    const auto s = JobLine(log, "job_finished", 1);
    ASSERT_EQ(s.count("kind"), 1u) << log;
    ASSERT_EQ(s.at("kind"), "secure-compare") << log;
    const uint64_t aborted = Number(s, "aborted");
    EXPECT_EQ(Number(s, "done") + aborted, Number(s, "sessions")) << log;
    EXPECT_EQ(Number(s, "aborted_party") + Number(s, "aborted_disagreement") + Number(s, "aborted_deadline") +
                  Number(s, "aborted_offline") + Number(s, "aborted_round_ended"),
              aborted)
        << log;
    if (c.only_cuts()) {
      // What a cut connection swallowed comes back after the resume: kept
      // sends and uploads from the devices, relay deliveries, and the
      // round's start and session records from the server, including
      // records made while the device was between connections (held for
      // it, not reported undeliverable). Measured on karate: no session
      // aborted in 12 runs alone; with two other fault tests beside it, 6
      // of 78 waited out their 4 s deadline in one run of three (a loaded
      // 2-core machine). Before records were held, 2-10 of 78 aborted as
      // offline (a party between connections when its session began) on
      // top of those; and 10-15 waited out their deadline when round
      // starts were resent without their session records.
      const auto reconnects = LastLine(log, "job_reconnects");
      EXPECT_GT(Number(reconnects, "records_resent"), 0u) << log;
      EXPECT_LE(Number(s, "aborted_deadline") + Number(s, "aborted_round_ended") + Number(s, "aborted_offline"),
                Number(s, "sessions") / 10)
          << log;
    }
    EXPECT_EQ(Number(s, "aborted_disagreement"), 0u) << "the two parties of a session never disagree";
    EXPECT_EQ(s.at("verified") == "true", aborted == 0 && Number(s, "missed_round3") == 0) << log;
    // No surviving device holds a wrong comparison: each result it kept
    // is the plaintext rule's (Lumos Alg. 1).
    const dataset::Graph& g = f.graph;
    uint64_t checked = 0;
    for (const auto& d : f.devices) {
      if (d->killed_for_good() || d->compare_role() == nullptr) continue;
      const uint32_t u = d->id();
      const uint32_t du = compare::SecureCompareRole::LogDegree(g.degree(u));
      for (const compare::ComparePeer& p : d->compare_role()->peers()) {
        if (p.outcome == compare::PeerOutcome::kNone || p.outcome == compare::PeerOutcome::kAborted) continue;
        // The device's own value against its neighbour's.
        const uint32_t dv = compare::SecureCompareRole::LogDegree(g.degree(p.id));
        const compare::PeerOutcome truth = du > dv    ? compare::PeerOutcome::kGreater
                                           : du == dv ? compare::PeerOutcome::kEqual
                                                      : compare::PeerOutcome::kLess;
        EXPECT_EQ(p.outcome, truth) << "device " << u << ", neighbour " << p.id;
        ++checked;
      }
    }
    EXPECT_GT(checked, 0u);
  }
  if (job == "lumos") {
    // The trimming stage ran on the survivors and ended.
    EXPECT_NE(log.find("kind=lumos-trim"), std::string::npos) << log;
  }
}

const Case kCases[] = {
    {"echo_killed", "echo", "kill=0.1@echo"},
    {"echo_killed_and_revived", "echo", "kill=0.1@echo,revive=1s"},
    // Killed after reporting keys, before sending: the neighbours expect
    // messages that never come, and hear that the sender is gone.
    {"echo_killed_after_keys", "echo", "kill=0.1@echo-keys"},
    // Connections break (a write or read in 50 is lost, one in 50 garbled,
    // one in 50 cut) and a few devices are slow: nothing arrives twice or
    // forged, and every device that missed a round is on record.
    {"echo_wire_faults", "echo", "drop=0.02,corrupt=0.02,cut=0.02,slow=0.2:20ms"},
    // Killed after reporting the tree's first round: the dead miss a later
    // round; the revived get its start and artefacts again.
    {"fedwalk_tree_killed", "fedwalk", "kill=0.1@tree"},
    {"fedwalk_tree_killed_and_revived", "fedwalk", "kill=0.1@tree,revive=1s"},
    {"fedwalk_walks_killed", "fedwalk", "kill=0.1@walks+50ms"},
    {"fedwalk_walks_killed_and_revived", "fedwalk", "kill=0.1@walks+50ms,revive=1s"},
    {"compare_killed", "compare", "kill=0.1@compare"},
    {"compare_killed_and_revived", "compare", "kill=0.1@compare,revive=1s"},
    // One write or read in 30 cuts its connection; the devices resume.
    {"compare_connections_cut", "compare", "cut=0.033"},
    {"lumos_trim_killed", "lumos", "kill=0.1@trim"},
    {"lumos_trim_killed_and_revived", "lumos", "kill=0.1@trim,revive=1s"},
};

INSTANTIATE_TEST_SUITE_P(Jobs, FaultInjectionTest, ::testing::ValuesIn(kCases),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

}  // namespace
}  // namespace nodefl::transport_test
