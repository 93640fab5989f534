// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Where a job's heavy math runs (the HCT pipeline, walk generation,
// SkipGram). Jobs are state machines driven by the network layer; their
// compute must not block it, so it runs on an executor the job is given:
// by default a thread per task (what the server uses), in tests a
// ManualExecutor the test drains when it chooses, so job tests need neither
// threads nor sleep-polling.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>

namespace nodefl::server::jobs {

class ComputeExecutor {
 public:
  virtual ~ComputeExecutor() = default;
  // Runs `work` once, off the caller's stack. `work` must not throw.
  virtual void Post(std::function<void()> work) = 0;
};

// A detached thread per task. Jobs wait for their task (ComputeTask) before
// they are destroyed, so nothing outlives its job.
ComputeExecutor& ThreadPerTaskExecutor();

// Queues tasks; RunAll() runs them (and any they post) on the caller's
// thread. For tests.
class ManualExecutor final : public ComputeExecutor {
 public:
  void Post(std::function<void()> work) override;
  // Runs queued tasks until none is left; returns how many ran.
  size_t RunAll();
  size_t pending() const;

 private:
  mutable std::mutex mutex_;
  std::deque<std::function<void()>> queue_;
};

// One job's background task: Start() posts the work, done() turns true when
// it has returned, Wait() blocks until then. The destructor waits, so a job
// holding a ComputeTask never frees state its task still uses.
class ComputeTask {
 public:
  ComputeTask() = default;
  ComputeTask(const ComputeTask&) = delete;
  ComputeTask& operator=(const ComputeTask&) = delete;
  ~ComputeTask() { Wait(); }

  // `executor` nullptr: ThreadPerTaskExecutor(). Only one task at a time:
  // Start() waits for the previous one first.
  void Start(ComputeExecutor* executor, std::function<void()> work);
  bool done() const;
  bool running() const;
  void Wait();

 private:
  mutable std::mutex mutex_;
  std::condition_variable finished_;
  bool running_ = false;
  bool done_ = false;
};

}  // namespace nodefl::server::jobs
