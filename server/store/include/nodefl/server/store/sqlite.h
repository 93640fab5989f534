// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// A thin RAII layer over SQLite's C API (Debian's libsqlite3), for the
// server's durable state (state_store.h). Errors are returned, never
// thrown: every call that can fail returns false and leaves SQLite's
// message in `*error`, prefixed with what was being done.
//
//   Database db;
//   if (!db.Open(path, &error)) ...
//   Statement insert;
//   if (!db.Prepare("INSERT INTO t(a, b) VALUES(?, ?)", &insert, &error)) ...
//   insert.Bind(1, int64_t{7}); insert.Bind(2, bytes);
//   if (!insert.Run(&error)) ...        // one step that returns no row
//
//   Statement select;  db.Prepare("SELECT a, b FROM t", &select, &error);
//   while (select.Next(&error) == Step::kRow) { select.Int(0); select.Blob(1); }
//
// Transaction opens with BEGIN IMMEDIATE (the write lock is taken at once,
// so a busy database fails at the start, not halfway) and rolls back in its
// destructor unless Commit() succeeded.
//
// Not thread-safe: one Database per thread or a lock around it (the state
// store holds a mutex).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

struct sqlite3;
struct sqlite3_stmt;

namespace nodefl::server::store {

enum class Step : uint8_t { kRow, kDone, kError };

class Statement {
 public:
  Statement() = default;
  ~Statement();
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Parameters are numbered from 1, as in SQL. Blobs and text are copied.
  bool Bind(int index, int64_t value);
  bool Bind(int index, std::span<const uint8_t> blob);
  bool Bind(int index, std::string_view text);

  Step Next(std::string* error);
  // Steps once and expects no row (INSERT, UPDATE, ...); resets the
  // statement so it can be bound and run again.
  bool Run(std::string* error);
  // Ready to be bound and stepped again (bindings are kept).
  void Reset();

  // Columns of the current row, numbered from 0.
  int64_t Int(int column) const;
  std::vector<uint8_t> Blob(int column) const;
  std::string Text(int column) const;

  bool valid() const { return stmt_ != nullptr; }

 private:
  friend class Database;
  sqlite3_stmt* stmt_ = nullptr;
  sqlite3* db_ = nullptr;
};

class Database {
 public:
  Database() = default;
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // Opens (creating if needed) the database file at `path`.
  bool Open(const std::string& path, std::string* error);
  void Close();

  // Runs one or more statements that return no rows.
  bool Exec(std::string_view sql, std::string* error);
  bool Prepare(std::string_view sql, Statement* statement, std::string* error);

  // The last call failed because another connection holds the file
  // (SQLITE_BUSY or SQLITE_LOCKED).
  bool busy() const;
  bool is_open() const { return db_ != nullptr; }
  const std::string& path() const { return path_; }
  sqlite3* handle() const { return db_; }

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
};

class Transaction {
 public:
  // Begins; check ok() (a failure leaves the reason in `*error`).
  Transaction(Database& db, std::string* error);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  bool ok() const { return open_; }
  bool Commit(std::string* error);

 private:
  Database& db_;
  bool open_ = false;
};

}  // namespace nodefl::server::store
