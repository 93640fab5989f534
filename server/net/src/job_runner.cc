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
#include "nodefl/server/core/os_random.h"
#include "nodefl/server/jobs/job_entropy.h"
#include "nodefl/server/jobs/handed_off_stage.h"
#include "nodefl/server/jobs/job_factory.h"
#include "nodefl/protocol/chunk.h"
#include "nodefl/protocol/envelope_codec.h"

#include "nodefl/server/net/connection.h"
#include "nodefl/host/net/process_limits.h"

namespace nodefl::server::net {

using host::net::CurrentRssKiB;
using host::net::PeakRssKiB;

namespace asio = boost::asio;

namespace {
constexpr auto kTick = std::chrono::milliseconds(200);
constexpr auto kProgressEvery = std::chrono::seconds(2);
// Events without answers (most polls) wait at most this long for the
// journal; any event with answers is written before they are sent.
constexpr auto kJournalEvery = std::chrono::seconds(1);

// FNV-1a over a job's answers: the digest a replay is checked against.
constexpr uint64_t kDigestStart = 0xcbf29ce484222325ull;
void Mix(uint64_t& h, const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
}
void MixU64(uint64_t& h, uint64_t v) {
  uint8_t b[8];
  StoreU64Le(v, b);
  Mix(h, b, 8);
}

// Reports are journaled as the Envelope that carries them.
bool EncodeReport(const nodefl_wire_JobReport& report, std::vector<uint8_t>* out) {
  nodefl_wire_Envelope env;
  protocol::InitEnvelope(&env, nodefl_wire_Envelope_job_report_tag);
  env.body.job_report = report;
  out->resize(nodefl_wire_Envelope_size);  // the largest encoding (nanopb's bound)
  const Result<size_t> n = protocol::EncodeEnvelope(env, ByteSpan(out->data(), out->size()));
  if (!n.ok()) return false;
  out->resize(n.value());
  return true;
}
bool DecodeReport(const std::vector<uint8_t>& bytes, nodefl_wire_JobReport* out) {
  nodefl_wire_Envelope env;
  if (!protocol::DecodeEnvelope(ConstByteSpan(bytes.data(), bytes.size()), &env).ok() ||
      env.which_body != nodefl_wire_Envelope_job_report_tag) {
    return false;
  }
  *out = env.body.job_report;
  return true;
}

}  // namespace

// The event being fed: in a replay, how far its journaled entropy and
// delivery outcomes have been used.
struct JobRunner::Feeding {
  store::JournalEvent* event = nullptr;
  bool replay = false;
  size_t entropy_at = 0;
  size_t undeliverable_at = 0;
  uint64_t digest = kDigestStart;
  bool diverged = false;
};

// Job entropy while an event is fed: drawn from the OS and journaled, or
// read back from the journal.
class JobRunner::Tape final : public jobs::EntropyTape {
 public:
  explicit Tape(Feeding& feeding) : f_(feeding) {}
  void Fill(std::span<uint8_t> out) override {
    std::vector<uint8_t>& tape = f_.event->entropy;
    if (!f_.replay) {
      FillFromOsEntropy(out);
      tape.insert(tape.end(), out.begin(), out.end());
      return;
    }
    if (tape.size() - f_.entropy_at < out.size()) {  // the job draws more than it did
      f_.diverged = true;
      FillFromOsEntropy(out);
      return;
    }
    std::copy_n(tape.begin() + static_cast<std::ptrdiff_t>(f_.entropy_at), out.size(), out.begin());
    f_.entropy_at += out.size();
  }

 private:
  Feeding& f_;
};

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
      clock_offset_us_ + std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - epoch_).count());
}

void JobRunner::Start(std::vector<store::StoredJob> interrupted) {
  asio::post(strand_, [this, interrupted = std::move(interrupted)]() mutable {
    ContinueOrAbandon(std::move(interrupted));
    asio::co_spawn(strand_, Loop(), asio::detached);
  });
}

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
    FeedLive(EventType::kReport, device, round, 0, &report);
  });
}

void JobRunner::OnJobUpload(uint32_t device, uint64_t job_id, uint32_t round, uint32_t artefact,
                            std::vector<uint8_t> bytes) {
  asio::post(strand_, [this, device, job_id, round, artefact, bytes = std::move(bytes)]() mutable {
    if (!job_ || job_->finished() || job_id != current_job_id_) {
      ctx_.log->Warn("job_upload_ignored", {{"device", device}, {"job", job_id}, {"round", round}});
      return;
    }
    FeedLive(EventType::kUpload, device, round, artefact, nullptr, std::move(bytes));
  });
}

void JobRunner::Tick() {
  PublishDirectoryWhenReady();
  if (job_) {
    if (!job_->finished()) {
      const uint64_t job_id = current_job_id_;
      WatchUnreportedDevices();
      if (job_ && current_job_id_ == job_id && !job_->finished()) FeedLive(EventType::kPoll);
      if (job_ && !job_->finished() && Clock::now() - last_progress_ >= kProgressEvery) {
        last_progress_ = Clock::now();
        ctx_.log->Info("job_progress", {{"job", current_job_id_},
                                        {"state", job_->ProgressLine()},
                                        {"relay_sent", ctx_.counters.relay_sent.load()},
                                        {"relay_delivered", ctx_.counters.relay_delivered.load()}});
      }
    }
    if (journaling_ && !journal_pending_.empty() && Clock::now() - last_journal_flush_ >= kJournalEvery) {
      FlushJournal();
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
  begin_count_ = participants.size();
  // A later stage takes its devices from the stage before it (the job
  // knows them; the runner passes none).
  begin_from_previous_ = previous != nullptr && begin_count_ == 0;
  // What a continuation after a restart would make the job from.
  if (ctx_.state != nullptr) {
    begin_participants_ = participants;
    begin_handoff_ = previous != nullptr ? previous->HandOff() : std::vector<uint8_t>();
  }
  job_.reset();
  store::JournalEvent begin;
  begin.type = static_cast<uint32_t>(EventType::kBegin);
  begin.now_us = NowMicros();
  Feed(begin, false, nullptr, {}, std::move(participants), previous);
  previous_job_.reset();
  begin_participants_.clear();
  begin_handoff_.clear();
  if (!job_) {
    ctx_.log->Error("job_not_started", {{"job", job_id}, {"stage", stage}, {"why", "the previous stage has no usable result"}});
    EndPlan(false);
    return;
  }
  JournalAndSend(std::move(begin), true);
  if (job_ && job_->finished()) FinishJob();
}

void JobRunner::OnJobMade() {
  const std::string& stage = stages_.at(stage_);
  ctx_.log->Info("job_started", {{"job", current_job_id_},
                                 {"kind", stage},
                                 {"stage", stage_ + 1},
                                 {"stages", stages_.size()},
                                 {"rss_kib", CurrentRssKiB()},
                                 {"participants", begin_from_previous_ ? std::string("previous stage's")
                                                                       : std::to_string(begin_count_)},
                                 {"continuable", ctx_.state != nullptr && job_->continuable()}});
  journaling_ = false;
  journal_seq_ = 0;
  journal_pending_.clear();
  if (ctx_.state == nullptr || !job_->continuable()) return;
  std::string error;
  if (!ctx_.state->SaveJobInputs(current_job_id_, begin_participants_, begin_handoff_, &error)) {
    ctx_.log->Warn("state_not_saved", {{"job", current_job_id_}, {"error", error}});
    return;  // not journaled: a restart runs it again
  }
  journaling_ = true;
}

bool JobRunner::Feed(store::JournalEvent& e, bool replay, const nodefl_wire_JobReport* report,
                     std::vector<uint8_t> bytes, std::vector<uint32_t> participants, const jobs::Job* previous) {
  Feeding f;
  f.event = &e;
  f.replay = replay;
  Tape tape(f);
  feeding_ = &f;
  std::vector<jobs::RoundStart> starts;
  {
    jobs::ScopedEntropyTape scoped(&tape);
    nodefl_wire_JobReport decoded = nodefl_wire_JobReport_init_zero;
    switch (static_cast<EventType>(e.type)) {
      case EventType::kBegin:
        // The job is made here, not before: a job may draw its seed as it
        // is made, and that draw is the event's too.
        job_ = jobs::MakeJob(ctx_.config, stages_.at(stage_), current_job_id_, std::move(participants), previous);
        if (!job_) break;
        if (!replay) OnJobMade();
        starts = job_->Begin(e.now_us);
        break;
      case EventType::kReport:
        if (replay) {
          if (!DecodeReport(e.payload, &decoded)) {
            f.diverged = true;
            break;
          }
          report = &decoded;
        }
        if (auto it = sent_starts_.find(e.device); it != sent_starts_.end() && it->second.round == e.round) {
          sent_starts_.erase(it);  // it has the round
        }
        starts = job_->OnReport(e.device, e.round, *report, e.now_us);
        break;
      case EventType::kUpload:
        starts = job_->OnUpload(e.device, e.round, e.artefact, replay ? e.payload : std::move(bytes), e.now_us);
        break;
      case EventType::kPoll:
        starts = job_->Poll(e.now_us);
        break;
      case EventType::kGone:
        sent_starts_.erase(e.device);
        ++devices_gone_;
        job_->OnUndeliverable(e.device, e.now_us);
        break;
      case EventType::kDirectory:
        pending_directory_.reset();  // published
        break;
      default:
        f.diverged = true;
        break;
    }
    if (job_ && !f.diverged) Dispatch(std::move(starts));
  }
  feeding_ = nullptr;
  if (!replay) {
    e.digest = f.digest;
    return true;
  }
  return !f.diverged && f.digest == e.digest && f.entropy_at == e.entropy.size() &&
         f.undeliverable_at == e.undeliverable.size();
}

void JobRunner::FeedLive(EventType type, uint32_t device, uint32_t round, uint32_t artefact,
                         const nodefl_wire_JobReport* report, std::vector<uint8_t> bytes) {
  store::JournalEvent e;
  e.type = static_cast<uint32_t>(type);
  e.device = device;
  e.round = round;
  e.artefact = artefact;
  e.now_us = NowMicros();
  if (journaling_) {
    if (report != nullptr && !EncodeReport(*report, &e.payload)) StopJournal("a report that does not encode");
    if (type == EventType::kUpload) e.payload = bytes;
  }
  Feed(e, false, report, std::move(bytes));
  // What a device sent (and may have been told is received) is written at
  // once; a poll that answered nothing waits for the next write.
  JournalAndSend(std::move(e), type != EventType::kPoll);
  if (job_ && job_->finished()) FinishJob();
}

void JobRunner::JournalAndSend(store::JournalEvent e, bool write_now) {
  if (journaling_) {
    e.seq = ++journal_seq_;
    journal_pending_.push_back(std::move(e));
    if (write_now || !outbox_.empty()) FlushJournal();
  }
  std::vector<std::function<void()>> sends;
  sends.swap(outbox_);
  for (auto& send : sends) send();
}

void JobRunner::FlushJournal() {
  last_journal_flush_ = Clock::now();
  if (!journaling_ || journal_pending_.empty()) return;
  std::string error;
  if (!ctx_.state->AppendJobEvents(current_job_id_, journal_pending_, &error)) StopJournal(error);
  journal_pending_.clear();
}

void JobRunner::StopJournal(const std::string& why) {
  // The journal ends at its last good write while the job goes on: a
  // restart would find the devices ahead of it, so it is not continued.
  ctx_.log->Warn("state_not_saved", {{"job", current_job_id_}, {"error", why}, {"journal", "stopped"}});
  journaling_ = false;
  journal_pending_.clear();
  std::string error;
  if (!ctx_.state->EndJob(current_job_id_, "running-unjournaled", why, &error)) {
    ctx_.log->Warn("state_not_saved", {{"job", current_job_id_}, {"error", error}});
  }
}

void JobRunner::Send(std::function<void()> send) {
  if (feeding_ != nullptr && !feeding_->replay) {
    outbox_.push_back(std::move(send));
  } else if (feeding_ == nullptr) {
    send();
  }
}

bool JobRunner::Undeliverable(uint32_t device, uint8_t what, bool offline) {
  if (feeding_ == nullptr) return offline;
  std::vector<uint8_t>& list = feeding_->event->undeliverable;
  if (!feeding_->replay) {
    if (offline) {
      uint8_t entry[5];
      StoreU32Le(device, entry);
      entry[4] = what;
      list.insert(list.end(), entry, entry + 5);
    }
    return offline;
  }
  size_t& at = feeding_->undeliverable_at;
  if (at + 5 <= list.size() && LoadU32Le(&list[at]) == device && list[at + 4] == what) {
    at += 5;
    return true;
  }
  return false;
}

uint64_t JobRunner::EventNow() const { return feeding_ != nullptr ? feeding_->event->now_us : NowMicros(); }

void JobRunner::Dispatch(std::vector<jobs::RoundStart> starts) {
  DispatchRounds(std::move(starts));
  const bool replay = feeding_ != nullptr && feeding_->replay;
  // Records for single devices, after any round start they belong to. A
  // job may produce more while told about undeliverable ones: loop.
  for (int pass = 0; pass < 4 && job_; ++pass) {
    std::vector<jobs::DeviceData> data = job_->TakeData();
    if (data.empty()) break;
    for (jobs::DeviceData& d : data) {
      if (feeding_ != nullptr) {
        uint64_t& h = feeding_->digest;
        MixU64(h, (uint64_t{d.device} << 32) | d.round);
        MixU64(h, (uint64_t{d.kind} << 32) | d.bytes.size());
        Mix(h, d.bytes.data(), d.bytes.size());
      }
      if (replay) {
        // As the first process did: told the job, or numbered and kept it
        // (sent or held) with the device's round.
        if (Undeliverable(d.device, 1, false)) {
          job_->OnDataUndeliverable(d, EventNow());
          continue;
        }
        const uint64_t id = ++last_record_id_[d.device];
        if (SentStart* round = ResendableRound(d.device, d.round)) KeepRecord(*round, KeptRecord{id, d.kind, std::move(d.bytes)});
        continue;
      }
      auto target = ctx_.registry->CurrentTarget(d.device);
      if (!target) {
        if (HoldRecord(d)) continue;
        Undeliverable(d.device, 1, true);
        job_->OnDataUndeliverable(d, EventNow());
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
      Send([connection = std::static_pointer_cast<Connection>(target), job = current_job_id_, round = d.round,
            kind = d.kind, bytes = std::move(d.bytes), id]() mutable {
        connection->SendJobData(job, round, kind, std::move(bytes), id);
      });
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
  // Journaled, so that a continuation does not publish it a second time.
  if (journaling_) FeedLive(EventType::kDirectory);
}

void JobRunner::DispatchRounds(std::vector<jobs::RoundStart> starts) {
  const bool replay = feeding_ != nullptr && feeding_->replay;
  // A round boundary: what the relay holds of the rounds before is written
  // now (by the journal's own thread), not only at its next interval.
  if (!replay && !starts.empty() && ctx_.relay_journal != nullptr) ctx_.relay_journal->WriteSoon();
  for (jobs::RoundStart& start : starts) {
    if (start.devices.empty()) continue;
    if (feeding_ != nullptr) {
      uint64_t& h = feeding_->digest;
      MixU64(h, (uint64_t{start.round} << 32) | start.deadline_ms);
      MixU64(h, start.parameters.size());
      Mix(h, start.parameters.data(), start.parameters.size());
      for (const jobs::Artefact& a : start.artefacts) MixU64(h, (uint64_t{a.kind} << 32) | a.bytes->size());
      MixU64(h, start.devices.size());
      for (uint32_t device : start.devices) MixU64(h, device);
    }
    // The peer directory replaces key requests in the keys round of
    // device-to-device jobs; it follows once the devices announced keys.
    const bool directory = ctx_.config.peer_keys == "directory" && start.round == 1 && DeviceToDevice(job_->kind());
    if (directory) pending_directory_ = PendingDirectory{current_job_id_, start.round, start.devices, Clock::now()};
    // Devices get a slightly shorter deadline than the server enforces, so
    // their final reports arrive before the server gives up on them.
    const uint32_t device_deadline = start.deadline_ms - start.deadline_ms / 10;
    // A round with the peer directory is not sent again: the directory
    // follows the start later in the round (PublishDirectoryWhenReady).
    const bool resendable = !directory;
    // Artefacts are hashed once here, not once per connection (nor per
    // resend).
    auto artefacts = std::make_shared<std::vector<StreamedArtefact>>();
    uint64_t artefact_bytes = 0;
    for (const jobs::Artefact& a : start.artefacts) {
      StreamedArtefact streamed;
      streamed.kind = a.kind;
      streamed.bytes = a.bytes;
      if (!protocol::Sha256(ConstByteSpan(a.bytes->data(), a.bytes->size()), Span<uint8_t>(streamed.sha256.data(), 32))
               .ok()) {
        ctx_.log->Error("artefact_hash_failed", {{"job", current_job_id_}, {"artefact", a.kind}});
        continue;
      }
      artefact_bytes += a.bytes->size();
      artefacts->push_back(std::move(streamed));
    }
    const std::shared_ptr<const std::vector<StreamedArtefact>> kept_artefacts = std::move(artefacts);
    if (replay) {
      // Bookkeeping only: who has the round, sent when (on the job's
      // clock), and not on which connection (none yet: every device is
      // sent the round again when it is back).
      for (uint32_t device : start.devices) {
        if (Undeliverable(device, 0, false)) {
          sent_starts_.erase(device);
          job_->OnUndeliverable(device, EventNow());
          continue;
        }
        RecordStart(device, start, kept_artefacts, resendable, device_deadline, 0,
                    Clock::now() - std::chrono::microseconds(replay_last_now_us_ - EventNow()));
      }
      continue;
    }
    ctx_.log->Info("job_round", {{"job", current_job_id_},
                                 {"round", start.round},
                                 {"devices", start.devices.size()},
                                 {"artefacts", kept_artefacts->size()},
                                 {"artefact_bytes_each", artefact_bytes}});
    for (uint32_t device : start.devices) {
      auto target = ctx_.registry->CurrentTarget(device);
      if (!target && resendable && HoldStart(device, start, kept_artefacts, device_deadline)) continue;
      if (!target) {  // offline: the job decides (by default the round's deadline catches it)
        Undeliverable(device, 0, true);
        sent_starts_.erase(device);
        job_->OnUndeliverable(device, EventNow());
        continue;
      }
      const auto snap = ctx_.registry->Snapshot(device);
      RecordStart(device, start, kept_artefacts, resendable, device_deadline, snap ? snap->generation : 0,
                  Clock::now());
      Send([connection = std::static_pointer_cast<Connection>(target), job = current_job_id_, round = start.round,
            kind = job_->kind(), device_deadline, parameters = start.parameters, artefacts = kept_artefacts,
            directory]() mutable {
        connection->SendJobRound(job, round, kind, device_deadline, std::move(parameters), *artefacts, directory);
      });
    }
  }
}

bool JobRunner::HoldStart(uint32_t device, const jobs::RoundStart& start,
                          const std::shared_ptr<const std::vector<StreamedArtefact>>& artefacts, uint32_t deadline_ms) {
  if (ctx_.config.offline_grace_ms == 0) return false;  // nobody would give up on it
  const auto snap = ctx_.registry->Snapshot(device);
  // Offline for less than the grace so far (and seen at all: the grace
  // runs from then): it may be back within the round.
  if (!snap || snap->online || !snap->last_seen ||
      Clock::now() - *snap->last_seen >= std::chrono::milliseconds(ctx_.config.offline_grace_ms)) {
    return false;
  }
  // Recorded as sent on its last connection: the start goes out when it is
  // back on a new one (WatchUnreportedDevices), the job's records to it in
  // this round are held with it, and past the grace it is given up.
  RecordStart(device, start, artefacts, true, deadline_ms, snap->generation, Clock::now());
  ++starts_held_;
  return true;
}

void JobRunner::RecordStart(uint32_t device, const jobs::RoundStart& start,
                            const std::shared_ptr<const std::vector<StreamedArtefact>>& artefacts, bool resendable,
                            uint32_t deadline_ms, uint64_t generation, Clock::time_point sent_at) {
  SentStart& sent = sent_starts_[device];
  sent = SentStart{};
  sent.resendable = resendable;
  sent.round = start.round;
  sent.deadline_ms = deadline_ms;
  if (resendable) {
    sent.parameters = start.parameters;
    sent.artefacts = artefacts;
  }
  sent.generation = generation;
  sent.sent = sent_at;
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
  const uint64_t job_id = current_job_id_;
  for (uint32_t device : gone) {
    if (!job_ || job_->finished() || current_job_id_ != job_id) break;
    ctx_.log->Info("job_device_gone", {{"job", current_job_id_},
                                       {"device", device},
                                       {"round", sent_starts_[device].round},
                                       {"offline_grace_ms", ctx_.config.offline_grace_ms}});
    FeedLive(EventType::kGone, device);
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
  Send([connection = std::static_pointer_cast<Connection>(target), job = current_job_id_, round = sent.round,
        kind = job_->kind(), left, parameters = sent.parameters, artefacts = sent.artefacts, records = sent.records] {
    connection->SendJobRound(job, round, kind, left, parameters, *artefacts, false);
    for (const KeptRecord& r : records) connection->SendJobData(job, round, r.kind, r.bytes, r.id);
  });
}

void JobRunner::FinishJob() {
  FlushJournal();
  journaling_ = false;
  journal_seq_ = 0;
  if (ctx_.job_keys != nullptr) ctx_.job_keys->EndJob(current_job_id_);
  if (starts_resent_ != 0 || devices_gone_ != 0 || records_held_ != 0 || starts_held_ != 0) {
    ctx_.log->Info("job_reconnects", {{"job", current_job_id_},
                                      {"starts_held", starts_held_},
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
  starts_held_ = 0;
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

void JobRunner::ResetJobState() {
  job_.reset();
  previous_job_.reset();
  sent_starts_.clear();
  last_record_id_.clear();
  pending_directory_.reset();
  starts_resent_ = records_resent_ = records_held_ = starts_held_ = devices_gone_ = 0;
  journaling_ = false;
  journal_seq_ = 0;
  journal_pending_.clear();
  outbox_.clear();
}

bool JobRunner::ContinueJob(const store::StoredJob& stored, std::string* why) {
  if (ctx_.state == nullptr) {
    *why = "no state store";
    return false;
  }
  if (stored.state != "running") {
    *why = "its journal is incomplete (" + stored.state + ")";
    return false;
  }
  std::vector<uint32_t> participants;
  std::vector<uint8_t> handoff;
  bool found = false;
  std::vector<store::JournalEvent> events;
  if (!ctx_.state->LoadJobInputs(stored.job_id, &participants, &handoff, &found, why) ||
      (found && !ctx_.state->LoadJobEvents(stored.job_id, &events, why))) {
    return false;
  }
  if (!found || events.empty() || events.front().type != static_cast<uint32_t>(EventType::kBegin)) {
    *why = "no journal (the job cannot be continued)";
    return false;
  }
  stages_ = jobs::JobStages(ctx_.config);
  if (stored.stage == 0 || stored.stage > stages_.size() || stages_[stored.stage - 1] != stored.kind) {
    *why = "the configured plan has no stage " + std::to_string(stored.stage) + " " + stored.kind;
    return false;
  }
  stage_ = stored.stage - 1;
  plan_succeeded_ = true;
  current_job_id_ = stored.job_id;
  if (ctx_.job_keys != nullptr) ctx_.job_keys->BeginJob(current_job_id_);
  std::unique_ptr<jobs::Job> previous;
  if (!handoff.empty()) previous = std::make_unique<jobs::HandedOffStage>(std::move(handoff));
  replay_last_now_us_ = events.back().now_us;
  ResetJobState();
  size_t replayed = 0;
  for (store::JournalEvent& e : events) {
    const bool first = replayed == 0;
    const bool same = Feed(e, true, nullptr, {}, first ? std::move(participants) : std::vector<uint32_t>(),
                           previous.get());
    if (first && (!job_ || !job_->continuable())) {
      *why = "the job could not be made again as it was";
      ResetJobState();
      return false;
    }
    if (!same) {
      *why = "event " + std::to_string(e.seq) + " of " + std::to_string(events.size()) +
             " replayed differently from the journal";
      ResetJobState();
      return false;
    }
    ++replayed;
    if (job_->finished()) break;
  }
  std::string error;
  if (!ctx_.state->AdoptJob(current_job_id_, &error)) {
    *why = error;
    ResetJobState();
    return false;
  }
  // The job's clock goes on from its last event: the time the server was
  // down does not count against its deadlines.
  clock_offset_us_ = static_cast<int64_t>(replay_last_now_us_) -
                     std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - epoch_).count();
  started_ = true;
  journaling_ = true;
  journal_seq_ = events.size();
  ctx_.log->Info("job_continued", {{"job", current_job_id_},
                                   {"kind", stored.kind},
                                   {"stage", stored.stage},
                                   {"stages", stages_.size()},
                                   {"events_replayed", replayed},
                                   {"job_time_ms", replay_last_now_us_ / 1000},
                                   {"rounds_to_resend", sent_starts_.size()},
                                   {"state", job_->ProgressLine()}});
  if (job_->finished()) FinishJob();
  return true;
}

void JobRunner::ContinueOrAbandon(std::vector<store::StoredJob> interrupted) {
  if (interrupted.empty()) return;
  // One plan runs at a time: its latest job is the one cut off; any other
  // was left running by an older failure.
  const store::StoredJob& latest = interrupted.back();
  std::string why;
  const bool continued = ContinueJob(latest, &why);
  for (const store::StoredJob& job : interrupted) {
    if (continued && job.job_id == latest.job_id) continue;
    std::string error;
    if (!ctx_.state->EndJob(job.job_id, "abandoned", "server restart", &error)) {
      ctx_.log->Warn("state_not_saved", {{"job", job.job_id}, {"error", error}});
    }
    ctx_.log->Warn("job_abandoned", {{"job", job.job_id},
                                     {"kind", job.kind},
                                     {"stage", job.stage},
                                     {"start", job.start},
                                     {"reason", "server restart"},
                                     {"not_continued", job.job_id == latest.job_id ? why : "not the latest job"}});
  }
  if (!continued) {
    stages_.clear();
    stage_ = 0;
    current_job_id_ = 0;
    started_ = false;
  }
}

}  // namespace nodefl::server::net
