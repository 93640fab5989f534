// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/jobs/neighbour_echo_job.h"

#include <algorithm>
#include <utility>

namespace nodefl::server::jobs {

NeighbourEchoJob::NeighbourEchoJob(const Options& options, std::vector<uint32_t> participants)
    : options_(options), participants_(std::move(participants)) {
  std::sort(participants_.begin(), participants_.end());
  participants_.erase(std::unique(participants_.begin(), participants_.end()), participants_.end());
  for (uint32_t d : participants_) devices_.emplace(d, DeviceState::kWaitingKeys);
  summary_.participants = static_cast<uint32_t>(participants_.size());
}

uint32_t NeighbourEchoJob::round() const {
  switch (phase_) {
    case Phase::kIdle: return 0;
    case Phase::kKeys: return 1;
    case Phase::kSend:
    case Phase::kFinished: return 2;
  }
  return 0;
}

NeighbourEchoJob::StartRound NeighbourEchoJob::Begin(uint64_t now_us) {
  StartRound start;
  if (phase_ != Phase::kIdle) return start;
  phase_ = Phase::kKeys;
  round_started_us_ = job_started_us_ = now_us;
  start.round = 1;
  start.deadline_ms = options_.round1_deadline_ms;
  start.devices = participants_;
  if (participants_.empty()) Finish(now_us);
  return start;
}

NeighbourEchoJob::StartRound NeighbourEchoJob::BeginRound2(uint64_t now_us) {
  StartRound start;
  phase_ = Phase::kSend;
  summary_.seconds_round1 = double(now_us - round_started_us_) / 1e6;
  round_started_us_ = now_us;
  start.round = 2;
  start.deadline_ms = options_.round2_deadline_ms;
  for (auto& [device, state] : devices_) {
    if (state == DeviceState::kKeysReady) {
      start.devices.push_back(device);
    } else if (state == DeviceState::kWaitingKeys) {
      state = DeviceState::kMissed;
      summary_.missed_round1.push_back(device);
    }
  }
  // A device that missed round 1 may have announced its job key, and its
  // neighbours then expect its message: tell them it will not come.
  gone_pending_.insert(gone_pending_.end(), summary_.missed_round1.begin(), summary_.missed_round1.end());
  if (start.devices.empty()) Finish(now_us);
  return start;
}

void NeighbourEchoJob::Finish(uint64_t now_us) {
  if (phase_ == Phase::kSend) summary_.seconds_round2 = double(now_us - round_started_us_) / 1e6;
  for (auto& [device, state] : devices_) {
    if (state == DeviceState::kKeysReady) {
      state = DeviceState::kMissed;
      summary_.missed_round2.push_back(device);
    }
  }
  phase_ = Phase::kFinished;
}

NeighbourEchoJob::StartRound NeighbourEchoJob::OnReport(uint32_t device, uint32_t round,
                                                        const nodefl_wire_JobReport& report,
                                                        uint64_t now_us) {
  auto it = devices_.find(device);
  if (it == devices_.end()) {
    ++protocol_errors_;
    return {};
  }
  DeviceState& state = it->second;
  if (round == 1 && phase_ == Phase::kKeys && state == DeviceState::kWaitingKeys) {
    if (report.code != 0) {
      state = DeviceState::kMissed;
      summary_.missed_round1.push_back(device);
    } else {
      state = DeviceState::kKeysReady;
      ++summary_.keys_ready;
      summary_.expected += report.expected;
    }
    const bool all_in = std::none_of(devices_.begin(), devices_.end(), [](const auto& kv) {
      return kv.second == DeviceState::kWaitingKeys;
    });
    return all_in ? BeginRound2(now_us) : StartRound{};
  }
  if (round == 2 && phase_ == Phase::kSend && state == DeviceState::kKeysReady) {
    state = DeviceState::kReported;
    ++summary_.reported;
    summary_.sent += report.sent;
    summary_.received += report.received;
    summary_.duplicates += report.duplicates;
    summary_.rejected += report.rejected;
    summary_.abandoned += report.abandoned;
    const bool clean = report.code == 0 && report.received == report.expected &&
                       report.duplicates == 0 && report.rejected == 0;
    if (clean) {
      ++summary_.clean;
    } else {
      summary_.unclean.push_back(device);
    }
    if (summary_.reported + summary_.missed_round2.size() == summary_.keys_ready) Finish(now_us);
    return {};
  }
  // A device repeats its latest report after a reconnect (the first copy
  // may have been lost with the connection): harmless, ignore it.
  const bool repeat = (round == 1 && (state == DeviceState::kKeysReady || state == DeviceState::kReported)) ||
                      (round == 2 && state == DeviceState::kReported);
  if (repeat) {
    ++repeated_reports_;
    return {};
  }
  // Late (after a deadline), or for a round not running.
  ++protocol_errors_;
  return {};
}

NeighbourEchoJob::StartRound NeighbourEchoJob::OnUnreachable(uint32_t device, uint64_t now_us) {
  auto it = devices_.find(device);
  if (it == devices_.end()) return {};
  DeviceState& state = it->second;
  if (phase_ == Phase::kKeys && state == DeviceState::kWaitingKeys) {
    state = DeviceState::kMissed;
    summary_.missed_round1.push_back(device);
    const bool all_in = std::none_of(devices_.begin(), devices_.end(), [](const auto& kv) {
      return kv.second == DeviceState::kWaitingKeys;
    });
    return all_in ? BeginRound2(now_us) : StartRound{};
  }
  if (phase_ == Phase::kSend && state == DeviceState::kKeysReady) {
    state = DeviceState::kMissed;
    summary_.missed_round2.push_back(device);
    gone_pending_.push_back(device);
    if (summary_.reported + summary_.missed_round2.size() == summary_.keys_ready) Finish(now_us);
  }
  return {};
}

NeighbourEchoJob::PeersGone NeighbourEchoJob::TakePeersGone() {
  PeersGone out;
  if (gone_pending_.empty()) return out;
  if (phase_ != Phase::kSend) {
    gone_pending_.clear();  // nobody left to tell
    return out;
  }
  out.gone = std::exchange(gone_pending_, {});
  std::sort(out.gone.begin(), out.gone.end());
  for (const auto& [device, state] : devices_) {
    if (state == DeviceState::kKeysReady) out.recipients.push_back(device);
  }
  if (out.recipients.empty()) out.gone.clear();
  summary_.gone_notices += out.recipients.size();
  return out;
}

NeighbourEchoJob::StartRound NeighbourEchoJob::Poll(uint64_t now_us) {
  const uint64_t elapsed_ms = (now_us - round_started_us_) / 1000;
  if (phase_ == Phase::kKeys && elapsed_ms >= options_.round1_deadline_ms) return BeginRound2(now_us);
  if (phase_ == Phase::kSend && elapsed_ms >= options_.round2_deadline_ms) Finish(now_us);
  return {};
}

std::string NeighbourEchoJob::ProgressLine() const {
  switch (phase_) {
    case Phase::kIdle: return "not started";
    case Phase::kKeys:
      return "round 1 (keys): " + std::to_string(summary_.keys_ready + summary_.missed_round1.size()) + "/" +
             std::to_string(summary_.participants) + " devices ready";
    case Phase::kSend:
      return "round 2 (send): " + std::to_string(summary_.reported) + "/" + std::to_string(summary_.keys_ready) +
             " devices reported, " + std::to_string(summary_.received) + " messages verified";
    case Phase::kFinished:
      return std::string("finished: ") + (summary_.verified() ? "verified" : "NOT verified");
  }
  return "";
}

}  // namespace nodefl::server::jobs
