// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/jobs/compute_executor.h"

#include <thread>
#include <utility>

namespace nodefl::server::jobs {
namespace {

class ThreadPerTask final : public ComputeExecutor {
 public:
  void Post(std::function<void()> work) override { std::thread(std::move(work)).detach(); }
};

}  // namespace

ComputeExecutor& ThreadPerTaskExecutor() {
  static ThreadPerTask executor;
  return executor;
}

void ManualExecutor::Post(std::function<void()> work) {
  std::lock_guard<std::mutex> lock(mutex_);
  queue_.push_back(std::move(work));
}

size_t ManualExecutor::RunAll() {
  size_t ran = 0;
  for (;;) {
    std::function<void()> work;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (queue_.empty()) return ran;
      work = std::move(queue_.front());
      queue_.pop_front();
    }
    work();
    ++ran;
  }
}

size_t ManualExecutor::pending() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.size();
}

void ComputeTask::Start(ComputeExecutor* executor, std::function<void()> work) {
  Wait();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    running_ = true;
    done_ = false;
  }
  ComputeExecutor& target = executor != nullptr ? *executor : ThreadPerTaskExecutor();
  target.Post([this, work = std::move(work)]() mutable {
    work();
    work = nullptr;  // the job's captures go before the job may be freed
    // Notify under the lock: once Wait() can return, this thread no longer
    // touches the task.
    std::lock_guard<std::mutex> lock(mutex_);
    running_ = false;
    done_ = true;
    finished_.notify_all();
  });
}

bool ComputeTask::done() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_;
}

bool ComputeTask::running() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return running_;
}

void ComputeTask::Wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  finished_.wait(lock, [this] { return !running_; });
}

}  // namespace nodefl::server::jobs
