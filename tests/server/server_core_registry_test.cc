// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <thread>
#include <vector>

#include "nodefl/server/core/device_ids.h"
#include "nodefl/server/core/registry.h"
#include "nodefl/server/core/resume_token.h"
#include "server_core_test_target.h"

namespace nodefl::server {
namespace {

using testing::MakeTarget;

std::unique_ptr<DeviceRegistry> MakeRegistry(std::vector<uint32_t> ids, uint32_t max_online = 100) {
  std::string error;
  RegistryOptions options;
  options.max_online = max_online;
  auto registry = DeviceRegistry::Create(std::move(ids), options, &error);
  EXPECT_NE(registry, nullptr) << error;
  return registry;
}

std::span<const uint8_t> Bytes(const ResumeToken& token) { return {token.data(), token.size()}; }

TEST(DeviceIndex, MapsContiguousAndSparseIdsToDenseSlots) {
  const DeviceIndex range(DeviceIdRange(100, 5));
  EXPECT_EQ(range.size(), 5u);
  EXPECT_EQ(range.SlotOf(100), 0u);
  EXPECT_EQ(range.SlotOf(104), 4u);
  EXPECT_FALSE(range.SlotOf(99).has_value());
  EXPECT_FALSE(range.SlotOf(105).has_value());

  const DeviceIndex sparse({7, 3, 1000, 3, 42});
  EXPECT_EQ(sparse.size(), 4u);  // duplicate 3 removed
  EXPECT_EQ(sparse.SlotOf(3), 0u);
  EXPECT_EQ(sparse.SlotOf(7), 1u);
  EXPECT_EQ(sparse.SlotOf(42), 2u);
  EXPECT_EQ(sparse.SlotOf(1000), 3u);
  EXPECT_FALSE(sparse.SlotOf(8).has_value());
  EXPECT_EQ(sparse.IdAt(2), 42u);

  const DeviceIndex empty({});
  EXPECT_FALSE(empty.SlotOf(0).has_value());
}

TEST(DeviceIds, ScanCredentialIdsReadsDeviceCertificateNames) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("nodefl_creds_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (const char* name : {"device-0.crt", "device-17.crt", "device-3.crt", "ca.crt",
                           "device-5.key", "README"}) {
    std::ofstream(dir / name) << "x";
  }
  CredentialIdsResult result = ScanCredentialIds(dir);
  EXPECT_TRUE(result.ok) << result.error;
  EXPECT_EQ(result.ids, (std::vector<uint32_t>{0, 3, 17}));

  std::ofstream(dir / "device-07.crt") << "x";
  result = ScanCredentialIds(dir);
  EXPECT_FALSE(result.ok);
  EXPECT_NE(result.error.find("malformed device id '07'"), std::string::npos) << result.error;
  std::filesystem::remove_all(dir);

  EXPECT_FALSE(ScanCredentialIds(dir).ok);  // gone
}

TEST(TokensEqual, DetectsADifferenceInEveryByteAndAnyLengthMismatch) {
  ResumeToken token{};
  for (size_t i = 0; i < token.size(); ++i) token[i] = static_cast<uint8_t>(i * 7 + 1);
  EXPECT_TRUE(TokensEqual(token, Bytes(token)));
  for (size_t i = 0; i < token.size(); ++i) {
    ResumeToken other = token;
    other[i] ^= 0x01;
    EXPECT_FALSE(TokensEqual(token, Bytes(other))) << "byte " << i;
  }
  EXPECT_FALSE(TokensEqual(token, Bytes(token).first(31)));
  std::vector<uint8_t> longer(token.begin(), token.end());
  longer.push_back(0);
  EXPECT_FALSE(TokensEqual(token, longer));
  EXPECT_FALSE(TokensEqual(ResumeToken{}, {}));  // an all-zero token never matches "nothing"
}

TEST(TokenGenerator, ProducesDistinctTokens) {
  std::string error;
  auto generator = TokenGenerator::Create("test", &error);
  ASSERT_NE(generator, nullptr) << error;
  std::set<ResumeToken> seen;
  for (int i = 0; i < 1000; ++i) {
    ResumeToken token{};
    ASSERT_TRUE(generator->Generate(&token));
    EXPECT_NE(token, ResumeToken{});
    seen.insert(token);
  }
  EXPECT_EQ(seen.size(), 1000u);
}

TEST(DeviceRegistry, RefusesUnknownIds) {
  auto registry = MakeRegistry(DeviceIdRange(10, 3));
  const AttachResult result = registry->Attach(13, {}, MakeTarget());
  EXPECT_EQ(result.status, AttachStatus::kUnknownDevice);
  EXPECT_FALSE(result.ok());
  EXPECT_FALSE(registry->IsKnown(13));
  EXPECT_TRUE(registry->IsKnown(12));
  EXPECT_EQ(registry->Stats().refused_unknown_device, 1u);
  EXPECT_EQ(registry->Stats().online_devices, 0u);
  EXPECT_FALSE(registry->Snapshot(13).has_value());
  EXPECT_FALSE(registry->Detach(13, 1));
}

TEST(DeviceRegistry, FirstContactStartsASessionWithARandomToken) {
  auto registry = MakeRegistry(DeviceIdRange(0, 4));
  auto target = MakeTarget();
  const AttachResult a = registry->Attach(2, {}, target);
  ASSERT_TRUE(a.ok()) << AttachStatusName(a.status);
  EXPECT_FALSE(a.resumed);
  EXPECT_FALSE(a.replaced_previous);
  EXPECT_EQ(a.session, 1u);
  EXPECT_EQ(a.generation, 1u);
  EXPECT_NE(a.token, ResumeToken{});
  EXPECT_EQ(registry->CurrentTarget(2), target);
  EXPECT_EQ(registry->CurrentSession(2), 1u);
  EXPECT_EQ(registry->CurrentSession(3), 0u);
  EXPECT_FALSE(registry->CurrentSession(99).has_value());

  const AttachResult other = registry->Attach(3, {}, MakeTarget());
  ASSERT_TRUE(other.ok());
  EXPECT_NE(other.token, a.token);
  EXPECT_EQ(registry->Stats().online_devices, 2u);
}

TEST(DeviceRegistry, ResumeWithTheRightTokenReplacesTheOldConnection) {
  auto registry = MakeRegistry(DeviceIdRange(0, 4));
  auto first = MakeTarget();
  const AttachResult a = registry->Attach(1, {}, first);
  ASSERT_TRUE(a.ok());

  auto second = MakeTarget();
  const uint64_t comparisons_before = TokenComparisonCount();
  const AttachResult b = registry->Attach(1, Bytes(a.token), second);
  // The token went through the constant-time comparison, exactly once.
  EXPECT_EQ(TokenComparisonCount(), comparisons_before + 1);
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(b.resumed);
  EXPECT_TRUE(b.replaced_previous);
  EXPECT_EQ(b.session, a.session);
  EXPECT_EQ(b.token, a.token);  // stable for the whole session
  EXPECT_EQ(b.generation, a.generation + 1);
  EXPECT_EQ(first->close_requests.load(), 1);
  EXPECT_EQ(first->last_close_reason.load(), CloseReason::kReplaced);
  EXPECT_EQ(second->close_requests.load(), 0);
  EXPECT_EQ(registry->CurrentTarget(1), second);
  EXPECT_EQ(registry->Stats().online_devices, 1u);  // replacement, not a second device

  // The replaced connection closing late must not detach its successor.
  EXPECT_FALSE(registry->Detach(1, a.generation));
  EXPECT_EQ(registry->CurrentTarget(1), second);
  EXPECT_TRUE(registry->Detach(1, b.generation));
  EXPECT_EQ(registry->CurrentTarget(1), nullptr);
  EXPECT_FALSE(registry->Detach(1, b.generation));  // only once
  EXPECT_EQ(registry->Stats().online_devices, 0u);

  // Offline resume works too, and is not a replacement.
  const AttachResult c = registry->Attach(1, Bytes(a.token), MakeTarget());
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c.resumed);
  EXPECT_FALSE(c.replaced_previous);
  EXPECT_EQ(registry->Stats().resumes, 2u);
  EXPECT_EQ(registry->Stats().replaced_connections, 1u);
}

TEST(DeviceRegistry, WrongTokenIsRefusedAndLeavesTheLiveConnectionAlone) {
  auto registry = MakeRegistry(DeviceIdRange(0, 2));
  auto live = MakeTarget();
  const AttachResult a = registry->Attach(0, {}, live);
  ASSERT_TRUE(a.ok());

  ResumeToken wrong = a.token;
  wrong[31] ^= 0x80;  // differs only in the last byte
  const uint64_t comparisons_before = TokenComparisonCount();
  const AttachResult refused = registry->Attach(0, Bytes(wrong), MakeTarget());
  EXPECT_EQ(TokenComparisonCount(), comparisons_before + 1);
  EXPECT_EQ(refused.status, AttachStatus::kWrongToken);
  EXPECT_EQ(refused.token, ResumeToken{});  // no token leaks in a refusal

  const AttachResult short_token = registry->Attach(0, Bytes(a.token).first(16), MakeTarget());
  EXPECT_EQ(short_token.status, AttachStatus::kWrongToken);

  EXPECT_EQ(live->close_requests.load(), 0);
  EXPECT_EQ(registry->CurrentTarget(0), live);
  EXPECT_EQ(registry->Snapshot(0)->generation, a.generation);
  EXPECT_EQ(registry->Stats().refused_wrong_token, 2u);

  // The right token still works afterwards.
  EXPECT_TRUE(registry->Attach(0, Bytes(a.token), MakeTarget()).resumed);
}

TEST(DeviceRegistry, EmptyTokenStartsANewSessionWhenTheDeviceLostItsToken) {
  auto registry = MakeRegistry(DeviceIdRange(0, 2));
  const AttachResult a = registry->Attach(0, {}, MakeTarget());
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(registry->Detach(0, a.generation));

  const AttachResult b = registry->Attach(0, {}, MakeTarget());
  ASSERT_TRUE(b.ok());
  EXPECT_FALSE(b.resumed);
  EXPECT_EQ(b.session, a.session + 1);
  EXPECT_NE(b.token, a.token);
  EXPECT_EQ(registry->Stats().sessions_reset, 1u);

  // The old token is now wrong.
  EXPECT_EQ(registry->Attach(0, Bytes(a.token), MakeTarget()).status, AttachStatus::kWrongToken);
}

TEST(DeviceRegistry, ATokenTheServerNeverIssuedStartsAFreshSession) {
  // E.g. the server restarted: the device still holds its old token.
  auto registry = MakeRegistry(DeviceIdRange(0, 1));
  ResumeToken old{};
  old.fill(0xAB);
  const AttachResult a = registry->Attach(0, Bytes(old), MakeTarget());
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(a.resumed);
  EXPECT_EQ(a.session, 1u);
  EXPECT_NE(a.token, old);
}

TEST(DeviceRegistry, MaxOnlineBoundsConnectedDevicesNotReplacements) {
  auto registry = MakeRegistry(DeviceIdRange(0, 4), /*max_online=*/2);
  const AttachResult a = registry->Attach(0, {}, MakeTarget());
  const AttachResult b = registry->Attach(1, {}, MakeTarget());
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(registry->Attach(2, {}, MakeTarget()).status, AttachStatus::kServerFull);
  EXPECT_TRUE(registry->Attach(0, Bytes(a.token), MakeTarget()).ok());  // replacement fits
  ASSERT_TRUE(registry->Detach(1, b.generation));
  EXPECT_TRUE(registry->Attach(2, {}, MakeTarget()).ok());
  EXPECT_EQ(registry->Stats().refused_server_full, 1u);
  EXPECT_EQ(registry->Stats().online_devices, 2u);
}

TEST(DeviceRegistry, CountersAndLastSeen) {
  auto registry = MakeRegistry(DeviceIdRange(0, 2));
  EXPECT_FALSE(registry->Snapshot(1)->last_seen.has_value());
  registry->RecordInbound(1, 100);
  registry->RecordInbound(1, 50);
  registry->RecordOutbound(1, 7);
  registry->RecordInbound(42, 1);  // unknown: ignored
  const DeviceSnapshot s = *registry->Snapshot(1);
  EXPECT_EQ(s.bytes_in, 150u);
  EXPECT_EQ(s.messages_in, 2u);
  EXPECT_EQ(s.bytes_out, 7u);
  EXPECT_EQ(s.messages_out, 1u);
  ASSERT_TRUE(s.last_seen.has_value());
  EXPECT_LE(*s.last_seen, std::chrono::steady_clock::now());
  EXPECT_FALSE(s.online);
}

TEST(DeviceRegistry, RequestCloseAllAsksEveryConnectedDevice) {
  auto registry = MakeRegistry(DeviceIdRange(0, 200), 200);
  std::vector<std::shared_ptr<testing::RecordingTarget>> targets;
  for (uint32_t id = 0; id < 200; id += 2) {
    targets.push_back(MakeTarget());
    ASSERT_TRUE(registry->Attach(id, {}, targets.back()).ok());
  }
  EXPECT_EQ(registry->RequestCloseAll(CloseReason::kServerShutdown), 100u);
  for (const auto& target : targets) {
    EXPECT_EQ(target->close_requests.load(), 1);
    EXPECT_EQ(target->last_close_reason.load(), CloseReason::kServerShutdown);
  }
}

TEST(DeviceRegistry, ConcurrentAttachAndDetachKeepOnlineCountExact) {
  constexpr uint32_t kDevices = 16;
  auto registry = MakeRegistry(DeviceIdRange(0, kDevices), kDevices);
  constexpr int kThreads = 4;
  constexpr int kRounds = 2000;
  std::atomic<uint64_t> attached{0};
  std::atomic<uint64_t> detached{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRounds; ++i) {
        const uint32_t id = static_cast<uint32_t>((i * 7 + t * 3) % kDevices);
        const AttachResult r = registry->Attach(id, {}, MakeTarget());
        ASSERT_TRUE(r.ok());
        attached.fetch_add(1);
        if (i % 3 != 0 && registry->Detach(id, r.generation)) detached.fetch_add(1);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  uint64_t online = 0;
  for (uint32_t id = 0; id < kDevices; ++id) {
    const DeviceSnapshot s = *registry->Snapshot(id);
    if (s.online) {
      ++online;
      EXPECT_TRUE(registry->Detach(id, s.generation));
    }
  }
  const RegistryStats stats = registry->Stats();
  EXPECT_EQ(stats.attaches, attached.load());
  EXPECT_EQ(stats.detaches, detached.load() + online);
  EXPECT_EQ(stats.online_devices, 0u);
  // Every attach either found the device offline or replaced a connection.
  EXPECT_EQ(stats.attaches, stats.detaches + stats.replaced_connections);
}

TEST(DeviceRegistry, PerDeviceMemoryIsSmall) {
  const size_t bytes = DeviceRegistry::BytesPerDevice();
  ::testing::Test::RecordProperty("registry_bytes_per_device", static_cast<int>(bytes));
  std::printf("registry: %zu bytes per device\n", bytes);
  EXPECT_LE(bytes, 160u);
}

}  // namespace
}  // namespace nodefl::server

namespace nodefl::server {
namespace {

// A SessionLog in memory that can be told to fail.
class MemorySessionLog final : public SessionLog {
 public:
  struct Entry {
    uint32_t device = 0;
    uint64_t session = 0;
    ResumeToken token{};
  };
  bool SaveSession(uint32_t device_id, uint64_t session, const ResumeToken& token, std::string* error) override {
    if (fail) {
      *error = "disk full";
      return false;
    }
    entries.push_back({device_id, session, token});
    return true;
  }
  bool fail = false;
  std::vector<Entry> entries;
};

TEST(DeviceRegistryRestart, NewSessionsAreWrittenBeforeAttachReturnsAndResumesAreNot) {
  MemorySessionLog log;
  RegistryOptions options;
  options.session_log = &log;
  std::string error;
  auto registry = DeviceRegistry::Create({1, 2}, options, &error);
  ASSERT_NE(registry, nullptr) << error;
  const AttachResult first = registry->Attach(1, {}, testing::MakeTarget());
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(log.entries.size(), 1u);
  EXPECT_EQ(log.entries[0].device, 1u);
  EXPECT_EQ(log.entries[0].session, first.session);
  EXPECT_EQ(log.entries[0].token, first.token);
  const AttachResult resumed = registry->Attach(1, Bytes(first.token), testing::MakeTarget());
  ASSERT_TRUE(resumed.ok());
  EXPECT_TRUE(resumed.resumed);
  EXPECT_EQ(log.entries.size(), 1u);  // nothing new to keep
  const AttachResult reset = registry->Attach(1, {}, testing::MakeTarget());
  ASSERT_TRUE(reset.ok());
  ASSERT_EQ(log.entries.size(), 2u);
  EXPECT_EQ(log.entries[1].session, first.session + 1);
}

TEST(DeviceRegistryRestart, ARestoredSessionResumesWithItsTokenOnly) {
  MemorySessionLog log;
  ResumeToken token{};
  uint64_t session = 0;
  {
    RegistryOptions options;
    options.session_log = &log;
    std::string error;
    auto before = DeviceRegistry::Create({5, 6}, options, &error);
    ASSERT_NE(before, nullptr) << error;
    const AttachResult a = before->Attach(5, {}, testing::MakeTarget());
    const AttachResult again = before->Attach(5, {}, testing::MakeTarget());  // session 2
    ASSERT_TRUE(a.ok() && again.ok());
    token = again.token;
    session = again.session;
  }
  // The restarted server: a new registry fed what the log holds.
  std::string error;
  auto after = DeviceRegistry::Create({5, 6}, RegistryOptions{}, &error);
  ASSERT_NE(after, nullptr) << error;
  for (const auto& e : log.entries) EXPECT_TRUE(after->RestoreSession(e.device, e.session, e.token));
  EXPECT_FALSE(after->RestoreSession(99, 1, token));  // not a known device
  EXPECT_FALSE(after->RestoreSession(6, 0, token));   // no session
  EXPECT_EQ(after->CurrentSession(5), session);
  EXPECT_EQ(after->Stats().sessions_restored, 2u);

  ResumeToken wrong = token;
  wrong[0] ^= 1;
  EXPECT_EQ(after->Attach(5, Bytes(wrong), testing::MakeTarget()).status, AttachStatus::kWrongToken);
  const AttachResult resumed = after->Attach(5, Bytes(token), testing::MakeTarget());
  ASSERT_TRUE(resumed.ok());
  EXPECT_TRUE(resumed.resumed);
  EXPECT_EQ(resumed.session, session);
  EXPECT_EQ(resumed.token, token);
}

TEST(DeviceRegistryRestart, ASessionTheLogRefusedIsCountedAndTheDeviceStillAttaches) {
  MemorySessionLog log;
  log.fail = true;
  RegistryOptions options;
  options.session_log = &log;
  std::string error;
  auto registry = DeviceRegistry::Create({1}, options, &error);
  ASSERT_NE(registry, nullptr) << error;
  const AttachResult r = registry->Attach(1, {}, testing::MakeTarget());
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r.not_saved);
  EXPECT_EQ(r.save_error, "disk full");
  EXPECT_EQ(registry->Stats().sessions_not_saved, 1u);
}

}  // namespace
}  // namespace nodefl::server
