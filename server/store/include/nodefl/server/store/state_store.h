// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// ServerStateStore: what nodefl-server keeps across its own restarts, in
// one SQLite file under the server's data directory (ServerConfig::
// data_dir), <data_dir>/server-state.sqlite.
//
// Durability. The file is in WAL mode with synchronous=NORMAL: a committed
// write is in the write-ahead log, in the operating system's cache, before
// the call returns, so it survives the server being killed (kill -9, a
// crash); a power loss may take the last commits (synchronous=FULL would
// fsync each one, some milliseconds apiece). The file is held exclusively
// (locking_mode=EXCLUSIVE): a second server on the same directory is
// refused at Open, and nothing else may write it while the server runs.
//
// What it holds (schema version 3, docs/reliability.md "Server restarts";
// a version-1 or -2 file gains the newer tables when opened):
//   meta      schema_version; starts (how many times a server opened this
//             directory: the restart number, which numbers relay messages
//             and jobs so that nothing a device saw before is reused);
//             next_job_id
//   sessions  per device its session number and resume token, written
//             before the Welcome that hands the token out, so a device
//             resumes its session on the restarted server
//   jobs      every job started: id, kind, stage, state (running,
//             finished, verified, abandoned) and the reason; a job still
//             "running" when a server starts was cut off by a restart: the
//             server continues it from its journal or records it as
//             abandoned
//   job_inputs per job what it was made from: its participants and the
//             previous stage's hand-off (jobs::Job::HandOff)
//   job_events per job, in order, every call the runner made into it (a
//             report, an upload, a poll, ...) with its time, the entropy
//             the job drew, where its answers could not be delivered, and
//             a digest of its answers: a continuation replays them
//   relay_messages  the messages the relay holds for each destination
//             (queued, not yet acknowledged), with their relay ids, written
//             in batches (relay_journal_store.h); a restarted server
//             queues them again
//   relay_sources   per source device the highest numbered RelaySend the
//             relay routed in its current session, so that a restarted
//             relay does not route a resend of it again
//
// Thread-safe: every method takes the store's mutex.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "nodefl/server/core/registry.h"
#include "nodefl/server/core/relay_message.h"
#include "nodefl/server/core/resume_token.h"
#include "nodefl/server/store/sqlite.h"

namespace nodefl::server::store {

inline constexpr int kSchemaVersion = 3;
inline constexpr const char* kStateFileName = "server-state.sqlite";

struct StoredSession {
  uint32_t device_id = 0;
  uint64_t session = 0;
  ResumeToken token{};
};

struct StoredJob {
  uint64_t job_id = 0;
  std::string kind;
  uint32_t stage = 0;
  // running, finished, verified, abandoned; running-unjournaled: running,
  // but its journal failed a write (it is not continued)
  std::string state;
  std::string reason;
  uint64_t start = 0;  // the server start (meta starts) that ran it
};

// One call the JobRunner made into a job (net/job_runner.h gives the
// types and fields their meaning; the store keeps them as they are).
struct JournalEvent {
  uint64_t seq = 0;  // 1, 2, ... per job
  uint32_t type = 0;
  uint32_t device = 0;
  uint32_t round = 0;
  uint32_t artefact = 0;
  uint64_t now_us = 0;
  std::vector<uint8_t> payload;
  std::vector<uint8_t> entropy;
  std::vector<uint8_t> undeliverable;
  uint64_t digest = 0;
};

// What the relay's journal changed since its last write, per device, in
// the order to apply it: a destination's dropped queue, then its
// acknowledged prefix, then the messages queued for it; a source's reset,
// then its highest routed send id.
struct RelayBatch {
  struct Destination {
    uint32_t dst = 0;
    bool dropped = false;         // delete every message held for it
    uint64_t acked_through = 0;   // delete its messages up to this id (0: none)
    std::vector<RelayMessage> queued;  // relay_id ascending
  };
  struct Source {
    uint32_t src = 0;
    bool reset = false;       // it numbers from 1 again
    uint64_t send_floor = 0;  // highest routed send id since (0: none)
  };
  std::vector<Destination> destinations;
  std::vector<Source> sources;
  bool empty() const { return destinations.empty() && sources.empty(); }
};

struct StoredRelayMessage {
  uint32_t dst = 0;
  RelayMessage message;
};

class ServerStateStore final : public SessionLog {
 public:
  // Opens (creating the directory's file if needed) and counts this start.
  // nullptr with `*error` set if the directory is not writable, the file is
  // not a nodefl state file of this schema, or another server holds it.
  static std::unique_ptr<ServerStateStore> Open(const std::string& data_dir, std::string* error);
  ~ServerStateStore() override;
  ServerStateStore(const ServerStateStore&) = delete;
  ServerStateStore& operator=(const ServerStateStore&) = delete;

  // 1 the first time a server opens the directory, then 2, 3, ...
  uint64_t start() const { return start_; }
  const std::string& path() const { return db_.path(); }

  bool LoadSessions(std::vector<StoredSession>* out, std::string* error);
  // SessionLog: keeps the higher session number when two race.
  bool SaveSession(uint32_t device_id, uint64_t session, const ResumeToken& token, std::string* error) override;

  // Job ids continue across restarts: a restarted server never reuses an id
  // a device may still hold. Records the job as running.
  bool BeginJob(std::string_view kind, uint32_t stage, uint64_t* job_id, std::string* error);
  // state: finished, verified or abandoned (the job's journal is deleted),
  // or running-unjournaled.
  bool EndJob(uint64_t job_id, std::string_view state, std::string_view reason, std::string* error);
  // Jobs of earlier starts still recorded as running: each is marked
  // abandoned ("server restart") and returned. Called once, at start-up.
  bool AbandonInterruptedJobs(std::vector<StoredJob>* abandoned, std::string* error);
  bool LoadJobs(std::vector<StoredJob>* out, std::string* error);
  // Jobs of earlier starts still recorded as running or
  // running-unjournaled (cut off by a restart), by id. Nothing is changed.
  bool InterruptedJobs(std::vector<StoredJob>* out, std::string* error);
  // This start takes over an interrupted job it continues: the job is
  // recorded as run by this start (a later restart finds it interrupted
  // again).
  bool AdoptJob(uint64_t job_id, std::string* error);

  // The job journal. Inputs are written once, when the job is made; events
  // in batches, each batch one transaction (all or none of it survives a
  // kill).
  bool SaveJobInputs(uint64_t job_id, const std::vector<uint32_t>& participants, const std::vector<uint8_t>& handoff,
                     std::string* error);
  bool LoadJobInputs(uint64_t job_id, std::vector<uint32_t>* participants, std::vector<uint8_t>* handoff,
                     bool* found, std::string* error);
  bool AppendJobEvents(uint64_t job_id, const std::vector<JournalEvent>& events, std::string* error);
  bool LoadJobEvents(uint64_t job_id, std::vector<JournalEvent>* out, std::string* error);

  // The relay's journal: one batch is one transaction.
  bool WriteRelayBatch(const RelayBatch& batch, std::string* error);
  // Every held message, by destination and relay id.
  bool LoadRelayMessages(std::vector<StoredRelayMessage>* out, std::string* error);
  // Per source device its highest routed send id (RelayBatch::Source).
  bool LoadRelaySendFloors(std::vector<std::pair<uint32_t, uint64_t>>* out, std::string* error);

 private:
  ServerStateStore() = default;
  bool Initialise(std::string* error);
  bool ReadMeta(std::string_view key, int64_t* value, bool* found, std::string* error);
  bool WriteMeta(std::string_view key, int64_t value, std::string* error);

  std::mutex mutex_;
  Database db_;
  Statement save_session_;
  Statement append_event_;
  Statement relay_insert_;
  Statement relay_delete_through_;
  Statement relay_delete_all_;
  Statement relay_source_set_;
  Statement relay_source_delete_;
  uint64_t start_ = 0;
};

}  // namespace nodefl::server::store
