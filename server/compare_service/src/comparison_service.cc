// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/compare_service/comparison_service.h"

#include <algorithm>
#include <utility>

namespace nodefl::server::compare_service {

namespace cmp = nodefl::compare;

std::string_view SessionStateName(SessionState state) {
  switch (state) {
    case SessionState::kPending:
      return "pending";
    case SessionState::kRunning:
      return "running";
    case SessionState::kDone:
      return "done";
    case SessionState::kAborted:
      return "aborted";
  }
  return "?";
}

std::string_view AbortReasonName(AbortReason reason) {
  switch (reason) {
    case AbortReason::kNone:
      return "-";
    case AbortReason::kPartyAborted:
      return "party-aborted";
    case AbortReason::kDisagreement:
      return "disagreement";
    case AbortReason::kDeadline:
      return "deadline";
    case AbortReason::kOffline:
      return "offline";
    case AbortReason::kRoundEnded:
      return "round-ended";
  }
  return "?";
}

ComparisonService::ComparisonService(ServiceOptions options) : options_(options) {
  // A bound of 0 would never start anything.
  options_.max_sessions_per_device = std::max<uint32_t>(1, options_.max_sessions_per_device);
}

uint32_t ComparisonService::Add(uint32_t a, uint32_t b, uint16_t count) {
  const auto id = static_cast<uint32_t>(sessions_.size() + 1);
  Session s;
  s.id = id;
  s.a = a;
  s.b = b;
  s.count = count;
  sessions_.push_back(std::move(s));
  held_.emplace_back();
  sessions_of_[a].push_back(id);
  sessions_of_[b].push_back(id);
  ++totals_.sessions;
  ++totals_.pending;
  devices_[a].pending.insert(id);
  devices_[b].pending.insert(id);
  if (unreachable_.count(a) != 0 || unreachable_.count(b) != 0) {
    Abort(At(id), AbortReason::kOffline, std::nullopt);
  } else {
    dirty_.insert(a);
    dirty_.insert(b);
  }
  return id;
}

uint32_t ComparisonService::Room(uint32_t device) const {
  auto it = devices_.find(device);
  const uint32_t running = it == devices_.end() ? 0 : it->second.running;
  return running >= options_.max_sessions_per_device ? 0 : options_.max_sessions_per_device - running;
}

uint32_t ComparisonService::RunningOn(uint32_t device) const {
  auto it = devices_.find(device);
  return it == devices_.end() ? 0 : it->second.running;
}

std::map<uint32_t, std::vector<cmp::SessionStart>> ComparisonService::Schedule(uint64_t now_us) {
  std::map<uint32_t, std::vector<cmp::SessionStart>> out;
  // Only sessions of devices that gained room (or sessions) can have become
  // startable. Each pass collects, per such device, its lowest pending
  // sessions whose other party has room too (no more than the device can
  // take), then starts them in id order. A candidate that lost its chance
  // to a lower id puts its parties back in play for another pass; every
  // pass with candidates starts at least its lowest one, so this ends.
  while (!dirty_.empty()) {
    std::set<uint32_t> candidates;
    for (uint32_t device : dirty_) {
      const uint32_t room = Room(device);
      if (room == 0) continue;
      uint32_t taken = 0;
      for (uint32_t id : devices_[device].pending) {
        const Session& s = sessions_[id - 1];
        if (Room(s.a == device ? s.b : s.a) == 0) continue;
        candidates.insert(id);
        if (++taken == room) break;
      }
    }
    dirty_.clear();
    for (uint32_t id : candidates) {
      Session& s = At(id);
      const uint32_t room_a = Room(s.a), room_b = Room(s.b);
      if (room_a > 0 && room_b > 0) {
        Start(s, now_us, out);
        continue;
      }
      if (room_a > 0) dirty_.insert(s.a);
      if (room_b > 0) dirty_.insert(s.b);
    }
  }
  return out;
}

void ComparisonService::Start(Session& s, uint64_t now_us, std::map<uint32_t, std::vector<cmp::SessionStart>>& out) {
  devices_[s.a].pending.erase(s.id);
  devices_[s.b].pending.erase(s.id);
  s.state = SessionState::kRunning;
  s.started = true;
  s.started_us = now_us;
  held_[s.id - 1] = HeldSlots{true, true};
  for (uint32_t party : {s.a, s.b}) {
    const uint32_t running = ++devices_[party].running;
    totals_.peak_running_per_device = std::max(totals_.peak_running_per_device, running);
  }
  --totals_.pending;
  ++totals_.running;
  running_order_.push_back(s.id);
  out[s.a].push_back(cmp::SessionStart{s.id, s.b, cmp::Role::kA, s.count});
  out[s.b].push_back(cmp::SessionStart{s.id, s.a, cmp::Role::kB, s.count});
}

void ComparisonService::Release(uint32_t device, bool& held) {
  if (!held) return;
  held = false;
  --devices_[device].running;
  dirty_.insert(device);
}

void ComparisonService::Settle(Session& s, SessionState state, AbortReason reason) {
  if (s.state == SessionState::kPending) {
    devices_[s.a].pending.erase(s.id);
    devices_[s.b].pending.erase(s.id);
    --totals_.pending;
  } else {
    --totals_.running;
  }
  s.state = state;
  s.reason = reason;
  // Slots are not freed here: a party holds its slot until it reports,
  // because a device frees its session context only then, and a start
  // overtaking its answer to a cancel would find no room.
  if (state == SessionState::kDone) {
    ++totals_.done;
    totals_.comparisons += s.count;
  } else {
    ++totals_.aborted;
    ++totals_.aborted_by_reason[reason];
  }
}

void ComparisonService::Abort(Session& s, AbortReason reason, std::optional<uint32_t> spared) {
  if (s.settled()) return;
  const bool was_running = s.state == SessionState::kRunning;
  Settle(s, SessionState::kAborted, reason);
  if (!was_running) return;  // nobody was told to start it
  for (uint32_t party : {s.a, s.b}) {
    if (party != spared && !s.report_of(party).reported) cancels_[party].push_back(s.id);
  }
}

void ComparisonService::Account(const PartyReport& report) {
  totals_.bytes_sent += report.bytes_sent;
  totals_.messages_sent += report.messages_sent;
}

ComparisonService::ResultOutcome ComparisonService::OnResult(uint32_t device, const cmp::SessionResult& result,
                                                             uint64_t now_us) {
  (void)now_us;
  const uint32_t id = result.session;
  if (id == 0 || id > sessions_.size()) {
    ++totals_.protocol_errors;
    return ResultOutcome::kRejected;
  }
  Session& s = At(id);
  // A report must come from a party of a session it was told to start,
  // once: anything else is a confused or lying device.
  if ((device != s.a && device != s.b) || !s.started) {
    ++totals_.protocol_errors;
    return ResultOutcome::kRejected;
  }
  const bool is_a = device == s.a;
  PartyReport& mine = is_a ? s.report_a : s.report_b;
  if (mine.reported) {
    ++totals_.protocol_errors;
    return ResultOutcome::kRejected;
  }
  mine.reported = true;
  mine.done = result.done;
  mine.code = result.code;
  mine.count = result.count;
  mine.bytes_sent = result.bytes_sent;
  mine.bytes_received = result.bytes_received;
  mine.messages_sent = result.messages_sent;
  mine.bits.assign(result.bits, result.bits + std::min<size_t>(result.bit_bytes, sizeof(result.bits)));
  Account(mine);
  // The party no longer runs the session, whatever the other one does.
  HeldSlots& held = held_[id - 1];
  Release(device, is_a ? held.a : held.b);
  if (s.settled()) {
    // Typically the answer to a cancel: the party stopped as asked.
    ++totals_.late_reports;
    return ResultOutcome::kLate;
  }
  if (!mine.done) {
    Abort(s, AbortReason::kPartyAborted, device);
    return ResultOutcome::kSettled;
  }
  const PartyReport& theirs = is_a ? s.report_b : s.report_a;
  if (!theirs.reported) return ResultOutcome::kRecorded;
  // Both said done (an earlier abort would have settled the session). Only
  // identical outcomes count: each party computed its own copy of the
  // result, so a mismatch means one of them is wrong or lying.
  const bool agree = mine.count == s.count && theirs.count == s.count && mine.bits == theirs.bits;
  if (agree) {
    Settle(s, SessionState::kDone, AbortReason::kNone);
  } else {
    Abort(s, AbortReason::kDisagreement, std::nullopt);
  }
  return ResultOutcome::kSettled;
}

void ComparisonService::Poll(uint64_t now_us) {
  // running_order_ is in start order, so the oldest come first; settled
  // sessions are dropped as they reach the front.
  while (!running_order_.empty()) {
    Session& s = At(running_order_.front());
    if (s.state != SessionState::kRunning) {
      running_order_.pop_front();
      continue;
    }
    if (now_us < s.started_us || now_us - s.started_us <= options_.session_timeout_us) break;
    running_order_.pop_front();
    Abort(s, AbortReason::kDeadline, std::nullopt);
  }
}

void ComparisonService::MarkUnreachable(uint32_t device) {
  unreachable_.insert(device);
  auto it = sessions_of_.find(device);
  if (it == sessions_of_.end()) return;
  for (uint32_t id : it->second) {
    // It will not report: its slots go with it.
    Session& s = At(id);
    HeldSlots& held = held_[id - 1];
    Release(device, s.a == device ? held.a : held.b);
    Abort(s, AbortReason::kOffline, device);
  }
}

void ComparisonService::AbortUnsettled(AbortReason reason) {
  for (Session& s : sessions_) Abort(s, reason, std::nullopt);
}

std::map<uint32_t, std::vector<uint32_t>> ComparisonService::TakeCancels() { return std::exchange(cancels_, {}); }

}  // namespace nodefl::server::compare_service
