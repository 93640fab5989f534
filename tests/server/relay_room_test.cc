// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// RelayRoom (server/net): whom a notification wakes, and that a waiter
// that has gone is never called.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "nodefl/server/net/relay_room.h"

namespace nodefl::server::net {
namespace {

TEST(RelayRoomTest, ADeviceNotificationWakesThatDevicesWaitersOnly) {
  RelayRoom room;
  int woken3 = 0, woken4 = 0, memory = 0;
  const RelayRoom::Subscription a = room.ForDevice(3, [&] { ++woken3; });
  const RelayRoom::Subscription b = room.ForDevice(3, [&] { ++woken3; });
  const RelayRoom::Subscription c = room.ForDevice(4, [&] { ++woken4; });
  const RelayRoom::Subscription d = room.ForMemory([&] { ++memory; });
  EXPECT_EQ(room.waiters(), 4u);
  room.Notify(3);
  EXPECT_EQ(woken3, 2);
  EXPECT_EQ(woken4, 0);
  EXPECT_EQ(memory, 0);
  room.NotifyMemory();
  EXPECT_EQ(memory, 1);
  EXPECT_EQ(woken3, 2);
  room.Notify(5);  // nobody waits for device 5
  EXPECT_EQ(woken3 + woken4 + memory, 3);
}

TEST(RelayRoomTest, AGoneSubscriptionIsNotWoken) {
  RelayRoom room;
  int woken = 0;
  {
    const RelayRoom::Subscription s = room.ForDevice(7, [&] { ++woken; });
    room.Notify(7);
  }
  EXPECT_EQ(room.waiters(), 0u);
  room.Notify(7);
  room.NotifyMemory();
  EXPECT_EQ(woken, 1);
}

// Waiters come and go on several threads while another thread notifies:
// nothing crashes, each waiter is woken at least by its own thread's
// notification, and the count of waiters returns to zero.
TEST(RelayRoomTest, SubscribingAndNotifyingFromManyThreads) {
  RelayRoom room;
  std::atomic<uint64_t> calls{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        const RelayRoom::Subscription s =
            t % 2 == 0 ? room.ForDevice(t, [&] { calls.fetch_add(1); }) : room.ForMemory([&] { calls.fetch_add(1); });
        room.Notify(t);
        room.NotifyMemory();
      }
    });
  }
  std::thread notifier([&] {
    while (!stop) {
      for (uint32_t d = 0; d < 4; ++d) room.Notify(d);
      room.NotifyMemory();
    }
  });
  for (auto& t : threads) t.join();
  stop = true;
  notifier.join();
  EXPECT_EQ(room.waiters(), 0u);
  EXPECT_GE(calls.load(), 4u * 2000u);  // each waiter saw at least its own thread's notification
}

}  // namespace
}  // namespace nodefl::server::net
