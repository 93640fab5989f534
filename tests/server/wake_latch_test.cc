// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// WakeLatch (server/host/net): the wake-up the server's connection writer
// and the emulator's socket loops sleep on instead of polling.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <chrono>
#include <optional>

#include "nodefl/host/net/wake_latch.h"

namespace nodefl::host::net {
namespace {

namespace asio = boost::asio;
using Clock = WakeLatch::Clock;
// A deadline no passing test reaches: a lost wake-up shows as a false
// result after it, not as a hang.
constexpr auto kLong = std::chrono::seconds(10);
constexpr auto kShort = std::chrono::milliseconds(20);

// Runs one WaitUntil(now + wait) on `io` to completion; its result.
std::optional<bool> WaitOnce(asio::io_context& io, WakeLatch& latch, Clock::duration wait) {
  std::optional<bool> woken;
  asio::co_spawn(io, [&]() -> asio::awaitable<void> { woken = co_await latch.WaitUntil(Clock::now() + wait); },
                 asio::detached);
  io.run();
  io.restart();
  return woken;
}

TEST(WakeLatchTest, AWakeBeforeTheWaitIsLatched) {
  asio::io_context io;
  WakeLatch latch(io.get_executor());
  latch.Wake();
  EXPECT_EQ(WaitOnce(io, latch, kLong), true);
  // Consumed: the next wait sleeps until its deadline.
  EXPECT_EQ(WaitOnce(io, latch, kShort), false);
}

TEST(WakeLatchTest, AWakeDuringTheWaitEndsIt) {
  asio::io_context io;
  WakeLatch latch(io.get_executor());
  std::optional<bool> woken;
  asio::co_spawn(io, [&]() -> asio::awaitable<void> { woken = co_await latch.WaitUntil(Clock::now() + kLong); },
                 asio::detached);
  // Runs after the waiter has gone to sleep (handlers run in order).
  asio::post(io, [&] { latch.Wake(); });
  const auto started = Clock::now();
  io.run();
  EXPECT_EQ(woken, true);
  EXPECT_LT(Clock::now() - started, kLong);
}

TEST(WakeLatchTest, WithoutAWakeTheDeadlineEndsTheWait) {
  asio::io_context io;
  WakeLatch latch(io.get_executor());
  EXPECT_EQ(WaitOnce(io, latch, kShort), false);
}

TEST(WakeLatchTest, ManyWakesBeforeAWaitCountAsOne) {
  asio::io_context io;
  WakeLatch latch(io.get_executor());
  for (int i = 0; i < 5; ++i) latch.Wake();
  EXPECT_EQ(WaitOnce(io, latch, kLong), true);
  EXPECT_EQ(WaitOnce(io, latch, kShort), false);
}

}  // namespace
}  // namespace nodefl::host::net
