// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/jobs/fedwalk_walk_job.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <random>
#include <sstream>

#include "nodefl/core/little_endian.h"
#include "nodefl/server/fedwalk/common/walk_messages.h"
#include "nodefl/server/jobs/job_entropy.h"
#include "nodefl/server/fedwalk/skipgram/skipgram_model.h"
#include "nodefl/server/fedwalk/skipgram/skipgram_train.h"
#include "nodefl/server/fedwalk/skipgram/walk_corpus.h"

namespace nodefl::server::jobs {

namespace fw = nodefl::fedwalk;

namespace {

constexpr uint8_t kWaitingKeys = 0, kReady = 1, kReported = 2, kMissed = 3;

double Seconds(uint64_t from_us, uint64_t to_us) { return static_cast<double>(to_us - from_us) / 1e6; }

}  // namespace

FedWalkWalkJob::FedWalkWalkJob(FedWalkWalkOptions options, std::vector<uint32_t> participants)
    : options_(std::move(options)),
      participants_(std::move(participants)),
      corpus_(std::make_unique<fedwalk::WalkCorpus>(options_.vertex_count)) {
  std::sort(participants_.begin(), participants_.end());
  participants_.erase(std::unique(participants_.begin(), participants_.end()), participants_.end());
  for (uint32_t id : participants_) device_state_[id] = kWaitingKeys;
  summary_.participants = static_cast<uint32_t>(participants_.size());
  if (options_.max_in_flight == 0) options_.max_in_flight = std::max<uint32_t>(64, 4 * summary_.participants);
  // Through the job entropy: a job continued after a restart draws it again
  // from its journal (job_entropy.h).
  if (options_.seed == 0) options_.seed = JobEntropyU64();
  summary_.theorem42 = fedwalk::ExpectedMessagesPerWalk(options_.params.length, options_.params.p);
}

FedWalkWalkJob::~FedWalkWalkJob() {
  trainer_.Wait();
}

std::vector<RoundStart> FedWalkWalkJob::Begin(uint64_t now_us) {
  phase_ = Phase::kKeys;
  round_started_us_ = now_us;
  // A fresh public salt from the OS (journaled for a continuation after a
  // restart, job_entropy.h), never from the experiment seed (a
  // rerun with the same fedwalk_seed must not repeat it); the devices'
  // ephemeral keys make the job keys unique whatever it is
  // (sdk/seal/job_keys.h).
  FillJobEntropy(options_.params.salt);
  RoundStart start;
  start.round = fw::kWalkRoundKeys;
  start.deadline_ms = options_.round_deadline_ms;
  start.parameters.resize(fw::kWalkParametersBytes);
  if (!fw::EncodeWalkParameters(options_.params, ByteSpan(start.parameters)).ok()) {
    summary_.error = "invalid walk parameters";
    Finish();
    return {};
  }
  start.devices = participants_;
  std::vector<RoundStart> out;
  out.push_back(std::move(start));
  if (participants_.empty()) {
    summary_.error = "no participants";
    Finish();
  }
  return out;
}

std::vector<RoundStart> FedWalkWalkJob::OnReport(uint32_t device, uint32_t round, const nodefl_wire_JobReport& report,
                                                 uint64_t now_us) {
  auto it = device_state_.find(device);
  if (it == device_state_.end()) {
    ++summary_.protocol_errors;
    return {};
  }
  if (round == fw::kWalkRoundKeys && phase_ == Phase::kKeys && it->second == kWaitingKeys) {
    // A device whose keys failed still takes part: walks to or from its
    // unkeyed neighbours end as dropped, and are counted so.
    it->second = kReady;
    ++summary_.keys_ready;
  } else if (round == fw::kWalkRoundReport && phase_ == Phase::kReport && it->second == kReady) {
    it->second = kReported;
    device_ledger_[device] = {report.epsilon,   report.edge_epsilon, report.delta, report.releases,
                              report.unbounded, report.unbounded_against_server};
  }
  return Poll(now_us);
}

std::vector<RoundStart> FedWalkWalkJob::StartWalkRound(uint64_t now_us) {
  phase_ = Phase::kWalks;
  summary_.seconds_keys = Seconds(round_started_us_, now_us);
  round_started_us_ = now_us;
  RoundStart start;
  start.round = fw::kWalkRoundWalks;
  start.deadline_ms = std::max(options_.round_deadline_ms, options_.walk_timeout_ms) * 4;
  std::vector<uint32_t> ready;
  for (auto& [id, state] : device_state_) {
    if (state == kWaitingKeys) state = kMissed;  // missed round 1: no walks start there
    if (state == kReady) ready.push_back(id);
  }
  start.devices = ready;
  // gamma rounds over the vertices, each round in a fresh random order
  // (DeepWalk's schedule), so that a partial run is still balanced.
  std::mt19937_64 rng(options_.seed);
  for (uint32_t g = 0; g < options_.walks_per_vertex; ++g) {
    std::vector<uint32_t> order = ready;
    std::shuffle(order.begin(), order.end(), rng);
    for (uint32_t v : order) {
      ready_slots_.push_back(static_cast<uint32_t>(slots_.size()));
      slots_.push_back(Slot{v, 0, false});
    }
  }
  summary_.walk_slots = slots_.size();
  std::vector<RoundStart> out;
  out.push_back(std::move(start));
  IssueWalks(now_us);
  return out;
}

void FedWalkWalkJob::IssueWalks(uint64_t now_us) {
  while (!refused_starts_.empty() && refused_starts_.front().retry_at_us <= now_us) {
    ready_slots_.push_back(refused_starts_.front().slot);
    refused_starts_.pop_front();
  }
  while (!ready_slots_.empty() && in_flight_.size() < options_.max_in_flight) {
    const uint32_t slot_index = ready_slots_.front();
    ready_slots_.pop_front();
    Slot& slot = slots_[slot_index];
    ++slot.attempts;
    const uint32_t walk_id = next_walk_id_++;
    in_flight_[walk_id] = InFlight{slot_index, now_us};
    in_flight_order_.push_back(walk_id);
    ++summary_.issued;
    std::vector<uint8_t>& record = outgoing_[slot.start];
    if (record.empty()) record.resize(4, 0);
    const size_t at = record.size();
    record.resize(at + fw::kStartWalkEntryBytes);
    StoreU32Le(walk_id, record.data() + at);
    StoreU16Le(options_.params.length, record.data() + at + 4);
    StoreU16Le(0, record.data() + at + 6);
    StoreU32Le(LoadU32Le(record.data()) + 1, record.data());
    if (LoadU32Le(record.data()) == fw::kMaxStartWalksPerRecord) {
      data_.push_back(DeviceData{slot.start, fw::kWalkRoundWalks, static_cast<uint32_t>(fw::WalkRecord::kStartWalks),
                                 std::move(record)});
      outgoing_.erase(slot.start);
    }
  }
  for (auto& [device, record] : outgoing_) {
    data_.push_back(DeviceData{device, fw::kWalkRoundWalks, static_cast<uint32_t>(fw::WalkRecord::kStartWalks),
                               std::move(record)});
  }
  outgoing_.clear();
}

std::vector<DeviceData> FedWalkWalkJob::TakeData() { return std::exchange(data_, {}); }

void FedWalkWalkJob::CloseSlot(uint32_t slot_index, bool lost) {
  Slot& slot = slots_[slot_index];
  if (slot.done) return;
  slot.done = true;
  ++slots_closed_;
  if (lost) ++summary_.lost;
}

void FedWalkWalkJob::LoseIssue(uint32_t walk_id, uint64_t now_us, uint64_t* reason_counter) {
  (void)now_us;
  auto it = in_flight_.find(walk_id);
  if (it == in_flight_.end()) return;
  const uint32_t slot_index = it->second.slot;
  in_flight_.erase(it);
  ++*reason_counter;
  if (slots_[slot_index].attempts < options_.max_attempts) {
    ++summary_.reissued;
    ready_slots_.push_back(slot_index);
  } else {
    CloseSlot(slot_index, /*lost=*/true);
  }
}

void FedWalkWalkJob::RefuseStart(uint32_t walk_id, uint64_t now_us) {
  auto it = in_flight_.find(walk_id);
  if (it == in_flight_.end()) return;
  const uint32_t slot_index = it->second.slot;
  in_flight_.erase(it);
  Slot& slot = slots_[slot_index];
  --slot.attempts;  // nothing was encoded: the issue does not count
  ++summary_.start_refusals;
  if (++slot.refusals > options_.max_start_refusals) {
    ++summary_.lost_dropped;
    CloseSlot(slot_index, /*lost=*/true);
    return;
  }
  refused_starts_.push_back(RefusedStart{slot_index, now_us + uint64_t{options_.start_retry_ms} * 1000});
}

void FedWalkWalkJob::OnUndeliverable(uint32_t device, uint64_t now_us) {
  // Rounds 1 and 3 wait for reports: one that cannot come is a miss now,
  // not at the round's deadline.
  if (auto it = device_state_.find(device); it != device_state_.end()) {
    if ((phase_ == Phase::kKeys && it->second == kWaitingKeys) || (phase_ == Phase::kReport && it->second == kReady)) {
      it->second = kMissed;
    }
  }
  if (phase_ != Phase::kWalks) return;
  // Every walk issued to this device that has not produced a result: its
  // start record could not be delivered.
  std::vector<uint32_t> ids;
  for (const auto& [walk_id, f] : in_flight_) {
    if (slots_[f.slot].start == device) ids.push_back(walk_id);
  }
  for (uint32_t id : ids) LoseIssue(id, now_us, &summary_.lost_offline);
}

std::vector<RoundStart> FedWalkWalkJob::OnUpload(uint32_t device, uint32_t round, uint32_t kind,
                                                 std::vector<uint8_t> bytes, uint64_t now_us) {
  (void)device;
  if (round == fw::kWalkRoundWalks && kind == static_cast<uint32_t>(fw::WalkRecord::kDroppedStarts)) {
    // A device with no room for walks it was asked to start: each is
    // dropped, like a kWalkResult{kDropped}.
    Result<uint32_t> count = fw::DecodeDroppedStarts(ConstByteSpan(bytes));
    if (!count.ok()) {
      ++summary_.bad_results;
      return {};
    }
    for (uint32_t i = 0; i < *count; ++i) {
      const uint32_t walk_id = LoadU32Le(bytes.data() + 4 + 4 * size_t{i});
      if (in_flight_.count(walk_id) != 0) {
        RefuseStart(walk_id, now_us);
      } else {
        ++summary_.bad_results;
      }
    }
    IssueWalks(now_us);
    return Poll(now_us);
  }
  if (round != fw::kWalkRoundWalks || kind != static_cast<uint32_t>(fw::WalkRecord::kWalkResult) ||
      bytes.size() < 12) {
    ++summary_.protocol_errors;
    return {};
  }
  const uint32_t walk_id = LoadU32Le(bytes.data());
  const uint8_t outcome = bytes[4];
  const uint16_t hops = LoadU16Le(bytes.data() + 6);
  const uint16_t count = LoadU16Le(bytes.data() + 8);
  auto it = in_flight_.find(walk_id);
  if (it == in_flight_.end()) {
    // Issued but already given up on (a late result), or never issued.
    if (walk_id != 0 && walk_id < next_walk_id_) {
      ++summary_.late_results;
    } else {
      ++summary_.bad_results;
    }
    return {};
  }
  if (bytes.size() != 12 + size_t{count} * 4 || count > options_.params.length || outcome > 2) {
    ++summary_.bad_results;
    LoseIssue(walk_id, now_us, &summary_.lost_dropped);
    IssueWalks(now_us);
    return Poll(now_us);
  }
  std::vector<uint32_t> walk(count);
  for (uint16_t i = 0; i < count; ++i) {
    walk[i] = LoadU32Le(bytes.data() + 12 + 4 * size_t{i});
    if (walk[i] >= options_.vertex_count) {
      ++summary_.bad_results;
      LoseIssue(walk_id, now_us, &summary_.lost_dropped);
      IssueWalks(now_us);
      return Poll(now_us);
    }
  }
  const auto out = static_cast<fw::WalkOutcome>(outcome);
  if (out == fw::WalkOutcome::kDropped) {
    LoseIssue(walk_id, now_us, &summary_.lost_dropped);
  } else {
    const uint32_t slot_index = it->second.slot;
    latencies_.Add(now_us >= it->second.issued_us ? now_us - it->second.issued_us : 0);
    in_flight_.erase(it);
    if (out == fw::WalkOutcome::kComplete && count == options_.params.length) {
      ++summary_.completed;
      hops_.push_back(hops);
    } else {
      ++summary_.dead_ends;
    }
    if (count > 0) {
      (void)corpus_->AddWalk(walk);
      summary_.tokens += count;
    }
    CloseSlot(slot_index, /*lost=*/false);
  }
  IssueWalks(now_us);
  return Poll(now_us);
}

std::vector<RoundStart> FedWalkWalkJob::StartReportRound(uint64_t now_us) {
  phase_ = Phase::kReport;
  summary_.seconds_walks = Seconds(round_started_us_, now_us);
  round_started_us_ = now_us;
  RoundStart start;
  start.round = fw::kWalkRoundReport;
  start.deadline_ms = options_.round_deadline_ms;
  for (const auto& [id, state] : device_state_) {
    if (state == kReady) start.devices.push_back(id);
  }
  std::vector<RoundStart> out;
  out.push_back(std::move(start));
  return out;
}

std::vector<RoundStart> FedWalkWalkJob::Poll(uint64_t now_us) {
  const uint64_t round_deadline_us = uint64_t{options_.round_deadline_ms} * 1000;
  switch (phase_) {
    case Phase::kKeys: {
      const bool all = std::none_of(device_state_.begin(), device_state_.end(),
                                    [](const auto& d) { return d.second == kWaitingKeys; });
      if (all || now_us - round_started_us_ > round_deadline_us) return StartWalkRound(now_us);
      return {};
    }
    case Phase::kWalks: {
      // Walks without a result by their deadline, or past the stall
      // window the recent walks give, are lost (and re-issued while
      // attempts remain). in_flight_order_ is in issue order, so the
      // oldest come first.
      const uint64_t timeout_us = uint64_t{options_.walk_timeout_ms} * 1000;
      const uint64_t stall_us =
          latencies_.StallAfterUs(options_.stall_factor, uint64_t{options_.stall_floor_ms} * 1000, timeout_us);
      const uint64_t limit_us = stall_us != 0 ? stall_us : timeout_us;
      while (!in_flight_order_.empty()) {
        const uint32_t id = in_flight_order_.front();
        auto it = in_flight_.find(id);
        if (it == in_flight_.end()) {
          in_flight_order_.pop_front();
          continue;
        }
        const uint64_t age_us = now_us - it->second.issued_us;
        if (age_us <= limit_us) break;
        in_flight_order_.pop_front();
        if (age_us > timeout_us) {
          LoseIssue(id, now_us, &summary_.lost_deadline);
        } else {
          summary_.stall_window_s = static_cast<double>(stall_us) / 1e6;
          LoseIssue(id, now_us, &summary_.lost_stalled);
        }
      }
      IssueWalks(now_us);
      if (slots_closed_ == slots_.size()) return StartReportRound(now_us);
      return {};
    }
    case Phase::kReport: {
      const bool all = std::none_of(device_state_.begin(), device_state_.end(),
                                    [](const auto& d) { return d.second == kReady; });
      if (all || now_us - round_started_us_ > round_deadline_us) {
        summary_.seconds_report = Seconds(round_started_us_, now_us);
        StartTraining(now_us);
      }
      return {};
    }
    case Phase::kTraining:
      if (training_done_.load()) {
        trainer_.Wait();
        Finish();
      }
      return {};
    case Phase::kIdle:
    case Phase::kFinished:
      return {};
  }
  return {};
}

void FedWalkWalkJob::StartTraining(uint64_t now_us) {
  (void)now_us;
  phase_ = Phase::kTraining;
  // Messages per completed walk, against Theorem 4.2.
  if (!hops_.empty()) {
    double sum = 0, sum2 = 0;
    for (uint16_t h : hops_) {
      sum += h;
      sum2 += static_cast<double>(h) * h;
    }
    const double n = static_cast<double>(hops_.size());
    summary_.hops_mean = sum / n;
    const double var = n > 1 ? (sum2 - sum * sum / n) / (n - 1) : 0;
    summary_.hops_stderr = std::sqrt(std::max(var, 0.0) / n);
  }
  trainer_.Start(options_.executor, [this] { RunTraining(); });
}

void FedWalkWalkJob::RunTraining() {
  const auto t0 = std::chrono::steady_clock::now();
  fedwalk::SkipGramOptions o;
  o.dim = options_.dim;
  o.window = options_.window;
  o.negative = options_.negative;
  o.epochs = options_.epochs;
  o.threads = options_.threads;
  o.seed = options_.seed;
  std::string error;
  std::optional<fedwalk::SkipGramModel> model;
  if (corpus_->num_tokens() == 0) {
    error = "no walks to train on";
  } else {
    o.epochs = fedwalk::EpochsFor(*corpus_, o);
    summary_.training_epochs = o.epochs;
    model = fedwalk::Train(*corpus_, o,
                           [this](uint64_t done, uint64_t) { trained_tokens_.store(done, std::memory_order_relaxed); },
                           &error);
  }
  summary_.seconds_training = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (model) {
    summary_.training_tokens_per_second =
        static_cast<double>(summary_.training_epochs * corpus_->num_tokens()) /
        std::max(summary_.seconds_training, 1e-9);
    if (!options_.output_dir.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(options_.output_dir, ec);
      const std::filesystem::path path = std::filesystem::path(options_.output_dir) / "embeddings.w2v";
      if (model->WriteWord2VecText(path, &error)) {
        summary_.embeddings_path = path.string();
      } else {
        summary_.error = "writing embeddings: " + error;
      }
    }
  } else {
    summary_.error = "training: " + error;
  }
  training_done_.store(true);
}

void FedWalkWalkJob::Finish() {
  phase_ = Phase::kFinished;
  std::vector<double> eps, edge;
  for (const auto& [id, e] : device_ledger_) {
    eps.push_back(e.epsilon);
    edge.push_back(e.edge_epsilon);
    summary_.delta_max = std::max(summary_.delta_max, e.delta);
    summary_.encodings += e.releases;
    summary_.devices_unbounded += e.unbounded ? 1 : 0;
    summary_.devices_unbounded_against_server += e.unbounded_against_server ? 1 : 0;
  }
  if (!eps.empty()) {
    std::sort(eps.begin(), eps.end());
    std::sort(edge.begin(), edge.end());
    summary_.epsilon_max = eps.back();
    summary_.epsilon_median = eps[eps.size() / 2];
    summary_.edge_epsilon_max = edge.back();
    summary_.edge_epsilon_median = edge[edge.size() / 2];
  }
}

bool FedWalkWalkJob::succeeded() const {
  return finished() && summary_.error.empty() && summary_.lost == 0 && summary_.protocol_errors == 0 &&
         summary_.completed + summary_.dead_ends == summary_.walk_slots;
}

std::string FedWalkWalkJob::ProgressLine() const {
  std::ostringstream o;
  switch (phase_) {
    case Phase::kKeys:
      o << "walks round 1 (keys): " << summary_.keys_ready << "/" << summary_.participants << " ready";
      break;
    case Phase::kWalks:
      o << "walks: " << slots_closed_ << "/" << slots_.size() << " done (" << summary_.completed << " complete, "
        << summary_.dead_ends << " dead ends, " << summary_.lost << " lost), " << in_flight_.size()
        << " in flight, " << summary_.reissued << " re-issued";
      break;
    case Phase::kReport:
      o << "walks round 3 (ledger reports)";
      break;
    case Phase::kTraining: {
      const uint64_t total = corpus_->num_tokens();
      o << "SkipGram training " << (total ? 100 * trained_tokens_.load() / total : 0) << "% of " << total
        << " tokens";
      break;
    }
    default:
      o << "idle";
  }
  return o.str();
}

void FedWalkWalkJob::LogSummary(Logger& log, uint64_t job_id) const {
  const WalkSummary& s = summary_;
  log.Info("job_finished", {{"job", job_id},
                            {"kind", "fedwalk-walks"},
                            {"verified", succeeded()},
                            {"participants", s.participants},
                            {"keys_ready", s.keys_ready},
                            {"walk_slots", s.walk_slots},
                            {"issued", s.issued},
                            {"completed", s.completed},
                            {"dead_ends", s.dead_ends},
                            {"lost", s.lost},
                            {"reissued", s.reissued},
                            {"lost_offline", s.lost_offline},
                            {"lost_dropped", s.lost_dropped},
                            {"lost_deadline", s.lost_deadline},
                            {"lost_stalled", s.lost_stalled},
                            {"start_refusals", s.start_refusals},
                            {"stall_window_s", s.stall_window_s},
                            {"late_results", s.late_results},
                            {"bad_results", s.bad_results},
                            {"tokens", s.tokens},
                            {"messages_per_walk", s.hops_mean},
                            {"messages_per_walk_stderr", s.hops_stderr},
                            {"theorem_4_2", s.theorem42},
                            {"predictor", nodefl::fedwalk::JumpPredictorName(options_.params.predictor)},
                            {"seconds_keys", s.seconds_keys},
                            {"seconds_walks", s.seconds_walks},
                            {"seconds_training", s.seconds_training},
                            {"training_epochs", s.training_epochs},
                            {"training_tokens_per_s", s.training_tokens_per_second},
                            {"embeddings", s.embeddings_path},
                            {"error", s.error},
                            {"protocol_errors", s.protocol_errors}});
  log.Info("privacy_ledger",
           {{"job", job_id},
            {"phase", "fedwalk-walks"},
            {"encoder", options_.scaled_encoder ? "scaled (epsilon per encoding)" : "raw score (paper Eq. 12)"},
            {"epsilon", options_.params.epsilon},
            {"score_sensitivity", options_.score_sensitivity},
            {"epsilon_per_encoding", options_.params.epsilon_per_encoding},
            {"encodings", s.encodings},
            {"device_epsilon_max", s.epsilon_max},
            {"device_epsilon_median", s.epsilon_median},
            {"device_edge_epsilon_max", s.edge_epsilon_max},
            {"device_edge_epsilon_median", s.edge_epsilon_median},
            {"device_delta_max", s.delta_max},
            {"devices_unbounded", s.devices_unbounded},
            // The relay sees every hop: against the server the walks are
            // not private at all, whatever the figures above say.
            {"against_server", s.devices_unbounded_against_server > 0 ? "unbounded" : "bounded"}});
}

}  // namespace nodefl::server::jobs
