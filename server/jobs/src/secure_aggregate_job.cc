// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/jobs/secure_aggregate_job.h"

#include <algorithm>
#include <random>
#include <utility>

namespace nodefl::server::jobs {
namespace {

namespace sa = nodefl::secagg;

}  // namespace

SecureAggregateJob::SecureAggregateJob(SecureAggregateOptions options, std::vector<uint32_t> participants)
    : options_(std::move(options)), participants_(std::move(participants)), service_(options_.job_id) {
  std::sort(participants_.begin(), participants_.end());
  participants_.erase(std::unique(participants_.begin(), participants_.end()), participants_.end());
}

std::vector<RoundStart> SecureAggregateJob::Begin(uint64_t now_us) {
  if (phase_ != Phase::kIdle) return {};
  RoundStart start;
  start.round = 1;
  start.deadline_ms = 0;
  uint8_t params[sa::kSecureAggregateParametersBytes];
  sa::EncodeSecureAggregateParameters(options_.params, params);
  start.parameters.assign(params, params + sizeof params);
  start.devices = participants_;
  phase_ = Phase::kAggregating;
  StartAggregation(now_us);
  std::vector<RoundStart> out{start};
  for (RoundStart& r : Advance(now_us)) out.push_back(std::move(r));
  return out;
}

void SecureAggregateJob::StartAggregation(uint64_t now_us) {
  secagg::AggregationRequest request = options_.request;
  for (uint32_t d : participants_) {
    if (unreachable_.count(d) == 0) request.devices.push_back(d);
  }
  request.graph_seed = options_.request.graph_seed + summaries_.size();
  AggregationSummary summary;
  summary.participants = static_cast<uint32_t>(request.devices.size());
  current_ = service_.Add(request, now_us);
  summary.id = current_;
  if (current_ == 0) summary.outcome = "refused: " + service_.last_refusal();
  summaries_.push_back(summary);
  // This aggregation's dropouts, drawn afresh.
  to_drop_.clear();
  dropped_.clear();
  drops_applied_ = false;
  if (current_ != 0 && options_.drop_fraction > 0) {
    std::vector<uint32_t> pool = request.devices;
    std::mt19937_64 rng(options_.drop_seed * 1000003u + current_);
    std::shuffle(pool.begin(), pool.end(), rng);
    const size_t n = static_cast<size_t>(options_.drop_fraction * static_cast<double>(pool.size()) + 0.5);
    to_drop_.insert(pool.begin(), pool.begin() + static_cast<std::ptrdiff_t>(std::min(n, pool.size())));
  }
}

void SecureAggregateJob::ApplyDrops(uint64_t now_us) {
  if (drops_applied_ || to_drop_.empty() || current_ == 0) return;
  const secagg::AggregationResult& r = service_.result(current_);
  if (r.settled() || r.step < options_.drop_step) return;
  drops_applied_ = true;
  for (uint32_t d : to_drop_) {
    dropped_.insert(d);
    service_.MarkUnreachable(d, now_us);
  }
}

std::vector<RoundStart> SecureAggregateJob::Advance(uint64_t now_us) {
  if (phase_ != Phase::kAggregating) return {};
  ApplyDrops(now_us);
  if (current_ != 0 && !service_.result(current_).settled()) return {};
  Settle(now_us);
  if (summaries_.size() < options_.aggregations) {
    StartAggregation(now_us);
    return Advance(now_us);
  }
  return BeginReports(now_us);
}

void SecureAggregateJob::Settle(uint64_t) {
  AggregationSummary& s = summaries_.back();
  if (current_ == 0) return;
  const secagg::AggregationResult& r = service_.result(current_);
  s.done = r.state == secagg::AggregationState::kDone;
  s.included = static_cast<uint32_t>(r.included.size());
  s.dropped_by_job = static_cast<uint32_t>(dropped_.size());
  s.wall_ms = static_cast<double>(r.wall_us) / 1e3;
  s.unmask_ms = static_cast<double>(r.unmask_us) / 1e3;
  s.scalar_multiplications = r.scalar_multiplications;
  uint64_t peers = 0;
  for (uint32_t d : participants_) peers += service_.PeersOf(current_, d).size();
  s.mean_peers = s.participants == 0 ? 0 : static_cast<double>(peers) / s.participants;
  uint64_t up = 0, down = 0;
  for (const auto& [device, t] : r.traffic) {
    up += t.bytes_received;
    down += t.bytes_sent;
  }
  if (!r.traffic.empty()) {
    s.mean_device_bytes_up = static_cast<double>(up) / static_cast<double>(r.traffic.size());
    s.mean_device_bytes_down = static_cast<double>(down) / static_cast<double>(r.traffic.size());
  }
  if (!s.done) {
    s.outcome = "aborted (" + std::string(secagg::AbortReasonName(r.abort_reason)) + "): " + r.message;
    return;
  }
  // The inputs are public: recompute the included devices' sum.
  std::vector<uint32_t> want(r.length, 0);
  for (uint32_t d : r.included) {
    for (uint32_t i = 0; i < r.length; ++i) want[i] += sa::SyntheticInput(options_.params.input_seed, current_, d, i);
  }
  s.verified = want == r.sum;
  s.outcome = s.verified ? "done, sum verified" : "done, SUM WRONG";
}

std::vector<RoundStart> SecureAggregateJob::BeginReports(uint64_t now_us) {
  phase_ = Phase::kReporting;
  reports_started_us_ = now_us;
  RoundStart start;
  start.round = 2;
  start.deadline_ms = options_.report_deadline_ms;
  for (uint32_t d : participants_) {
    if (unreachable_.count(d) == 0) start.devices.push_back(d);
  }
  if (start.devices.empty()) phase_ = Phase::kFinished;
  return {start};
}

std::vector<RoundStart> SecureAggregateJob::OnReport(uint32_t device, uint32_t round,
                                                     const nodefl_wire_JobReport& report, uint64_t now_us) {
  if (round != 2 || phase_ != Phase::kReporting || !std::binary_search(participants_.begin(), participants_.end(), device)) {
    ++protocol_errors_;
    return {};
  }
  if (!reported_.insert(device).second) return {};  // a repeat after a reconnect
  if (report.code == 0) ++clean_reports_;
  size_t expected = 0;
  for (uint32_t d : participants_) expected += unreachable_.count(d) == 0 ? 1 : 0;
  if (reported_.size() >= expected) phase_ = Phase::kFinished;
  (void)now_us;
  return {};
}

std::vector<RoundStart> SecureAggregateJob::OnUpload(uint32_t device, uint32_t, uint32_t artefact,
                                                     std::vector<uint8_t> bytes, uint64_t now_us) {
  if (phase_ != Phase::kAggregating || !sa::IsAggregationKind(artefact)) {
    ++protocol_errors_;
    return {};
  }
  // A device the job cut off is gone as far as the aggregation knows.
  if (dropped_.count(device) != 0) return {};
  (void)service_.OnRecord(device, artefact, std::span<const uint8_t>(bytes.data(), bytes.size()), now_us);
  return Advance(now_us);
}

std::vector<RoundStart> SecureAggregateJob::Poll(uint64_t now_us) {
  if (phase_ == Phase::kAggregating) {
    service_.Poll(now_us);
    return Advance(now_us);
  }
  if (phase_ == Phase::kReporting && now_us - reports_started_us_ >= uint64_t{options_.report_deadline_ms} * 1000) {
    phase_ = Phase::kFinished;
  }
  return {};
}

std::vector<DeviceData> SecureAggregateJob::TakeData() {
  std::vector<DeviceData> out;
  for (secagg::AggRecord& r : service_.TakeRecords()) {
    DeviceData d;
    d.device = r.device;
    d.round = 1;
    d.kind = r.kind;
    d.bytes = std::move(r.bytes);
    out.push_back(std::move(d));
  }
  return out;
}

void SecureAggregateJob::OnUndeliverable(uint32_t device, uint64_t now_us) {
  unreachable_.insert(device);
  if (phase_ == Phase::kAggregating) service_.MarkUnreachable(device, now_us);
}

bool SecureAggregateJob::succeeded() const {
  if (phase_ != Phase::kFinished || summaries_.size() != options_.aggregations) return false;
  return std::all_of(summaries_.begin(), summaries_.end(), [](const AggregationSummary& s) { return s.verified; });
}

std::string SecureAggregateJob::ProgressLine() const {
  switch (phase_) {
    case Phase::kIdle: return "not started";
    case Phase::kAggregating: {
      std::string step = "?";
      if (current_ != 0) {
        step = std::string(secagg::StepName(service_.result(current_).step)) + ", " +
               std::to_string(service_.awaited(current_)) + " devices still awaited";
      }
      return "aggregation " + std::to_string(summaries_.size()) + "/" + std::to_string(options_.aggregations) +
             ": step " + step;
    }
    case Phase::kReporting:
      return "reports " + std::to_string(reported_.size()) + "/" + std::to_string(participants_.size());
    case Phase::kFinished: return succeeded() ? "finished: every sum verified" : "finished: NOT every sum verified";
  }
  return "";
}

void SecureAggregateJob::LogSummary(Logger& log, uint64_t job_id) const {
  for (const AggregationSummary& s : summaries_) {
    log.Info("secagg_aggregation", {{"job", job_id},
                                    {"aggregation", s.id},
                                    {"done", s.done},
                                    {"verified", s.verified},
                                    {"outcome", s.outcome},
                                    {"participants", s.participants},
                                    {"included", s.included},
                                    {"dropped_by_job", s.dropped_by_job},
                                    {"mean_peers", s.mean_peers},
                                    {"wall_ms", s.wall_ms},
                                    {"unmask_ms", s.unmask_ms},
                                    {"scalar_multiplications", s.scalar_multiplications},
                                    {"device_bytes_up_mean", s.mean_device_bytes_up},
                                    {"device_bytes_down_mean", s.mean_device_bytes_down}});
  }
  const secagg::AggregationTotals& t = service_.totals();
  log.Info("secagg_summary", {{"job", job_id},
                              {"aggregations", static_cast<uint64_t>(summaries_.size())},
                              {"verified", static_cast<uint64_t>(std::count_if(
                                               summaries_.begin(), summaries_.end(),
                                               [](const AggregationSummary& s) { return s.verified; }))},
                              {"records_rejected", t.records_rejected},
                              {"records_late", t.records_late},
                              {"reports", static_cast<uint64_t>(reported_.size())},
                              {"clean_reports", static_cast<uint64_t>(clean_reports_)},
                              {"protocol_errors", protocol_errors_},
                              {"succeeded", succeeded()}});
}

}  // namespace nodefl::server::jobs
