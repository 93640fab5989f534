// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/store/state_store.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <system_error>

namespace nodefl::server::store {
namespace {

constexpr std::string_view kSchema =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS sessions(device INTEGER PRIMARY KEY, session INTEGER NOT NULL,"
    " token BLOB NOT NULL);"
    "CREATE TABLE IF NOT EXISTS jobs(job_id INTEGER PRIMARY KEY, kind TEXT NOT NULL, stage INTEGER NOT NULL,"
    " state TEXT NOT NULL, reason TEXT NOT NULL DEFAULT '', start INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS job_inputs(job_id INTEGER PRIMARY KEY, participants BLOB NOT NULL,"
    " handoff BLOB NOT NULL);"
    "CREATE TABLE IF NOT EXISTS job_events(job_id INTEGER NOT NULL, seq INTEGER NOT NULL, type INTEGER NOT NULL,"
    " device INTEGER NOT NULL, round INTEGER NOT NULL, artefact INTEGER NOT NULL, now_us INTEGER NOT NULL,"
    " payload BLOB NOT NULL, entropy BLOB NOT NULL, undeliverable BLOB NOT NULL, digest INTEGER NOT NULL,"
    " PRIMARY KEY(job_id, seq)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS relay_messages(dst INTEGER NOT NULL, relay_id INTEGER NOT NULL,"
    " src INTEGER NOT NULL, job_id INTEGER NOT NULL, round INTEGER NOT NULL, sealed BLOB NOT NULL,"
    " PRIMARY KEY(dst, relay_id)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS relay_sources(src INTEGER PRIMARY KEY, send_floor INTEGER NOT NULL);";

// Version 1 had no job journal, version 2 no relay tables; the tables they
// have are unchanged in version 3.
constexpr int64_t kOldestReadableVersion = 1;

bool Prefixed(const std::string& prefix, std::string* error) {
  if (error != nullptr) *error = prefix + ": " + *error;
  return false;
}

}  // namespace

std::unique_ptr<ServerStateStore> ServerStateStore::Open(const std::string& data_dir, std::string* error) {
  if (data_dir.empty()) {
    *error = "no data directory given";
    return nullptr;
  }
  std::error_code ec;
  std::filesystem::create_directories(data_dir, ec);
  if (ec) {
    *error = "data directory " + data_dir + ": " + ec.message();
    return nullptr;
  }
  std::unique_ptr<ServerStateStore> store(new ServerStateStore());
  const std::string path = (std::filesystem::path(data_dir) / kStateFileName).string();
  if (!store->db_.Open(path, error) || !store->Initialise(error)) {
    if (store->db_.busy()) *error = "in use by another server (" + *error + ")";
    *error = path + ": " + *error;
    return nullptr;
  }
  return store;
}

ServerStateStore::~ServerStateStore() {
  // Finalized before the database closes.
  for (Statement* s : {&save_session_, &append_event_, &relay_insert_, &relay_delete_through_, &relay_delete_all_,
                       &relay_source_set_, &relay_source_delete_}) {
    *s = Statement();
  }
}

bool ServerStateStore::Initialise(std::string* error) {
  // Exclusive locking before WAL: the write-ahead log's index then lives in
  // this process's memory, and the file stays locked while the server runs.
  if (!db_.Exec("PRAGMA locking_mode=EXCLUSIVE; PRAGMA busy_timeout=0;", error)) return false;
  {
    Statement mode;
    if (!db_.Prepare("PRAGMA journal_mode=WAL", &mode, error)) return false;
    const Step step = mode.Next(error);
    if (step == Step::kError) return false;
    if (step != Step::kRow || mode.Text(0) != "wal") {
      *error = "cannot switch to write-ahead logging";
      return false;
    }
  }
  if (!db_.Exec("PRAGMA synchronous=NORMAL;", error)) return false;
  Transaction tx(db_, error);
  if (!tx.ok()) return false;
  // A file with tables but no meta table is not ours: refuse rather than
  // add tables to someone else's database.
  {
    Statement tables;
    if (!db_.Prepare("SELECT count(*), sum(name = 'meta') FROM sqlite_master WHERE type = 'table'", &tables, error) ||
        tables.Next(error) != Step::kRow) {
      return false;
    }
    if (tables.Int(0) > 0 && tables.Int(1) == 0) {
      *error = "not a nodefl server state file (it has tables of its own)";
      return false;
    }
  }
  if (!db_.Exec(kSchema, error)) return false;
  int64_t version = 0;
  bool found = false;
  if (!ReadMeta("schema_version", &version, &found, error)) return false;
  if (!found) {
    if (!WriteMeta("schema_version", kSchemaVersion, error)) return false;
  } else if (version >= kOldestReadableVersion && version < kSchemaVersion) {
    if (!WriteMeta("schema_version", kSchemaVersion, error)) return false;  // the new tables exist now
  } else if (version != kSchemaVersion) {
    *error = "schema version " + std::to_string(version) + ", this server reads version " +
             std::to_string(kSchemaVersion);
    return false;
  }
  int64_t starts = 0;
  if (!ReadMeta("starts", &starts, &found, error) || !WriteMeta("starts", starts + 1, error)) return false;
  if (!tx.Commit(error)) return false;
  start_ = static_cast<uint64_t>(starts + 1);
  return db_.Prepare(
             "INSERT INTO sessions(device, session, token) VALUES(?, ?, ?) "
             "ON CONFLICT(device) DO UPDATE SET session = excluded.session, token = excluded.token "
             "WHERE excluded.session > sessions.session",
             &save_session_, error) &&
         db_.Prepare(
             "INSERT INTO job_events(job_id, seq, type, device, round, artefact, now_us, payload, entropy,"
             " undeliverable, digest) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
             &append_event_, error) &&
         db_.Prepare("INSERT OR REPLACE INTO relay_messages(dst, relay_id, src, job_id, round, sealed)"
                     " VALUES(?, ?, ?, ?, ?, ?)",
                     &relay_insert_, error) &&
         db_.Prepare("DELETE FROM relay_messages WHERE dst = ? AND relay_id <= ?", &relay_delete_through_, error) &&
         db_.Prepare("DELETE FROM relay_messages WHERE dst = ?", &relay_delete_all_, error) &&
         db_.Prepare("INSERT OR REPLACE INTO relay_sources(src, send_floor) VALUES(?, ?)", &relay_source_set_,
                     error) &&
         db_.Prepare("DELETE FROM relay_sources WHERE src = ?", &relay_source_delete_, error);
}

bool ServerStateStore::ReadMeta(std::string_view key, int64_t* value, bool* found, std::string* error) {
  Statement read;
  if (!db_.Prepare("SELECT value FROM meta WHERE key = ?", &read, error)) return false;
  read.Bind(1, key);
  const Step step = read.Next(error);
  if (step == Step::kError) return false;
  *found = step == Step::kRow;
  *value = *found ? read.Int(0) : 0;
  return true;
}

bool ServerStateStore::WriteMeta(std::string_view key, int64_t value, std::string* error) {
  Statement write;
  if (!db_.Prepare("INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                   &write, error)) {
    return false;
  }
  write.Bind(1, key);
  write.Bind(2, value);
  return write.Run(error);
}

bool ServerStateStore::LoadSessions(std::vector<StoredSession>* out, std::string* error) {
  std::lock_guard<std::mutex> lock(mutex_);
  out->clear();
  Statement read;
  if (!db_.Prepare("SELECT device, session, token FROM sessions ORDER BY device", &read, error)) return false;
  for (;;) {
    const Step step = read.Next(error);
    if (step == Step::kDone) return true;
    if (step == Step::kError) return false;
    StoredSession s;
    const int64_t device = read.Int(0);
    const int64_t session = read.Int(1);
    const std::vector<uint8_t> token = read.Blob(2);
    if (device < 0 || device > int64_t{UINT32_MAX} || session <= 0 || token.size() != s.token.size()) {
      *error = "sessions: a malformed row (device " + std::to_string(device) + ")";
      return false;
    }
    s.device_id = static_cast<uint32_t>(device);
    s.session = static_cast<uint64_t>(session);
    std::copy(token.begin(), token.end(), s.token.begin());
    out->push_back(s);
  }
}

bool ServerStateStore::SaveSession(uint32_t device_id, uint64_t session, const ResumeToken& token,
                                   std::string* error) {
  std::lock_guard<std::mutex> lock(mutex_);
  save_session_.Bind(1, int64_t{device_id});
  save_session_.Bind(2, static_cast<int64_t>(session));
  save_session_.Bind(3, std::span<const uint8_t>(token.data(), token.size()));
  return save_session_.Run(error) || Prefixed("save session of device " + std::to_string(device_id), error);
}

bool ServerStateStore::BeginJob(std::string_view kind, uint32_t stage, uint64_t* job_id, std::string* error) {
  std::lock_guard<std::mutex> lock(mutex_);
  Transaction tx(db_, error);
  if (!tx.ok()) return false;
  int64_t next = 0;
  bool found = false;
  if (!ReadMeta("next_job_id", &next, &found, error)) return false;
  if (!found) next = 1;
  Statement insert;
  if (!db_.Prepare("INSERT INTO jobs(job_id, kind, stage, state, start) VALUES(?, ?, ?, 'running', ?)", &insert,
                   error)) {
    return false;
  }
  insert.Bind(1, next);
  insert.Bind(2, kind);
  insert.Bind(3, int64_t{stage});
  insert.Bind(4, static_cast<int64_t>(start_));
  if (!insert.Run(error) || !WriteMeta("next_job_id", next + 1, error) || !tx.Commit(error)) {
    return Prefixed("begin job", error);
  }
  *job_id = static_cast<uint64_t>(next);
  return true;
}

bool ServerStateStore::EndJob(uint64_t job_id, std::string_view state, std::string_view reason, std::string* error) {
  std::lock_guard<std::mutex> lock(mutex_);
  Transaction tx(db_, error);
  if (!tx.ok()) return Prefixed("end job " + std::to_string(job_id), error);
  Statement update;
  if (!db_.Prepare("UPDATE jobs SET state = ?, reason = ? WHERE job_id = ?", &update, error)) return false;
  update.Bind(1, state);
  update.Bind(2, reason);
  update.Bind(3, static_cast<int64_t>(job_id));
  if (!update.Run(error)) return Prefixed("end job " + std::to_string(job_id), error);
  // A job that ended is never continued: its journal goes (one still
  // running keeps it, whatever its state says).
  if (state == "finished" || state == "verified" || state == "abandoned") {
    for (const char* sql : {"DELETE FROM job_events WHERE job_id = ?", "DELETE FROM job_inputs WHERE job_id = ?"}) {
      Statement remove;
      if (!db_.Prepare(sql, &remove, error)) return false;
      remove.Bind(1, static_cast<int64_t>(job_id));
      if (!remove.Run(error)) return Prefixed("end job " + std::to_string(job_id), error);
    }
  }
  return tx.Commit(error) || Prefixed("end job " + std::to_string(job_id), error);
}

bool ServerStateStore::LoadJobs(std::vector<StoredJob>* out, std::string* error) {
  std::lock_guard<std::mutex> lock(mutex_);
  out->clear();
  Statement read;
  if (!db_.Prepare("SELECT job_id, kind, stage, state, reason, start FROM jobs ORDER BY job_id", &read, error)) {
    return false;
  }
  for (;;) {
    const Step step = read.Next(error);
    if (step == Step::kDone) return true;
    if (step == Step::kError) return false;
    StoredJob job;
    job.job_id = static_cast<uint64_t>(read.Int(0));
    job.kind = read.Text(1);
    job.stage = static_cast<uint32_t>(read.Int(2));
    job.state = read.Text(3);
    job.reason = read.Text(4);
    job.start = static_cast<uint64_t>(read.Int(5));
    out->push_back(std::move(job));
  }
}

bool ServerStateStore::AbandonInterruptedJobs(std::vector<StoredJob>* abandoned, std::string* error) {
  std::vector<StoredJob> jobs;
  if (!InterruptedJobs(&jobs, error)) return false;
  abandoned->clear();
  for (StoredJob& job : jobs) {
    job.state = "abandoned";
    job.reason = "server restart";
    if (!EndJob(job.job_id, job.state, job.reason, error)) return false;
    abandoned->push_back(std::move(job));
  }
  return true;
}

bool ServerStateStore::InterruptedJobs(std::vector<StoredJob>* out, std::string* error) {
  std::vector<StoredJob> jobs;
  if (!LoadJobs(&jobs, error)) return false;
  out->clear();
  for (StoredJob& job : jobs) {
    if ((job.state == "running" || job.state == "running-unjournaled") && job.start < start_) {
      out->push_back(std::move(job));
    }
  }
  return true;
}

bool ServerStateStore::AdoptJob(uint64_t job_id, std::string* error) {
  std::lock_guard<std::mutex> lock(mutex_);
  Statement update;
  if (!db_.Prepare("UPDATE jobs SET start = ? WHERE job_id = ? AND state = 'running'", &update, error)) return false;
  update.Bind(1, static_cast<int64_t>(start_));
  update.Bind(2, static_cast<int64_t>(job_id));
  return update.Run(error) || Prefixed("adopt job " + std::to_string(job_id), error);
}

namespace {
std::vector<uint8_t> PackIds(const std::vector<uint32_t>& ids) {
  std::vector<uint8_t> out(4 * ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    for (size_t b = 0; b < 4; ++b) out[4 * i + b] = static_cast<uint8_t>(ids[i] >> (8 * b));
  }
  return out;
}
}  // namespace

bool ServerStateStore::SaveJobInputs(uint64_t job_id, const std::vector<uint32_t>& participants,
                                     const std::vector<uint8_t>& handoff, std::string* error) {
  std::lock_guard<std::mutex> lock(mutex_);
  Statement insert;
  if (!db_.Prepare("INSERT OR REPLACE INTO job_inputs(job_id, participants, handoff) VALUES(?, ?, ?)", &insert,
                   error)) {
    return false;
  }
  const std::vector<uint8_t> ids = PackIds(participants);
  insert.Bind(1, static_cast<int64_t>(job_id));
  insert.Bind(2, std::span<const uint8_t>(ids));
  insert.Bind(3, std::span<const uint8_t>(handoff));
  return insert.Run(error) || Prefixed("save inputs of job " + std::to_string(job_id), error);
}

bool ServerStateStore::LoadJobInputs(uint64_t job_id, std::vector<uint32_t>* participants,
                                     std::vector<uint8_t>* handoff, bool* found, std::string* error) {
  std::lock_guard<std::mutex> lock(mutex_);
  Statement read;
  if (!db_.Prepare("SELECT participants, handoff FROM job_inputs WHERE job_id = ?", &read, error)) return false;
  read.Bind(1, static_cast<int64_t>(job_id));
  const Step step = read.Next(error);
  if (step == Step::kError) return false;
  *found = step == Step::kRow;
  participants->clear();
  handoff->clear();
  if (!*found) return true;
  const std::vector<uint8_t> ids = read.Blob(0);
  if (ids.size() % 4 != 0) {
    *error = "job_inputs: malformed participants of job " + std::to_string(job_id);
    return false;
  }
  for (size_t i = 0; i < ids.size(); i += 4) {
    participants->push_back(uint32_t{ids[i]} | uint32_t{ids[i + 1]} << 8 | uint32_t{ids[i + 2]} << 16 |
                            uint32_t{ids[i + 3]} << 24);
  }
  *handoff = read.Blob(1);
  return true;
}

bool ServerStateStore::AppendJobEvents(uint64_t job_id, const std::vector<JournalEvent>& events, std::string* error) {
  std::lock_guard<std::mutex> lock(mutex_);
  Transaction tx(db_, error);
  if (!tx.ok()) return Prefixed("journal of job " + std::to_string(job_id), error);
  for (const JournalEvent& e : events) {
    Statement& s = append_event_;
    s.Bind(1, static_cast<int64_t>(job_id));
    s.Bind(2, static_cast<int64_t>(e.seq));
    s.Bind(3, int64_t{e.type});
    s.Bind(4, int64_t{e.device});
    s.Bind(5, int64_t{e.round});
    s.Bind(6, int64_t{e.artefact});
    s.Bind(7, static_cast<int64_t>(e.now_us));
    s.Bind(8, std::span<const uint8_t>(e.payload));
    s.Bind(9, std::span<const uint8_t>(e.entropy));
    s.Bind(10, std::span<const uint8_t>(e.undeliverable));
    s.Bind(11, static_cast<int64_t>(e.digest));
    if (!s.Run(error)) return Prefixed("journal of job " + std::to_string(job_id), error);
  }
  return tx.Commit(error) || Prefixed("journal of job " + std::to_string(job_id), error);
}

bool ServerStateStore::LoadJobEvents(uint64_t job_id, std::vector<JournalEvent>* out, std::string* error) {
  std::lock_guard<std::mutex> lock(mutex_);
  out->clear();
  Statement read;
  if (!db_.Prepare("SELECT seq, type, device, round, artefact, now_us, payload, entropy, undeliverable, digest "
                   "FROM job_events WHERE job_id = ? ORDER BY seq",
                   &read, error)) {
    return false;
  }
  read.Bind(1, static_cast<int64_t>(job_id));
  for (;;) {
    const Step step = read.Next(error);
    if (step == Step::kDone) return true;
    if (step == Step::kError) return false;
    JournalEvent e;
    e.seq = static_cast<uint64_t>(read.Int(0));
    e.type = static_cast<uint32_t>(read.Int(1));
    e.device = static_cast<uint32_t>(read.Int(2));
    e.round = static_cast<uint32_t>(read.Int(3));
    e.artefact = static_cast<uint32_t>(read.Int(4));
    e.now_us = static_cast<uint64_t>(read.Int(5));
    e.payload = read.Blob(6);
    e.entropy = read.Blob(7);
    e.undeliverable = read.Blob(8);
    e.digest = static_cast<uint64_t>(read.Int(9));
    if (e.seq != out->size() + 1) {
      *error = "job_events: job " + std::to_string(job_id) + " misses event " + std::to_string(out->size() + 1);
      return false;
    }
    out->push_back(std::move(e));
  }
}

bool ServerStateStore::WriteRelayBatch(const RelayBatch& batch, std::string* error) {
  std::lock_guard<std::mutex> lock(mutex_);
  Transaction tx(db_, error);
  if (!tx.ok()) return Prefixed("relay journal", error);
  for (const RelayBatch::Destination& d : batch.destinations) {
    const int64_t dst = d.dst;
    if (d.dropped) {
      relay_delete_all_.Bind(1, dst);
      if (!relay_delete_all_.Run(error)) return Prefixed("relay journal", error);
    }
    if (d.acked_through != 0) {
      relay_delete_through_.Bind(1, dst);
      relay_delete_through_.Bind(2, static_cast<int64_t>(d.acked_through));
      if (!relay_delete_through_.Run(error)) return Prefixed("relay journal", error);
    }
    for (const RelayMessage& m : d.queued) {
      relay_insert_.Bind(1, dst);
      relay_insert_.Bind(2, static_cast<int64_t>(m.relay_id));
      relay_insert_.Bind(3, int64_t{m.src});
      relay_insert_.Bind(4, static_cast<int64_t>(m.job_id));
      relay_insert_.Bind(5, int64_t{m.round});
      relay_insert_.Bind(6, m.sealed_bytes());
      if (!relay_insert_.Run(error)) return Prefixed("relay journal", error);
    }
  }
  // A source is in a batch because it routed a numbered send (a floor) or
  // was reset (no floor since: its row goes).
  for (const RelayBatch::Source& source : batch.sources) {
    Statement& s = source.send_floor != 0 ? relay_source_set_ : relay_source_delete_;
    s.Bind(1, int64_t{source.src});
    if (source.send_floor != 0) s.Bind(2, static_cast<int64_t>(source.send_floor));
    if (!s.Run(error)) return Prefixed("relay journal", error);
  }
  return tx.Commit(error) || Prefixed("relay journal", error);
}

bool ServerStateStore::LoadRelayMessages(std::vector<StoredRelayMessage>* out, std::string* error) {
  std::lock_guard<std::mutex> lock(mutex_);
  out->clear();
  Statement read;
  if (!db_.Prepare("SELECT dst, relay_id, src, job_id, round, sealed FROM relay_messages ORDER BY dst, relay_id",
                   &read, error)) {
    return false;
  }
  for (;;) {
    const Step step = read.Next(error);
    if (step == Step::kDone) return true;
    if (step == Step::kError) return false;
    const int64_t dst = read.Int(0), relay_id = read.Int(1), src = read.Int(2), job_id = read.Int(3),
                  round = read.Int(4);
    std::vector<uint8_t> sealed = read.Blob(5);
    if (dst < 0 || dst > int64_t{UINT32_MAX} || relay_id <= 0 || src < 0 || src > int64_t{UINT32_MAX} ||
        job_id < 0 || round < 0 || round > int64_t{UINT32_MAX} || sealed.size() > UINT32_MAX) {
      *error = "relay_messages: a malformed row (destination " + std::to_string(dst) + ")";
      return false;
    }
    StoredRelayMessage stored;
    stored.dst = static_cast<uint32_t>(dst);
    RelayMessage& m = stored.message;
    m.relay_id = static_cast<uint64_t>(relay_id);
    m.src = static_cast<uint32_t>(src);
    m.job_id = static_cast<uint64_t>(job_id);
    m.round = static_cast<uint32_t>(round);
    m.sealed_size = static_cast<uint32_t>(sealed.size());
    auto payload = std::make_shared_for_overwrite<uint8_t[]>(sealed.size());
    std::copy(sealed.begin(), sealed.end(), payload.get());
    m.sealed = std::move(payload);
    out->push_back(std::move(stored));
  }
}

bool ServerStateStore::LoadRelaySendFloors(std::vector<std::pair<uint32_t, uint64_t>>* out, std::string* error) {
  std::lock_guard<std::mutex> lock(mutex_);
  out->clear();
  Statement read;
  if (!db_.Prepare("SELECT src, send_floor FROM relay_sources ORDER BY src", &read, error)) return false;
  for (;;) {
    const Step step = read.Next(error);
    if (step == Step::kDone) return true;
    if (step == Step::kError) return false;
    const int64_t src = read.Int(0), floor = read.Int(1);
    if (src < 0 || src > int64_t{UINT32_MAX} || floor <= 0) {
      *error = "relay_sources: a malformed row (source " + std::to_string(src) + ")";
      return false;
    }
    out->emplace_back(static_cast<uint32_t>(src), static_cast<uint64_t>(floor));
  }
}

}  // namespace nodefl::server::store
