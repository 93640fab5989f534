// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/net/job_runner.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>

#include "nodefl/core/little_endian.h"
#include "nodefl/protocol/peer_directory.h"
#include "nodefl/server/jobs/job_factory.h"
#include "nodefl/protocol/chunk.h"

#include "nodefl/server/net/connection.h"
#include "nodefl/host/net/process_limits.h"

namespace nodefl::server::net {

using host::net::CurrentRssKiB;
using host::net::PeakRssKiB;

namespace asio = boost::asio;

namespace {
constexpr auto kTick = std::chrono::milliseconds(200);
constexpr auto kProgressEvery = std::chrono::seconds(2);
}  // namespace

JobRunner::JobRunner(asio::io_context& io, ServerContext& context, std::vector<uint32_t> known_devices,
                     std::function<void(bool)> on_finished, std::function<void()> on_all_done)
    : ctx_(context),
      strand_(asio::make_strand(io)),
      timer_(strand_),
      known_(std::move(known_devices)),
      on_finished_(std::move(on_finished)),
      on_all_done_(std::move(on_all_done)) {}

uint64_t JobRunner::NowMicros() const {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - epoch_).count());
}

void JobRunner::Start() { asio::co_spawn(strand_, Loop(), asio::detached); }

void JobRunner::Stop() {
  asio::post(strand_, [this] {
    stopped_ = true;
    timer_.cancel();
  });
}

asio::awaitable<void> JobRunner::Loop() {
  while (!stopped_) {
    Tick();
    timer_.expires_after(kTick);
    boost::system::error_code ec;
    co_await timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
}

void JobRunner::OnJobReport(uint32_t device, uint64_t job_id, uint32_t round,
                            const nodefl_wire_JobReport& report) {
  asio::post(strand_, [this, device, job_id, round, report] {
    if (!job_ || job_->finished() || job_id != current_job_id_) {
      ctx_.log->Warn("job_report_ignored", {{"device", device}, {"job", job_id}, {"round", round}});
      return;
    }
    if (auto it = sent_starts_.find(device); it != sent_starts_.end() && it->second.round == round) {
      sent_starts_.erase(it);  // it has the round
    }
    Dispatch(job_->OnReport(device, round, report, NowMicros()));
    if (job_->finished()) FinishJob();
  });
}

void JobRunner::OnJobUpload(uint32_t device, uint64_t job_id, uint32_t round, uint32_t artefact,
                            std::vector<uint8_t> bytes) {
  asio::post(strand_, [this, device, job_id, round, artefact, bytes = std::move(bytes)]() mutable {
    if (!job_ || job_->finished() || job_id != current_job_id_) {
      ctx_.log->Warn("job_upload_ignored", {{"device", device}, {"job", job_id}, {"round", round}});
      return;
    }
    Dispatch(job_->OnUpload(device, round, artefact, std::move(bytes), NowMicros()));
    if (job_->finished()) FinishJob();
  });
}

void JobRunner::Tick() {
  PublishDirectoryWhenReady();
  if (job_) {
    if (!job_->finished()) {
      WatchUnreportedDevices();
      Dispatch(job_->Poll(NowMicros()));
      if (job_->finished()) {
        FinishJob();
      } else if (Clock::now() - last_progress_ >= kProgressEvery) {
        last_progress_ = Clock::now();
        ctx_.log->Info("job_progress", {{"job", current_job_id_},
                                        {"state", job_->ProgressLine()},
                                        {"relay_sent", ctx_.counters.relay_sent.load()},
                                        {"relay_delivered", ctx_.counters.relay_delivered.load()}});
      }
    }
    return;
  }
  if (started_) return;
  std::vector<uint32_t> online;
  for (uint32_t id : known_) {
    const auto snap = ctx_.registry->Snapshot(id);
    if (snap && snap->online) online.push_back(id);
  }
  if (!online.empty() && !first_online_) first_online_ = Clock::now();
  const size_t quorum = ctx_.config.job_quorum == 0 ? known_.size() : ctx_.config.job_quorum;
  const bool waited = first_online_ && ctx_.config.job_wait_ms > 0 &&
                      Clock::now() - *first_online_ >= std::chrono::milliseconds(ctx_.config.job_wait_ms);
  if (Clock::now() - last_progress_ >= kProgressEvery) {
    last_progress_ = Clock::now();
    ctx_.log->Info("job_waiting", {{"job", ctx_.config.job}, {"online", online.size()}, {"quorum", quorum}});
  }
  if (online.size() >= quorum || (waited && !online.empty())) StartJob(std::move(online));
}

void JobRunner::StartJob(std::vector<uint32_t> participants) {
  started_ = true;
  stages_ = jobs::JobStages(ctx_.config);
  stage_ = 0;
  plan_succeeded_ = true;
  StartStage(std::move(participants), nullptr);
}

void JobRunner::StartStage(std::vector<uint32_t> participants, const jobs::Job* previous) {
  const std::string& stage = stages_.at(stage_);
  uint64_t job_id = next_job_id_++;
  if (ctx_.state != nullptr) {
    // Ids continue across restarts: a device may still hold a job of an
    // earlier server process, and must not take this one for it.
    std::string error;
    if (!ctx_.state->BeginJob(stage, static_cast<uint32_t>(stage_ + 1), &job_id, &error)) {
      ctx_.log->Error("job_not_started", {{"stage", stage}, {"why", "state not saved: " + error}});
      job_.reset();
      previous_job_.reset();
      EndPlan(false);
      return;
    }
  }
  current_job_id_ = job_id;
  // Devices announce job keys for this job from its first round on.
  if (ctx_.job_keys != nullptr) ctx_.job_keys->BeginJob(job_id);
  const size_t count = participants.size();
  // A later stage takes its devices from the stage before it (the job
  // knows them; the runner passes none).
  const bool from_previous = previous != nullptr && count == 0;
  std::unique_ptr<jobs::Job> job = jobs::MakeJob(ctx_.config, stage, job_id, std::move(participants), previous);
  previous_job_.reset();
  job_ = std::move(job);
  if (!job_) {
    ctx_.log->Error("job_not_started", {{"job", job_id}, {"stage", stage}, {"why", "the previous stage has no usable result"}});
    EndPlan(false);
    return;
  }
  ctx_.log->Info("job_started", {{"job", job_id},
                                 {"kind", stage},
                                 {"stage", stage_ + 1},
                                 {"stages", stages_.size()},
                                 {"rss_kib", CurrentRssKiB()},
                                 {"participants", from_previous ? std::string("previous stage's") : std::to_string(count)}});
  Dispatch(job_->Begin(NowMicros()));
  if (job_ && job_->finished()) FinishJob();
}

void JobRunner::Dispatch(std::vector<jobs::RoundStart> starts) {
  DispatchRounds(std::move(starts));
  // Records for single devices, after any round start they belong to. A
  // job may produce more while told about undeliverable ones: loop.
  for (int pass = 0; pass < 4 && job_; ++pass) {
    std::vector<jobs::DeviceData> data = job_->TakeData();
    if (data.empty()) break;
    for (jobs::DeviceData& d : data) {
      auto target = ctx_.registry->CurrentTarget(d.device);
      if (!target) {
        if (HoldRecord(d)) continue;
        job_->OnDataUndeliverable(d, NowMicros());
        continue;
      }
      const uint64_t id = ++last_record_id_[d.device];
      if (SentStart* round = ResendableRound(d.device, d.round)) {
        // A device back on a new connection that the resend check has not
        // seen yet gets the round's start and earlier records first: it
        // takes records in order and drops any numbered below one it has.
        const auto snap = ctx_.registry->Snapshot(d.device);
        if (snap && snap->online && snap->generation != round->generation) {
          ResendRound(d.device, *round, snap->generation, target);
        }
        KeepRecord(*round, KeptRecord{id, d.kind, d.bytes});
      }
      std::static_pointer_cast<Connection>(target)->SendJobData(current_job_id_, d.round, d.kind, std::move(d.bytes),
                                                                id);
    }
  }
}

namespace {
// Jobs whose devices seal messages to each other in round 1's keys.
bool DeviceToDevice(nodefl_wire_JobKind kind) {
  return kind == nodefl_wire_JobKind_JOB_KIND_NEIGHBOUR_ECHO || kind == nodefl_wire_JobKind_JOB_KIND_SECURE_COMPARE ||
         kind == nodefl_wire_JobKind_JOB_KIND_FEDWALK_WALKS;
}
}  // namespace

void JobRunner::PublishDirectoryWhenReady() {
  if (!pending_directory_) return;
  PendingDirectory& p = *pending_directory_;
  if (!job_ || job_->finished() || current_job_id_ != p.job_id || ctx_.job_keys == nullptr) {
    pending_directory_.reset();
    return;
  }
  std::vector<std::pair<uint32_t, JobKey>> announced;
  for (uint32_t id : p.devices) {
    JobKey key;
    if (ctx_.job_keys->Find(id, p.job_id, &key) == JobKeyLookup::kFound) announced.emplace_back(id, key);
  }
  const bool waited = Clock::now() - p.since >= std::chrono::milliseconds(ctx_.config.peer_key_wait_ms);
  if (announced.size() < p.devices.size() && !waited) return;
  // Every participant that announced a key, in id order; the others are
  // absent and their neighbours cannot key them.
  std::sort(announced.begin(), announced.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  auto bytes = std::make_shared<std::vector<uint8_t>>(4);
  StoreU32Le(static_cast<uint32_t>(announced.size()), bytes->data());
  std::vector<uint8_t> entry(protocol::kMaxPeerDirectoryEntryBytes);
  uint32_t listed = 0;
  for (const auto& [id, key] : announced) {
    const std::span<const uint8_t> der = ctx_.certificates->Find(id);
    size_t n = 0;
    if (!protocol::EncodePeerDirectoryEntry(id, ConstByteSpan(der.data(), der.size()), ConstByteSpan(key.data(), key.size()),
                                         ByteSpan(entry), &n)
             .ok()) {
      continue;
    }
    bytes->insert(bytes->end(), entry.begin(), entry.begin() + static_cast<std::ptrdiff_t>(n));
    ++listed;
  }
  StoreU32Le(listed, bytes->data());
  StreamedArtefact artefact;
  artefact.kind = protocol::kPeerDirectoryArtefact;
  artefact.bytes = bytes;
  if (!protocol::Sha256(ConstByteSpan(bytes->data(), bytes->size()), Span<uint8_t>(artefact.sha256.data(), 32)).ok()) {
    ctx_.log->Error("artefact_hash_failed", {{"job", p.job_id}, {"artefact", "peer_directory"}});
    pending_directory_.reset();
    return;
  }
  ctx_.log->Info("peer_directory", {{"job", p.job_id},
                                    {"entries", listed},
                                    {"participants", p.devices.size()},
                                    {"bytes_each", bytes->size()}});
  for (uint32_t device : p.devices) {
    auto target = ctx_.registry->CurrentTarget(device);
    if (target) std::static_pointer_cast<Connection>(target)->SendJobArtefacts(p.job_id, p.round, {artefact});
  }
  pending_directory_.reset();
}

void JobRunner::DispatchRounds(std::vector<jobs::RoundStart> starts) {
  for (jobs::RoundStart& start : starts) {
    if (start.devices.empty()) continue;
    // The peer directory replaces key requests in the keys round of
    // device-to-device jobs; it follows once the devices announced keys.
    const bool directory = ctx_.config.peer_keys == "directory" && start.round == 1 && DeviceToDevice(job_->kind());
    if (directory) pending_directory_ = PendingDirectory{current_job_id_, start.round, start.devices, Clock::now()};
    // Devices get a slightly shorter deadline than the server enforces, so
    // their final reports arrive before the server gives up on them.
    const uint32_t device_deadline = start.deadline_ms - start.deadline_ms / 10;
    // Artefacts are hashed once here, not once per connection.
    std::vector<StreamedArtefact> artefacts;
    uint64_t artefact_bytes = 0;
    for (const jobs::Artefact& a : start.artefacts) {
      StreamedArtefact s;
      s.kind = a.kind;
      s.bytes = a.bytes;
      if (!protocol::Sha256(ConstByteSpan(a.bytes->data(), a.bytes->size()), Span<uint8_t>(s.sha256.data(), 32)).ok()) {
        ctx_.log->Error("artefact_hash_failed", {{"job", current_job_id_}, {"artefact", a.kind}});
        continue;
      }
      artefact_bytes += a.bytes->size();
      artefacts.push_back(std::move(s));
    }
    ctx_.log->Info("job_round", {{"job", current_job_id_},
                                 {"round", start.round},
                                 {"devices", start.devices.size()},
                                 {"artefacts", artefacts.size()},
                                 {"artefact_bytes_each", artefact_bytes}});
    const bool resendable = artefacts.empty() && !directory;
    for (uint32_t device : start.devices) {
      auto target = ctx_.registry->CurrentTarget(device);
      if (!target) {  // offline: the job decides (by default the round's deadline catches it)
        sent_starts_.erase(device);
        job_->OnUndeliverable(device, NowMicros());
        continue;
      }
      const auto snap = ctx_.registry->Snapshot(device);
      SentStart& sent = sent_starts_[device];
      sent = SentStart{};
      sent.resendable = resendable;
      sent.round = start.round;
      sent.deadline_ms = device_deadline;
      if (resendable) sent.parameters = start.parameters;
      sent.generation = snap ? snap->generation : 0;
      sent.sent = Clock::now();
      std::static_pointer_cast<Connection>(target)->SendJobRound(current_job_id_, start.round, job_->kind(),
                                                                 device_deadline, start.parameters, artefacts,
                                                                 directory);
    }
  }
}

void JobRunner::WatchUnreportedDevices() {
  // A few times a second is soon enough for a device that just came back.
  if (Clock::now() - last_resend_check_ < std::chrono::milliseconds(500)) return;
  last_resend_check_ = Clock::now();
  const auto grace = std::chrono::milliseconds(ctx_.config.offline_grace_ms);
  std::vector<uint32_t> gone;
  for (auto& [device, sent] : sent_starts_) {
    const auto snap = ctx_.registry->Snapshot(device);
    if (!snap) continue;
    if (!snap->online) {
      // last_seen is the detach (or a later message): offline since then.
      if (ctx_.config.offline_grace_ms != 0 && snap->last_seen && Clock::now() - *snap->last_seen >= grace) {
        gone.push_back(device);
      }
      continue;
    }
    if (snap->generation == sent.generation || !sent.resendable) continue;
    auto target = ctx_.registry->CurrentTarget(device);
    if (!target) continue;
    ResendRound(device, sent, snap->generation, target);
  }
  for (uint32_t device : gone) {
    ctx_.log->Info("job_device_gone", {{"job", current_job_id_},
                                       {"device", device},
                                       {"round", sent_starts_[device].round},
                                       {"offline_grace_ms", ctx_.config.offline_grace_ms}});
    sent_starts_.erase(device);
    ++devices_gone_;
    job_->OnUndeliverable(device, NowMicros());
    if (job_->finished()) break;
  }
}

JobRunner::SentStart* JobRunner::ResendableRound(uint32_t device, uint32_t round) {
  auto sent = sent_starts_.find(device);
  if (sent == sent_starts_.end() || !sent->second.resendable || sent->second.round != round) return nullptr;
  return &sent->second;
}

void JobRunner::KeepRecord(SentStart& round, KeptRecord record) {
  round.record_bytes += record.bytes.size();
  if (round.record_bytes <= kMaxKeptRecordBytes) {
    round.records.push_back(std::move(record));
  } else if (!round.records.empty()) {
    std::vector<KeptRecord>().swap(round.records);  // over the bound: none kept
  }
}

bool JobRunner::HoldRecord(jobs::DeviceData& d) {
  if (ctx_.config.offline_grace_ms == 0) return false;  // nobody would give up on it
  SentStart* round = ResendableRound(d.device, d.round);
  // Never past the bound: that would drop the round's kept records, held
  // ones among them, which were never sent.
  if (round == nullptr || round->record_bytes + d.bytes.size() > kMaxKeptRecordBytes) return false;
  KeepRecord(*round, KeptRecord{++last_record_id_[d.device], d.kind, std::move(d.bytes)});
  ++records_held_;
  return true;
}

void JobRunner::ResendRound(uint32_t device, SentStart& sent, uint64_t generation,
                            const std::shared_ptr<DeliveryTarget>& target) {
  // What is left of the round's device deadline.
  const auto elapsed_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - sent.sent).count();
  const uint32_t left = elapsed_ms >= sent.deadline_ms ? 1u : sent.deadline_ms - static_cast<uint32_t>(elapsed_ms);
  sent.generation = generation;
  ++starts_resent_;
  records_resent_ += sent.records.size();
  ctx_.log->Debug("job_round_resent",
                  {{"job", current_job_id_}, {"device", device}, {"round", sent.round}, {"records", sent.records.size()}});
  auto connection = std::static_pointer_cast<Connection>(target);
  connection->SendJobRound(current_job_id_, sent.round, job_->kind(), left, sent.parameters, {}, false);
  for (const KeptRecord& r : sent.records) connection->SendJobData(current_job_id_, sent.round, r.kind, r.bytes, r.id);
}

void JobRunner::FinishJob() {
  if (ctx_.job_keys != nullptr) ctx_.job_keys->EndJob(current_job_id_);
  if (starts_resent_ != 0 || devices_gone_ != 0 || records_held_ != 0) {
    ctx_.log->Info("job_reconnects", {{"job", current_job_id_},
                                      {"starts_resent", starts_resent_},
                                      {"records_resent", records_resent_},
                                      {"records_held", records_held_},
                                      {"devices_gone", devices_gone_}});
  }
  sent_starts_.clear();
  last_record_id_.clear();
  starts_resent_ = 0;
  records_resent_ = 0;
  records_held_ = 0;
  devices_gone_ = 0;
  job_->LogSummary(*ctx_.log, current_job_id_);
  ctx_.log->Info("job_traffic", {{"job", current_job_id_},
                                 {"artefact_bytes_sent", ctx_.counters.artefact_bytes.load()},
                                 {"upload_bytes_received", ctx_.counters.upload_bytes.load()},
                                 {"relay_sent", ctx_.counters.relay_sent.load()},
                                 {"relay_bytes", ctx_.counters.relay_bytes.load()},
                                 {"job_keys_announced", ctx_.counters.job_keys_announced.load()},
                                 {"peer_key_requests", ctx_.counters.peer_key_requests.load()},
                                 {"peer_keys_unanswered", ctx_.counters.peer_keys_unanswered.load()},
                                 {"peak_rss_kib", PeakRssKiB()}});
  plan_succeeded_ = plan_succeeded_ && job_->succeeded();
  if (ctx_.state != nullptr) {
    std::string error;
    if (!ctx_.state->EndJob(current_job_id_, job_->succeeded() ? "verified" : "finished", "", &error)) {
      ctx_.log->Warn("state_not_saved", {{"job", current_job_id_}, {"error", error}});
    }
  }
  if (stage_ + 1 < stages_.size()) {
    // The next stage runs on the devices the finished one names.
    ++stage_;
    previous_job_ = std::move(job_);
    StartStage({}, previous_job_.get());
    return;
  }
  EndPlan(plan_succeeded_);
}

void JobRunner::EndPlan(bool succeeded) {
  ++jobs_finished_;
  if (on_finished_) on_finished_(succeeded);
  if (ctx_.config.exit_after_jobs != 0 && jobs_finished_ >= ctx_.config.exit_after_jobs && on_all_done_) {
    on_all_done_();
  }
}

}  // namespace nodefl::server::net
