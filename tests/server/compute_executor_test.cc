// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/jobs/compute_executor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace nodefl::server::jobs {
namespace {

TEST(ManualExecutor, RunsNothingUntilAskedThenEverythingPostedMeanwhile) {
  ManualExecutor executor;
  int ran = 0;
  executor.Post([&] {
    ++ran;
    executor.Post([&] { ++ran; });  // work that posts more work
  });
  EXPECT_EQ(ran, 0);
  EXPECT_EQ(executor.pending(), 1u);
  EXPECT_EQ(executor.RunAll(), 2u);
  EXPECT_EQ(ran, 2);
  EXPECT_EQ(executor.pending(), 0u);
}

TEST(ComputeTask, DoneOnlyAfterTheWorkReturned) {
  ManualExecutor executor;
  ComputeTask task;
  EXPECT_FALSE(task.done());
  task.Start(&executor, [] {});
  EXPECT_TRUE(task.running());
  EXPECT_FALSE(task.done());
  executor.RunAll();
  EXPECT_TRUE(task.done());
  EXPECT_FALSE(task.running());
}

// On the default executor the work runs on another thread, and Wait() (and
// the destructor) returns only once it has finished.
TEST(ComputeTask, WaitBlocksUntilAThreadTaskFinishes) {
  std::atomic<bool> release{false};
  std::atomic<bool> finished{false};
  {
    ComputeTask task;
    task.Start(nullptr, [&] {
      while (!release.load()) std::this_thread::yield();
      finished.store(true);
    });
    EXPECT_FALSE(task.done());
    release.store(true);
    task.Wait();
    EXPECT_TRUE(finished.load());
    EXPECT_TRUE(task.done());
    // A second task on the same handle.
    task.Start(nullptr, [&] { finished.store(false); });
  }  // the destructor waited for it
  EXPECT_FALSE(finished.load());
}

}  // namespace
}  // namespace nodefl::server::jobs
