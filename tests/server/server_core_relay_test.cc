// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "nodefl/server/core/registry.h"
#include "nodefl/server/core/relay.h"
#include "server_core_test_target.h"

namespace nodefl::server {
namespace {

using testing::MakeTarget;
using testing::RecordingTarget;

std::vector<uint8_t> Payload(uint32_t tag, size_t size = 8) {
  std::vector<uint8_t> bytes(size, static_cast<uint8_t>(tag));
  if (size >= 4) std::memcpy(bytes.data(), &tag, 4);
  return bytes;
}

uint32_t TagOf(const RelayMessage& m) {
  uint32_t tag = 0;
  std::memcpy(&tag, m.sealed.get(), 4);
  return tag;
}

std::vector<uint64_t> Ids(const std::vector<RelayMessage>& messages) {
  std::vector<uint64_t> ids;
  for (const auto& m : messages) ids.push_back(m.relay_id);
  return ids;
}

// One registry + relay over devices 0..count-1, and a helper that plays a
// device's connection: Attach, then BeginSession, as the network layer will.
class RelayTest : public ::testing::Test {
 protected:
  void Make(RelayLimits limits = {}, uint32_t count = 8) {
    std::string error;
    registry_ = DeviceRegistry::Create(DeviceIdRange(0, count), RegistryOptions{}, &error);
    ASSERT_NE(registry_, nullptr) << error;
    relay_ = std::make_unique<Relay>(*registry_, limits);
  }

  struct Connection {
    AttachResult attach;
    BeginSessionResult begin;
    std::shared_ptr<RecordingTarget> target;
  };

  Connection Connect(uint32_t id, std::span<const uint8_t> token = {}, uint64_t last_acked = 0) {
    Connection c;
    c.target = MakeTarget();
    c.attach = registry_->Attach(id, token, c.target);
    EXPECT_TRUE(c.attach.ok());
    c.begin = relay_->BeginSession(id, c.attach, last_acked, c.target);
    return c;
  }

  void Disconnect(uint32_t id, const Connection& c) {
    EXPECT_TRUE(relay_->EndSession(id, c.attach.generation));
    EXPECT_TRUE(registry_->Detach(id, c.attach.generation));
  }

  std::vector<RelayMessage> TakeAll(uint32_t id, const Connection& c, size_t max = 1000) {
    std::vector<RelayMessage> out;
    relay_->Take(id, c.attach.generation, max, SIZE_MAX, &out);
    return out;
  }

  RelayResult Send(uint32_t src, uint32_t dst, uint32_t tag, size_t size = 8) {
    const auto bytes = Payload(tag, size);
    return relay_->Submit(src, dst, bytes, /*job_id=*/77, /*round=*/tag).result;
  }

  std::unique_ptr<DeviceRegistry> registry_;
  std::unique_ptr<Relay> relay_;
};

TEST_F(RelayTest, DeliversInFifoOrderPerDestinationWithConsecutiveRelayIds) {
  Make();
  const Connection c = Connect(1);
  EXPECT_EQ(c.begin.status, BeginSessionStatus::kOk);
  for (uint32_t i = 0; i < 10; ++i) {
    EXPECT_EQ(Send(/*src=*/i % 3 + 2, /*dst=*/1, /*tag=*/100 + i), RelayResult::kDeliveredToOnlineQueue);
    EXPECT_EQ(Send(/*src=*/1, /*dst=*/0, /*tag=*/200 + i), RelayResult::kQueuedOffline);
  }
  const auto got = TakeAll(1, c);
  ASSERT_EQ(got.size(), 10u);
  for (uint32_t i = 0; i < 10; ++i) {
    EXPECT_EQ(got[i].relay_id, i + 1);  // numbered per destination
    EXPECT_EQ(TagOf(got[i]), 100 + i);
    EXPECT_EQ(got[i].src, i % 3 + 2);
    EXPECT_EQ(got[i].job_id, 77u);
    EXPECT_EQ(got[i].round, 100 + i);
    EXPECT_EQ(got[i].sealed_bytes().size(), 8u);
  }
  EXPECT_TRUE(TakeAll(1, c).empty());
  EXPECT_EQ(relay_->QueueSnapshot(0)->next_relay_id, 11u);  // device 0 has its own numbering
  const RelayStats stats = relay_->Stats();
  EXPECT_EQ(stats.delivered_to_online_queue, 10u);
  EXPECT_EQ(stats.queued_offline, 10u);
  EXPECT_EQ(stats.messages_held, 20u);
  EXPECT_EQ(stats.bytes_held, 160u);
}

TEST_F(RelayTest, TakeHonoursMessageAndByteLimitsButAlwaysMakesProgress) {
  Make();
  const Connection c = Connect(1);
  for (uint32_t i = 0; i < 5; ++i) ASSERT_TRUE(Accepted(relay_->Submit(0, 1, Payload(i, 100), 0, 0).result));
  std::vector<RelayMessage> out;
  EXPECT_EQ(relay_->Take(1, c.attach.generation, 2, SIZE_MAX, &out), 2u);
  EXPECT_EQ(relay_->Take(1, c.attach.generation, 10, 250, &out), 2u);  // 100+100 <= 250 < 300
  EXPECT_EQ(relay_->Take(1, c.attach.generation, 10, 1, &out), 1u);    // larger than max, still one
  EXPECT_EQ(Ids(out), (std::vector<uint64_t>{1, 2, 3, 4, 5}));
}

TEST_F(RelayTest, WakesTheWriterOnlyWhenItsBacklogBecomesNonEmpty) {
  Make();
  const Connection c = Connect(3);
  EXPECT_EQ(Send(0, 3, 1), RelayResult::kDeliveredToOnlineQueue);
  EXPECT_EQ(c.target->wakeups.load(), 1);
  EXPECT_EQ(Send(0, 3, 2), RelayResult::kDeliveredToOnlineQueue);
  EXPECT_EQ(c.target->wakeups.load(), 1);  // writer has not drained yet
  EXPECT_EQ(TakeAll(3, c).size(), 2u);
  EXPECT_EQ(Send(0, 3, 3), RelayResult::kDeliveredToOnlineQueue);
  EXPECT_EQ(c.target->wakeups.load(), 2);
}

TEST_F(RelayTest, UnknownDestinationAndOversizedPayloadsAreRefusedAndCounted) {
  RelayLimits limits;
  limits.max_sealed_bytes = 64;
  Make(limits);
  EXPECT_EQ(Send(0, 8, 1), RelayResult::kRefusedUnknownDestination);
  EXPECT_EQ(Send(0, 1, 1, 65), RelayResult::kRefusedTooLarge);
  EXPECT_EQ(Send(0, 1, 1, 64), RelayResult::kQueuedOffline);
  EXPECT_EQ(Send(0, 1, 1, 0), RelayResult::kQueuedOffline);  // empty payloads are fine
  const RelayStats stats = relay_->Stats();
  EXPECT_EQ(stats.submitted, 4u);
  EXPECT_EQ(stats.refused_unknown_destination, 1u);
  EXPECT_EQ(stats.refused_too_large, 1u);
  EXPECT_EQ(stats.bytes_held, 64u);
  EXPECT_EQ(relay_->Ack(8, 1).status, AckStatus::kUnknownDevice);
  EXPECT_FALSE(relay_->QueueSnapshot(8).has_value());
}

TEST_F(RelayTest, OfflineMessagesAndUnackedOnesAreRedeliveredInOrderOnResume) {
  Make();
  // Device 2 connects once (so it has a session), then goes away.
  Connection first = Connect(2);
  for (uint32_t i = 1; i <= 5; ++i) ASSERT_EQ(Send(0, 2, i), RelayResult::kDeliveredToOnlineQueue);
  const auto got = TakeAll(2, first, 3);
  EXPECT_EQ(Ids(got), (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(relay_->Ack(2, 2).status, AckStatus::kAcked);  // 3 arrived but was not acked yet
  Disconnect(2, first);
  EXPECT_EQ(Send(0, 2, 6), RelayResult::kQueuedOffline);
  EXPECT_EQ(Send(1, 2, 7), RelayResult::kQueuedOffline);
  EXPECT_EQ(relay_->QueueSnapshot(2)->pending, 5u);  // 3..7

  // Resume: Hello says "acked through 2"; everything after comes again, in order.
  const Connection second = Connect(2, first.attach.token, /*last_acked=*/2);
  ASSERT_TRUE(second.attach.resumed);
  EXPECT_EQ(second.begin.status, BeginSessionStatus::kOk);
  EXPECT_EQ(second.begin.pending, 5u);  // for Welcome.pending_messages
  const auto again = TakeAll(2, second);
  EXPECT_EQ(Ids(again), (std::vector<uint64_t>{3, 4, 5, 6, 7}));
  EXPECT_EQ(TagOf(again[0]), 3u);
  EXPECT_EQ(TagOf(again[4]), 7u);
  EXPECT_EQ(relay_->Stats().redelivered, 1u);  // only #3 had been handed out before

  // Hello's last_acked may also release what the device got but had not acked.
  EXPECT_EQ(relay_->Ack(2, 5).released, 3u);
  Disconnect(2, second);
  const Connection third = Connect(2, first.attach.token, /*last_acked=*/7);
  EXPECT_EQ(third.begin.pending, 0u);
  EXPECT_TRUE(TakeAll(2, third).empty());
  EXPECT_EQ(relay_->Stats().messages_held, 0u);
  EXPECT_EQ(relay_->Stats().queues_allocated, 0u);
}

TEST_F(RelayTest, MessagesQueuedBeforeTheFirstSessionAreKept) {
  Make();
  for (uint32_t i = 1; i <= 3; ++i) ASSERT_EQ(Send(0, 4, i), RelayResult::kQueuedOffline);
  const Connection c = Connect(4);
  EXPECT_EQ(c.begin.pending, 3u);
  EXPECT_EQ(c.begin.dropped, 0u);
  EXPECT_EQ(Ids(TakeAll(4, c)), (std::vector<uint64_t>{1, 2, 3}));
}

TEST_F(RelayTest, ANewSessionDropsTheOldSessionsMessagesButKeepsNumbering) {
  Make();
  Connection first = Connect(5);
  for (uint32_t i = 1; i <= 4; ++i) ASSERT_EQ(Send(0, 5, i), RelayResult::kDeliveredToOnlineQueue);
  EXPECT_EQ(TakeAll(5, first).size(), 4u);
  Disconnect(5, first);
  // The device lost its token: empty token -> new session -> old messages go.
  const Connection fresh = Connect(5, {}, /*last_acked ignored=*/99);
  EXPECT_FALSE(fresh.attach.resumed);
  EXPECT_EQ(fresh.begin.status, BeginSessionStatus::kOk);
  EXPECT_EQ(fresh.begin.dropped, 4u);
  EXPECT_EQ(fresh.begin.pending, 0u);
  const RelayStats stats = relay_->Stats();
  EXPECT_EQ(stats.dropped_by_session_reset, 4u);
  EXPECT_EQ(stats.messages_held, 0u);
  EXPECT_EQ(stats.bytes_held, 0u);
  // Numbering continues, so a late ack from the old session cannot release new messages.
  EXPECT_EQ(Send(0, 5, 9), RelayResult::kDeliveredToOnlineQueue);
  const auto got = TakeAll(5, fresh);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].relay_id, 5u);
  EXPECT_EQ(relay_->Ack(5, 4).status, AckStatus::kAcked);
  EXPECT_EQ(relay_->QueueSnapshot(5)->pending, 1u);
}

TEST_F(RelayTest, SubmittersThatSeeTheNewSessionLoseNothing) {
  Make();
  Connection first = Connect(6);
  ASSERT_EQ(Send(0, 6, 1), RelayResult::kDeliveredToOnlineQueue);
  Disconnect(6, first);
  // Attach (new session) happens; a message arrives before BeginSession.
  auto target = MakeTarget();
  const AttachResult attach = registry_->Attach(6, {}, target);
  ASSERT_TRUE(attach.ok());
  ASSERT_EQ(Send(0, 6, 2), RelayResult::kQueuedOffline);
  const BeginSessionResult begin = relay_->BeginSession(6, attach, 0, target);
  // The Submit already saw session 2 and dropped the old session's message
  // itself; BeginSession finds only the new one.
  EXPECT_EQ(relay_->Stats().dropped_by_session_reset, 1u);
  EXPECT_EQ(begin.dropped, 0u);
  EXPECT_EQ(begin.pending, 1u);
  std::vector<RelayMessage> out;
  relay_->Take(6, attach.generation, 10, SIZE_MAX, &out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(TagOf(out[0]), 2u);
}

TEST_F(RelayTest, AcksAreCumulativeAndIgnoreDuplicatesAndRejectTheUndelivered) {
  Make();
  const Connection c = Connect(1);
  for (uint32_t i = 1; i <= 6; ++i) ASSERT_TRUE(Accepted(relay_->Submit(0, 1, Payload(i), 0, 0).result));
  EXPECT_EQ(relay_->Ack(1, 1).status, AckStatus::kBeyondDelivered);  // nothing taken yet
  EXPECT_EQ(TakeAll(1, c, 4).size(), 4u);
  EXPECT_EQ(relay_->Ack(1, 5).status, AckStatus::kBeyondDelivered);  // #5 never handed out
  AckResult r = relay_->Ack(1, 3);
  EXPECT_EQ(r.status, AckStatus::kAcked);
  EXPECT_EQ(r.released, 3u);
  r = relay_->Ack(1, 3);
  EXPECT_EQ(r.status, AckStatus::kDuplicate);
  EXPECT_EQ(r.released, 0u);
  EXPECT_EQ(relay_->Ack(1, 2).status, AckStatus::kDuplicate);  // old
  EXPECT_EQ(relay_->Ack(1, 0).status, AckStatus::kDuplicate);
  EXPECT_EQ(relay_->QueueSnapshot(1)->pending, 3u);  // 4, 5, 6
  EXPECT_EQ(relay_->Ack(1, 4).released, 1u);
  EXPECT_EQ(TakeAll(1, c).size(), 2u);
  EXPECT_EQ(relay_->Ack(1, 6).released, 2u);
  const RelayStats stats = relay_->Stats();
  EXPECT_EQ(stats.acked, 6u);
  EXPECT_EQ(stats.duplicate_acks, 3u);
  EXPECT_EQ(stats.invalid_acks, 2u);
  EXPECT_EQ(stats.messages_held, 0u);
  EXPECT_EQ(stats.bytes_held, 0u);
  EXPECT_EQ(stats.queues_allocated, 0u);  // freed once empty
  EXPECT_EQ(relay_->QueueSnapshot(1)->acked_through, 6u);
}

TEST_F(RelayTest, OnlineBacklogBoundPushesBackAndRecoversWhenTheWriterTakes) {
  RelayLimits limits;
  limits.online_queue_messages = 3;
  limits.online_queue_bytes = 1000;
  Make(limits);
  const Connection c = Connect(1);
  for (uint32_t i = 1; i <= 3; ++i) EXPECT_EQ(Send(0, 1, i), RelayResult::kDeliveredToOnlineQueue);
  EXPECT_EQ(Send(0, 1, 4), RelayResult::kRefusedQueueFull);
  EXPECT_EQ(Send(2, 1, 4), RelayResult::kRefusedQueueFull);
  std::vector<RelayMessage> out;
  ASSERT_EQ(relay_->Take(1, c.attach.generation, 1, SIZE_MAX, &out), 1u);
  EXPECT_EQ(Send(0, 1, 4), RelayResult::kDeliveredToOnlineQueue);
  // Byte bound: 3 backlog slots free after taking, but 600 + 600 > 1000.
  ASSERT_EQ(relay_->Take(1, c.attach.generation, 10, SIZE_MAX, &out), 3u);
  EXPECT_EQ(Send(0, 1, 5, 600), RelayResult::kDeliveredToOnlineQueue);
  EXPECT_EQ(Send(0, 1, 6, 600), RelayResult::kRefusedQueueFull);
  const RelayStats stats = relay_->Stats();
  EXPECT_EQ(stats.refused_queue_full, 3u);
  EXPECT_EQ(stats.submitted, stats.delivered_to_online_queue + stats.refused_queue_full);
  // Nothing refused was queued, nothing accepted was lost.
  relay_->Take(1, c.attach.generation, 10, SIZE_MAX, &out);
  std::vector<uint32_t> tags;
  for (const auto& m : out) tags.push_back(TagOf(m));
  EXPECT_EQ(tags, (std::vector<uint32_t>{1, 2, 3, 4, 5}));
}

TEST_F(RelayTest, PendingBoundRefusesOfflineAndSlowAckingDevices) {
  RelayLimits limits;
  limits.pending_messages = 4;
  limits.pending_bytes = 10000;
  limits.max_sealed_bytes = 10000;
  Make(limits);
  for (uint32_t i = 1; i <= 4; ++i) EXPECT_EQ(Send(0, 1, i), RelayResult::kQueuedOffline);
  EXPECT_EQ(Send(0, 1, 5), RelayResult::kRefusedOfflineQueueFull);
  // Online but never acking: everything taken still counts against the bound.
  const Connection c = Connect(1);
  EXPECT_EQ(TakeAll(1, c).size(), 4u);
  EXPECT_EQ(Send(0, 1, 5), RelayResult::kRefusedQueueFull);
  EXPECT_EQ(relay_->Ack(1, 2).released, 2u);
  EXPECT_EQ(Send(0, 1, 5), RelayResult::kDeliveredToOnlineQueue);
  EXPECT_EQ(Send(0, 1, 6), RelayResult::kDeliveredToOnlineQueue);
  EXPECT_EQ(Send(0, 1, 7), RelayResult::kRefusedQueueFull);
  // Pending bytes bound, offline.
  EXPECT_EQ(Send(0, 2, 1, 9000), RelayResult::kQueuedOffline);
  EXPECT_EQ(Send(0, 2, 2, 1001), RelayResult::kRefusedOfflineQueueFull);
  EXPECT_EQ(Send(0, 2, 2, 1000), RelayResult::kQueuedOffline);
  const RelayStats stats = relay_->Stats();
  EXPECT_EQ(stats.refused_offline_queue_full, 2u);
  EXPECT_EQ(stats.refused_queue_full, 2u);
  EXPECT_EQ(relay_->QueueSnapshot(1)->pending, 4u);
}

TEST_F(RelayTest, TotalMemoryBoundCoversAllDevices) {
  RelayLimits limits;
  limits.total_bytes = 1000;
  Make(limits);
  EXPECT_EQ(Send(0, 1, 1, 400), RelayResult::kQueuedOffline);
  EXPECT_EQ(Send(0, 2, 2, 400), RelayResult::kQueuedOffline);
  EXPECT_EQ(Send(0, 3, 3, 400), RelayResult::kRefusedRelayMemoryFull);
  EXPECT_EQ(Send(0, 3, 3, 200), RelayResult::kQueuedOffline);
  EXPECT_EQ(relay_->Stats().bytes_held, 1000u);
  EXPECT_EQ(relay_->Stats().refused_memory_full, 1u);
  // Releasing memory (ack) makes room again.
  const Connection c = Connect(1);
  EXPECT_EQ(TakeAll(1, c).size(), 1u);
  EXPECT_EQ(relay_->Ack(1, 1).released, 1u);
  EXPECT_EQ(Send(0, 3, 4, 400), RelayResult::kQueuedOffline);
}

TEST_F(RelayTest, AReplacedConnectionCanNeitherStealNorDisturbItsSuccessor) {
  Make();
  const Connection old_conn = Connect(1);
  for (uint32_t i = 1; i <= 3; ++i) ASSERT_EQ(Send(0, 1, i), RelayResult::kDeliveredToOnlineQueue);
  const Connection new_conn = Connect(1, old_conn.attach.token);
  EXPECT_EQ(old_conn.target->close_requests.load(), 1);
  std::vector<RelayMessage> out;
  EXPECT_EQ(relay_->Take(1, old_conn.attach.generation, 10, SIZE_MAX, &out), 0u);
  EXPECT_FALSE(relay_->EndSession(1, old_conn.attach.generation));
  EXPECT_FALSE(registry_->Detach(1, old_conn.attach.generation));
  // A BeginSession from the old generation arriving late is refused.
  EXPECT_EQ(relay_->BeginSession(1, old_conn.attach, 0, old_conn.target).status,
            BeginSessionStatus::kStaleGeneration);
  EXPECT_EQ(Ids(TakeAll(1, new_conn)), (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_TRUE(relay_->QueueSnapshot(1)->connected);
}

TEST_F(RelayTest, ResumeClaimingAcksBeyondWhatWasDeliveredIsAProtocolError) {
  Make();
  Connection first = Connect(1);
  ASSERT_EQ(Send(0, 1, 1), RelayResult::kDeliveredToOnlineQueue);
  EXPECT_EQ(TakeAll(1, first).size(), 1u);
  Disconnect(1, first);
  const AttachResult attach = registry_->Attach(1, first.attach.token, MakeTarget());
  ASSERT_TRUE(attach.resumed);
  EXPECT_EQ(relay_->BeginSession(1, attach, 2, MakeTarget()).status,
            BeginSessionStatus::kBeyondDelivered);
  EXPECT_EQ(relay_->QueueSnapshot(1)->pending, 1u);  // nothing changed
}

// Numbered sends (RelaySend.send_id): routed once per source session; a
// resend at or below the highest accepted is dropped; a refused one may be
// sent again; a source that begins a fresh session numbers from 1 again.
TEST_F(RelayTest, NumberedSendsAreRoutedOncePerSourceSession) {
  Make();
  Connection sender = Connect(0);
  const Connection receiver = Connect(1);
  const auto bytes = Payload(1);
  const auto submit = [&](uint32_t dst, uint64_t send_id) {
    return relay_->Submit(0, dst, bytes, 77, 1, send_id).result;
  };
  EXPECT_EQ(submit(1, 1), RelayResult::kDeliveredToOnlineQueue);
  EXPECT_EQ(submit(1, 2), RelayResult::kDeliveredToOnlineQueue);
  EXPECT_EQ(relay_->LastSendId(0), 2u);
  EXPECT_EQ(submit(1, 2), RelayResult::kDuplicateSend);
  EXPECT_EQ(submit(1, 1), RelayResult::kDuplicateSend);
  EXPECT_EQ(submit(9, 3), RelayResult::kRefusedUnknownDestination);
  EXPECT_EQ(relay_->LastSendId(0), 2u) << "a refused send is not accepted";
  EXPECT_EQ(submit(1, 3), RelayResult::kDeliveredToOnlineQueue);
  EXPECT_EQ(TakeAll(1, receiver).size(), 3u) << "each send_id once";
  EXPECT_EQ(relay_->Stats().duplicate_sends, 2u);

  // The sender resumes: its numbering carries on.
  Disconnect(0, sender);
  sender = Connect(0, sender.attach.token);
  ASSERT_TRUE(sender.attach.resumed);
  EXPECT_EQ(relay_->LastSendId(0), 3u);
  EXPECT_EQ(submit(1, 3), RelayResult::kDuplicateSend);

  // It comes back without its token (a restarted device): from 1 again.
  Disconnect(0, sender);
  sender = Connect(0);
  ASSERT_FALSE(sender.attach.resumed);
  EXPECT_EQ(relay_->LastSendId(0), 0u);
  EXPECT_EQ(submit(1, 1), RelayResult::kDeliveredToOnlineQueue);
  // Unnumbered sends are never deduplicated.
  EXPECT_EQ(submit(1, 0), RelayResult::kDeliveredToOnlineQueue);
  EXPECT_EQ(submit(1, 0), RelayResult::kDeliveredToOnlineQueue);
}

// JobData uploads are numbered in the same sequence as RelaySends: a claim
// takes an id once, and a relayed send cannot reuse an id an upload took
// (nor the other way round).
TEST_F(RelayTest, UploadsClaimIdsInTheRelaySendsNumbering) {
  Make();
  Connection sender = Connect(0);
  const Connection receiver = Connect(1);
  const auto bytes = Payload(1);
  EXPECT_EQ(relay_->Submit(0, 1, bytes, 77, 1, 1).result, RelayResult::kDeliveredToOnlineQueue);
  EXPECT_TRUE(relay_->ClaimSendId(0, 2));
  EXPECT_EQ(relay_->LastSendId(0), 2u);
  EXPECT_FALSE(relay_->ClaimSendId(0, 2)) << "a resent upload";
  EXPECT_FALSE(relay_->ClaimSendId(0, 1)) << "an id a relayed send took";
  EXPECT_EQ(relay_->Submit(0, 1, bytes, 77, 1, 2).result, RelayResult::kDuplicateSend);
  EXPECT_EQ(relay_->Stats().duplicate_sends, 3u);
  EXPECT_TRUE(relay_->ClaimSendId(0, 0)) << "unnumbered: always taken";
  EXPECT_TRUE(relay_->ClaimSendId(0, 0));
  EXPECT_TRUE(relay_->ClaimSendId(77, 5)) << "an unknown source has no numbering to check";
  EXPECT_EQ(relay_->LastSendId(0), 2u);
  // Resumed, the numbering carries on; without the token it starts again.
  Disconnect(0, sender);
  sender = Connect(0, sender.attach.token);
  ASSERT_TRUE(sender.attach.resumed);
  EXPECT_FALSE(relay_->ClaimSendId(0, 2));
  EXPECT_TRUE(relay_->ClaimSendId(0, 3));
  Disconnect(0, sender);
  sender = Connect(0);
  ASSERT_FALSE(sender.attach.resumed);
  EXPECT_TRUE(relay_->ClaimSendId(0, 1));
  EXPECT_EQ(TakeAll(1, receiver).size(), 1u) << "only the relayed send reached the receiver";
}

TEST(RelayMemory, PerDeviceCostIsSmall) {
  const size_t relay = Relay::BytesPerDevice();
  const size_t registry = DeviceRegistry::BytesPerDevice();
  std::printf("relay: %zu bytes per idle device; registry: %zu; total %zu; %zu per held message "
              "+ payload\n",
              relay, registry, relay + registry, Relay::OverheadPerMessage());
  ::testing::Test::RecordProperty("relay_bytes_per_device", static_cast<int>(relay));
  // 64 bytes of delivery state, and 8 for the highest numbered send
  // accepted from the device (RelaySend.send_id).
  EXPECT_LE(relay, 72u);
}

// Four producers send to overlapping destinations while one consumer plays
// every destination's connection: takes, acks, sometimes reconnects without
// acking (forcing redelivery). Producers retry on backpressure. At the end
// every accepted message was seen exactly once per destination, in order,
// and the counters add up exactly.
TEST_F(RelayTest, ConcurrentProducersAndAnAckingConsumerLoseAndReorderNothing) {
  constexpr uint32_t kDestinations = 6;
  constexpr uint32_t kProducers = 4;
  constexpr uint32_t kPerProducer = 3000;
  RelayLimits limits;
  limits.online_queue_messages = 16;
  limits.pending_messages = 64;
  Make(limits, kDestinations + kProducers);

  std::array<Connection, kDestinations> conns;
  for (uint32_t d = 0; d < kDestinations; ++d) conns[d] = Connect(d);

  std::atomic<uint64_t> accepted{0};
  std::atomic<uint64_t> refusals{0};
  std::atomic<uint32_t> producers_done{0};
  // A fatal assertion only returns from the function it is in: inside a
  // producer thread it would leave the consumer waiting for that producer
  // forever, and a consumer that returned early would leave the producers
  // retrying against full queues. So producers record what went wrong and
  // stop; `stop` ends both sides, and the main thread reports after join.
  std::atomic<bool> stop{false};
  std::mutex failures_mutex;
  std::vector<std::string> producer_failures;
  std::vector<std::thread> producers;
  for (uint32_t p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      const uint32_t src = kDestinations + p;
      for (uint32_t seq = 0; seq < kPerProducer && !stop; ++seq) {
        const uint32_t dst = (seq * 7 + p) % kDestinations;  // overlapping destinations
        const uint32_t tag = (p << 24) | seq;
        const auto payload = Payload(tag, 16);
        while (!stop) {
          const RelayResult r = relay_->Submit(src, dst, payload, p, seq).result;
          if (Accepted(r)) {
            accepted.fetch_add(1);
            break;
          }
          // Backpressure (online) or the pending bound while the consumer reconnects.
          if (r != RelayResult::kRefusedQueueFull && r != RelayResult::kRefusedOfflineQueueFull) {
            const std::lock_guard<std::mutex> lock(failures_mutex);
            producer_failures.push_back("producer " + std::to_string(p) + " seq " + std::to_string(seq) +
                                        ": " + std::string(RelayResultName(r)));
            stop = true;
            break;
          }
          refusals.fetch_add(1);
          std::this_thread::yield();
        }
      }
      producers_done.fetch_add(1);
    });
  }

  // Consumer state per destination: what the device has seen.
  std::array<uint64_t, kDestinations> last_relay_id{};
  std::array<std::array<int64_t, kProducers>, kDestinations> last_seq;
  for (auto& row : last_seq) row.fill(-1);
  uint64_t fresh = 0;
  uint64_t duplicates = 0;
  // The consumer is a lambda so that its fatal assertions return to the
  // join below instead of leaving the test with the producers running.
  const auto consume = [&] {
    uint64_t loops = 0;
    std::vector<RelayMessage> batch;
    while (!stop) {
      const bool done = producers_done.load() == kProducers;
      bool any = false;
      for (uint32_t d = 0; d < kDestinations; ++d) {
        batch.clear();
        relay_->Take(d, conns[d].attach.generation, 8, SIZE_MAX, &batch);
        for (const RelayMessage& m : batch) {
          any = true;
          if (m.relay_id <= last_relay_id[d]) {  // redelivery after reconnect: device skips it
            ++duplicates;
            continue;
          }
          ASSERT_EQ(m.relay_id, last_relay_id[d] + 1) << "gap at destination " << d;
          last_relay_id[d] = m.relay_id;
          const uint32_t tag = TagOf(m);
          const uint32_t p = tag >> 24;
          const int64_t seq = tag & 0xFFFFFF;
          ASSERT_LT(p, kProducers);
          ASSERT_GT(seq, last_seq[d][p]) << "reordered at destination " << d;
          last_seq[d][p] = seq;
          ++fresh;
        }
        ++loops;
        if (loops % 97 == 0) {
          // Reconnect without acking the latest batch: it must come back.
          Disconnect(d, conns[d]);
          const uint64_t acked = relay_->QueueSnapshot(d)->acked_through;
          conns[d] = Connect(d, conns[d].attach.token, acked);
          ASSERT_TRUE(conns[d].attach.resumed);
          ASSERT_EQ(conns[d].begin.status, BeginSessionStatus::kOk);
        } else if (last_relay_id[d] > relay_->QueueSnapshot(d)->acked_through) {
          ASSERT_EQ(relay_->Ack(d, last_relay_id[d]).status, AckStatus::kAcked);
        }
      }
      if (done && !any && relay_->Stats().messages_held == 0) break;
    }
  };
  consume();
  stop = true;
  for (auto& t : producers) t.join();
  for (const std::string& failure : producer_failures) ADD_FAILURE() << failure;
  // After a failure the totals below would only repeat it.
  if (HasFailure()) return;

  const uint64_t total = uint64_t{kProducers} * kPerProducer;
  EXPECT_EQ(accepted.load(), total);
  EXPECT_EQ(fresh, total);
  uint64_t ids = 0;
  for (uint32_t d = 0; d < kDestinations; ++d) ids += last_relay_id[d];
  EXPECT_EQ(ids, total);  // relay ids 1..n per destination, no gaps, none skipped
  const RelayStats stats = relay_->Stats();
  EXPECT_EQ(stats.submitted, total + refusals.load());
  EXPECT_EQ(stats.delivered_to_online_queue + stats.queued_offline, total);
  EXPECT_EQ(stats.refused_queue_full + stats.refused_offline_queue_full, refusals.load());
  EXPECT_EQ(stats.acked, total);
  EXPECT_EQ(stats.taken, total + duplicates);
  EXPECT_EQ(stats.redelivered, duplicates);
  EXPECT_EQ(stats.messages_held, 0u);
  EXPECT_EQ(stats.bytes_held, 0u);
  EXPECT_EQ(stats.dropped_by_session_reset, 0u);
  std::printf("stress: %llu messages, %llu backpressure refusals, %llu redeliveries\n",
              static_cast<unsigned long long>(total), static_cast<unsigned long long>(refusals.load()),
              static_cast<unsigned long long>(duplicates));
}

}  // namespace
}  // namespace nodefl::server

namespace nodefl::server {
namespace {

// A restarted server numbers relay messages above anything an earlier
// process handed out: a device that resumes with the last id it saw (from
// the earlier process) is accepted, and the new messages are not dropped
// by it as repeats.
TEST(RelayRestart, IdsStartAtTheGivenFirstIdAndOlderAcknowledgementsAreHarmless) {
  std::string error;
  auto registry = DeviceRegistry::Create(DeviceIdRange(0, 2), RegistryOptions{}, &error);
  ASSERT_NE(registry, nullptr) << error;
  const uint64_t first = (uint64_t{2} << 40) + 1;
  Relay relay(*registry, RelayLimits{}, first);
  ResumeToken token;
  token.fill(9);
  ASSERT_TRUE(registry->RestoreSession(1, 1, token));
  auto target = testing::MakeTarget();
  const AttachResult attach = registry->Attach(1, std::span<const uint8_t>(token.data(), token.size()), target);
  ASSERT_TRUE(attach.ok());
  ASSERT_TRUE(attach.resumed);
  // The device saw relay id 500 from the previous process.
  const BeginSessionResult begun = relay.BeginSession(1, attach, /*last_acked=*/500, target);
  EXPECT_EQ(begun.status, BeginSessionStatus::kOk);
  const std::vector<uint8_t> payload(16, 0xAB);
  const SubmitResult submitted = relay.Submit(0, 1, payload, /*job_id=*/3, /*round=*/2);
  ASSERT_TRUE(Accepted(submitted.result));
  EXPECT_EQ(submitted.relay_id, first);
  std::vector<RelayMessage> taken;
  ASSERT_EQ(relay.Take(1, attach.generation, 10, 1 << 20, &taken), 1u);
  EXPECT_EQ(taken[0].relay_id, first);
  EXPECT_EQ(relay.Ack(1, 500).status, AckStatus::kDuplicate);  // an old id: nothing to release
  EXPECT_EQ(relay.Ack(1, first).status, AckStatus::kAcked);
}

}  // namespace
}  // namespace nodefl::server
