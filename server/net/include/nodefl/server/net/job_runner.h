// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// JobRunner: starts the configured job once enough devices are online
// (ServerConfig::job, job_quorum, job_wait_ms), delivers its JobStart
// messages through the devices' connections, feeds it the devices' reports,
// enforces its deadlines and logs progress and the final summary. Runs on
// its own strand; the job logic itself lives in server/jobs (no network code
// there).
#pragma once

// Boost 1.74's awaitable.hpp uses std::exchange without including <utility>.
#include <utility>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nodefl/server/jobs/job.h"
#include "nodefl/server/net/server_context.h"
#include "nodefl/server/store/state_store.h"

namespace nodefl::server::net {

class JobRunner final : public JobSink {
 public:
  // `on_finished(verified)` after each job; `on_all_done` once
  // exit_after_jobs jobs have finished.
  JobRunner(boost::asio::io_context& io, ServerContext& context, std::vector<uint32_t> known_devices,
            std::function<void(bool)> on_finished, std::function<void()> on_all_done);

  // `interrupted`: jobs an earlier server process left running (from
  // ServerStateStore::InterruptedJobs). The runner continues the last one
  // from its journal when it can and records the others, and that one if
  // it cannot, as abandoned (docs/reliability.md, "Server restarts").
  void Start(std::vector<store::StoredJob> interrupted = {});
  void Stop();
  void OnJobReport(uint32_t device, uint64_t job_id, uint32_t round,
                   const nodefl_wire_JobReport& report) override;
  void OnJobUpload(uint32_t device, uint64_t job_id, uint32_t round, uint32_t artefact,
                   std::vector<uint8_t> bytes) override;

 private:
  using Clock = std::chrono::steady_clock;
  boost::asio::awaitable<void> Loop();
  void Tick();
  void StartJob(std::vector<uint32_t> participants);
  void StartStage(std::vector<uint32_t> participants, const jobs::Job* previous);
  void EndPlan(bool succeeded);
  void Dispatch(std::vector<jobs::RoundStart> starts);
  void DispatchRounds(std::vector<jobs::RoundStart> starts);
  void FinishJob();
  uint64_t NowMicros() const;
  // peer_keys = directory: once the round-1 devices announced their job
  // keys (or peer_key_wait_ms passed), streams them the peer directory.
  void PublishDirectoryWhenReady();
  // Sends a device that came back on a new connection the round start it
  // has not reported yet (see sent_starts_), and gives up on one that has
  // been offline longer than offline_grace_ms (Job::OnUndeliverable).
  void WatchUnreportedDevices();

  // ---- the job journal (docs/reliability.md, "Server restarts") ----
  // Every call into a continuable job is one event: fed live (journaled,
  // its answers' sends held until the event is in the journal, so no device
  // sees an answer a continuation would not give again) or replayed from
  // the journal after a restart (nothing sent; the answers are checked
  // against the journal's digest, and where the first process could not
  // deliver one the replay tells the job so at the same point).
  enum class EventType : uint32_t { kBegin = 1, kReport = 2, kUpload = 3, kPoll = 4, kGone = 5, kDirectory = 6 };
  struct Feeding;
  class Tape;
  // Live: `report` for kReport, `bytes` for kUpload. Returns false when a
  // replayed event's answers differ from the journal's.
  bool Feed(store::JournalEvent& event, bool replay, const nodefl_wire_JobReport* report = nullptr,
            std::vector<uint8_t> bytes = {}, std::vector<uint32_t> participants = {}, const jobs::Job* previous = nullptr);
  void FeedLive(EventType type, uint32_t device = 0, uint32_t round = 0, uint32_t artefact = 0,
                const nodefl_wire_JobReport* report = nullptr, std::vector<uint8_t> bytes = {});
  // The job could not be handed a start (what = 0) or a record (what = 1)
  // for `device`: live, whether it is offline (recorded); replayed, whether
  // the first process recorded so at this point.
  bool Undeliverable(uint32_t device, uint8_t what, bool offline);
  // Journals a fed event (at once if `write_now` or it has answers) and
  // then sends its answers.
  void JournalAndSend(store::JournalEvent event, bool write_now);
  // Logs the made job and decides whether it is journaled.
  void OnJobMade();
  // The fed event's time (the job's clock), else now.
  uint64_t EventNow() const;
  // A send to a device: held while an event is fed live, until the event
  // is journaled; at once otherwise.
  void Send(std::function<void()> send);
  void FlushJournal();
  // A journal write failed: the job runs on but is no longer continued.
  void StopJournal(const std::string& why);
  void ResetJobState();
  // Continues `job` from its journal; false (with `*why`) when it cannot.
  bool ContinueJob(const store::StoredJob& job, std::string* why);
  void ContinueOrAbandon(std::vector<store::StoredJob> interrupted);
  Feeding* feeding_ = nullptr;
  bool journaling_ = false;  // the current job is continuable and a state store is open
  uint64_t journal_seq_ = 0;
  std::vector<store::JournalEvent> journal_pending_;
  std::vector<std::function<void()>> outbox_;
  int64_t clock_offset_us_ = 0;  // a continued job's time goes on from its journal's last event
  uint64_t replay_last_now_us_ = 0;
  std::chrono::steady_clock::time_point last_journal_flush_{};
  // What StartStage makes the job from, for OnJobMade.
  size_t begin_count_ = 0;
  bool begin_from_previous_ = false;
  std::vector<uint32_t> begin_participants_;
  std::vector<uint8_t> begin_handoff_;

  ServerContext& ctx_;
  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  boost::asio::steady_timer timer_;
  std::vector<uint32_t> known_;
  std::function<void(bool)> on_finished_;
  std::function<void()> on_all_done_;
  bool stopped_ = false;
  bool started_ = false;
  Clock::time_point epoch_ = Clock::now();
  std::optional<Clock::time_point> first_online_;
  Clock::time_point last_progress_{};
  // The round start each device was sent last and has not reported yet.
  // Whatever was queued on a connection that broke may be lost, so a device
  // seen on a new connection (a higher registry generation) gets it again
  // (rounds without artefacts or a peer directory; a role takes a start for
  // the round it already runs as a repeat, docs/protocol.md). One offline
  // for longer than offline_grace_ms is given up on (docs/reliability.md).
  // The job's records to the device in that round (walks to start,
  // comparison sessions, ...) go with a resent start, in order: the device
  // drops those it had by their number (JobData.send_id, per job and
  // device). At most kMaxKeptRecordBytes of them per device: a round whose
  // records are larger (Lumos training's parameters, about 90 KB a device
  // on Cora) keeps none, and its start is resent alone, as before records
  // were kept; ten thousand devices then hold at most 160 MiB.
  static constexpr size_t kMaxKeptRecordBytes = 16384;
  struct KeptRecord {
    uint64_t id = 0;
    uint32_t kind = 0;
    std::vector<uint8_t> bytes;
  };
  struct SentStart {
    bool resendable = false;
    uint32_t round = 0;
    uint32_t deadline_ms = 0;
    std::vector<uint8_t> parameters;
    // The round's artefacts, hashed once and shared by every device of the
    // round (never null once recorded): a device back on a new connection
    // gets them again.
    std::shared_ptr<const std::vector<StreamedArtefact>> artefacts;
    uint64_t generation = 0;
    Clock::time_point sent;
    std::vector<KeptRecord> records;
    size_t record_bytes = 0;  // all the round's records; over kMaxKeptRecordBytes none are kept
  };
  std::map<uint32_t, SentStart> sent_starts_;
  std::map<uint32_t, uint64_t> last_record_id_;  // this job: per device
  uint64_t records_resent_ = 0;                  // this job
  // A record for a device between connections, in a round whose start it
  // will get again when it is back: kept with the round's records instead
  // of being reported undeliverable (a cut connection would otherwise
  // abort its comparison sessions as offline). False when it cannot be
  // kept (no such round, over kMaxKeptRecordBytes, or offline_grace_ms 0:
  // nothing would give up on the device); the job is then told.
  bool HoldRecord(jobs::DeviceData& d);
  uint64_t records_held_ = 0;  // this job
  // Sends `device`'s unreported round start again on its current
  // connection, then the round's records.
  void ResendRound(uint32_t device, SentStart& sent, uint64_t generation, const std::shared_ptr<DeliveryTarget>& target);
  // A start for a device between connections (offline for less than
  // offline_grace_ms): recorded as if sent, so that it goes out when the
  // device is back; false (the job is told it is undeliverable) otherwise.
  bool HoldStart(uint32_t device, const jobs::RoundStart& start,
                 const std::shared_ptr<const std::vector<StreamedArtefact>>& artefacts, uint32_t deadline_ms);
  uint64_t starts_held_ = 0;  // this job
  // Notes that `device` was sent (or, replayed, had been sent) `start`.
  void RecordStart(uint32_t device, const jobs::RoundStart& start,
                   const std::shared_ptr<const std::vector<StreamedArtefact>>& artefacts, bool resendable,
                   uint32_t deadline_ms, uint64_t generation, Clock::time_point sent_at);
  // `device`'s unreported round start if it is resendable and for `round`.
  SentStart* ResendableRound(uint32_t device, uint32_t round);
  // Adds a record to those written again with the round's start; over
  // kMaxKeptRecordBytes (all the round's records) none are kept.
  static void KeepRecord(SentStart& round, KeptRecord record);
  Clock::time_point last_resend_check_{};
  uint64_t starts_resent_ = 0;  // this job
  uint64_t devices_gone_ = 0;   // this job: offline past offline_grace_ms
  std::unique_ptr<jobs::Job> job_;
  std::unique_ptr<jobs::Job> previous_job_;  // the finished stage the current one builds on
  std::vector<std::string> stages_;
  size_t stage_ = 0;
  bool plan_succeeded_ = true;
  uint64_t next_job_id_ = 1;
  uint64_t current_job_id_ = 0;  // 0 until the first job starts
  uint32_t jobs_finished_ = 0;
  struct PendingDirectory {
    uint64_t job_id = 0;
    uint32_t round = 0;
    std::vector<uint32_t> devices;
    Clock::time_point since{};
  };
  std::optional<PendingDirectory> pending_directory_;
};

}  // namespace nodefl::server::net
