// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// RelayRoom: wakes a connection whose RelaySend the relay refused for want
// of room (Connection::HandleRelaySend), when room may have appeared,
// instead of having it poll Submit:
//
//   Notify(d)       device d's connection took messages from its queue or
//                   acknowledged some: d's queue may take more;
//   NotifyMemory()  some device acknowledged messages: the relay's memory as
//                   a whole may take more.
//
// A waiter subscribes, then submits once more, then sleeps: a notification
// between its refused Submit and its sleep still reaches it. Notifications
// carry no data and may be for room another sender takes first; the waiter
// submits again and must expect another refusal. Progress nobody announces
// (a session ending) is the waiter's own business (it sleeps with a cap).
//
// Thread-safe. Wake functions run on the notifying thread outside the lock;
// they must be quick and not block (post to the waiter's strand). Notify
// costs one atomic load when nobody waits, which is almost always.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <unordered_map>

namespace nodefl::server::net {

class RelayRoom {
 public:
  using WakeFn = std::function<void()>;

 private:
  using Waiters = std::list<WakeFn>;

 public:
  // Registered until destroyed.
  class Subscription {
   public:
    Subscription(const Subscription&) = delete;
    Subscription& operator=(const Subscription&) = delete;
    ~Subscription();

   private:
    friend class RelayRoom;
    Subscription(RelayRoom& room, Waiters& waiters, Waiters::iterator it)
        : room_(room), waiters_(waiters), it_(it) {}
    RelayRoom& room_;
    Waiters& waiters_;
    Waiters::iterator it_;
  };

  RelayRoom() = default;
  RelayRoom(const RelayRoom&) = delete;
  RelayRoom& operator=(const RelayRoom&) = delete;

  // Room at device `dst`'s queue.
  [[nodiscard]] Subscription ForDevice(uint32_t dst, WakeFn wake);
  // Room in the relay's memory.
  [[nodiscard]] Subscription ForMemory(WakeFn wake);

  void Notify(uint32_t dst);
  void NotifyMemory();

  size_t waiters() const { return waiters_.load(); }

 private:
  Subscription Add(Waiters& waiters, WakeFn wake);
  // Runs the wake functions of `waiters` after releasing `lock`.
  void WakeAll(std::unique_lock<std::mutex>& lock, const Waiters& waiters);

  std::mutex mutex_;
  // A device's list stays once made (Subscription refers to it); there is
  // one per device that ever had a sender waiting, a few pointers each.
  std::unordered_map<uint32_t, Waiters> by_device_;
  Waiters memory_;
  // Subscriptions alive. Sequentially consistent on both sides: a waiter
  // counts itself before its second Submit, the notifier reads the count
  // after the relay call that made room, and the relay's lock orders the
  // two, so a waiter that could miss the room is always seen.
  std::atomic<size_t> waiters_{0};
};

}  // namespace nodefl::server::net
