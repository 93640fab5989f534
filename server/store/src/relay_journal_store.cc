// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/store/relay_journal_store.h"

#include <algorithm>
#include <utility>

namespace nodefl::server::store {

StoredRelayJournal::StoredRelayJournal(ServerStateStore& store, std::chrono::milliseconds interval,
                                       std::function<void(const std::string&)> on_error)
    : store_(store), interval_(interval), on_error_(std::move(on_error)) {}

StoredRelayJournal::~StoredRelayJournal() { Stop(); }

void StoredRelayJournal::Start() {
  std::lock_guard<std::mutex> lock(thread_mutex_);
  if (thread_.joinable() || stopping_) return;
  thread_ = std::thread([this] { Run(); });
}

void StoredRelayJournal::Stop() {
  {
    std::lock_guard<std::mutex> lock(thread_mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::string error;
  if (!Write(&error) && on_error_) on_error_(error);
}

void StoredRelayJournal::WriteSoon() {
  {
    std::lock_guard<std::mutex> lock(thread_mutex_);
    write_soon_ = true;
  }
  wake_.notify_all();
}

void StoredRelayJournal::Run() {
  std::unique_lock<std::mutex> lock(thread_mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, interval_, [this] { return stopping_ || write_soon_; });
    if (stopping_) break;
    write_soon_ = false;
    lock.unlock();
    std::string error;
    if (!Write(&error) && on_error_) on_error_(error);
    lock.lock();
  }
}

bool StoredRelayJournal::Write(std::string* error) {
  std::lock_guard<std::mutex> write_lock(write_mutex_);
  Pending taken;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::swap(taken, pending_);
  }
  RelayBatch batch;
  batch.destinations.reserve(taken.destinations.size());
  // Every entry has something to write: each call that makes one sets a
  // message, an acknowledged id (>= 1), a drop or a reset.
  for (auto& [dst, d] : taken.destinations) batch.destinations.push_back(std::move(d));
  batch.sources.reserve(taken.sources.size());
  for (auto& [src, s] : taken.sources) batch.sources.push_back(s);
  if (batch.empty()) return true;
  // Destinations in id order: the same batch always makes the same writes.
  std::sort(batch.destinations.begin(), batch.destinations.end(),
            [](const auto& a, const auto& b) { return a.dst < b.dst; });
  uint64_t messages = 0;
  for (const auto& d : batch.destinations) messages += d.queued.size();
  const bool ok = store_.WriteRelayBatch(batch, error);
  std::lock_guard<std::mutex> lock(mutex_);
  if (ok) {
    ++stats_.writes;
    stats_.messages_written += messages;
  } else {
    ++stats_.failures;
  }
  return ok;
}

RelayJournalStats StoredRelayJournal::Stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void StoredRelayJournal::Queued(uint32_t dst, const RelayMessage& message, uint64_t send_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  RelayBatch::Destination& d = pending_.destinations[dst];
  d.dst = dst;
  d.queued.push_back(message);  // shares the payload
  if (send_id != 0) {
    RelayBatch::Source& s = pending_.sources[message.src];
    s.src = message.src;
    s.send_floor = std::max(s.send_floor, send_id);
  }
}

void StoredRelayJournal::Acked(uint32_t dst, uint64_t relay_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  RelayBatch::Destination& d = pending_.destinations[dst];
  d.dst = dst;
  d.acked_through = std::max(d.acked_through, relay_id);
  // Queued since the last write and acknowledged already: never written.
  const auto first_kept = std::find_if(d.queued.begin(), d.queued.end(),
                                       [relay_id](const RelayMessage& m) { return m.relay_id > relay_id; });
  stats_.messages_skipped += static_cast<uint64_t>(first_kept - d.queued.begin());
  d.queued.erase(d.queued.begin(), first_kept);
}

void StoredRelayJournal::Dropped(uint32_t dst) {
  std::lock_guard<std::mutex> lock(mutex_);
  RelayBatch::Destination& d = pending_.destinations[dst];
  d.dst = dst;
  d.dropped = true;
  d.acked_through = 0;  // the drop deletes everything written before
  stats_.messages_skipped += d.queued.size();
  d.queued.clear();
}

void StoredRelayJournal::SourceReset(uint32_t src) {
  std::lock_guard<std::mutex> lock(mutex_);
  RelayBatch::Source& s = pending_.sources[src];
  s.src = src;
  s.reset = true;
  s.send_floor = 0;
}

}  // namespace nodefl::server::store
