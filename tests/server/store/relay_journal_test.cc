// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The relay's queues across a server restart (server/store's
// StoredRelayJournal): what the relay holds when the journal writes is
// queued again by the next process with its ids; what it held only since
// the last write is lost; a resend of a routed message is not routed
// again. "Restarting" is dropping the registry, relay, journal and store
// and making them again on the same directory, as nodefl-server does.
#include "nodefl/server/store/relay_journal_store.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../server_core_test_target.h"
#include "nodefl/server/core/device_ids.h"
#include "nodefl/server/core/registry.h"
#include "nodefl/server/core/relay.h"
#include "nodefl/server/store/state_store.h"

namespace nodefl::server::store {
namespace {

namespace fs = std::filesystem;

std::vector<uint8_t> Payload(uint32_t tag) {
  std::vector<uint8_t> bytes(12 + tag % 5, static_cast<uint8_t>(tag));
  std::memcpy(bytes.data(), &tag, 4);
  return bytes;
}

uint32_t TagOf(const RelayMessage& m) {
  uint32_t tag = 0;
  std::memcpy(&tag, m.sealed.get(), 4);
  return tag;
}

// One server process's relay state: store, registry, relay, journal.
struct Process {
  std::unique_ptr<ServerStateStore> store;
  std::unique_ptr<DeviceRegistry> registry;
  std::unique_ptr<StoredRelayJournal> journal;
  std::unique_ptr<Relay> relay;
  uint64_t first_id = 0;
  uint64_t restored = 0;

  ~Process() {
    relay.reset();  // before the journal it calls
    journal.reset();
  }
};

class RelayJournalTest : public ::testing::Test {
 protected:
  static constexpr uint32_t kDevices = 6;

  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("nodefl-relay-journal-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // As nodefl-server starts: sessions, then the relay's messages and send
  // floors, then the journal.
  std::unique_ptr<Process> Start() {
    auto p = std::make_unique<Process>();
    std::string error;
    p->store = ServerStateStore::Open(dir_.string(), &error);
    EXPECT_NE(p->store, nullptr) << error;
    if (!p->store) return nullptr;
    RegistryOptions options;
    options.session_log = p->store.get();
    p->registry = DeviceRegistry::Create(DeviceIdRange(0, kDevices), options, &error);
    EXPECT_NE(p->registry, nullptr) << error;
    std::vector<StoredSession> sessions;
    EXPECT_TRUE(p->store->LoadSessions(&sessions, &error)) << error;
    for (const StoredSession& s : sessions) EXPECT_TRUE(p->registry->RestoreSession(s.device_id, s.session, s.token));
    p->first_id = (p->store->start() << 40) + 1;
    p->relay = std::make_unique<Relay>(*p->registry, RelayLimits{}, p->first_id);
    std::vector<StoredRelayMessage> messages;
    std::vector<std::pair<uint32_t, uint64_t>> floors;
    EXPECT_TRUE(p->store->LoadRelayMessages(&messages, &error)) << error;
    EXPECT_TRUE(p->store->LoadRelaySendFloors(&floors, &error)) << error;
    for (StoredRelayMessage& m : messages) {
      EXPECT_TRUE(p->relay->Restore(m.dst, std::move(m.message)));
      ++p->restored;
    }
    for (const auto& [src, floor] : floors) p->relay->RestoreSendFloor(src, floor);
    p->journal = std::make_unique<StoredRelayJournal>(*p->store, std::chrono::milliseconds(100));
    p->relay->SetJournal(p->journal.get());
    return p;
  }

  struct Connection {
    AttachResult attach;
    BeginSessionResult begin;
    std::shared_ptr<testing::RecordingTarget> target;
  };

  static Connection Connect(Process& p, uint32_t id, const ResumeToken* token = nullptr, uint64_t last_acked = 0) {
    Connection c;
    c.target = testing::MakeTarget();
    std::span<const uint8_t> presented;
    if (token != nullptr) presented = std::span<const uint8_t>(token->data(), token->size());
    c.attach = p.registry->Attach(id, presented, c.target);
    EXPECT_TRUE(c.attach.ok());
    c.begin = p.relay->BeginSession(id, c.attach, last_acked, c.target);
    EXPECT_EQ(c.begin.status, BeginSessionStatus::kOk);
    return c;
  }

  static void Disconnect(Process& p, uint32_t id, const Connection& c) {
    EXPECT_TRUE(p.relay->EndSession(id, c.attach.generation));
    EXPECT_TRUE(p.registry->Detach(id, c.attach.generation));
  }

  static std::vector<RelayMessage> TakeAll(Process& p, uint32_t id, const Connection& c) {
    std::vector<RelayMessage> out;
    p.relay->Take(id, c.attach.generation, 1000, SIZE_MAX, &out);
    return out;
  }

  static RelayResult Send(Process& p, uint32_t src, uint32_t dst, uint32_t tag, uint64_t send_id) {
    const auto bytes = Payload(tag);
    return p.relay->Submit(src, dst, bytes, /*job_id=*/40 + tag % 3, /*round=*/tag % 4, send_id).result;
  }

  static void Write(Process& p) {
    std::string error;
    ASSERT_TRUE(p.journal->Write(&error)) << error;
  }

  fs::path dir_;
};

TEST_F(RelayJournalTest, HeldMessagesComeBackWithTheirIdsAndWhatTheDeviceHadIsReleased) {
  ResumeToken sender_token{}, offline_token{}, online_token{};
  std::vector<uint64_t> offline_ids;
  uint64_t online_kept_id = 0;
  {
    auto p = Start();
    ASSERT_NE(p, nullptr);
    const Connection sender = Connect(*p, 0);
    const Connection offline = Connect(*p, 2);
    Disconnect(*p, 2, offline);
    const Connection online = Connect(*p, 1);
    sender_token = sender.attach.token;
    offline_token = offline.attach.token;
    online_token = online.attach.token;
    // Five numbered sends for the offline device, two for the online one,
    // which takes both and acknowledges the first.
    for (uint32_t tag = 1; tag <= 5; ++tag) ASSERT_EQ(Send(*p, 0, 2, tag, tag), RelayResult::kQueuedOffline);
    ASSERT_EQ(Send(*p, 0, 1, 6, 6), RelayResult::kDeliveredToOnlineQueue);
    ASSERT_EQ(Send(*p, 0, 1, 7, 7), RelayResult::kDeliveredToOnlineQueue);
    const std::vector<RelayMessage> taken = TakeAll(*p, 1, online);
    ASSERT_EQ(taken.size(), 2u);
    ASSERT_EQ(p->relay->Ack(1, taken[0].relay_id).status, AckStatus::kAcked);
    online_kept_id = taken[1].relay_id;
    Write(*p);
    EXPECT_EQ(p->journal->Stats().messages_written, 6u);
    EXPECT_EQ(p->journal->Stats().messages_skipped, 1u) << "queued and acknowledged between two writes";
    for (uint64_t id = p->first_id; id < p->first_id + 5; ++id) offline_ids.push_back(id);
    // Accepted after the last write: the process's end (Stop) writes it.
    ASSERT_EQ(Send(*p, 0, 2, 8, 8), RelayResult::kQueuedOffline);
    offline_ids.push_back(p->first_id + 5);  // ids count per destination
  }

  auto p = Start();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->restored, 7u);
  EXPECT_EQ(p->relay->Stats().messages_held, 7u);
  // The offline device resumes: its six messages, in order, as sent.
  const Connection offline = Connect(*p, 2, &offline_token);
  ASSERT_TRUE(offline.attach.resumed);
  EXPECT_EQ(offline.begin.pending, 6u);
  const std::vector<RelayMessage> got = TakeAll(*p, 2, offline);
  ASSERT_EQ(got.size(), 6u);
  for (uint32_t i = 0; i < 6; ++i) {
    const uint32_t tag = i < 5 ? i + 1 : 8;
    EXPECT_EQ(got[i].relay_id, offline_ids[i]);
    EXPECT_EQ(TagOf(got[i]), tag);
    EXPECT_EQ(got[i].src, 0u);
    EXPECT_EQ(got[i].job_id, 40u + tag % 3);
    EXPECT_EQ(got[i].round, tag % 4);
    EXPECT_EQ(got[i].sealed_size, Payload(tag).size());
    EXPECT_EQ(std::vector<uint8_t>(got[i].sealed.get(), got[i].sealed.get() + got[i].sealed_size), Payload(tag));
  }
  // Acknowledging an earlier process's id releases what was restored.
  EXPECT_EQ(p->relay->Ack(2, offline_ids[2]).released, 3u);
  EXPECT_EQ(p->relay->Stats().restored_acked, 3u);
  // The online device had message 7 already: its resume releases it.
  const Connection online = Connect(*p, 1, &online_token, online_kept_id);
  ASSERT_TRUE(online.attach.resumed);
  EXPECT_EQ(online.begin.pending, 0u);
  EXPECT_EQ(p->relay->Stats().restored_acked, 4u);
  EXPECT_EQ(p->relay->Stats().restored, 7u);
  // The sender resumes, and writes again what it had no acknowledgement
  // for (the kill took it): resends of routed messages are not routed
  // again, even one acknowledged and released meanwhile (6); new sends are.
  const Connection sender = Connect(*p, 0, &sender_token);
  ASSERT_TRUE(sender.attach.resumed);
  EXPECT_EQ(Send(*p, 0, 1, 6, 6), RelayResult::kDuplicateSend);
  EXPECT_EQ(Send(*p, 0, 2, 8, 8), RelayResult::kDuplicateSend);
  EXPECT_EQ(p->relay->LastSendId(0), 8u);
  const SubmitResult next_send = p->relay->Submit(0, 2, Payload(9), 42, 0, 9);
  EXPECT_EQ(next_send.result, RelayResult::kDeliveredToOnlineQueue);
  EXPECT_EQ(next_send.relay_id, p->first_id) << "new messages are numbered above the restored ones";
  const std::vector<RelayMessage> next = TakeAll(*p, 2, offline);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(TagOf(next[0]), 9u);
}

TEST_F(RelayJournalTest, ADeviceBackWithoutItsSessionDropsThemAndTheStateFileForgetsThem) {
  ResumeToken sender_token{};
  {
    auto p = Start();
    ASSERT_NE(p, nullptr);
    const Connection sender = Connect(*p, 0);
    sender_token = sender.attach.token;
    const Connection away = Connect(*p, 3);
    Disconnect(*p, 3, away);
    for (uint32_t tag = 1; tag <= 3; ++tag) ASSERT_EQ(Send(*p, 0, 3, tag, tag), RelayResult::kQueuedOffline);
    // Messages for a device that never had a session are kept for its first.
    ASSERT_EQ(Send(*p, 0, 4, 9, 4), RelayResult::kQueuedOffline);
    Write(*p);
  }
  {
    auto p = Start();
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->restored, 4u);
    const Connection fresh = Connect(*p, 3);  // no token: a new session
    ASSERT_FALSE(fresh.attach.resumed);
    EXPECT_EQ(fresh.begin.pending, 0u);
    EXPECT_EQ(fresh.begin.dropped, 3u);
    EXPECT_EQ(p->relay->Stats().restored_dropped, 3u);
    const Connection first = Connect(*p, 4);
    EXPECT_EQ(first.begin.pending, 1u);
    // The sender lost its token too: it numbers from 1 again, and its new
    // sends are routed although an earlier process routed the same ids.
    const Connection sender = Connect(*p, 0);
    ASSERT_FALSE(sender.attach.resumed);
    EXPECT_EQ(Send(*p, 0, 5, 10, 1), RelayResult::kQueuedOffline);
    Write(*p);
  }
  auto p = Start();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->restored, 2u) << "device 4's first message and the sender's new one; device 3's went";
  std::string error;
  std::vector<std::pair<uint32_t, uint64_t>> floors;
  ASSERT_TRUE(p->store->LoadRelaySendFloors(&floors, &error)) << error;
  ASSERT_EQ(floors.size(), 1u);
  EXPECT_EQ(floors[0], (std::pair<uint32_t, uint64_t>{0, 1}));
}

TEST_F(RelayJournalTest, TheWriterThreadWritesWithinItsIntervalAndStopWritesTheRest) {
  auto p = Start();
  ASSERT_NE(p, nullptr);
  p->journal->Start();
  ASSERT_EQ(Send(*p, 0, 2, 1, 0), RelayResult::kQueuedOffline);
  // Within a few intervals (the thread sleeps 100 ms between writes).
  for (int i = 0; i < 100 && p->journal->Stats().messages_written == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(p->journal->Stats().messages_written, 1u);
  ASSERT_EQ(Send(*p, 0, 2, 2, 0), RelayResult::kQueuedOffline);
  p->journal->Stop();
  EXPECT_EQ(p->journal->Stats().messages_written, 2u);
  std::string error;
  std::vector<StoredRelayMessage> held;
  ASSERT_TRUE(p->store->LoadRelayMessages(&held, &error)) << error;
  ASSERT_EQ(held.size(), 2u);
  EXPECT_EQ(TagOf(held[1].message), 2u);
}

}  // namespace
}  // namespace nodefl::server::store
