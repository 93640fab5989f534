// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/fedwalk/skipgram/parallel_progress.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace nodefl::server::fedwalk {

void RunWorkersWithProgress(unsigned threads, const std::function<void(unsigned)>& work,
                            const std::atomic<uint64_t>& done, uint64_t total,
                            const std::function<void(uint64_t, uint64_t)>& progress) {
  std::mutex mutex;
  std::condition_variable finished;
  unsigned running = threads;
  std::vector<std::thread> workers;
  workers.reserve(threads);
  for (unsigned t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      work(t);
      std::lock_guard<std::mutex> lock(mutex);
      --running;
      finished.notify_one();
    });
  }
  {
    std::unique_lock<std::mutex> lock(mutex);
    while (!finished.wait_for(lock, std::chrono::milliseconds(500), [&] { return running == 0; })) {
      if (progress) {
        lock.unlock();
        progress(done.load(std::memory_order_relaxed), total);
        lock.lock();
      }
    }
  }
  for (std::thread& worker : workers) worker.join();
  if (progress) progress(total, total);
}

}  // namespace nodefl::server::fedwalk
