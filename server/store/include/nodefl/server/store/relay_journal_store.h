// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// StoredRelayJournal: the relay's journal (core/relay_journal.h) kept in
// the server's state file (state_store.h), so that the messages the relay
// holds survive a kill of the server.
//
// The relay's calls only change an in-memory batch (under this object's
// mutex, never doing I/O); a writer thread turns the batch into one SQLite
// transaction every `interval` and whenever WriteSoon() asks (the server's
// job runner does at each round start, a round boundary), and Stop()
// writes what is left.
// The batch is coalesced per device: a message queued and acknowledged
// between two writes is never written, a dropped queue deletes what was
// written for it, and a source's highest routed send id is written once.
// So the state file holds what is undelivered or unacknowledged, and a
// busy relay whose messages are delivered within the interval writes
// little but the sources' send ids.
//
// What a kill loses: the changes of the last interval. Messages queued in
// it are gone (their senders had their acknowledgement); acknowledgements
// in it are not, in effect: a restored message the device had already is
// released by the device's Hello.last_delivered_relay_id when it resumes.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "nodefl/server/core/relay_journal.h"
#include "nodefl/server/store/state_store.h"

namespace nodefl::server::store {

struct RelayJournalStats {
  uint64_t writes = 0;            // transactions committed
  uint64_t messages_written = 0;  // message rows inserted
  uint64_t messages_skipped = 0;  // queued and acknowledged (or dropped) between two writes
  uint64_t failures = 0;          // transactions that failed (their changes are lost)
};

class StoredRelayJournal final : public RelayJournal {
 public:
  // `on_error` is called (from the writer thread) with the reason of each
  // failed write.
  StoredRelayJournal(ServerStateStore& store, std::chrono::milliseconds interval,
                     std::function<void(const std::string&)> on_error = {});
  ~StoredRelayJournal() override;  // Stop()
  StoredRelayJournal(const StoredRelayJournal&) = delete;
  StoredRelayJournal& operator=(const StoredRelayJournal&) = delete;

  // Starts the writer thread (without it, only Write() writes).
  void Start();
  // Writes what is left and stops the writer thread. Idempotent.
  void Stop();
  // Writes the batch gathered so far now, as one transaction; true if there
  // was nothing to write or it committed.
  bool Write(std::string* error);
  // Has the writer thread write now rather than at its next interval
  // (a round boundary): the caller does no I/O.
  void WriteSoon();

  RelayJournalStats Stats() const;

  void Queued(uint32_t dst, const RelayMessage& message, uint64_t send_id) override;
  void Acked(uint32_t dst, uint64_t relay_id) override;
  void Dropped(uint32_t dst) override;
  void SourceReset(uint32_t src) override;

 private:
  struct Pending {
    std::unordered_map<uint32_t, RelayBatch::Destination> destinations;
    std::unordered_map<uint32_t, RelayBatch::Source> sources;
  };
  void Run();

  ServerStateStore& store_;
  const std::chrono::milliseconds interval_;
  const std::function<void(const std::string&)> on_error_;

  mutable std::mutex mutex_;  // guards pending_ and stats_
  Pending pending_;
  RelayJournalStats stats_;

  std::mutex write_mutex_;  // one Write at a time, so batches commit in order
  std::mutex thread_mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool write_soon_ = false;
  std::thread thread_;
};

}  // namespace nodefl::server::store
