// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/jobs/lumos_mcmc_job.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <utility>

#include "nodefl/core/little_endian.h"
#include "nodefl/protocol/limits.h"
#include "nodefl/server/core/os_random.h"
#include "nodefl/server/jobs/lumos_kept_lists.h"

namespace nodefl::server::jobs {

namespace mf = nodefl::lumos;
namespace cmp = nodefl::compare;
namespace svc = nodefl::server::compare_service;

namespace {

constexpr uint32_t kRoundKeys = 1, kRoundIterate = 2, kRoundReport = 3;
constexpr size_t kJobDataBytes = sizeof(nodefl_wire_JobData{}.data.bytes);
constexpr size_t kStartsPerRecord = kJobDataBytes / mf::kMcmcSessionStartBytes;
constexpr size_t kIdsPerRecord = kJobDataBytes / 4;
// Steps of one iteration at most: Alg. 3 twice (two comparison steps
// each), the move, line 7 and the revert.
constexpr uint64_t kStepsPerIteration = 7;

double Seconds(uint64_t from_us, uint64_t to_us) { return static_cast<double>(to_us - from_us) / 1e6; }

uint64_t SeedOf(const LumosMcmcOptions& o) {
  if (o.seed != 0) return o.seed;
  std::random_device device;
  return (uint64_t{device()} << 32) ^ uint64_t{device()};
}

std::vector<uint8_t> U32Record(uint32_t value) {
  std::vector<uint8_t> bytes(4);
  StoreU32Le(value, bytes.data());
  return bytes;
}

std::string AtIteration(std::string what, uint32_t iteration) {
  return std::move(what) + " at iteration " + std::to_string(iteration);
}

}  // namespace

std::string_view LumosMcmcOutcomeName(LumosMcmcOutcome outcome) {
  switch (outcome) {
    case LumosMcmcOutcome::kSkipped:
      return "skipped";
    case LumosMcmcOutcome::kAcceptedLower:
      return "accepted-lower";
    case LumosMcmcOutcome::kAcceptedEqual:
      return "accepted-equal";
    case LumosMcmcOutcome::kAcceptedHigher:
      return "accepted-higher";
    case LumosMcmcOutcome::kRejectedHigher:
      return "rejected-higher";
    case LumosMcmcOutcome::kRejectedAborted:
      return "rejected-aborted";
  }
  return "?";
}

LumosMcmcJob::LumosMcmcJob(LumosMcmcOptions options, std::vector<uint32_t> participants,
                           std::vector<std::pair<uint32_t, uint32_t>> edges)
    : options_(std::move(options)), participants_(std::move(participants)), edges_(std::move(edges)) {
  std::sort(participants_.begin(), participants_.end());
  participants_.erase(std::unique(participants_.begin(), participants_.end()), participants_.end());
  for (uint32_t id : participants_) devices_[id];
  pending_keys_ = static_cast<uint32_t>(participants_.size());
  summary_.participants = static_cast<uint32_t>(participants_.size());
  summary_.seed = SeedOf(options_);
  rng_.seed(summary_.seed);
  if (options_.width == 0) {
    // A workload never exceeds the degree, and the server knows every degree
    // (the greedy job's edges; the relay shows them anyway): the narrowest
    // width that holds the largest one. Base-OT comparisons cost CPU in
    // proportion to the width (docs/secure-comparison.md), so this is what
    // makes the MCMC affordable at all.
    std::map<uint32_t, uint32_t> degree;
    uint32_t max_degree = 1;
    for (const auto& [a, b] : edges_) {
      max_degree = std::max({max_degree, ++degree[a], ++degree[b]});
    }
    uint8_t bits = 1;
    while (bits < 32 && (max_degree >> bits) != 0) ++bits;
    options_.width = bits;
  }
}

std::vector<uint8_t> LumosMcmcJob::Parameters(mf::McmcPhase phase) const {
  mf::McmcRoundParameters p;
  p.phase = phase;
  p.upload_kept = phase == mf::McmcPhase::kReport && options_.upload_kept;
  std::copy(std::begin(salt_), std::end(salt_), std::begin(p.salt));
  p.width = options_.width;
  p.digit_bits = options_.digit_bits;
  p.mode = options_.mode;
  p.max_sessions = options_.max_sessions;
  std::vector<uint8_t> out(mf::kMcmcParametersBytes);
  if (!mf::EncodeMcmcParameters(p, ByteSpan(out)).ok()) out.clear();
  return out;
}

std::vector<RoundStart> LumosMcmcJob::Begin(uint64_t now_us) {
  phase_ = Phase::kKeys;
  round_started_us_ = now_us;
  // One public salt for the whole job, from the OS (never the seeded
  // generator: a rerun with the same seed must not reuse it).
  FillFromOsEntropy(salt_);
  RoundStart start;
  start.round = kRoundKeys;
  start.deadline_ms = options_.round_deadline_ms;
  start.parameters = Parameters(mf::McmcPhase::kKeys);
  if (participants_.empty() || start.parameters.empty()) {
    summary_.error = participants_.empty() ? "no participants" : "invalid round parameters (width, digits, sessions)";
    Finish(now_us);
    return {};
  }
  start.devices = participants_;
  std::vector<RoundStart> out;
  out.push_back(std::move(start));
  return out;
}

bool LumosMcmcJob::Active(uint32_t device) const {
  auto it = devices_.find(device);
  return it != devices_.end() && it->second.ready && !it->second.absent;
}

void LumosMcmcJob::MarkAbsent(uint32_t device) {
  Device& d = devices_[device];
  if (d.absent) return;
  if (phase_ == Phase::kKeys && !d.responded) --pending_keys_;
  d.absent = true;
  summary_.absent.push_back(device);
}

std::vector<RoundStart> LumosMcmcJob::OnReport(uint32_t device, uint32_t round, const nodefl_wire_JobReport& report,
                                               uint64_t now_us) {
  auto it = devices_.find(device);
  if (it == devices_.end()) {
    ++summary_.protocol_errors;
    return {};
  }
  Device& d = it->second;
  if (round == kRoundKeys && phase_ == Phase::kKeys && !d.responded && !d.absent) {
    d.responded = true;
    --pending_keys_;
    if (report.code == static_cast<uint32_t>(StatusCode::kOk)) {
      d.ready = true;
      ++summary_.ready;
    } else {
      // kFailedPrecondition: it holds no greedy result to start from.
      summary_.refused.push_back(device);
      MarkAbsent(device);
    }
  } else if (round == kRoundReport && phase_ == Phase::kReport && d.in_report && !d.reported) {
    d.reported = true;
    if (!d.offline) --pending_reports_;
    if (report.code != static_cast<uint32_t>(StatusCode::kOk)) ++summary_.report_errors;
  } else {
    ++summary_.ignored;
  }
  return Poll(now_us);
}

std::vector<RoundStart> LumosMcmcJob::OnUpload(uint32_t device, uint32_t round, uint32_t kind,
                                               std::vector<uint8_t> bytes, uint64_t now_us) {
  auto it = devices_.find(device);
  if (it == devices_.end()) {
    ++summary_.protocol_errors;
    return {};
  }
  Device& d = it->second;
  const ConstByteSpan span(bytes.data(), bytes.size());
  switch (kind) {
    case mf::kMcmcSessionResult: {
      Result<cmp::SessionResult> result = cmp::DecodeSessionResult(span);
      if (!result.ok() || round != kRoundIterate) {
        ++summary_.protocol_errors;
        return {};
      }
      // Ids at or below the base belong to steps already closed: answers
      // to their cancels, or results the step's deadline overtook.
      if (result->session <= id_base_ || phase_ != Phase::kIterate) {
        ++summary_.late_results;
        return {};
      }
      if (!service_ || result->session - id_base_ > service_->sessions().size()) {
        ++summary_.protocol_errors;
        return {};
      }
      result->session -= id_base_;
      service_->OnResult(device, *result, now_us);
      return Poll(now_us);
    }
    case mf::kMcmcMoveDone: {
      Result<mf::McmcMoveDone> done = mf::DecodeMcmcMoveDone(span);
      if (!done.ok() || round != kRoundIterate) {
        ++summary_.protocol_errors;
        return {};
      }
      // Only the answer the running step waits for counts; anything else
      // is late (its step was decided by a deadline) or misplaced.
      const bool waiting = phase_ == Phase::kIterate && (step_ == Step::kMove || step_ == Step::kRevert) &&
                           device == current_.u && done->iteration == current_.iteration &&
                           done->reverted == (step_ == Step::kRevert) && !answer_;
      if (!waiting) {
        ++summary_.ignored;
        return {};
      }
      answer_ = *done;
      return Poll(now_us);
    }
    case mf::kMcmcKept: {
      if (phase_ != Phase::kReport || round != kRoundReport || !options_.upload_kept || bytes.size() % 4 != 0 ||
          !d.in_report || d.reported) {
        ++summary_.protocol_errors;
        return {};
      }
      AppendKept(span, d.kept);
      return {};
    }
    case mf::kMcmcSummary: {
      Result<mf::McmcSummary> s = mf::DecodeMcmcSummary(span);
      if (!s.ok()) {
        ++summary_.protocol_errors;
        return {};
      }
      if (phase_ != Phase::kReport || round != kRoundReport || !d.in_report || d.reported) {
        ++summary_.ignored;
        return {};
      }
      d.summary = *s;
      d.has_summary = true;
      return {};
    }
    default:
      ++summary_.protocol_errors;
      return {};
  }
}

// ---- Round 2: Lumos Alg. 2 --------------------------------------------------

std::vector<RoundStart> LumosMcmcJob::StartIterations(uint64_t now_us) {
  summary_.seconds_keys = Seconds(round_started_us_, now_us);
  phase_ = Phase::kIterate;
  round_started_us_ = now_us;
  RoundStart start;
  start.round = kRoundIterate;
  // Devices hold the round open until round 3 starts; the server keeps the
  // steps' own deadlines, so this one only has to outlast every step.
  const uint64_t longest_ms = kStepsPerIteration * uint64_t{options_.step_deadline_ms} * options_.iterations;
  start.deadline_ms = static_cast<uint32_t>(std::min<uint64_t>(longest_ms, std::numeric_limits<uint32_t>::max()));
  start.parameters = Parameters(mf::McmcPhase::kIterate);
  for (const auto& [id, d] : devices_) {
    if (Active(id)) start.devices.push_back(id);
  }
  std::vector<RoundStart> out;
  if (start.devices.empty()) {
    summary_.stop_reason = "no device ready";
    return StartReport(now_us);
  }
  out.push_back(std::move(start));
  BeginIteration(now_us);
  Drive(now_us);
  for (RoundStart& s : std::exchange(starts_, {})) out.push_back(std::move(s));
  return out;
}

void LumosMcmcJob::BeginIteration(uint64_t now_us) {
  if (iterations_.size() >= options_.iterations) {
    for (RoundStart& s : StartReport(now_us)) starts_.push_back(std::move(s));
    return;
  }
  current_ = LumosMcmcIteration{};
  current_.iteration = static_cast<uint32_t>(iterations_.size()) + 1;
  iteration_started_us_ = now_us;
  picking_u2_ = false;
  StartNeighbourStep(now_us);  // Alg. 2 line 2
}

void LumosMcmcJob::NewComparisonStep(Step step, uint64_t now_us) {
  svc::ServiceOptions o;
  o.max_sessions_per_device = options_.max_sessions;
  o.session_timeout_us = uint64_t{options_.session_timeout_ms} * 1000;
  service_ = std::make_unique<svc::ComparisonService>(o);
  values_.clear();
  step_ = step;
  step_started_us_ = now_us;
}

void LumosMcmcJob::AddSession(uint32_t a, uint32_t b, SessionValues values) {
  service_->Add(a, b, 1);
  values_.push_back(values);
}

void LumosMcmcJob::CloseComparisonStep() {
  if (!service_) return;
  const svc::ServiceTotals& t = service_->totals();
  summary_.sessions += t.sessions;
  summary_.comparisons += t.done;
  summary_.sessions_aborted += t.aborted;
  summary_.session_bytes += t.bytes_sent;
  summary_.late_results += t.late_reports;
  summary_.service_protocol_errors += t.protocol_errors;
  current_.comparisons += t.done;
  id_base_ += static_cast<uint32_t>(service_->sessions().size());
  service_.reset();
  values_.clear();
}

// Lumos Alg. 3 operation 1: one comparison per edge between active devices
// (party A the lower id); an absent device's edges carry no information.
void LumosMcmcJob::StartNeighbourStep(uint64_t now_us) {
  NewComparisonStep(Step::kNeighbourCompare, now_us);
  for (const auto& [x, y] : edges_) {
    if (x == y || !Active(x) || !Active(y)) continue;
    AddSession(std::min(x, y), std::max(x, y), {});
  }
  Pump(now_us);
}

// Alg. 3 operation 2: every pair of candidates (C(|CVS|, 2), inherent).
void LumosMcmcJob::StartCandidateStep(const std::vector<uint32_t>& candidates, uint64_t now_us) {
  candidates_ = candidates;
  NewComparisonStep(Step::kCandidateCompare, now_us);
  for (size_t i = 0; i < candidates_.size(); ++i) {
    for (size_t j = i + 1; j < candidates_.size(); ++j) AddSession(candidates_[i], candidates_[j], {});
  }
  Pump(now_us);
}

// A device is a candidate unless a neighbour is known to hold strictly
// more (ties at a local maximum keep both, as in the reference).
std::vector<uint32_t> LumosMcmcJob::Candidates() const {
  std::set<uint32_t> exceeded;
  for (const svc::Session& s : service_->sessions()) {
    if (!s.has_result()) continue;  // aborted: neither is known to exceed the other
    if (s.greater(0)) {
      exceeded.insert(s.b);
    } else if (!s.equal(0)) {
      exceeded.insert(s.a);
    }
  }
  std::vector<uint32_t> out;
  for (const auto& [id, d] : devices_) {
    if (Active(id) && !exceeded.contains(id)) out.push_back(id);
  }
  return out;
}

// The candidates no other candidate is known to exceed (Alg. 3 footnote:
// the server picks uniformly among them).
std::vector<uint32_t> LumosMcmcJob::Largest() const {
  std::set<uint32_t> exceeded;
  for (const svc::Session& s : service_->sessions()) {
    if (!s.has_result()) continue;
    if (s.greater(0)) {
      exceeded.insert(s.b);
    } else if (!s.equal(0)) {
      exceeded.insert(s.a);
    }
  }
  std::vector<uint32_t> out;
  for (uint32_t id : candidates_) {
    if (Active(id) && !exceeded.contains(id)) out.push_back(id);
  }
  return out;
}

void LumosMcmcJob::PickedLargest(uint32_t device, uint64_t now_us) {
  if (!picking_u2_) {
    current_.u = device;  // line 2
    SendToPicked(mf::kMcmcMove, Step::kMove, now_us);
    return;
  }
  current_.u2 = device;  // line 6
  if (!Active(current_.u)) {
    StopIterations(AtIteration("device " + std::to_string(current_.u) + " unreachable after its move",
                               current_.iteration),
                   now_us);
    return;
  }
  StartLine7(now_us);
}

void LumosMcmcJob::StartLine7(uint64_t now_us) {
  if (current_.u2 == current_.u) {
    // u gave away moved >= 1 edges and is still the maximum: f' < f, no
    // comparison needed, Eq. 18 accepts.
    current_.delta_class = kDeltaLower;
    current_.accepted = true;
    current_.outcome = LumosMcmcOutcome::kAcceptedLower;
    LumosMcmcAcceptance& a = summary_.accepted_by_delta[kDeltaLower];
    ++a.proposed;
    ++a.accepted;
    FinishIteration(now_us);
    return;
  }
  // Line 7: x = f(X') held by u2 now, y = f(X) held by u before its move.
  NewComparisonStep(Step::kLine7Compare, now_us);
  AddSession(current_.u2, current_.u, {.a = mf::McmcValue::kWorkload, .b = mf::McmcValue::kBeforeMove});
  Pump(now_us);
}

void LumosMcmcJob::ResolveLine7(uint64_t now_us) {
  const svc::Session& s = service_->session(1);
  current_.compared = true;
  if (!s.has_result()) {
    // Nothing is known about f' - f: undoing the move is the choice that
    // cannot make the state worse (the documented choice, lumos_mcmc_job.h).
    current_.delta_class = kDeltaUnknown;
    current_.accepted = false;
    current_.outcome = LumosMcmcOutcome::kRejectedAborted;
  } else {
    // A vertex gains at most one edge per move, so f' <= f + 1: "greater"
    // means delta = +1, accepted with e^-1 (Lumos Eq. 18).
    current_.delta_class = s.greater(0) ? kDeltaHigher : (s.equal(0) ? kDeltaEqual : kDeltaLower);
    if (current_.delta_class == kDeltaHigher) {
      current_.accepted = std::uniform_real_distribution<double>(0.0, 1.0)(rng_) < std::exp(-1.0);
      current_.outcome = current_.accepted ? LumosMcmcOutcome::kAcceptedHigher : LumosMcmcOutcome::kRejectedHigher;
    } else {
      current_.accepted = true;
      current_.outcome =
          current_.delta_class == kDeltaEqual ? LumosMcmcOutcome::kAcceptedEqual : LumosMcmcOutcome::kAcceptedLower;
    }
    LumosMcmcAcceptance& a = summary_.accepted_by_delta[current_.delta_class];
    ++a.proposed;
    if (current_.accepted) ++a.accepted;
  }
  CloseComparisonStep();
  if (current_.accepted) {
    FinishIteration(now_us);
    return;
  }
  if (!Active(current_.u)) {
    StopIterations(AtIteration("device " + std::to_string(current_.u) + " unreachable before its revert",
                               current_.iteration),
                   now_us);
    return;
  }
  SendToPicked(mf::kMcmcRevert, Step::kRevert, now_us);
}

void LumosMcmcJob::SendToPicked(uint32_t kind, Step step, uint64_t now_us) {
  answer_.reset();
  step_ = step;
  step_started_us_ = now_us;
  data_.push_back(DeviceData{current_.u, kRoundIterate, kind, U32Record(current_.iteration)});
}

void LumosMcmcJob::FinishIteration(uint64_t now_us) {
  current_.seconds = Seconds(iteration_started_us_, now_us);
  if (current_.outcome == LumosMcmcOutcome::kSkipped) {
    ++summary_.skipped;
  } else if (current_.accepted) {
    ++summary_.accepted;
  } else {
    ++summary_.rejected;
  }
  ++summary_.iterations_run;
  iterations_.push_back(current_);
  BeginIteration(now_us);
}

void LumosMcmcJob::StopIterations(std::string reason, uint64_t now_us) {
  summary_.stop_reason = std::move(reason);
  for (RoundStart& s : StartReport(now_us)) starts_.push_back(std::move(s));
}

void LumosMcmcJob::Drive(uint64_t now_us) {
  while (phase_ == Phase::kIterate) {
    const bool comparing =
        step_ == Step::kNeighbourCompare || step_ == Step::kCandidateCompare || step_ == Step::kLine7Compare;
    const bool ended = comparing ? AdvanceComparisonStep(now_us) : AdvanceDeviceStep(now_us);
    if (!ended) return;
  }
}

bool LumosMcmcJob::AdvanceComparisonStep(uint64_t now_us) {
  service_->Poll(now_us);
  Pump(now_us);
  if (!service_->all_settled() || AwaitingCancelAnswers()) {
    if (now_us - step_started_us_ <= uint64_t{options_.step_deadline_ms} * 1000) return false;
    // What settled in time is what Alg. 3 / line 7 knows; the rest gives
    // no information.
    service_->AbortUnsettled(svc::AbortReason::kRoundEnded);
    Pump(now_us);
  }
  switch (step_) {
    case Step::kNeighbourCompare: {
      std::vector<uint32_t> candidates = Candidates();
      CloseComparisonStep();
      if (candidates.empty()) {
        StopIterations(AtIteration("no candidate", current_.iteration), now_us);
      } else {
        StartCandidateStep(candidates, now_us);
      }
      return true;
    }
    case Step::kCandidateCompare: {
      const std::vector<uint32_t> largest = Largest();
      CloseComparisonStep();
      if (largest.empty()) {
        StopIterations(AtIteration("no largest candidate", current_.iteration), now_us);
        return true;
      }
      const size_t pick =
          largest.size() == 1 ? 0 : std::uniform_int_distribution<size_t>(0, largest.size() - 1)(rng_);
      PickedLargest(largest[pick], now_us);
      return true;
    }
    case Step::kLine7Compare:
      ResolveLine7(now_us);
      return true;
    case Step::kMove:
    case Step::kRevert:
      break;
  }
  return false;
}

// A party of an aborted session holds its slot on the device until it
// answers the cancel; the next step's service cannot know, so the step
// waits for those answers too (within its deadline).
bool LumosMcmcJob::AwaitingCancelAnswers() const {
  for (const svc::Session& s : service_->sessions()) {
    if (!s.started) continue;
    if ((!s.report_a.reported && Active(s.a)) || (!s.report_b.reported && Active(s.b))) return true;
  }
  return false;
}

bool LumosMcmcJob::AdvanceDeviceStep(uint64_t now_us) {
  const std::string what = step_ == Step::kMove ? "move" : "revert";
  if (answer_) {
    const mf::McmcMoveDone done = *answer_;
    answer_.reset();
    if (step_ == Step::kRevert) {
      FinishIteration(now_us);
    } else if (done.moved == 0) {
      current_.outcome = LumosMcmcOutcome::kSkipped;  // u kept nothing to give
      FinishIteration(now_us);
    } else {
      current_.moved = done.moved;
      picking_u2_ = true;
      StartNeighbourStep(now_us);  // Alg. 2 line 6
    }
    return true;
  }
  // The devices keep every edge covered at every moment, so ending here
  // leaves a valid (if unfinished) orientation.
  if (!Active(current_.u)) {
    StopIterations(AtIteration(what + ": device " + std::to_string(current_.u) + " unreachable", current_.iteration),
                   now_us);
    return true;
  }
  if (now_us - step_started_us_ > uint64_t{options_.step_deadline_ms} * 1000) {
    StopIterations(AtIteration(what + " deadline", current_.iteration), now_us);
    return true;
  }
  return false;
}

void LumosMcmcJob::Pump(uint64_t now_us) {
  if (!service_) return;
  const auto starts = service_->Schedule(now_us);
  for (const auto& [device, ids] : service_->TakeCancels()) {
    for (size_t first = 0; first < ids.size(); first += kIdsPerRecord) {
      const size_t n = std::min(kIdsPerRecord, ids.size() - first);
      std::vector<uint8_t> bytes(4 * n);
      for (size_t i = 0; i < n; ++i) StoreU32Le(id_base_ + ids[first + i], bytes.data() + 4 * i);
      data_.push_back(DeviceData{device, kRoundIterate, mf::kMcmcSessionCancel, std::move(bytes)});
    }
  }
  for (const auto& [device, records] : starts) {
    for (size_t first = 0; first < records.size(); first += kStartsPerRecord) {
      const size_t n = std::min(kStartsPerRecord, records.size() - first);
      std::vector<uint8_t> bytes(mf::kMcmcSessionStartBytes * n);
      for (size_t i = 0; i < n; ++i) {
        const cmp::SessionStart& local = records[first + i];
        const SessionValues& values = values_[local.session - 1];
        mf::McmcSessionStart start;
        start.start = local;
        start.start.session = id_base_ + local.session;
        start.value = local.role == cmp::Role::kA ? values.a : values.b;
        mf::EncodeMcmcSessionStart(start, bytes.data() + mf::kMcmcSessionStartBytes * i);
      }
      data_.push_back(DeviceData{device, kRoundIterate, mf::kMcmcSessionStart, std::move(bytes)});
    }
  }
}

// ---- Rounds 1 and 3 ---------------------------------------------------------

std::vector<RoundStart> LumosMcmcJob::StartReport(uint64_t now_us) {
  if (phase_ == Phase::kIterate) summary_.seconds_iterations = Seconds(round_started_us_, now_us);
  if (service_) {
    // No cancels: the round-3 start ends whatever a device still runs, and
    // round-2 records after it would only confuse it.
    service_->AbortUnsettled(svc::AbortReason::kRoundEnded);
    (void)service_->TakeCancels();
    CloseComparisonStep();
  }
  data_.clear();
  answer_.reset();
  phase_ = Phase::kReport;
  round_started_us_ = now_us;
  RoundStart start;
  start.round = kRoundReport;
  start.deadline_ms = options_.round_deadline_ms;
  start.parameters = Parameters(mf::McmcPhase::kReport);
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

std::vector<DeviceData> LumosMcmcJob::TakeData() { return std::exchange(data_, {}); }

void LumosMcmcJob::OnUndeliverable(uint32_t device, uint64_t now_us) {
  auto it = devices_.find(device);
  if (it == devices_.end()) return;
  Device& d = it->second;
  switch (phase_) {
    case Phase::kKeys:
      // It would miss round 2's start: absent from now on.
      d.offline = true;
      MarkAbsent(device);
      break;
    case Phase::kIterate:
      d.offline = true;
      if (!d.ready) break;
      // Its sessions abort (no information); the next Poll decides whether
      // the running step can go on without it.
      if (service_) service_->MarkUnreachable(device);
      MarkAbsent(device);
      Pump(now_us);
      break;
    case Phase::kReport:
      if (d.in_report && !d.reported && !d.offline) --pending_reports_;
      d.offline = true;
      break;
    case Phase::kIdle:
    case Phase::kFinished:
      break;
  }
}

std::vector<RoundStart> LumosMcmcJob::Poll(uint64_t now_us) {
  const uint64_t elapsed_us = now_us - round_started_us_;
  const uint64_t round_deadline_us = uint64_t{options_.round_deadline_ms} * 1000;
  switch (phase_) {
    case Phase::kKeys: {
      if (pending_keys_ > 0 && elapsed_us <= round_deadline_us) return {};
      for (auto& [id, d] : devices_) {
        if (!d.responded && !d.absent) {
          summary_.missed_keys.push_back(id);
          MarkAbsent(id);
        }
      }
      return StartIterations(now_us);
    }
    case Phase::kIterate:
      Drive(now_us);
      return std::exchange(starts_, {});
    case Phase::kReport:
      if (pending_reports_ == 0 || elapsed_us > round_deadline_us) Finish(now_us);
      return {};
    case Phase::kIdle:
    case Phase::kFinished:
      return {};
  }
  return {};
}

std::map<uint32_t, std::vector<uint32_t>> LumosMcmcJob::Kept() const {
  std::map<uint32_t, std::vector<uint32_t>> out;
  for (const auto& [id, d] : devices_) {
    if (d.reported && options_.upload_kept) out[id] = d.kept;
  }
  return out;
}

std::map<uint32_t, uint32_t> LumosMcmcJob::Workloads() const {
  std::map<uint32_t, uint32_t> out;
  for (const auto& [id, d] : devices_) {
    if (d.has_summary) out[id] = d.summary.workload;
  }
  return out;
}

void LumosMcmcJob::Finish(uint64_t now_us) {
  if (phase_ == Phase::kReport) summary_.seconds_report = Seconds(round_started_us_, now_us);
  phase_ = Phase::kFinished;
  uint64_t sum = 0, greedy_sum = 0, n = 0;
  for (auto& [id, d] : devices_) {
    if (d.in_report && !d.reported) summary_.missed_report.push_back(id);
    std::sort(d.kept.begin(), d.kept.end());
    if (!d.has_summary) continue;
    summary_.max_workload = std::max(summary_.max_workload, d.summary.workload);
    summary_.greedy_max = std::max(summary_.greedy_max, d.summary.greedy_workload);
    sum += d.summary.workload;
    greedy_sum += d.summary.greedy_workload;
    ++n;
    summary_.messages += d.summary.messages_sent;
    summary_.uncovered_local += d.summary.uncovered;
  }
  summary_.mean_workload = n ? static_cast<double>(sum) / static_cast<double>(n) : 0;
  summary_.greedy_mean = n ? static_cast<double>(greedy_sum) / static_cast<double>(n) : 0;
  if (options_.upload_kept) {
    const KeptCoverage coverage = CheckKeptCoverage(edges_, devices_);
    summary_.uncovered_edges = coverage.uncovered;
    summary_.unverified_edges = coverage.unverified;
    if (summary_.uncovered_edges > 0 && summary_.error.empty()) {
      summary_.error = std::to_string(summary_.uncovered_edges) + " edges kept by neither endpoint";
    }
  }
  if (!options_.output_dir.empty()) WriteOutputs();
}

void LumosMcmcJob::WriteOutputs() {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(options_.output_dir, ec);
  const fs::path iterations = fs::path(options_.output_dir) / "lumos-mcmc-iterations.tsv";
  {
    std::ofstream out(iterations);
    out << "iteration\tu\tmoved\tu2\toutcome\tcomparisons\tseconds\n";
    for (const LumosMcmcIteration& it : iterations_) {
      out << it.iteration << '\t' << it.u << '\t' << it.moved << '\t';
      if (it.moved > 0) {
        out << it.u2;
      } else {
        out << '-';
      }
      out << '\t' << LumosMcmcOutcomeName(it.outcome) << '\t' << it.comparisons << '\t' << it.seconds << '\n';
    }
    if (!out) {
      summary_.error = "writing " + iterations.string();
      return;
    }
  }
  summary_.iterations_path = iterations.string();
  const fs::path workloads = fs::path(options_.output_dir) / "lumos-workloads.tsv";
  {
    std::ofstream out(workloads);
    out << "vertex\tgreedy\tworkload\n";
    for (const auto& [id, d] : devices_) {
      out << id << '\t';
      if (d.has_summary) {
        out << d.summary.greedy_workload << '\t' << d.summary.workload;
      } else {
        out << "-\t-";
      }
      out << '\n';
    }
    if (!out) {
      summary_.error = "writing " + workloads.string();
      return;
    }
  }
  summary_.workloads_path = workloads.string();
  if (!options_.upload_kept) return;
  const fs::path trees = fs::path(options_.output_dir) / "lumos-trees.tsv";
  if (!WriteKeptTrees(trees, devices_)) {
    summary_.error = "writing " + trees.string();
    return;
  }
  summary_.trees_path = trees.string();
}

bool LumosMcmcJob::succeeded() const {
  return finished() && summary_.error.empty() && summary_.uncovered_edges == 0;
}

std::string LumosMcmcJob::ProgressLine() const {
  std::ostringstream o;
  switch (phase_) {
    case Phase::kKeys:
      o << "lumos-mcmc round 1 (keys): " << pending_keys_ << " waiting";
      break;
    case Phase::kIterate: {
      static constexpr const char* kStepNames[] = {"neighbour comparisons", "candidate comparisons", "move",
                                                   "line-7 comparison", "revert"};
      o << "lumos-mcmc iteration " << current_.iteration << "/" << options_.iterations << " ("
        << (picking_u2_ ? "after the move" : "picking u") << "): " << kStepNames[static_cast<int>(step_)];
      if (service_) {
        const svc::ServiceTotals& t = service_->totals();
        o << " " << (t.done + t.aborted) << "/" << t.sessions << " settled";
      }
      o << "; accepted " << summary_.accepted << ", rejected " << summary_.rejected << ", skipped "
        << summary_.skipped << ", comparisons " << summary_.comparisons;
      break;
    }
    case Phase::kReport:
      o << "lumos-mcmc report round: " << pending_reports_ << " waiting";
      break;
    default:
      o << (finished() ? "finished" : "idle");
  }
  return o.str();
}

void LumosMcmcJob::LogSummary(Logger& log, uint64_t job_id) const {
  const LumosMcmcSummary& s = summary_;
  const auto by_delta = [&s](int delta) {
    auto it = s.accepted_by_delta.find(delta);
    const LumosMcmcAcceptance a = it == s.accepted_by_delta.end() ? LumosMcmcAcceptance{} : it->second;
    return std::to_string(a.accepted) + "/" + std::to_string(a.proposed);
  };
  log.Info("job_finished", {{"job", job_id},
                            {"kind", "lumos-mcmc"},
                            {"verified", succeeded()},
                            {"participants", s.participants},
                            {"ready", s.ready},
                            {"refused", s.refused.size()},
                            {"missed_keys", s.missed_keys.size()},
                            {"absent", s.absent.size()},
                            {"missed_report", s.missed_report.size()},
                            {"seed", s.seed},
                            {"iterations", s.iterations_run},
                            {"iterations_asked", options_.iterations},
                            {"accepted", s.accepted},
                            {"rejected", s.rejected},
                            {"skipped", s.skipped},
                            {"accepted_lower", by_delta(kDeltaLower)},
                            {"accepted_equal", by_delta(kDeltaEqual)},
                            {"accepted_higher", by_delta(kDeltaHigher)},
                            {"comparisons", s.comparisons},
                            {"sessions", s.sessions},
                            {"sessions_aborted", s.sessions_aborted},
                            {"session_bytes", s.session_bytes},
                            {"late_results", s.late_results},
                            {"greedy_max", s.greedy_max},
                            {"greedy_mean_workload", s.greedy_mean},
                            {"max_workload", s.max_workload},
                            {"mean_workload", s.mean_workload},
                            {"uncovered", s.uncovered_edges},
                            {"unverified_edges", s.unverified_edges},
                            {"uncovered_local", s.uncovered_local},
                            {"report_errors", s.report_errors},
                            {"messages", s.messages},
                            {"stop_reason", s.stop_reason},
                            {"seconds_keys", s.seconds_keys},
                            {"seconds_iterations", s.seconds_iterations},
                            {"seconds_report", s.seconds_report},
                            {"iterations_file", s.iterations_path},
                            {"workloads_file", s.workloads_path},
                            {"trees_file", s.trees_path},
                            {"ignored", s.ignored},
                            {"protocol_errors", s.protocol_errors + s.service_protocol_errors},
                            {"error", s.error}});
  log.Info("privacy_ledger",
           {{"job", job_id},
            {"phase", "lumos-mcmc"},
            {"note",
             "paper mode: server learns every workload comparison result (Lumos Alg. 3 and line 7), the picked "
             "devices, how many edges each move gave away, each device's workload and, with kept lists, the "
             "orientation; no degree in any message"},
            {"kept_lists_uploaded", options_.upload_kept}});
}

}  // namespace nodefl::server::jobs
