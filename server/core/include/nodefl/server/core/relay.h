// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Relay: routes sealed device-to-device messages (RelaySend -> RelayDeliver)
// and holds them until the destination acknowledges them.
//
// Design: the relay owns one queue per destination device; connections PULL
// from it.
//
//   pending (un-acked, relay_id ascending)
//   [ taken by the current connection | not taken yet (the backlog) ]
//     ^ front: oldest un-acked                                  back ^
//
//   * Submit(src, dst, sealed, job, round) appends to dst's queue with the
//     next relay_id for dst (1, 2, ...; never reused, not even after a
//     session reset). Appending and numbering happen under one lock, so
//     per-destination FIFO order equals relay_id order.
//   * The connection's writer calls Take(dst, generation, ...) to get the
//     next messages of the backlog (moves them to "taken"), writes them as
//     RelayDeliver, and sleeps when Take returns nothing. When the backlog
//     goes from empty to non-empty, the relay calls the connection's
//     DeliveryTarget::OnRelayReady() (after releasing its lock); see
//     delivery_target.h for the latch the writer needs.
//   * Ack(dst, relay_id) is cumulative, like RelayAck: every pending message
//     with id <= relay_id is released. Old or repeated acks change nothing
//     (kDuplicate); an ack beyond anything ever handed to a connection is a
//     protocol error (kBeyondDelivered) and changes nothing.
//   * Sessions: after DeviceRegistry::Attach, the connection calls
//     BeginSession(dst, attach_result, last_acked, target). It rewinds
//     the queue so the new connection gets every un-acked message again, in
//     order (exactly the un-acked ones: last_acked, i.e. Hello.
//     last_delivered_relay_id, is applied first on a resumed session), and
//     returns the count for Welcome.pending_messages. A new session number
//     (the device lost its token) drops the old session's messages, counted
//     in dropped_by_session_reset; messages queued before a device's FIRST
//     session are kept for it. A message whose submitter saw the new session
//     number in the registry is never dropped. EndSession(dst, generation)
//     when the connection goes away. Take/EndSession/BeginSession with a
//     generation older than the latest BeginSession do nothing, so a replaced
//     connection can neither steal nor reset its successor's queue.
//
// The network layer's sequence for one connection of device d:
//     a = registry.Attach(d, hello.resume_token, conn)      refused -> Error, close
//     b = relay.BeginSession(d, a, hello.last_delivered_relay_id, conn)
//     send Welcome{a.token, a.resumed, pending = b.pending}
//     writer: loop { n = relay.Take(d, a.generation, ...); if n == 0 wait for
//             OnRelayReady; else write RelayDeliver(s) }   (Take once before
//             the first wait: BeginSession does not call OnRelayReady)
//     reader: RelaySend -> relay.Submit(d, dst, ...); RelayAck -> relay.Ack(d, id)
//     on close: relay.EndSession(d, a.generation); registry.Detach(d, a.generation)
//
// Bounds (all refusals are counted; nothing is ever dropped for space):
//   * online destination: backlog (not yet taken) <= online_queue_messages
//     and online_queue_bytes, else kRefusedQueueFull: backpressure; the
//     sender's connection waits (ServerConfig::relay_backpressure_wait_ms,
//     woken by the destination's takes and acks, server/net relay_room.h)
//     and then tells the sender (Error RESOURCE_EXHAUSTED);
//   * every destination: everything held (pending) <= pending_messages and
//     pending_bytes, else kRefusedOfflineQueueFull when offline and
//     kRefusedQueueFull when online (the device is not acking);
//   * all destinations together: payload bytes <= total_bytes, else
//     kRefusedRelayMemoryFull;
//   * a sealed payload larger than max_sealed_bytes: kRefusedTooLarge.
//
// Threading and lock order: every method is thread-safe. Per-destination
// state lives in flat arrays guarded by 64 striped mutexes; global counters
// are relaxed atomics. Submit first asks the registry for the destination's
// session (the registry's lock, released again), then takes the relay's
// stripe lock: the two are never held together, and no relay lock is held
// while calling a DeliveryTarget or freeing message memory. Payload copies
// are made before locking.
//
// Durability: with a RelayJournal (SetJournal) every queued message, ack,
// session reset and source reset is reported to it under the lock of the
// device concerned; server/store writes it to SQLite, and a restarted
// server puts the held messages back (Restore, RestoreSendFloor) before
// devices reconnect.
//
// Memory: an idle device costs BytesPerDevice() (no queue is allocated
// until a message is held; it is freed when the last one is acked).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "nodefl/server/core/config.h"
#include "nodefl/server/core/delivery_target.h"
#include "nodefl/server/core/registry.h"
#include "nodefl/server/core/relay_journal.h"
#include "nodefl/server/core/relay_message.h"

namespace nodefl::server {

struct RelayLimits {
  uint32_t online_queue_messages = 1024;
  uint64_t online_queue_bytes = 1u << 20;
  uint32_t pending_messages = 4096;
  uint64_t pending_bytes = 4u << 20;
  uint64_t total_bytes = 1ull << 30;
  uint32_t max_sealed_bytes = 4096;  // RelaySend.sealed max_size in envelope.options
};

// Limits from the server configuration (outbound_* -> online_*, offline_* ->
// pending_*, relay_memory_bytes -> total_bytes).
RelayLimits RelayLimitsFromConfig(const ServerConfig& config);

enum class RelayResult : uint8_t {
  kDeliveredToOnlineQueue,    // dst connected; its writer was woken if it was idle
  kQueuedOffline,             // dst not connected; held until it begins a session
  kRefusedUnknownDestination,
  kRefusedQueueFull,          // backpressure: retry later or tell the sender
  kRefusedOfflineQueueFull,
  kRefusedRelayMemoryFull,
  kRefusedTooLarge,
  // A numbered send (RelaySend.send_id) at or below the highest the source
  // had accepted: a resend of one the relay holds or delivered. Not routed
  // again; the connection acknowledges it like an accepted one.
  kDuplicateSend,
};

std::string_view RelayResultName(RelayResult result);
inline bool Accepted(RelayResult r) {
  return r == RelayResult::kDeliveredToOnlineQueue || r == RelayResult::kQueuedOffline;
}

struct SubmitResult {
  RelayResult result = RelayResult::kRefusedUnknownDestination;
  uint64_t relay_id = 0;  // when accepted
};

enum class AckStatus : uint8_t {
  kAcked,             // released `released` messages
  kDuplicate,         // at or below what was already acked: nothing to do
  kBeyondDelivered,   // acks something never handed out: protocol error
  kUnknownDevice,
};

struct AckResult {
  AckStatus status = AckStatus::kUnknownDevice;
  uint64_t released = 0;
};

enum class BeginSessionStatus : uint8_t {
  kOk,
  kUnknownDevice,
  kStaleGeneration,  // a newer connection already began; close this one
  kBeyondDelivered,  // resumed with last_acked beyond what was delivered
};

struct BeginSessionResult {
  BeginSessionStatus status = BeginSessionStatus::kUnknownDevice;
  uint64_t pending = 0;  // messages that will be (re)delivered, for Welcome
  // Old-session messages this call dropped (a Submit that saw the new
  // session first may already have dropped them; RelayStats counts both).
  uint64_t dropped = 0;
};

struct RelayQueueSnapshot {
  bool connected = false;  // a session is begun and not ended
  uint64_t pending = 0;    // held until acked
  uint64_t backlog = 0;    // not yet taken by the current connection
  uint64_t pending_bytes = 0;
  uint64_t next_relay_id = 1;
  uint64_t highest_delivered = 0;  // highest relay_id ever taken
  uint64_t acked_through = 0;
};

struct RelayStats {
  uint64_t submitted = 0;  // every Submit call
  uint64_t delivered_to_online_queue = 0;
  uint64_t queued_offline = 0;
  uint64_t refused_unknown_destination = 0;
  uint64_t refused_queue_full = 0;
  uint64_t refused_offline_queue_full = 0;
  uint64_t refused_memory_full = 0;
  uint64_t refused_too_large = 0;
  uint64_t taken = 0;        // messages handed to writers (incl. redeliveries)
  uint64_t redelivered = 0;  // taken again after a reconnect
  uint64_t acked = 0;        // messages released by acks
  uint64_t duplicate_acks = 0;
  uint64_t invalid_acks = 0;
  uint64_t duplicate_sends = 0;  // numbered resends not routed again (kDuplicateSend)
  uint64_t dropped_by_session_reset = 0;
  uint64_t messages_held = 0;  // pending now, all devices
  uint64_t bytes_held = 0;     // payload bytes pending now, all devices
  uint64_t queues_allocated = 0;  // devices that hold at least one message
  // Messages an earlier process held (Restore), and of those how many
  // their destination acknowledged and how many were dropped with an old
  // session.
  uint64_t restored = 0;
  uint64_t restored_acked = 0;
  uint64_t restored_dropped = 0;
};

class Relay {
 public:
  // `registry` must outlive the relay (for ids and session numbers).
  // `first_relay_id`: the id of each destination's first message. A server
  // restarted on its state store passes a number above any an earlier
  // process handed out (server start << 40, +1): a device drops a delivery
  // whose id it has seen, and acknowledges (Hello.last_delivered_relay_id)
  // ids the new process never issued, which count as delivered before it.
  Relay(const DeviceRegistry& registry, const RelayLimits& limits, uint64_t first_relay_id = 1);
  ~Relay();
  Relay(const Relay&) = delete;
  Relay& operator=(const Relay&) = delete;

  // `send_id` (RelaySend.send_id, 0 = unnumbered): a numbered send is
  // routed once per source session; one at or below the highest accepted
  // from `src` in its current session is kDuplicateSend.
  SubmitResult Submit(uint32_t src, uint32_t dst, std::span<const uint8_t> sealed, uint64_t job_id,
                      uint32_t round, uint64_t send_id = 0);

  // A numbered send from `src` that is not relayed (a JobData upload for the
  // job, numbered in the same sequence as its RelaySends): true if it is
  // new, and it counts as accepted; false for a resend (counted in
  // duplicate_sends). Unnumbered (0) and unknown sources: true.
  bool ClaimSendId(uint32_t src, uint64_t send_id);

  // The highest send_id accepted from `src` in its current session (0 once
  // a session begins that is not resumed: the device lost its token and
  // numbers from 1 again), for Welcome.last_relay_send_id.
  uint64_t LastSendId(uint32_t src) const;

  // Call after a successful DeviceRegistry::Attach (pass its result and the
  // same target), before sending Welcome. `last_acked` is Hello.
  // last_delivered_relay_id; it is applied only when `attached.resumed`
  // (a new session's numbering may not match what the device remembers).
  BeginSessionResult BeginSession(uint32_t dst, const AttachResult& attached, uint64_t last_acked,
                                  std::shared_ptr<DeliveryTarget> target);

  // Appends to `out` up to `max_messages` messages of the backlog whose
  // sizes add up to at most `max_bytes` (at least one message if any is
  // waiting, whatever its size). Returns how many were appended; 0 for a
  // stale generation or an empty backlog.
  size_t Take(uint32_t dst, uint64_t generation, size_t max_messages, size_t max_bytes,
              std::vector<RelayMessage>* out);

  AckResult Ack(uint32_t dst, uint64_t relay_id);

  // The connection `generation` of `dst` is gone. Its taken-but-unacked
  // messages stay pending for the next session. False if stale/unknown.
  bool EndSession(uint32_t dst, uint64_t generation);

  // Durable storage for the queues (nullptr, the default: none). Set it
  // before the first Submit; it must outlive the relay's use.
  void SetJournal(RelayJournal* journal) { journal_ = journal; }

  // At start-up, before any session begins: a message an earlier server
  // process held for `dst` and journaled, restored with its relay_id (below
  // this relay's first_relay_id; ascending per destination). It belongs
  // to the session the registry restored for `dst`: a device that resumes
  // it gets the message (its Hello.last_delivered_relay_id releases what
  // it already had), one that begins a new session drops it like any
  // message of an old session. Not journaled again, but counted as held.
  // False, and nothing changed, for an unknown device or an id out of
  // order.
  bool Restore(uint32_t dst, RelayMessage message);
  // At start-up: an earlier process routed `src`'s numbered sends up to
  // `send_id` (the highest it journaled). A RelaySend of `src` numbered at
  // or below it, in the session the registry restored, is a resend of one
  // already routed (kDuplicateSend): the device may have missed that
  // acknowledgement when the server was killed. Numbered JobData records
  // (ClaimSendId) are not affected: the relay never held them.
  void RestoreSendFloor(uint32_t src, uint64_t send_id);

  std::optional<RelayQueueSnapshot> QueueSnapshot(uint32_t dst) const;
  RelayStats Stats() const;
  const RelayLimits& limits() const { return limits_; }

  // Per known device while it holds no messages.
  static size_t BytesPerDevice();
  // Relay bookkeeping per held message on top of its payload (estimate:
  // the queue entry plus the payload's shared allocation header).
  static size_t OverheadPerMessage();

 private:
  struct Queue;
  struct Slot;
  struct alignas(64) Stripe {
    std::mutex mutex;
  };
  static constexpr size_t kStripes = 64;

  std::mutex& StripeFor(size_t slot) const { return stripes_[slot % kStripes].mutex; }
  // Guards the source-side fields (last_send_id, send_session) of a slot.
  // Taken before a destination stripe, never while holding one.
  std::mutex& SourceStripeFor(size_t slot) const { return source_stripes_[slot % kStripes].mutex; }
  // Routes one send; `send_id` (0 for unnumbered) is only journaled.
  SubmitResult Route(uint32_t src, uint32_t dst, std::span<const uint8_t> sealed, uint64_t job_id,
                     uint32_t round, uint64_t send_id);

  bool ReserveTotalBytes(uint64_t bytes);
  void ReleaseTotal(uint64_t messages, uint64_t bytes);
  // Under the stripe lock: drops the previous session's messages if `session`
  // is newer (moving the queue into *garbage so it is freed after unlock).
  uint64_t SyncSession(uint32_t dst, Slot& slot, uint64_t session, std::unique_ptr<Queue>* garbage);
  // Under the stripe lock: cumulative ack; updates counters.
  AckResult AckLocked(uint32_t dst, Slot& slot, uint64_t relay_id, std::unique_ptr<Queue>* garbage);

  const DeviceRegistry& registry_;
  const RelayLimits limits_;
  RelayJournal* journal_ = nullptr;
  const uint64_t first_relay_id_;  // ids below it were restored
  std::unique_ptr<Slot[]> slots_;
  // Per slot, under SourceStripeFor: the highest send id an earlier process
  // routed (RestoreSendFloor); allocated only by a restart that has some,
  // so an idle device costs nothing more.
  std::unique_ptr<uint64_t[]> send_floors_;
  uint64_t SendFloor(size_t slot) const { return send_floors_ != nullptr ? send_floors_[slot] : 0; }
  mutable std::array<Stripe, kStripes> stripes_;
  mutable std::array<Stripe, kStripes> source_stripes_;

  std::atomic<uint64_t> submitted_{0};
  std::atomic<uint64_t> delivered_online_{0};
  std::atomic<uint64_t> queued_offline_{0};
  std::atomic<uint64_t> refused_unknown_{0};
  std::atomic<uint64_t> refused_full_{0};
  std::atomic<uint64_t> refused_offline_full_{0};
  std::atomic<uint64_t> refused_memory_{0};
  std::atomic<uint64_t> refused_too_large_{0};
  std::atomic<uint64_t> taken_{0};
  std::atomic<uint64_t> redelivered_{0};
  std::atomic<uint64_t> acked_{0};
  std::atomic<uint64_t> duplicate_acks_{0};
  std::atomic<uint64_t> invalid_acks_{0};
  std::atomic<uint64_t> duplicate_sends_{0};
  std::atomic<uint64_t> dropped_reset_{0};
  std::atomic<uint64_t> messages_held_{0};
  std::atomic<uint64_t> bytes_held_{0};
  std::atomic<uint64_t> queues_allocated_{0};
  std::atomic<uint64_t> restored_{0};
  std::atomic<uint64_t> restored_acked_{0};
  std::atomic<uint64_t> restored_dropped_{0};
};

}  // namespace nodefl::server
