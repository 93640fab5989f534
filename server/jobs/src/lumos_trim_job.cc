// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/jobs/lumos_trim_job.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "nodefl/core/little_endian.h"
#include "nodefl/server/jobs/lumos_kept_lists.h"

namespace nodefl::server::jobs {

namespace tf = nodefl::lumos;

namespace {

constexpr uint32_t kRoundReady = 1;
constexpr size_t kIdsPerRecord = sizeof(nodefl_wire_JobData{}.data.bytes) / 4;

double Seconds(uint64_t from_us, uint64_t to_us) { return static_cast<double>(to_us - from_us) / 1e6; }

std::vector<uint8_t> Parameters(const tf::TrimRoundParameters& p) {
  std::vector<uint8_t> out(tf::kTrimParametersBytes);
  (void)tf::EncodeTrimParameters(p, ByteSpan(out));
  return out;
}

}  // namespace

LumosTrimJob::LumosTrimJob(LumosTrimOptions options, std::vector<uint32_t> participants,
                           std::vector<std::pair<uint32_t, uint32_t>> edges)
    : options_(std::move(options)), participants_(std::move(participants)), edges_(std::move(edges)) {
  std::sort(participants_.begin(), participants_.end());
  participants_.erase(std::unique(participants_.begin(), participants_.end()), participants_.end());
  for (uint32_t id : participants_) devices_[id];
  pending_ready_ = static_cast<uint32_t>(participants_.size());
  summary_.participants = static_cast<uint32_t>(participants_.size());
}

std::vector<RoundStart> LumosTrimJob::Begin(uint64_t now_us) {
  phase_ = Phase::kReady;
  round_started_us_ = now_us;
  if (participants_.empty()) {
    summary_.error = "no participants";
    Finish(now_us);
    return {};
  }
  RoundStart start;
  start.round = kRoundReady;
  start.deadline_ms = options_.round_deadline_ms;
  start.parameters = Parameters({.phase = tf::TrimPhase::kReady});
  start.devices = participants_;
  std::vector<RoundStart> out;
  out.push_back(std::move(start));
  return out;
}

void LumosTrimJob::MarkAbsent(uint32_t device) {
  Device& d = devices_[device];
  if (d.absent) return;
  // The counters the rounds wait on (kept, not recounted: a round must not
  // cost O(devices) per message).
  if (phase_ == Phase::kReady && !d.responded) --pending_ready_;
  if (phase_ == Phase::kDraining && d.ready && d.outcome_step != current_.step) --waiting_;
  d.absent = true;
  any_absent_ = true;
  summary_.absent.push_back(device);
  absent_unannounced_.push_back(device);
}

std::vector<RoundStart> LumosTrimJob::OnReport(uint32_t device, uint32_t round, const nodefl_wire_JobReport& report,
                                               uint64_t now_us) {
  auto it = devices_.find(device);
  if (it == devices_.end()) {
    ++summary_.protocol_errors;
    return {};
  }
  Device& d = it->second;
  if (round == kRoundReady && phase_ == Phase::kReady && !d.responded && !d.absent) {
    d.responded = true;
    --pending_ready_;
    if (report.code == static_cast<uint32_t>(StatusCode::kOk)) {
      d.ready = true;
      ++summary_.ready;
    } else {
      summary_.refused.push_back(device);
      MarkAbsent(device);
    }
  } else if (phase_ == Phase::kReport && round == ReportRound() && d.in_report && !d.reported) {
    d.reported = true;
    --pending_reports_;
    if (report.code != static_cast<uint32_t>(StatusCode::kOk)) ++summary_.uncovered_local;  // DATA_LOSS: its own check failed
  } else {
    ++summary_.ignored;
  }
  return Poll(now_us);
}

std::vector<RoundStart> LumosTrimJob::OnUpload(uint32_t device, uint32_t round, uint32_t kind,
                                               std::vector<uint8_t> bytes, uint64_t now_us) {
  auto it = devices_.find(device);
  if (it == devices_.end()) {
    ++summary_.protocol_errors;
    return {};
  }
  Device& d = it->second;
  const ConstByteSpan span(bytes.data(), bytes.size());
  switch (kind) {
    case tf::kTrimSummary: {
      Result<tf::TrimSummary> s = tf::DecodeTrimSummary(span);
      if (!s.ok()) {
        ++summary_.protocol_errors;
        return {};
      }
      if (round == kRoundReady) {
        d.ready_summary = *s;
      } else if (phase_ == Phase::kReport && round == ReportRound()) {
        d.summary = *s;
        d.has_summary = true;
      } else {
        ++summary_.ignored;
      }
      return {};
    }
    case tf::kTrimStepOutcome: {
      Result<tf::TrimStepOutcome> o = tf::DecodeTrimStepOutcome(span);
      if (!o.ok()) {
        ++summary_.protocol_errors;
        return {};
      }
      // Only the running step's outcomes count; late ones were decided by
      // its deadline.
      if (phase_ != Phase::kDraining || o->step != controller_.step() || d.absent || !d.ready ||
          d.outcome_step == o->step) {
        ++summary_.ignored;
        return {};
      }
      d.outcome_step = o->step;
      --waiting_;
      ++current_.outcomes;
      if (o->root) ++current_.roots;
      current_.relief += o->relief;
      current_.still_over = current_.still_over || o->still_over;
      return Poll(now_us);
    }
    case tf::kTrimKept: {
      if (phase_ != Phase::kReport || round != ReportRound() || !options_.upload_kept || bytes.size() % 4 != 0 ||
          d.reported) {
        ++summary_.protocol_errors;
        return {};
      }
      AppendKept(bytes, d.kept);
      return {};
    }
    default:
      ++summary_.protocol_errors;
      return {};
  }
}

std::vector<RoundStart> LumosTrimJob::StartStep(uint64_t now_us) {
  round_started_us_ = now_us;
  current_ = LumosTrimStep{};
  current_.step = controller_.step();
  current_.threshold = controller_.threshold();
  if (drain_begins_) summary_.thresholds.push_back(current_.threshold);
  drain_begins_ = false;
  RoundStart start;
  start.round = current_.step + 1;
  start.deadline_ms = options_.step_deadline_ms;
  start.parameters = Parameters(
      {.phase = tf::TrimPhase::kDrain, .threshold = current_.threshold, .step = current_.step});
  for (const auto& [id, d] : devices_) {
    if (d.ready && !d.absent) start.devices.push_back(id);
  }
  current_.devices = static_cast<uint32_t>(start.devices.size());
  waiting_ = current_.devices;
  // Tell the active devices who left (after their round start; the devices
  // take it in either order).
  if (!absent_unannounced_.empty()) {
    for (size_t first = 0; first < absent_unannounced_.size(); first += kIdsPerRecord) {
      const size_t n = std::min(kIdsPerRecord, absent_unannounced_.size() - first);
      std::vector<uint8_t> bytes(4 * n);
      for (size_t i = 0; i < n; ++i) StoreU32Le(absent_unannounced_[first + i], bytes.data() + 4 * i);
      for (uint32_t id : start.devices) data_.push_back(DeviceData{id, start.round, tf::kTrimAbsent, bytes});
    }
    absent_unannounced_.clear();
  }
  std::vector<RoundStart> out;
  if (start.devices.empty()) return StartReport(now_us);
  out.push_back(std::move(start));
  return out;
}

std::vector<RoundStart> LumosTrimJob::EndStep(uint64_t now_us, bool deadline) {
  current_.deadline = deadline;
  current_.seconds = Seconds(round_started_us_, now_us);
  uint32_t missing = 0;
  for (auto& [id, d] : devices_) {
    if (!d.ready || d.absent || d.outcome_step == current_.step) continue;
    // Silent at the deadline (or unreachable): it may be a root still over
    // the threshold; it takes no further part.
    ++missing;
    MarkAbsent(id);
  }
  const bool still_over = current_.still_over || missing > 0;
  summary_.steps.push_back(current_);
  const uint32_t drains = controller_.schedule().drains();
  controller_.EndStep(still_over, current_.relief);
  drain_begins_ = controller_.schedule().drains() != drains;
  if (controller_.done() || controller_.step() > options_.max_steps) {
    if (!controller_.done()) summary_.error = "step limit reached";
    return StartReport(now_us);
  }
  return StartStep(now_us);
}

std::vector<RoundStart> LumosTrimJob::StartReport(uint64_t now_us) {
  if (phase_ == Phase::kDraining) summary_.seconds_drains = Seconds(drains_started_us_, now_us);
  phase_ = Phase::kReport;
  round_started_us_ = now_us;
  summary_.optimum = controller_.schedule().optimum();
  RoundStart start;
  start.round = ReportRound();
  start.deadline_ms = options_.round_deadline_ms;
  start.parameters = Parameters({.phase = tf::TrimPhase::kReport, .upload_kept = options_.upload_kept});
  // Every device that started, absent or not: its state counts.
  for (auto& [id, d] : devices_) {
    if (!d.ready || d.offline) continue;
    d.in_report = true;
    start.devices.push_back(id);
  }
  pending_reports_ = static_cast<uint32_t>(start.devices.size());
  std::vector<RoundStart> out;
  if (start.devices.empty()) {
    Finish(now_us);
    return out;
  }
  out.push_back(std::move(start));
  return out;
}

std::vector<DeviceData> LumosTrimJob::TakeData() { return std::exchange(data_, {}); }

void LumosTrimJob::OnUndeliverable(uint32_t device, uint64_t) {
  auto it = devices_.find(device);
  if (it == devices_.end()) return;
  if (phase_ == Phase::kReport && it->second.in_report && !it->second.reported && !it->second.offline) {
    --pending_reports_;
  }
  it->second.offline = true;
  // Offline at a step's start: it will not answer this step's searches.
  if (phase_ == Phase::kDraining || phase_ == Phase::kReady) MarkAbsent(device);
}

std::vector<RoundStart> LumosTrimJob::Poll(uint64_t now_us) {
  const uint64_t elapsed_us = now_us - round_started_us_;
  switch (phase_) {
    case Phase::kReady: {
      if (pending_ready_ > 0 && elapsed_us <= uint64_t{options_.round_deadline_ms} * 1000) return {};
      for (auto& [id, d] : devices_) {
        if (!d.responded && !d.absent) {
          summary_.missed_ready.push_back(id);
          MarkAbsent(id);
        }
      }
      summary_.seconds_ready = Seconds(round_started_us_, now_us);
      uint32_t greedy_max = 0;
      uint64_t greedy_sum = 0, ready = 0;
      for (const auto& [id, d] : devices_) {
        if (!d.ready) continue;
        greedy_max = std::max(greedy_max, d.ready_summary.greedy_workload);
        summary_.start_max = std::max(summary_.start_max, d.ready_summary.workload);
        greedy_sum += d.ready_summary.greedy_workload;
        ++ready;
      }
      summary_.greedy_max = greedy_max;
      summary_.greedy_mean = ready ? static_cast<double>(greedy_sum) / static_cast<double>(ready) : 0;
      // The whole graph's density bounds the optimum from below; with
      // devices missing the bound is not about the graph the drains see.
      controller_ = nodefl::server::lumos::DrainController(
          any_absent_ ? 0 : nodefl::server::lumos::KnownInfeasible(edges_.size(), participants_.size()));
      phase_ = Phase::kDraining;
      drains_started_us_ = now_us;
      return StartStep(now_us);
    }
    case Phase::kDraining: {
      if (waiting_ == 0) return EndStep(now_us, false);
      if (elapsed_us > uint64_t{options_.step_deadline_ms} * 1000) return EndStep(now_us, true);
      return {};
    }
    case Phase::kReport: {
      if (pending_reports_ == 0 || elapsed_us > uint64_t{options_.round_deadline_ms} * 1000) Finish(now_us);
      return {};
    }
    case Phase::kIdle:
    case Phase::kFinished:
      return {};
  }
  return {};
}

std::map<uint32_t, uint32_t> LumosTrimJob::Workloads() const {
  std::map<uint32_t, uint32_t> out;
  for (const auto& [id, d] : devices_) {
    if (d.has_summary) out[id] = d.summary.workload;
  }
  return out;
}

void LumosTrimJob::Finish(uint64_t now_us) {
  if (phase_ == Phase::kReport) summary_.seconds_report = Seconds(round_started_us_, now_us);
  phase_ = Phase::kFinished;
  uint64_t sum = 0, n = 0;
  for (auto& [id, d] : devices_) {
    if (d.ready && !d.reported) summary_.missed_report.push_back(id);
    if (!d.has_summary) continue;
    summary_.max_workload = std::max(summary_.max_workload, d.summary.workload);
    sum += d.summary.workload;
    ++n;
    summary_.messages += d.summary.messages_sent;
    summary_.uncovered_local += d.summary.uncovered;
    summary_.unsettled += d.summary.unsettled;
    std::sort(d.kept.begin(), d.kept.end());
  }
  summary_.mean_workload = n ? static_cast<double>(sum) / static_cast<double>(n) : 0;
  if (options_.upload_kept) {
    const KeptCoverage coverage = CheckKeptCoverage(edges_, devices_);
    summary_.uncovered_edges = coverage.uncovered;
    summary_.unverified_edges = coverage.unverified;
  }
  const bool everyone = summary_.absent.empty() && summary_.missed_report.empty();
  const bool no_deadline = std::none_of(summary_.steps.begin(), summary_.steps.end(),
                                        [](const LumosTrimStep& s) { return s.deadline; });
  // Edges kept twice (after aborted comparisons) are parallel work the
  // drains cannot see as one edge: the maximum may then sit above the
  // optimum, so nothing is certified.
  summary_.certified = everyone && no_deadline && summary_.unsettled == 0 && controller_.done() &&
                       summary_.max_workload == summary_.optimum;
  if (!options_.output_dir.empty()) WriteOutputs();
}

void LumosTrimJob::WriteOutputs() {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(options_.output_dir, ec);
  const fs::path workloads = fs::path(options_.output_dir) / "lumos-workloads.tsv";
  {
    std::ofstream out(workloads);
    out << "vertex\tgreedy\tworkload\n";
    for (const auto& [id, d] : devices_) {
      out << id << '\t';
      if (d.ready) {
        out << d.ready_summary.greedy_workload;
      } else {
        out << '-';
      }
      out << '\t';
      if (d.has_summary) {
        out << d.summary.workload;
      } else {
        out << '-';
      }
      out << '\n';
    }
    if (!out) {
      summary_.error = "writing " + workloads.string();
      return;
    }
  }
  summary_.workloads_path = workloads.string();
  const fs::path steps = fs::path(options_.output_dir) / "lumos-trim-steps.tsv";
  {
    std::ofstream out(steps);
    out << "step\tthreshold\tdevices\toutcomes\troots\trelief\tstill_over\tdeadline\tseconds\n";
    for (const LumosTrimStep& s : summary_.steps) {
      out << s.step << '\t' << s.threshold << '\t' << s.devices << '\t' << s.outcomes << '\t' << s.roots << '\t'
          << s.relief << '\t' << (s.still_over ? 1 : 0) << '\t' << (s.deadline ? 1 : 0) << '\t' << s.seconds
          << '\n';
    }
    if (!out) {
      summary_.error = "writing " + steps.string();
      return;
    }
  }
  summary_.steps_path = steps.string();
  if (!options_.upload_kept) return;
  const fs::path trees = fs::path(options_.output_dir) / "lumos-trees.tsv";
  if (!WriteKeptTrees(trees, devices_)) {
    summary_.error = "writing " + trees.string();
    return;
  }
  summary_.trees_path = trees.string();
}

bool LumosTrimJob::succeeded() const {
  return finished() && summary_.error.empty() && summary_.refused.empty() && summary_.missed_ready.empty() &&
         summary_.missed_report.empty() && summary_.uncovered_local == 0 && summary_.uncovered_edges == 0 &&
         summary_.unverified_edges == 0 && summary_.protocol_errors == 0 && summary_.certified;
}

std::string LumosTrimJob::ProgressLine() const {
  std::ostringstream o;
  switch (phase_) {
    case Phase::kReady:
      o << "lumos-trim round 1 (ready)";
      break;
    case Phase::kDraining: {
      o << "lumos-trim step " << current_.step << " at threshold " << current_.threshold << ": " << current_.outcomes
        << "/" << current_.devices << " outcomes (" << waiting_ << " waiting), " << current_.roots << " roots, relief "
        << current_.relief << "; drains " << summary_.thresholds.size();
      break;
    }
    case Phase::kReport:
      o << "lumos-trim report round";
      break;
    default:
      o << (finished() ? "finished" : "idle");
  }
  return o.str();
}

void LumosTrimJob::LogSummary(Logger& log, uint64_t job_id) const {
  const LumosTrimSummary& s = summary_;
  std::string thresholds;
  for (uint32_t t : s.thresholds) thresholds += (thresholds.empty() ? "" : ",") + std::to_string(t);
  uint32_t deadline_steps = 0;
  for (const LumosTrimStep& st : s.steps) deadline_steps += st.deadline ? 1 : 0;
  log.Info("job_finished", {{"job", job_id},
                            {"kind", "lumos-trim"},
                            {"verified", succeeded()},
                            {"participants", s.participants},
                            {"ready", s.ready},
                            {"refused", s.refused.size()},
                            {"missed_ready", s.missed_ready.size()},
                            {"absent", s.absent.size()},
                            {"missed_report", s.missed_report.size()},
                            {"greedy_max_workload", s.greedy_max},
                            {"greedy_mean_workload", s.greedy_mean},
                            {"start_max_workload", s.start_max},
                            {"max_workload", s.max_workload},
                            {"mean_workload", s.mean_workload},
                            {"optimum", s.optimum},
                            {"certified", s.certified},
                            {"steps", s.steps.size()},
                            {"drains", s.thresholds.size()},
                            {"thresholds", thresholds},
                            {"deadline_steps", deadline_steps},
                            {"secure_comparisons", 0},
                            {"messages", s.messages},
                            {"sealed_bytes", s.messages * kSealedMessageBytes},
                            {"uncovered_local", s.uncovered_local},
                            {"unsettled", s.unsettled},
                            {"uncovered_edges", s.uncovered_edges},
                            {"unverified_edges", s.unverified_edges},
                            {"seconds_ready", s.seconds_ready},
                            {"seconds_drains", s.seconds_drains},
                            {"seconds_report", s.seconds_report},
                            {"workloads_file", s.workloads_path},
                            {"steps_file", s.steps_path},
                            {"trees_file", s.trees_path},
                            {"ignored", s.ignored},
                            {"error", s.error},
                            {"protocol_errors", s.protocol_errors}});
  log.Info("privacy_ledger",
           {{"job", job_id},
            {"phase", "lumos-trim"},
            {"note",
             "server learns: per step which devices were above the public threshold and how many edges each root "
             "shed; each device's workload; with kept lists (paper mode) the orientation; no degree in any message"},
            {"kept_lists_uploaded", options_.upload_kept}});
}

}  // namespace nodefl::server::jobs
