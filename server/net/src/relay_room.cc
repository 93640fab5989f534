// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/net/relay_room.h"

#include <utility>
#include <vector>

namespace nodefl::server::net {

RelayRoom::Subscription::~Subscription() {
  const std::lock_guard<std::mutex> lock(room_.mutex_);
  waiters_.erase(it_);
  room_.waiters_.fetch_sub(1);
}

RelayRoom::Subscription RelayRoom::Add(Waiters& waiters, WakeFn wake) {
  // Called with mutex_ held.
  waiters.push_back(std::move(wake));
  waiters_.fetch_add(1);
  return Subscription(*this, waiters, std::prev(waiters.end()));
}

RelayRoom::Subscription RelayRoom::ForDevice(uint32_t dst, WakeFn wake) {
  const std::lock_guard<std::mutex> lock(mutex_);
  return Add(by_device_[dst], std::move(wake));
}

RelayRoom::Subscription RelayRoom::ForMemory(WakeFn wake) {
  const std::lock_guard<std::mutex> lock(mutex_);
  return Add(memory_, std::move(wake));
}

void RelayRoom::WakeAll(std::unique_lock<std::mutex>& lock, const Waiters& waiters) {
  // Copies, so that wake functions run outside the lock (they may post, and
  // a waiter may unsubscribe meanwhile).
  const std::vector<WakeFn> wakes(waiters.begin(), waiters.end());
  lock.unlock();
  for (const WakeFn& wake : wakes) wake();
}

void RelayRoom::Notify(uint32_t dst) {
  if (waiters_.load() == 0) return;
  std::unique_lock<std::mutex> lock(mutex_);
  const auto it = by_device_.find(dst);
  if (it != by_device_.end()) WakeAll(lock, it->second);
}

void RelayRoom::NotifyMemory() {
  if (waiters_.load() == 0) return;
  std::unique_lock<std::mutex> lock(mutex_);
  WakeAll(lock, memory_);
}

}  // namespace nodefl::server::net
