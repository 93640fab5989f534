// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/jobs/secure_compare_job.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "nodefl/core/little_endian.h"
#include "nodefl/server/jobs/job_entropy.h"

namespace nodefl::server::jobs {

namespace cmp = nodefl::compare;
namespace svc = nodefl::server::compare_service;

namespace {

constexpr uint32_t kRoundRequests = 1, kRoundSessions = 2, kRoundReport = 3;
constexpr size_t kMaxJobDataBytes = 4096;  // JobData.data (envelope.options)
constexpr size_t kStartsPerRecord = kMaxJobDataBytes / cmp::kSessionStartBytes;  // 372
constexpr size_t kCancelsPerRecord = kMaxJobDataBytes / 4;

double Seconds(uint64_t from_us, uint64_t to_us) { return static_cast<double>(to_us - from_us) / 1e6; }

svc::ServiceOptions ServiceOptionsOf(const SecureCompareOptions& o) {
  svc::ServiceOptions s;
  s.max_sessions_per_device = o.params.max_sessions;
  s.session_timeout_us = uint64_t{o.session_timeout_ms} * 1000;
  return s;
}

// The result bits of a session as '0'/'1' per comparison, or "-".
std::string BitsText(const svc::Session& s, bool greater) {
  if (!s.has_result()) return "-";
  std::string text;
  for (uint32_t i = 0; i < s.count; ++i) text += (greater ? s.greater(i) : s.equal(i)) ? '1' : '0';
  return text;
}

}  // namespace

SecureCompareJob::SecureCompareJob(SecureCompareOptions options, std::vector<uint32_t> participants)
    : options_(std::move(options)), participants_(std::move(participants)), service_(ServiceOptionsOf(options_)) {
  std::sort(participants_.begin(), participants_.end());
  participants_.erase(std::unique(participants_.begin(), participants_.end()), participants_.end());
  for (uint32_t id : participants_) devices_[id] = DeviceState::kWaitingRequests;
  summary_.participants = static_cast<uint32_t>(participants_.size());
}

uint64_t SecureCompareJob::SessionRoundDeadlineUs() const {
  const uint32_t ms = options_.session_round_deadline_ms != 0
                          ? options_.session_round_deadline_ms
                          : 4 * std::max(options_.round_deadline_ms, options_.session_timeout_ms);
  return uint64_t{ms} * 1000;
}

std::vector<RoundStart> SecureCompareJob::Begin(uint64_t now_us) {
  phase_ = Phase::kRequests;
  round_started_us_ = now_us;
  // A fresh public salt from the OS (never a seeded generator; journaled
  // for a continuation after a restart, job_entropy.h); the
  // devices' ephemeral keys make the job keys unique whatever it is
  // (sdk/seal/job_keys.h).
  FillJobEntropy(options_.params.salt);
  uint8_t encoded[cmp::kCompareParametersBytes];
  cmp::EncodeCompareParameters(options_.params, encoded);
  // The devices refuse what does not decode; refuse it here first.
  if (!cmp::DecodeCompareParameters(ConstByteSpan(encoded)).ok()) {
    summary_.error = "invalid comparison parameters";
    Finish(now_us);
    return {};
  }
  if (participants_.empty()) {
    summary_.error = "no participants";
    Finish(now_us);
    return {};
  }
  RoundStart start;
  start.round = kRoundRequests;
  start.deadline_ms = options_.round_deadline_ms;
  start.parameters.assign(encoded, encoded + sizeof(encoded));
  start.devices = participants_;
  std::vector<RoundStart> out;
  out.push_back(std::move(start));
  return out;
}

std::vector<RoundStart> SecureCompareJob::OnReport(uint32_t device, uint32_t round,
                                                   const nodefl_wire_JobReport& report, uint64_t now_us) {
  auto it = devices_.find(device);
  if (it == devices_.end()) {
    ++summary_.protocol_errors;
    return {};
  }
  if (round == kRoundRequests && phase_ == Phase::kRequests && it->second == DeviceState::kWaitingRequests) {
    // A device whose keys failed still takes part: its sessions abort and
    // are counted so.
    it->second = DeviceState::kReady;
    ++summary_.requests_reported;
  } else if (round == kRoundReport && phase_ == Phase::kReport && it->second == DeviceState::kReady) {
    it->second = DeviceState::kReported;
    summary_.device_done += report.sent;
    summary_.device_aborted += report.rejected;
  } else {
    ++summary_.ignored_reports;  // late or repeated: the deadline already decided
  }
  return Poll(now_us);
}

void SecureCompareJob::TakeRequests(uint32_t device, const std::vector<uint8_t>& bytes) {
  for (size_t at = 0; at < bytes.size(); at += 4) {
    const uint32_t peer = LoadU32Le(bytes.data() + at);
    // Each edge is asked for once, by its lower end, and only between
    // participants: anything else is refused (and counted).
    const bool valid = peer > device && devices_.count(peer) != 0 && requests_.emplace(device, peer).second;
    if (valid) {
      ++summary_.requested_edges;
    } else {
      ++summary_.refused_requests;
    }
  }
}

std::vector<RoundStart> SecureCompareJob::OnUpload(uint32_t device, uint32_t round, uint32_t kind,
                                                   std::vector<uint8_t> bytes, uint64_t now_us) {
  auto it = devices_.find(device);
  if (it == devices_.end()) {
    ++summary_.protocol_errors;
    return {};
  }
  if (round == kRoundRequests && kind == cmp::kSessionRequests) {
    // Requests come before the device's round-1 report, whole u32s. A
    // device missed by the deadline is slow, not confused: counted apart.
    if (phase_ != Phase::kRequests || it->second == DeviceState::kMissed) {
      ++summary_.late_requests;
      return {};
    }
    if (it->second != DeviceState::kWaitingRequests || bytes.empty() || bytes.size() % 4 != 0) {
      ++summary_.protocol_errors;
      return {};
    }
    TakeRequests(device, bytes);
    return {};
  }
  if (round == kRoundSessions && kind == cmp::kSessionResult &&
      (phase_ == Phase::kSessions || phase_ == Phase::kReport)) {
    // Results after round 2 are the answers to its end: accounted, no effect.
    Result<cmp::SessionResult> result = cmp::DecodeSessionResult(ConstByteSpan(bytes));
    if (!result.ok()) {
      ++summary_.protocol_errors;
      return {};
    }
    service_.OnResult(device, *result, now_us);
    if (phase_ != Phase::kSessions) return {};
    Pump(now_us);
    return Poll(now_us);
  }
  ++summary_.protocol_errors;
  return {};
}

std::vector<RoundStart> SecureCompareJob::StartSessionRound(uint64_t now_us) {
  phase_ = Phase::kSessions;
  summary_.seconds_requests = Seconds(round_started_us_, now_us);
  round_started_us_ = now_us;
  RoundStart start;
  start.round = kRoundSessions;
  start.deadline_ms = static_cast<uint32_t>(SessionRoundDeadlineUs() / 1000);
  for (auto& [id, state] : devices_) {
    if (state == DeviceState::kWaitingRequests) {
      state = DeviceState::kMissed;
      summary_.missed_round1.push_back(id);
      // Its edges cannot be compared: they abort (kOffline) as added.
      service_.MarkUnreachable(id);
    }
    if (state == DeviceState::kReady) start.devices.push_back(id);
  }
  for (const auto& [a, b] : requests_) service_.Add(a, b, 1);
  std::vector<RoundStart> out;
  out.push_back(std::move(start));
  Pump(now_us);
  return out;
}

void SecureCompareJob::Pump(uint64_t now_us) {
  const auto starts = service_.Schedule(now_us);
  for (const auto& [device, ids] : service_.TakeCancels()) {
    for (size_t first = 0; first < ids.size(); first += kCancelsPerRecord) {
      const size_t n = std::min(kCancelsPerRecord, ids.size() - first);
      std::vector<uint8_t> bytes(4 * n);
      for (size_t i = 0; i < n; ++i) StoreU32Le(ids[first + i], bytes.data() + 4 * i);
      data_.push_back(DeviceData{device, kRoundSessions, cmp::kSessionCancel, std::move(bytes)});
    }
  }
  for (const auto& [device, records] : starts) {
    for (size_t first = 0; first < records.size(); first += kStartsPerRecord) {
      const size_t n = std::min(kStartsPerRecord, records.size() - first);
      std::vector<uint8_t> bytes(cmp::kSessionStartBytes * n);
      for (size_t i = 0; i < n; ++i) {
        cmp::EncodeSessionStart(records[first + i], bytes.data() + cmp::kSessionStartBytes * i);
      }
      data_.push_back(DeviceData{device, kRoundSessions, cmp::kSessionStart, std::move(bytes)});
    }
  }
}

std::vector<DeviceData> SecureCompareJob::TakeData() { return std::exchange(data_, {}); }

void SecureCompareJob::OnUndeliverable(uint32_t device, uint64_t now_us) {
  auto it = devices_.find(device);
  if (it == devices_.end()) return;
  switch (phase_) {
    case Phase::kRequests:
      // It never got the job: no point waiting for its deadline.
      if (it->second == DeviceState::kWaitingRequests) {
        it->second = DeviceState::kMissed;
        summary_.missed_round1.push_back(device);
      }
      break;
    case Phase::kSessions:
      // A start or cancel did not reach it: its sessions cannot run.
      service_.MarkUnreachable(device);
      Pump(now_us);
      break;
    case Phase::kReport:
      if (it->second == DeviceState::kReady) {
        it->second = DeviceState::kMissed;
        summary_.missed_round3.push_back(device);
      }
      break;
    case Phase::kIdle:
    case Phase::kFinished:
      break;
  }
}

std::vector<RoundStart> SecureCompareJob::StartReportRound(uint64_t now_us) {
  phase_ = Phase::kReport;
  summary_.seconds_sessions = Seconds(round_started_us_, now_us);
  round_started_us_ = now_us;
  service_.AbortUnsettled(svc::AbortReason::kRoundEnded);
  // No cancels: the round-3 start ends whatever a device still runs, and
  // round-2 records sent after it (the runner sends records after round
  // starts) would only confuse it.
  (void)service_.TakeCancels();
  data_.clear();
  RoundStart start;
  start.round = kRoundReport;
  start.deadline_ms = options_.round_deadline_ms;
  for (const auto& [id, state] : devices_) {
    if (state == DeviceState::kReady) start.devices.push_back(id);
  }
  std::vector<RoundStart> out;
  out.push_back(std::move(start));
  return out;
}

std::vector<RoundStart> SecureCompareJob::Poll(uint64_t now_us) {
  const uint64_t round_deadline_us = uint64_t{options_.round_deadline_ms} * 1000;
  const uint64_t elapsed_us = now_us - round_started_us_;
  const auto waiting_for = [this](DeviceState state) {
    return std::any_of(devices_.begin(), devices_.end(), [state](const auto& d) { return d.second == state; });
  };
  switch (phase_) {
    case Phase::kRequests:
      if (!waiting_for(DeviceState::kWaitingRequests) || elapsed_us > round_deadline_us) {
        return StartSessionRound(now_us);
      }
      return {};
    case Phase::kSessions:
      service_.Poll(now_us);
      Pump(now_us);
      if (service_.all_settled() || elapsed_us > SessionRoundDeadlineUs()) return StartReportRound(now_us);
      return {};
    case Phase::kReport:
      if (!waiting_for(DeviceState::kReady) || elapsed_us > round_deadline_us) Finish(now_us);
      return {};
    case Phase::kIdle:
    case Phase::kFinished:
      return {};
  }
  return {};
}

std::map<uint32_t, std::vector<uint32_t>> SecureCompareJob::KeptNeighbours() const {
  std::map<uint32_t, std::vector<uint32_t>> kept;
  if (!options_.params.results_public) return kept;
  for (uint32_t id : participants_) kept[id];
  for (const svc::Session& s : service_.sessions()) {
    if (s.state == svc::SessionState::kAborted) {
      // Nothing was learnt: the edge stays in both trees.
      kept[s.a].push_back(s.b);
      kept[s.b].push_back(s.a);
    } else if (s.has_result()) {
      // x = value(a), y = value(b): a keeps b iff y >= x, b keeps a iff x >= y.
      if (!s.greater(0)) kept[s.a].push_back(s.b);
      if (s.greater(0) || s.equal(0)) kept[s.b].push_back(s.a);
    }
  }
  for (auto& [id, neighbours] : kept) std::sort(neighbours.begin(), neighbours.end());
  return kept;
}

void SecureCompareJob::Finish(uint64_t now_us) {
  if (phase_ == Phase::kReport) {
    summary_.seconds_report = Seconds(round_started_us_, now_us);
    for (auto& [id, state] : devices_) {
      if (state != DeviceState::kReady) continue;
      state = DeviceState::kMissed;
      summary_.missed_round3.push_back(id);
    }
  }
  phase_ = Phase::kFinished;
  for (const svc::Session& s : service_.sessions()) {
    if (s.state == svc::SessionState::kAborted) {
      ++summary_.edges_kept_aborted;
    } else if (!s.has_result()) {
      ++summary_.edges_unknown;
    } else if (s.equal(0)) {
      ++summary_.edges_kept_both;
    } else {
      ++summary_.edges_kept_one;
    }
  }
  std::sort(summary_.missed_round1.begin(), summary_.missed_round1.end());
  std::sort(summary_.missed_round3.begin(), summary_.missed_round3.end());
  if (!options_.output_dir.empty()) WriteOutputs();
}

void SecureCompareJob::WriteOutputs() {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(options_.output_dir, ec);
  const fs::path sessions_path = fs::path(options_.output_dir) / "secure-compare-sessions.tsv";
  {
    std::ofstream out(sessions_path);
    out << "session\ta\tb\tstate\treason\tgt\teq\tbytes_a\tbytes_b\tmessages_a\tmessages_b\n";
    for (const svc::Session& s : service_.sessions()) {
      out << s.id << '\t' << s.a << '\t' << s.b << '\t' << svc::SessionStateName(s.state) << '\t'
          << svc::AbortReasonName(s.reason) << '\t' << BitsText(s, true) << '\t' << BitsText(s, false) << '\t'
          << s.report_a.bytes_sent << '\t' << s.report_b.bytes_sent << '\t' << s.report_a.messages_sent << '\t'
          << s.report_b.messages_sent << '\n';
    }
    if (!out) {
      summary_.error = "writing " + sessions_path.string();
      return;
    }
  }
  summary_.sessions_path = sessions_path.string();
  // Without public results the server does not know who keeps what.
  if (!options_.params.results_public) return;
  const fs::path greedy_path = fs::path(options_.output_dir) / "greedy-init.tsv";
  std::ofstream out(greedy_path);
  for (const auto& [device, neighbours] : KeptNeighbours()) {
    out << device << '\t';
    for (size_t i = 0; i < neighbours.size(); ++i) out << (i ? "," : "") << neighbours[i];
    out << '\n';
  }
  if (!out) {
    summary_.error = "writing " + greedy_path.string();
    return;
  }
  summary_.greedy_init_path = greedy_path.string();
}

bool SecureCompareJob::succeeded() const {
  const svc::ServiceTotals& t = service_.totals();
  return finished() && summary_.error.empty() && summary_.missed_round1.empty() &&
         summary_.missed_round3.empty() && summary_.refused_requests == 0 && summary_.protocol_errors == 0 &&
         t.protocol_errors == 0 && t.aborted == 0 && t.done == t.sessions;
}

std::string SecureCompareJob::ProgressLine() const {
  std::ostringstream o;
  const svc::ServiceTotals& t = service_.totals();
  switch (phase_) {
    case Phase::kRequests:
      o << "secure-compare round 1 (requests): " << summary_.requests_reported << "/" << summary_.participants
        << " reported, " << summary_.requested_edges << " edges requested";
      break;
    case Phase::kSessions:
      o << "sessions: " << t.done + t.aborted << "/" << t.sessions << " settled (" << t.done << " done, "
        << t.aborted << " aborted), " << t.running << " running";
      break;
    case Phase::kReport:
      o << "secure-compare round 3 (reports)";
      break;
    default:
      o << (finished() ? "finished" : "idle");
  }
  return o.str();
}

void SecureCompareJob::LogSummary(Logger& log, uint64_t job_id) const {
  const SecureCompareSummary& s = summary_;
  const svc::ServiceTotals& t = service_.totals();
  const auto aborted = [&t](svc::AbortReason reason) -> uint64_t {
    auto it = t.aborted_by_reason.find(reason);
    return it == t.aborted_by_reason.end() ? 0 : it->second;
  };
  const cmp::CompareJobParameters& p = options_.params;
  log.Info("job_finished", {{"job", job_id},
                            {"kind", "secure-compare"},
                            {"verified", succeeded()},
                            {"participants", s.participants},
                            {"requests_reported", s.requests_reported},
                            {"missed_round1", s.missed_round1.size()},
                            {"missed_round3", s.missed_round3.size()},
                            {"requested_edges", s.requested_edges},
                            {"refused_requests", s.refused_requests},
                            {"value", p.value == cmp::CompareValue::kLogDegree ? "log-degree" : "degree"},
                            {"width", uint32_t{p.width}},
                            {"mode", p.mode == cmp::OtMode::kBase ? "base" : "extension"},
                            {"max_sessions", uint32_t{p.max_sessions}},
                            {"sessions", t.sessions},
                            {"done", t.done},
                            {"aborted", t.aborted},
                            {"aborted_party", aborted(svc::AbortReason::kPartyAborted)},
                            {"aborted_disagreement", aborted(svc::AbortReason::kDisagreement)},
                            {"aborted_deadline", aborted(svc::AbortReason::kDeadline)},
                            {"aborted_offline", aborted(svc::AbortReason::kOffline)},
                            {"aborted_round_ended", aborted(svc::AbortReason::kRoundEnded)},
                            {"comparisons", t.comparisons},
                            {"bytes", t.bytes_sent},
                            {"messages", t.messages_sent},
                            {"peak_sessions_per_device", t.peak_running_per_device},
                            {"device_done", s.device_done},
                            {"device_aborted", s.device_aborted},
                            {"edges_kept_both", s.edges_kept_both},
                            {"edges_kept_one", s.edges_kept_one},
                            {"edges_kept_aborted", s.edges_kept_aborted},
                            {"edges_unknown", s.edges_unknown},
                            {"seconds_requests", s.seconds_requests},
                            {"seconds_sessions", s.seconds_sessions},
                            {"seconds_report", s.seconds_report},
                            {"sessions_file", s.sessions_path},
                            {"greedy_init", s.greedy_init_path},
                            {"late_results", t.late_reports},
                            {"ignored_reports", s.ignored_reports},
                            {"late_requests", s.late_requests},
                            {"error", s.error},
                            {"protocol_errors", s.protocol_errors + t.protocol_errors}});
  log.Info("privacy_ledger",
           {{"job", job_id},
            {"phase", "secure-compare"},
            {"note",
             "server learns: the edge set (requests, relay traffic) and, with results public, every comparison result"},
            {"results_public", p.results_public}});
}

}  // namespace nodefl::server::jobs
