// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/core/relay.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <utility>

namespace nodefl::server {

// Messages held for one device. Allocated on the first held message and
// freed when the last one is acked, so idle devices cost only their Slot.
struct Relay::Queue {
  std::deque<RelayMessage> pending;  // relay_id ascending
  size_t taken = 0;                  // pending[0, taken) handed to the current connection
  uint64_t bytes = 0;                // payload bytes in pending
  uint64_t taken_bytes = 0;          // payload bytes in pending[0, taken)

  size_t backlog() const { return pending.size() - taken; }
  uint64_t backlog_bytes() const { return bytes - taken_bytes; }
};

// Per-device state, guarded by the stripe lock.
struct Relay::Slot {
  uint64_t next_relay_id = 1;
  uint64_t highest_delivered = 0;  // highest relay_id ever taken
  uint64_t acked_through = 0;
  uint64_t served_generation = 0;  // connection of the latest BeginSession
  uint64_t session = 0;            // session the held messages belong to
  std::shared_ptr<DeliveryTarget> target;  // set between BeginSession and EndSession
  std::unique_ptr<Queue> queue;
  // As a source (under SourceStripeFor): the highest numbered send accepted
  // from this device in its current session (reset when one begins afresh).
  uint64_t last_send_id = 0;
};

std::string_view RelayResultName(RelayResult result) {
  switch (result) {
    case RelayResult::kDeliveredToOnlineQueue: return "delivered_to_online_queue";
    case RelayResult::kQueuedOffline: return "queued_offline";
    case RelayResult::kRefusedUnknownDestination: return "refused_unknown_destination";
    case RelayResult::kRefusedQueueFull: return "refused_queue_full";
    case RelayResult::kRefusedOfflineQueueFull: return "refused_offline_queue_full";
    case RelayResult::kRefusedRelayMemoryFull: return "refused_relay_memory_full";
    case RelayResult::kRefusedTooLarge: return "refused_too_large";
    case RelayResult::kDuplicateSend: return "duplicate_send";
  }
  return "unknown";
}

RelayLimits RelayLimitsFromConfig(const ServerConfig& config) {
  RelayLimits limits;
  limits.online_queue_messages = config.outbound_queue_messages;
  limits.online_queue_bytes = config.outbound_queue_bytes;
  limits.pending_messages = config.offline_queue_messages;
  limits.pending_bytes = config.offline_queue_bytes;
  limits.total_bytes = config.relay_memory_bytes;
  return limits;
}

Relay::Relay(const DeviceRegistry& registry, const RelayLimits& limits, uint64_t first_relay_id)
    : registry_(registry),
      limits_(limits),
      first_relay_id_(first_relay_id == 0 ? 1 : first_relay_id),
      slots_(new Slot[registry.index().size()]) {
  const uint64_t first = first_relay_id_;
  for (size_t i = 0; i < registry.index().size(); ++i) {
    slots_[i].next_relay_id = first;
    slots_[i].highest_delivered = first - 1;
    slots_[i].acked_through = first - 1;
  }
}

Relay::~Relay() = default;

bool Relay::ReserveTotalBytes(uint64_t bytes) {
  uint64_t current = bytes_held_.load(std::memory_order_relaxed);
  do {
    if (current + bytes > limits_.total_bytes) return false;
  } while (!bytes_held_.compare_exchange_weak(current, current + bytes, std::memory_order_relaxed));
  return true;
}

void Relay::ReleaseTotal(uint64_t messages, uint64_t bytes) {
  messages_held_.fetch_sub(messages, std::memory_order_relaxed);
  bytes_held_.fetch_sub(bytes, std::memory_order_relaxed);
}

uint64_t Relay::SyncSession(uint32_t dst, Slot& slot, uint64_t session, std::unique_ptr<Queue>* garbage) {
  if (session <= slot.session) return 0;  // same session, or a stale view of it
  const bool had_session = slot.session != 0;
  slot.session = session;
  // Messages queued before the device's first session are meant for it.
  if (!had_session || slot.queue == nullptr) return 0;
  const uint64_t dropped = slot.queue->pending.size();
  ReleaseTotal(dropped, slot.queue->bytes);
  restored_dropped_.fetch_add(static_cast<uint64_t>(std::count_if(
                                  slot.queue->pending.begin(), slot.queue->pending.end(),
                                  [this](const RelayMessage& m) { return m.relay_id < first_relay_id_; })),
                              std::memory_order_relaxed);
  dropped_reset_.fetch_add(dropped, std::memory_order_relaxed);
  queues_allocated_.fetch_sub(1, std::memory_order_relaxed);
  *garbage = std::move(slot.queue);
  if (journal_ != nullptr) journal_->Dropped(dst);
  return dropped;
}

uint64_t Relay::LastSendId(uint32_t src) const {
  const std::optional<size_t> slot_index = registry_.index().SlotOf(src);
  if (!slot_index) return 0;
  Slot& slot = slots_[*slot_index];
  std::lock_guard<std::mutex> lock(SourceStripeFor(*slot_index));
  return slot.last_send_id;
}

bool Relay::ClaimSendId(uint32_t src, uint64_t send_id) {
  if (send_id == 0) return true;
  const std::optional<size_t> src_index = registry_.index().SlotOf(src);
  if (!src_index) return true;
  Slot& source = slots_[*src_index];
  std::lock_guard<std::mutex> lock(SourceStripeFor(*src_index));
  if (send_id <= source.last_send_id) {
    duplicate_sends_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  source.last_send_id = send_id;
  return true;
}

SubmitResult Relay::Submit(uint32_t src, uint32_t dst, std::span<const uint8_t> sealed, uint64_t job_id,
                           uint32_t round, uint64_t send_id) {
  if (send_id == 0) return Route(src, dst, sealed, job_id, round, 0);
  const std::optional<size_t> src_index = registry_.index().SlotOf(src);
  if (!src_index) return Route(src, dst, sealed, job_id, round, 0);
  // Check and record under the source's lock, so that two connections of
  // one device (the old one not yet closed) cannot both route a send_id.
  Slot& source = slots_[*src_index];
  std::lock_guard<std::mutex> lock(SourceStripeFor(*src_index));
  if (send_id <= source.last_send_id || send_id <= SendFloor(*src_index)) {
    submitted_.fetch_add(1, std::memory_order_relaxed);
    duplicate_sends_.fetch_add(1, std::memory_order_relaxed);
    // Every send up to it is handled now: a resend routed by an earlier
    // process counts as accepted, so Welcome says so after a reconnect.
    source.last_send_id = std::max(source.last_send_id, send_id);
    return SubmitResult{RelayResult::kDuplicateSend, 0};
  }
  const SubmitResult r = Route(src, dst, sealed, job_id, round, send_id);
  if (Accepted(r.result)) source.last_send_id = send_id;
  return r;
}

SubmitResult Relay::Route(uint32_t src, uint32_t dst, std::span<const uint8_t> sealed, uint64_t job_id,
                          uint32_t round, uint64_t send_id) {
  submitted_.fetch_add(1, std::memory_order_relaxed);
  SubmitResult out;
  const auto refuse = [&](RelayResult why, std::atomic<uint64_t>& counter) {
    counter.fetch_add(1, std::memory_order_relaxed);
    out.result = why;
    return out;
  };
  if (sealed.size() > limits_.max_sealed_bytes) {
    return refuse(RelayResult::kRefusedTooLarge, refused_too_large_);
  }
  const std::optional<size_t> slot_index = registry_.index().SlotOf(dst);
  if (!slot_index) return refuse(RelayResult::kRefusedUnknownDestination, refused_unknown_);
  // Read under the registry's lock, which is released again before ours.
  const uint64_t session = registry_.CurrentSession(dst).value_or(0);

  const uint64_t size = sealed.size();
  if (!ReserveTotalBytes(size)) return refuse(RelayResult::kRefusedRelayMemoryFull, refused_memory_);

  RelayMessage message;
  message.job_id = job_id;
  message.src = src;
  message.round = round;
  message.sealed_size = static_cast<uint32_t>(size);
  {
    auto payload = std::make_shared_for_overwrite<uint8_t[]>(size);
    if (size != 0) std::memcpy(payload.get(), sealed.data(), size);
    message.sealed = std::move(payload);
  }

  // Freed after the lock is released: a refused payload or a dropped queue.
  std::unique_ptr<Queue> garbage;
  RelayMessage refused_message;
  std::shared_ptr<DeliveryTarget> wake;
  RelayResult refusal = RelayResult::kDeliveredToOnlineQueue;
  bool refused = false;
  {
    Slot& slot = slots_[*slot_index];
    std::lock_guard<std::mutex> lock(StripeFor(*slot_index));
    SyncSession(dst, slot, session, &garbage);
    const bool online = slot.target != nullptr;
    const size_t held = slot.queue ? slot.queue->pending.size() : 0;
    const uint64_t held_bytes = slot.queue ? slot.queue->bytes : 0;
    const size_t backlog = slot.queue ? slot.queue->backlog() : 0;
    const uint64_t backlog_bytes = slot.queue ? slot.queue->backlog_bytes() : 0;
    if (online && (backlog >= limits_.online_queue_messages ||
                   backlog_bytes + size > limits_.online_queue_bytes)) {
      refused = true;
      refusal = RelayResult::kRefusedQueueFull;
    } else if (held >= limits_.pending_messages || held_bytes + size > limits_.pending_bytes) {
      refused = true;
      refusal = online ? RelayResult::kRefusedQueueFull : RelayResult::kRefusedOfflineQueueFull;
    }
    if (refused) {
      refused_message = std::move(message);
    } else {
      if (slot.queue == nullptr) {
        slot.queue = std::make_unique<Queue>();
        queues_allocated_.fetch_add(1, std::memory_order_relaxed);
      }
      message.relay_id = slot.next_relay_id++;
      out.relay_id = message.relay_id;
      if (journal_ != nullptr) journal_->Queued(dst, message, send_id);
      slot.queue->pending.push_back(std::move(message));
      slot.queue->bytes += size;
      messages_held_.fetch_add(1, std::memory_order_relaxed);
      // Only the empty -> non-empty edge wakes the writer (see delivery_target.h).
      if (online && backlog == 0) wake = slot.target;
    }
    out.result = online ? RelayResult::kDeliveredToOnlineQueue : RelayResult::kQueuedOffline;
  }
  if (refused) {
    bytes_held_.fetch_sub(size, std::memory_order_relaxed);
    return refuse(refusal,
                  refusal == RelayResult::kRefusedQueueFull ? refused_full_ : refused_offline_full_);
  }
  (out.result == RelayResult::kDeliveredToOnlineQueue ? delivered_online_ : queued_offline_)
      .fetch_add(1, std::memory_order_relaxed);
  if (wake != nullptr) wake->OnRelayReady();
  return out;
}

BeginSessionResult Relay::BeginSession(uint32_t dst, const AttachResult& attached,
                                       uint64_t last_acked, std::shared_ptr<DeliveryTarget> target) {
  BeginSessionResult result;
  const std::optional<size_t> slot_index = registry_.index().SlotOf(dst);
  if (!slot_index) return result;
  std::unique_ptr<Queue> garbage;
  std::unique_ptr<Queue> acked_garbage;
  std::shared_ptr<DeliveryTarget> previous;  // released after unlock
  if (!attached.resumed) {
    // A device without its token numbers its sends from 1 again.
    std::lock_guard<std::mutex> lock(SourceStripeFor(*slot_index));
    slots_[*slot_index].last_send_id = 0;
    if (send_floors_ != nullptr) send_floors_[*slot_index] = 0;
    if (journal_ != nullptr) journal_->SourceReset(dst);
  }
  {
    Slot& slot = slots_[*slot_index];
    std::lock_guard<std::mutex> lock(StripeFor(*slot_index));
    if (attached.generation < slot.served_generation) {
      result.status = BeginSessionStatus::kStaleGeneration;
      return result;
    }
    result.dropped = SyncSession(dst, slot, attached.session, &garbage);
    if (attached.resumed && last_acked != 0) {
      if (last_acked > slot.highest_delivered) {
        invalid_acks_.fetch_add(1, std::memory_order_relaxed);
        result.status = BeginSessionStatus::kBeyondDelivered;
        return result;
      }
      AckLocked(dst, slot, last_acked, &acked_garbage);
    }
    slot.served_generation = attached.generation;
    previous = std::exchange(slot.target, std::move(target));
    if (slot.queue != nullptr) {
      // Rewind: the new connection gets every un-acked message again.
      slot.queue->taken = 0;
      slot.queue->taken_bytes = 0;
      result.pending = slot.queue->pending.size();
    }
  }
  result.status = BeginSessionStatus::kOk;
  return result;
}

size_t Relay::Take(uint32_t dst, uint64_t generation, size_t max_messages, size_t max_bytes,
                   std::vector<RelayMessage>* out) {
  const std::optional<size_t> slot_index = registry_.index().SlotOf(dst);
  if (!slot_index || max_messages == 0) return 0;
  size_t count = 0;
  uint64_t redelivered = 0;
  {
    Slot& slot = slots_[*slot_index];
    std::lock_guard<std::mutex> lock(StripeFor(*slot_index));
    if (generation != slot.served_generation || slot.target == nullptr || slot.queue == nullptr) {
      return 0;
    }
    Queue& queue = *slot.queue;
    uint64_t bytes = 0;
    while (queue.taken < queue.pending.size() && count < max_messages) {
      const RelayMessage& next = queue.pending[queue.taken];
      if (count > 0 && bytes + next.sealed_size > max_bytes) break;
      bytes += next.sealed_size;
      if (next.relay_id <= slot.highest_delivered) ++redelivered;
      slot.highest_delivered = std::max(slot.highest_delivered, next.relay_id);
      out->push_back(next);  // copies a shared_ptr, not the payload
      ++queue.taken;
      queue.taken_bytes += next.sealed_size;
      ++count;
    }
  }
  taken_.fetch_add(count, std::memory_order_relaxed);
  redelivered_.fetch_add(redelivered, std::memory_order_relaxed);
  return count;
}

AckResult Relay::AckLocked(uint32_t dst, Slot& slot, uint64_t relay_id, std::unique_ptr<Queue>* garbage) {
  AckResult result;
  if (relay_id > slot.highest_delivered) {
    invalid_acks_.fetch_add(1, std::memory_order_relaxed);
    result.status = AckStatus::kBeyondDelivered;
    return result;
  }
  if (relay_id <= slot.acked_through) {
    duplicate_acks_.fetch_add(1, std::memory_order_relaxed);
    result.status = AckStatus::kDuplicate;
    return result;
  }
  slot.acked_through = relay_id;
  result.status = AckStatus::kAcked;
  if (slot.queue == nullptr) return result;
  if (journal_ != nullptr) journal_->Acked(dst, relay_id);
  Queue& queue = *slot.queue;
  uint64_t bytes = 0;
  uint64_t restored = 0;
  while (!queue.pending.empty() && queue.pending.front().relay_id <= relay_id) {
    const uint64_t size = queue.pending.front().sealed_size;
    bytes += size;
    if (queue.pending.front().relay_id < first_relay_id_) ++restored;
    // After a rewind the ack may cover messages this connection has not
    // taken yet (the device got them on its previous connection).
    if (queue.taken > 0) {
      --queue.taken;
      queue.taken_bytes -= size;
    }
    queue.pending.pop_front();
    ++result.released;
  }
  queue.bytes -= bytes;
  ReleaseTotal(result.released, bytes);
  acked_.fetch_add(result.released, std::memory_order_relaxed);
  if (restored != 0) restored_acked_.fetch_add(restored, std::memory_order_relaxed);
  if (queue.pending.empty()) {
    queues_allocated_.fetch_sub(1, std::memory_order_relaxed);
    *garbage = std::move(slot.queue);
  }
  return result;
}

AckResult Relay::Ack(uint32_t dst, uint64_t relay_id) {
  const std::optional<size_t> slot_index = registry_.index().SlotOf(dst);
  if (!slot_index) return AckResult{};
  std::unique_ptr<Queue> garbage;  // freed after unlock
  std::lock_guard<std::mutex> lock(StripeFor(*slot_index));
  return AckLocked(dst, slots_[*slot_index], relay_id, &garbage);
}

bool Relay::Restore(uint32_t dst, RelayMessage message) {
  const std::optional<size_t> slot_index = registry_.index().SlotOf(dst);
  if (!slot_index || message.sealed == nullptr) return false;
  const uint64_t session = registry_.CurrentSession(dst).value_or(0);
  const uint64_t size = message.sealed_size;
  std::lock_guard<std::mutex> lock(StripeFor(*slot_index));
  Slot& slot = slots_[*slot_index];
  if (message.relay_id == 0 || message.relay_id >= slot.next_relay_id || slot.target != nullptr ||
      (slot.queue != nullptr && message.relay_id <= slot.queue->pending.back().relay_id)) {
    return false;
  }
  if (slot.queue == nullptr) {
    slot.queue = std::make_unique<Queue>();
    queues_allocated_.fetch_add(1, std::memory_order_relaxed);
    // The device's acknowledgement of an earlier process's id must release
    // what was restored up to it, so only ids below the first count as
    // acknowledged; every earlier id counts as delivered.
    slot.acked_through = message.relay_id - 1;
  }
  slot.session = session;
  slot.queue->pending.push_back(std::move(message));
  slot.queue->bytes += size;
  messages_held_.fetch_add(1, std::memory_order_relaxed);
  bytes_held_.fetch_add(size, std::memory_order_relaxed);
  restored_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void Relay::RestoreSendFloor(uint32_t src, uint64_t send_id) {
  const std::optional<size_t> slot_index = registry_.index().SlotOf(src);
  if (!slot_index) return;
  if (send_floors_ == nullptr) {
    // Start-up is single-threaded: no session has begun yet.
    send_floors_ = std::make_unique<uint64_t[]>(registry_.index().size());
  }
  std::lock_guard<std::mutex> lock(SourceStripeFor(*slot_index));
  send_floors_[*slot_index] = std::max(send_floors_[*slot_index], send_id);
}

bool Relay::EndSession(uint32_t dst, uint64_t generation) {
  const std::optional<size_t> slot_index = registry_.index().SlotOf(dst);
  if (!slot_index) return false;
  std::shared_ptr<DeliveryTarget> released;  // destroyed after unlock
  std::lock_guard<std::mutex> lock(StripeFor(*slot_index));
  Slot& slot = slots_[*slot_index];
  if (generation != slot.served_generation || slot.target == nullptr) return false;
  released = std::move(slot.target);
  slot.target = nullptr;
  return true;
}

std::optional<RelayQueueSnapshot> Relay::QueueSnapshot(uint32_t dst) const {
  const std::optional<size_t> slot_index = registry_.index().SlotOf(dst);
  if (!slot_index) return std::nullopt;
  RelayQueueSnapshot snapshot;
  std::lock_guard<std::mutex> lock(StripeFor(*slot_index));
  const Slot& slot = slots_[*slot_index];
  snapshot.connected = slot.target != nullptr;
  snapshot.next_relay_id = slot.next_relay_id;
  snapshot.highest_delivered = slot.highest_delivered;
  snapshot.acked_through = slot.acked_through;
  if (slot.queue != nullptr) {
    snapshot.pending = slot.queue->pending.size();
    snapshot.backlog = slot.queue->backlog();
    snapshot.pending_bytes = slot.queue->bytes;
  }
  return snapshot;
}

RelayStats Relay::Stats() const {
  const auto get = [](const std::atomic<uint64_t>& counter) {
    return counter.load(std::memory_order_relaxed);
  };
  RelayStats stats;
  stats.submitted = get(submitted_);
  stats.delivered_to_online_queue = get(delivered_online_);
  stats.queued_offline = get(queued_offline_);
  stats.refused_unknown_destination = get(refused_unknown_);
  stats.refused_queue_full = get(refused_full_);
  stats.refused_offline_queue_full = get(refused_offline_full_);
  stats.refused_memory_full = get(refused_memory_);
  stats.refused_too_large = get(refused_too_large_);
  stats.taken = get(taken_);
  stats.redelivered = get(redelivered_);
  stats.acked = get(acked_);
  stats.duplicate_acks = get(duplicate_acks_);
  stats.invalid_acks = get(invalid_acks_);
  stats.duplicate_sends = get(duplicate_sends_);
  stats.dropped_by_session_reset = get(dropped_reset_);
  stats.messages_held = get(messages_held_);
  stats.bytes_held = get(bytes_held_);
  stats.queues_allocated = get(queues_allocated_);
  stats.restored = get(restored_);
  stats.restored_acked = get(restored_acked_);
  stats.restored_dropped = get(restored_dropped_);
  return stats;
}

size_t Relay::BytesPerDevice() { return sizeof(Slot); }

size_t Relay::OverheadPerMessage() {
  // Queue entry + the shared_ptr control block allocated with the payload
  // (two counters and a vtable pointer, rounded to malloc's 16 bytes).
  return sizeof(RelayMessage) + 32;
}

}  // namespace nodefl::server
