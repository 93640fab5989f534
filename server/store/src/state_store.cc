// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/store/state_store.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

namespace nodefl::server::store {
namespace {

constexpr std::string_view kSchema =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS sessions(device INTEGER PRIMARY KEY, session INTEGER NOT NULL,"
    " token BLOB NOT NULL);"
    "CREATE TABLE IF NOT EXISTS jobs(job_id INTEGER PRIMARY KEY, kind TEXT NOT NULL, stage INTEGER NOT NULL,"
    " state TEXT NOT NULL, reason TEXT NOT NULL DEFAULT '', start INTEGER NOT NULL);";

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
  save_session_ = Statement();  // finalized before the database closes
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
      &save_session_, error);
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
  Statement update;
  if (!db_.Prepare("UPDATE jobs SET state = ?, reason = ? WHERE job_id = ?", &update, error)) return false;
  update.Bind(1, state);
  update.Bind(2, reason);
  update.Bind(3, static_cast<int64_t>(job_id));
  return update.Run(error) || Prefixed("end job " + std::to_string(job_id), error);
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
  if (!LoadJobs(&jobs, error)) return false;
  abandoned->clear();
  for (StoredJob& job : jobs) {
    if (job.state != "running" || job.start >= start_) continue;
    job.state = "abandoned";
    job.reason = "server restart";
    if (!EndJob(job.job_id, job.state, job.reason, error)) return false;
    abandoned->push_back(std::move(job));
  }
  return true;
}

}  // namespace nodefl::server::store
