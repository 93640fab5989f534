// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// WakeLatch: one coroutine sleeps until another part of the same strand has
// work for it (a writer waiting for output, a reader held back until the
// writer drained a queue), instead of polling on a short timer.
//
// A Wake() that arrives while the coroutine is busy is latched and its next
// Wait() returns at once: an Asio timer's cancel() only ends waits already
// pending, so without the latch a wake-up between "nothing to do" and "sleep"
// would be lost. Wake-ups may be spurious (a latched one for work already
// done), so waiters check their condition again after every Wait().
//
// All calls happen on the owner's strand; one coroutine waits at a time.
#pragma once

// Boost 1.74's awaitable.hpp uses std::exchange without including <utility>.
#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>

namespace nodefl::host::net {

class WakeLatch {
 public:
  using Clock = std::chrono::steady_clock;

  explicit WakeLatch(const boost::asio::any_io_executor& executor) : timer_(executor) {}

  // Cheap when nobody waits (the common case for a busy writer): the timer
  // is only cancelled while a Wait() is pending on it.
  void Wake() {
    pending_ = true;
    if (waiting_) timer_.cancel();
  }

  // Returns once woken (at once if a wake-up is latched) and clears the latch.
  boost::asio::awaitable<void> Wait() { (void)co_await WaitUntil(Clock::time_point::max()); }

  // As Wait(), but gives up at `deadline`: true if woken, false if the
  // deadline came first.
  boost::asio::awaitable<bool> WaitUntil(Clock::time_point deadline) {
    if (!pending_) {
      timer_.expires_at(deadline);
      boost::system::error_code ec;  // operation_aborted when woken
      waiting_ = true;
      co_await timer_.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
      waiting_ = false;
    }
    const bool woken = pending_;
    pending_ = false;
    co_return woken;
  }

 private:
  boost::asio::steady_timer timer_;
  bool pending_ = false;
  bool waiting_ = false;
};

}  // namespace nodefl::host::net
