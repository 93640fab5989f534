// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/jobs/kcagc_job.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <utility>

namespace nodefl::server::jobs {
namespace {

namespace kw = nodefl::kcagc;
namespace sa = nodefl::secagg;

// After answering the worker, the job waits this long at most for its next
// request instead of the runner's next tick (200 ms): the worker needs
// microseconds to assign points and pick the next step, and a run makes
// one hand-off per aggregation round.
constexpr auto kHandOffWait = std::chrono::milliseconds(20);

std::string Ids(const std::vector<uint32_t>& ids) {
  std::string out;
  for (uint32_t id : ids) out += (out.empty() ? "" : ",") + std::to_string(id);
  return out.empty() ? "none" : out;
}

std::string KindName(uint32_t kind) {
  switch (kind) {
    case 0: return "the job's parameters (L must be the number of participants its columns were cut for)";
    case kw::kKcagcWelcome:
      return "its welcome (the filter and the cluster space: k, k-hat and the space's dimensions must fit its "
             "nodes and columns, its features the range code)";
    case kw::kKcagcArray: return "an array";
    case kw::kKcagcContribute: return "a contribution";
    case kw::kKcagcLocalCluster: return "the local clustering";
    case kw::kKcagcStage: return "a stage";
    case kw::kKcagcSeedCentres: return "the seed centres";
    case kw::kKcagcUpdateCentres: return "a centre update";
    case kw::kKcagcEndStage: return "a stage's end";
    case kw::kKcagcDone: return "the final clustering";
    case kw::kKcagcSpectralStep: return "a spectral step (the joint mode's block Q_t)";
    default: return "record kind " + std::to_string(kind);
  }
}

double Seconds(uint64_t us) { return static_cast<double>(us) / 1e6; }

}  // namespace

KcagcJob::KcagcJob(KcagcJobOptions options, std::vector<uint32_t> participants)
    : options_(std::move(options)), participants_(std::move(participants)), service_(options_.job_id) {
  std::sort(participants_.begin(), participants_.end());
  participants_.erase(std::unique(participants_.begin(), participants_.end()), participants_.end());
}

KcagcJob::~KcagcJob() {
  // The worker may be waiting on an answer: release it before task_ waits.
  channel_.Close(Status::Cancelled());
}

int32_t KcagcJob::IndexOf(uint32_t device) const {
  const auto it = std::lower_bound(participants_.begin(), participants_.end(), device);
  return it != participants_.end() && *it == device ? static_cast<int32_t>(it - participants_.begin()) : -1;
}

void KcagcJob::SetProgress(std::string line) {
  std::lock_guard<std::mutex> lock(progress_mutex_);
  progress_ = std::move(line);
}

std::vector<RoundStart> KcagcJob::Begin(uint64_t now_us) {
  if (phase_ != Phase::kIdle) return {};
  begin_us_ = now_us;
  const auto count = static_cast<uint32_t>(participants_.size());
  if (!options_.error.empty()) {
    failure_ = options_.error;
    phase_ = Phase::kFinished;
    return {};
  }
  if (count < 2 || count > kw::kKcagcMaxParticipants) {
    failure_ = "kCAGC needs 2 to " + std::to_string(kw::kKcagcMaxParticipants) + " participants; " +
               std::to_string(count) + " joined (set job_quorum to L)";
    phase_ = Phase::kFinished;
    return {};
  }
  options_.params.participants = count;
  RoundStart start;
  start.round = 1;
  uint8_t params[kw::kKcagcParametersBytes];
  kw::EncodeKcagcParameters(options_.params, params);
  start.parameters.assign(params, params + sizeof params);
  start.devices = participants_;
  for (uint32_t l = 0; l < count; ++l) {
    uint8_t welcome[kw::kKcagcWelcomeBytes];
    kw::EncodeKcagcWelcome(kw::KcagcWelcome{l, count}, welcome);
    outbox_.push_back(DeviceData{participants_[l], 1, kw::kKcagcWelcome,
                                 std::vector<uint8_t>(welcome, welcome + sizeof welcome)});
  }
  ready_.assign(count, false);
  phase_ = Phase::kPreparing;
  deadline_us_ = now_us + options_.step_timeout_us;
  SetProgress("waiting for the participants to filter their slices");
  return {start};
}

void KcagcJob::OnReady(uint32_t device, const std::vector<uint8_t>& bytes, uint64_t now_us) {
  const int32_t l = IndexOf(device);
  const Result<kw::KcagcReady> ready = kw::DecodeKcagcReady(ConstByteSpan(bytes.data(), bytes.size()));
  if (phase_ != Phase::kPreparing || l < 0 || !ready.ok() || ready_[l]) {
    ++protocol_errors_;
    return;
  }
  if (nodes_ == 0) nodes_ = ready->nodes;
  if (ready->nodes != nodes_) {
    Fail("the participants disagree on the graph: device " + std::to_string(device) + " has " +
             std::to_string(ready->nodes) + " nodes, an earlier one " + std::to_string(nodes_),
         now_us);
    return;
  }
  ready_[l] = true;
  columns_ += ready->columns;
  if (std::all_of(ready_.begin(), ready_.end(), [](bool r) { return r; })) StartWorker(now_us);
}

void KcagcJob::StartWorker(uint64_t now_us) {
  const KcagcRunSettings& s = options_.settings;
  if (s.clusters > nodes_ || (s.mode != KcagcRunMode::kBasic && s.local_clusters > nodes_)) {
    Fail("kcagc_clusters " + std::to_string(s.clusters) + " (local " + std::to_string(s.local_clusters) +
             ") for a graph of " + std::to_string(nodes_) + " nodes: at most one cluster per node",
         now_us);
    return;
  }
  phase_ = Phase::kRunning;
  run_started_us_ = now_us;
  remote_ = std::make_unique<KcagcRemoteParticipants>(channel_, participants_, nodes_, columns_);
  KcagcRunSettings settings = s;
  settings.progress = [this](const std::string& line) { SetProgress(line); };
  // A thread of its own: it blocks on the network, never on compute.
  task_.Start(nullptr, [this, settings] {
    result_ = RunKcagcCoordinator(settings, *remote_);
    if (!result_.ok()) channel_.Close(result_.status());
  });
}

std::vector<RoundStart> KcagcJob::OnUpload(uint32_t device, uint32_t, uint32_t artefact, std::vector<uint8_t> bytes,
                                           uint64_t now_us) {
  if (IndexOf(device) < 0 || unreachable_.count(device) != 0) {
    ++protocol_errors_;
    return {};
  }
  if (sa::IsAggregationKind(artefact)) {
    (void)service_.OnRecord(device, artefact, std::span<const uint8_t>(bytes.data(), bytes.size()), now_us);
    TakeServiceRecords();
  } else {
    upload_bytes_ += bytes.size();
    switch (artefact) {
      case kw::kKcagcReady: OnReady(device, bytes, now_us); break;
      case kw::kKcagcLocalClusters: OnLocalClusters(device, bytes, now_us); break;
      case kw::kKcagcRefuse: OnRefuse(device, bytes, now_us); break;
      default: ++protocol_errors_; break;
    }
  }
  return Advance(now_us);
}

void KcagcJob::OnLocalClusters(uint32_t device, const std::vector<uint8_t>& bytes, uint64_t now_us) {
  const int32_t l = IndexOf(device);
  const Result<kw::KcagcArrayRun> run = kw::DecodeKcagcArrayRun(ConstByteSpan(bytes.data(), bytes.size()));
  if (!collecting_ || !run.ok() || run->array != kw::KcagcArray::kLocalClusters) {
    ++protocol_errors_;
    return;
  }
  LocalUpload& u = local_[static_cast<size_t>(l)];
  if (run->total != nodes_ || run->offset != u.received) {
    Fail("device " + std::to_string(device) + " uploaded its local clusters out of order or for " +
             std::to_string(run->total) + " nodes (the graph has " + std::to_string(nodes_) + ")",
         now_us);
    return;
  }
  if (u.values.empty()) u.values.assign(nodes_, 0);
  for (uint32_t i = 0; i < run->count(); ++i) u.values[run->offset + i] = run->at(i);
  u.received += run->count();
}

void KcagcJob::OnRefuse(uint32_t device, const std::vector<uint8_t>& bytes, uint64_t now_us) {
  const Result<kw::KcagcRefuse> r = kw::DecodeKcagcRefuse(ConstByteSpan(bytes.data(), bytes.size()));
  if (!r.ok()) {
    ++protocol_errors_;
    return;
  }
  Fail("participant " + std::to_string(IndexOf(device)) + " (device " + std::to_string(device) + ") refused " +
           KindName(r->kind) + ": " + Status(r->code).str(),
       now_us);
}

void KcagcJob::TakeServiceRecords() {
  for (secagg::AggRecord& r : service_.TakeRecords()) {
    outbox_.push_back(DeviceData{r.device, 1, r.kind, std::move(r.bytes)});
  }
}

bool KcagcJob::Serve(KcagcRequest request, bool wants_answer, uint64_t now_us) {
  serving_ = request.what;
  for (DeviceData& d : request.records) {
    instruction_bytes_ += d.bytes.size();
    outbox_.push_back(std::move(d));
  }
  if (request.aggregate) {
    secagg::AggregationRequest agg;
    agg.devices = request.devices;
    agg.length = request.length;
    agg.mode = options_.params.aggregation;
    agg.peers = 0;  // the full mask graph: L organisations, not a fleet
    // Every sum needs every participant's columns: nobody may drop.
    agg.min_reporters = static_cast<uint32_t>(request.devices.size());
    agg.step_timeout_us = options_.step_timeout_us;
    const uint32_t id = service_.Add(agg, now_us);
    if (id == 0) {
      Fail("the aggregation service refused the sum of " + request.what + ": " + service_.last_refusal(), now_us);
      return false;
    }
    // The instruction before the aggregation's own records (kAggStart):
    // each participant knows what to add when the aggregation starts.
    request.contribute.aggregation = id;
    uint8_t contribute[kw::kKcagcContributeBytes];
    kw::EncodeKcagcContribute(request.contribute, contribute);
    for (uint32_t device : request.devices) {
      instruction_bytes_ += sizeof contribute;
      outbox_.push_back(DeviceData{device, 1, kw::kKcagcContribute,
                                   std::vector<uint8_t>(contribute, contribute + sizeof contribute)});
    }
    TakeServiceRecords();
    aggregation_ = id;
    awaiting_answer_ = wants_answer;
    return true;
  }
  if (request.collect_local_clusters) {
    local_.assign(participants_.size(), LocalUpload{});
    collecting_ = true;
    deadline_us_ = now_us + options_.step_timeout_us;
    awaiting_answer_ = wants_answer;
    return true;
  }
  if (wants_answer) channel_.Answer(KcagcAnswer{});
  return true;
}

bool KcagcJob::SettleAggregation(uint64_t now_us) {
  const secagg::AggregationResult& r = service_.result(aggregation_);
  if (!r.settled()) return false;
  aggregation_ = 0;
  ++aggregations_;
  for (const auto& [device, t] : r.traffic) {
    agg_bytes_up_ += t.bytes_received;
    agg_bytes_down_ += t.bytes_sent;
  }
  const uint64_t n = r.traffic.size();
  peer_messages_ += n * (n - 1);
  aggregation_us_ += r.wall_us;
  unmask_us_ += r.unmask_us;
  TakeServiceRecords();
  if (r.state != secagg::AggregationState::kDone) {
    Fail("secure aggregation " + std::to_string(r.id) + " (" + serving_ + ") aborted (" +
         secagg::AbortReasonName(r.abort_reason) +
             "): " + r.message + "; no key from: " + Ids(r.dropped_at_keys) +
             "; no masked vector from: " + Ids(r.dropped_at_uploads) +
             "; no shares from: " + Ids(r.dropped_at_reveals) + ". Every sum needs all the stage's participants",
         now_us);
    return true;
  }
  KcagcAnswer a;
  a.sum = r.sum;
  awaiting_answer_ = false;
  channel_.Answer(std::move(a));
  return true;
}

bool KcagcJob::SettleCollection(uint64_t now_us) {
  std::vector<uint32_t> missing;
  for (size_t l = 0; l < local_.size(); ++l) {
    if (local_[l].received != nodes_) missing.push_back(participants_[l]);
  }
  if (!missing.empty()) {
    if (now_us < deadline_us_) return false;
    Fail("no local clusters (Protocol 3 line 2) within " + std::to_string(options_.step_timeout_us / 1000) +
             " ms from devices " + Ids(missing),
         now_us);
    return true;
  }
  collecting_ = false;
  KcagcAnswer a;
  for (LocalUpload& u : local_) a.local_clusters.emplace_back(u.values.begin(), u.values.end());
  local_.clear();
  awaiting_answer_ = false;
  channel_.Answer(std::move(a));
  return true;
}

void KcagcJob::Pump(uint64_t now_us) {
  // After an answer, or an instruction that needs none, the worker's next
  // request is usually microseconds away: wait for it (briefly) once.
  bool may_wait = false;
  while (phase_ == Phase::kRunning) {
    if (aggregation_ != 0) {
      if (!SettleAggregation(now_us)) return;
      may_wait = true;
    } else if (collecting_) {
      if (!SettleCollection(now_us)) return;
      may_wait = true;
    }
    if (phase_ != Phase::kRunning) return;
    KcagcRequest request;
    bool wants_answer = false;
    if (!channel_.Take(&request, &wants_answer)) {
      if (!may_wait || task_.done()) return;
      may_wait = false;
      if (!channel_.WaitForRequest(kHandOffWait)) return;
      continue;
    }
    if (!Serve(std::move(request), wants_answer, now_us)) return;
    may_wait = true;
  }
}

void KcagcJob::Fail(std::string why, uint64_t now_us) {
  if (failure_.empty()) failure_ = std::move(why);
  channel_.Close(Status::Aborted());
  if (aggregation_ != 0) {
    service_.Cancel(aggregation_, now_us);
    TakeServiceRecords();
    aggregation_ = 0;
  }
  collecting_ = false;
  if (phase_ == Phase::kPreparing) {
    Abort();
    phase_ = Phase::kClosing;
  }
  // kRunning: the worker stops at its next call (the channel is closed);
  // AfterWorker then tells the participants.
}

void KcagcJob::Abort() {
  const uint8_t code = static_cast<uint8_t>(StatusCode::kAborted);
  for (uint32_t d : participants_) {
    if (unreachable_.count(d) == 0) outbox_.push_back(DeviceData{d, 1, kw::kKcagcAbort, {code}});
  }
}

void KcagcJob::AfterWorker(uint64_t now_us) {
  run_ended_us_ = now_us;
  if (result_.ok() && failure_.empty()) {
    summary_ = std::move(result_).value();
    WriteOutputs();
  } else {
    if (failure_.empty()) {
      failure_ = std::string("the run stopped (") + result_.status().str() + ") at " +
                 (serving_.empty() ? std::string("its start") : serving_);
    }
    Abort();
  }
  phase_ = Phase::kClosing;
}

void KcagcJob::WriteOutputs() {
  const kw::Assignment& a = summary_->assignment;
  if (!options_.labels.empty()) {
    if (options_.labels.size() > a.size()) {
      evaluation_note_ = options_.labels_path + " names nodes up to " + std::to_string(options_.labels.size() - 1) +
                         " but the participants' graph has " + std::to_string(a.size());
    } else {
      std::vector<int32_t> labels = options_.labels;
      labels.resize(a.size(), -1);
      Result<kcagc::ClusteringScores> scores = kcagc::ScoreClustering(a, labels);
      if (scores.ok()) {
        scores_ = *scores;
      } else {
        evaluation_note_ = std::string("no score: ") + scores.status().str();
      }
    }
  }
  if (options_.output_dir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(options_.output_dir, ec);
  const std::filesystem::path path = std::filesystem::path(options_.output_dir) / "kcagc-assignment.tsv";
  std::ofstream out(path);
  for (size_t v = 0; v < a.size(); ++v) out << v << '\t' << a[v] << '\n';
  out.close();
  output_note_ = out ? path.string() : "cannot write " + path.string();
}

std::vector<RoundStart> KcagcJob::Advance(uint64_t now_us) {
  if (phase_ == Phase::kPreparing && now_us >= deadline_us_) {
    std::vector<uint32_t> missing;
    for (size_t l = 0; l < ready_.size(); ++l) {
      if (!ready_[l]) missing.push_back(participants_[l]);
    }
    Fail("not ready within " + std::to_string(options_.step_timeout_us / 1000) + " ms: devices " + Ids(missing),
         now_us);
  }
  if (phase_ == Phase::kRunning) {
    Pump(now_us);
    if (phase_ == Phase::kRunning && task_.done()) {
      Pump(now_us);  // what the worker posted last (the final clustering)
      AfterWorker(now_us);
    }
  }
  return {};
}

std::vector<RoundStart> KcagcJob::Poll(uint64_t now_us) {
  // Round 2 only in a later call than the one that closed round 1, so that
  // round 1's last records (the final clustering, or the abort) reach every
  // participant before its JobStart: the runner sends a call's round starts
  // before its records.
  const bool closed_before = phase_ == Phase::kClosing;
  service_.Poll(now_us);
  TakeServiceRecords();
  std::vector<RoundStart> out = Advance(now_us);
  if (closed_before) {
    phase_ = Phase::kReporting;
    reports_started_us_ = now_us;
    RoundStart start;
    start.round = 2;
    start.deadline_ms = options_.report_deadline_ms;
    for (uint32_t d : participants_) {
      if (unreachable_.count(d) == 0) start.devices.push_back(d);
    }
    if (start.devices.empty()) {
      phase_ = Phase::kFinished;
      return out;
    }
    out.push_back(std::move(start));
    return out;
  }
  if (phase_ == Phase::kReporting &&
      now_us - reports_started_us_ >= uint64_t{options_.report_deadline_ms} * 1000) {
    phase_ = Phase::kFinished;
  }
  return out;
}

std::vector<RoundStart> KcagcJob::OnReport(uint32_t device, uint32_t round, const nodefl_wire_JobReport& report,
                                           uint64_t) {
  if (round != 2 || phase_ != Phase::kReporting || IndexOf(device) < 0) {
    ++protocol_errors_;
    return {};
  }
  if (!reported_.insert(device).second) return {};  // a repeat after a reconnect
  if (report.code == 0) ++clean_reports_;
  size_t expected = 0;
  for (uint32_t d : participants_) expected += unreachable_.count(d) == 0 ? 1 : 0;
  if (reported_.size() >= expected) phase_ = Phase::kFinished;
  return {};
}

std::vector<DeviceData> KcagcJob::TakeData() { return std::exchange(outbox_, {}); }

void KcagcJob::OnUndeliverable(uint32_t device, uint64_t now_us) {
  if (IndexOf(device) < 0 || !unreachable_.insert(device).second) return;
  service_.MarkUnreachable(device, now_us);
  TakeServiceRecords();
  if (phase_ == Phase::kPreparing || phase_ == Phase::kRunning) {
    Fail("participant " + std::to_string(IndexOf(device)) + " (device " + std::to_string(device) +
             ") is unreachable: every sum needs all L participants",
         now_us);
    Advance(now_us);
  }
}

bool KcagcJob::succeeded() const {
  return phase_ == Phase::kFinished && failure_.empty() && summary_.has_value() &&
         clean_reports_ == participants_.size() && output_note_.rfind("cannot", 0) != 0;
}

std::string KcagcJob::ProgressLine() const {
  std::string line;
  {
    std::lock_guard<std::mutex> lock(progress_mutex_);
    line = progress_;
  }
  switch (phase_) {
    case Phase::kIdle: return "not started";
    case Phase::kPreparing: return line;
    case Phase::kRunning:
      return "aggregation " + std::to_string(aggregations_ + (aggregation_ != 0 ? 1 : 0)) + " (" + serving_ + "); " +
             line;
    case Phase::kClosing: return failure_.empty() ? "clustered; closing" : "failed; closing";
    case Phase::kReporting:
      return "reports " + std::to_string(reported_.size()) + "/" + std::to_string(participants_.size());
    case Phase::kFinished:
      return succeeded() ? "finished: clustered" : "finished: NOT clustered (" + failure_ + ")";
  }
  return "";
}

void KcagcJob::LogSummary(Logger& log, uint64_t job_id) const {
  const KcagcRunSettings& s = options_.settings;
  if (summary_) {
    for (const KcagcStageSummary& st : summary_->stages) {
      log.Info("kcagc_stage", {{"job", job_id},
                               {"tree_node", st.tree_node},
                               {"depth", st.depth},
                               {"participants", st.participants},
                               {"points", st.points},
                               {"centres", st.centres},
                               {"unassigned_after_one_ninth", st.unassigned_after_one_ninth},
                               {"lloyd_iterations", st.iterations},
                               {"converged", st.converged},
                               {"rounds", st.rounds},
                               {"secure_sums", st.secure_sums}});
    }
  }
  if (summary_ && s.mode == KcagcRunMode::kJoint) {
    // The joint mode's iteration, and what the server learns besides U.
    const KcagcRunSummary& j = *summary_;
    log.Info("kcagc_spectral", {{"job", job_id},
                                {"steps", j.spectral_steps},
                                {"block", j.spectral_block},
                                {"converged", j.spectral_converged},
                                {"sigma_1", j.singular_values.empty() ? 0.0 : j.singular_values.front()},
                                {"sigma_k", j.singular_values.empty() ? 0.0 : j.singular_values.back()},
                                {"unassigned_after_one_ninth", j.local_unassigned_after_one_ninth},
                                {"lloyd_iterations", j.local_iterations}});
  }
  if (!failure_.empty()) log.Error("kcagc_failed", {{"job", job_id}, {"reason", failure_}});
  if (!evaluation_note_.empty()) log.Warn("kcagc_evaluation", {{"job", job_id}, {"note", evaluation_note_}});
  const uint64_t run_us = run_ended_us_ > run_started_us_ ? run_ended_us_ - run_started_us_ : 0;
  const uint64_t wall_us = run_ended_us_ > begin_us_ ? run_ended_us_ - begin_us_ : 0;
  // Absent figures print as "-" (no labels, or no run).
  const auto score = [this](double kcagc::ClusteringScores::*field) -> LogValue {
    return scores_ ? LogValue((*scores_).*field) : LogValue("-");
  };
  const auto run = [this](uint64_t value) -> LogValue { return summary_ ? LogValue(value) : LogValue("-"); };
  const KcagcRunSummary none;
  const KcagcRunSummary& r = summary_ ? *summary_ : none;
  log.Info("kcagc_summary",
           {{"job", job_id},
            {"mode", KcagcRunModeName(s.mode)},
            {"participants", static_cast<uint64_t>(participants_.size())},
            {"nodes", nodes_},
            {"columns", columns_},
            {"k", s.clusters},
            {"k_hat", s.mode == KcagcRunMode::kJoint   ? LogValue("-")
                      : s.mode == KcagcRunMode::kBasic ? LogValue(s.clusters)
                                                       : LogValue(s.local_clusters)},
            {"seeding", s.seeding == KcagcSeedingRule::kJoint ? "joint" : "local"},
            {"secagg_mode", options_.params.aggregation == sa::AggMode::kPaper ? "paper" : "robust"},
            {"succeeded", succeeded()},
            {"accuracy", score(&kcagc::ClusteringScores::accuracy)},
            {"nmi", score(&kcagc::ClusteringScores::nmi)},
            {"macro_f1", score(&kcagc::ClusteringScores::macro_f1)},
            {"intersections", run(r.intersections)},
            {"internal_nodes", run(r.internal_nodes)},
            {"secure_sums", run(r.cost.scalars)},
            {"expected_secure_sums", run(r.expected_secure_sums)},
            // The paper has no joint mode, hence no count.
            {"paper_secure_sums",
             summary_ && s.mode != KcagcRunMode::kJoint ? LogValue(r.paper_secure_sums) : LogValue("-")},
            {"rounds", run(r.cost.rounds)},
            {"values_bytes", run(r.cost.uploaded_bytes)},
            {"aggregations", aggregations_},
            {"aggregation_bytes_up", agg_bytes_up_},
            {"aggregation_bytes_down", agg_bytes_down_},
            {"peer_messages", peer_messages_},
            {"instruction_bytes", instruction_bytes_},
            {"upload_bytes", upload_bytes_},
            {"records_rejected", service_.totals().records_rejected},
            {"protocol_errors", protocol_errors_},
            {"clean_reports", static_cast<uint64_t>(clean_reports_)},
            {"aggregation_s", Seconds(aggregation_us_)},
            {"unmask_s", Seconds(unmask_us_)},
            {"run_s", Seconds(run_us)},
            {"wall_s", Seconds(wall_us)},
            {"scale_log2", summary_ ? LogValue(static_cast<int64_t>(std::lround(std::log2(r.code.scale))))
                                    : LogValue("-")},
            {"labels", options_.labels_path.empty() ? std::string("-") : options_.labels_path},
            {"assignment", output_note_.empty() ? std::string("-") : output_note_}});
}

}  // namespace nodefl::server::jobs
