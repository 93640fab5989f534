// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/store/sqlite.h"

#include <sqlite3.h>

#include <utility>

namespace nodefl::server::store {
namespace {

bool Fail(sqlite3* db, std::string_view what, std::string* error) {
  if (error != nullptr) {
    *error = std::string(what) + ": " + (db != nullptr ? sqlite3_errmsg(db) : "out of memory");
  }
  return false;
}

}  // namespace

Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement::Statement(Statement&& other) noexcept
    : stmt_(std::exchange(other.stmt_, nullptr)), db_(std::exchange(other.db_, nullptr)) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    stmt_ = std::exchange(other.stmt_, nullptr);
    db_ = std::exchange(other.db_, nullptr);
  }
  return *this;
}

bool Statement::Bind(int index, int64_t value) { return sqlite3_bind_int64(stmt_, index, value) == SQLITE_OK; }

bool Statement::Bind(int index, std::span<const uint8_t> blob) {
  // A zero-length blob is stored as an empty blob, not NULL.
  static const uint8_t kEmpty = 0;
  const void* data = blob.empty() ? &kEmpty : blob.data();
  return sqlite3_bind_blob64(stmt_, index, data, blob.size(), SQLITE_TRANSIENT) == SQLITE_OK;
}

bool Statement::Bind(int index, std::string_view text) {
  return sqlite3_bind_text64(stmt_, index, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8) == SQLITE_OK;
}

Step Statement::Next(std::string* error) {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return Step::kRow;
  if (rc == SQLITE_DONE) return Step::kDone;
  Fail(db_, "step", error);
  return Step::kError;
}

bool Statement::Run(std::string* error) {
  const Step step = Next(error);
  sqlite3_reset(stmt_);
  if (step == Step::kRow) {
    if (error != nullptr) *error = "statement returned a row where none was expected";
    return false;
  }
  return step == Step::kDone;
}

void Statement::Reset() { sqlite3_reset(stmt_); }

int64_t Statement::Int(int column) const { return sqlite3_column_int64(stmt_, column); }

std::vector<uint8_t> Statement::Blob(int column) const {
  const auto* data = static_cast<const uint8_t*>(sqlite3_column_blob(stmt_, column));
  const int size = sqlite3_column_bytes(stmt_, column);
  if (data == nullptr || size <= 0) return {};
  return std::vector<uint8_t>(data, data + size);
}

std::string Statement::Text(int column) const {
  const auto* data = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
  const int size = sqlite3_column_bytes(stmt_, column);
  if (data == nullptr || size <= 0) return {};
  return std::string(data, static_cast<size_t>(size));
}

Database::~Database() { Close(); }

bool Database::Open(const std::string& path, std::string* error) {
  Close();
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                                 nullptr);
  if (rc != SQLITE_OK) {
    Fail(db, "open " + path, error);
    sqlite3_close(db);
    return false;
  }
  sqlite3_extended_result_codes(db, 1);
  db_ = db;
  path_ = path;
  return true;
}

void Database::Close() {
  if (db_ != nullptr) {
    // Statements are owned by their holders and finalized before this.
    sqlite3_close_v2(db_);
    db_ = nullptr;
  }
}

bool Database::busy() const {
  if (db_ == nullptr) return false;
  const int code = sqlite3_errcode(db_) & 0xFF;  // the primary code of an extended one
  return code == SQLITE_BUSY || code == SQLITE_LOCKED;
}

bool Database::Exec(std::string_view sql, std::string* error) {
  const std::string text(sql);
  char* message = nullptr;
  const int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &message);
  if (rc == SQLITE_OK) return true;
  if (error != nullptr) *error = std::string("exec: ") + (message != nullptr ? message : sqlite3_errstr(rc));
  sqlite3_free(message);
  return false;
}

bool Database::Prepare(std::string_view sql, Statement* statement, std::string* error) {
  sqlite3_stmt* stmt = nullptr;
  const int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT, &stmt,
                                    nullptr);
  if (rc != SQLITE_OK) return Fail(db_, "prepare", error);
  *statement = Statement();
  statement->stmt_ = stmt;
  statement->db_ = db_;
  return true;
}

Transaction::Transaction(Database& db, std::string* error) : db_(db) { open_ = db_.Exec("BEGIN IMMEDIATE", error); }

Transaction::~Transaction() {
  if (open_) (void)db_.Exec("ROLLBACK", nullptr);
}

bool Transaction::Commit(std::string* error) {
  if (!open_) {
    if (error != nullptr) *error = "commit: no transaction";
    return false;
  }
  if (!db_.Exec("COMMIT", error)) return false;  // still open: the destructor rolls back
  open_ = false;
  return true;
}

}  // namespace nodefl::server::store
