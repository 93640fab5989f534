// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Linked only into nodefl-fw-tests-must-fail: one check that cannot hold.
// tests/cortex-m/run-firmware-tests.sh runs that image and requires qemu to
// exit non-zero, which proves that a failing check reaches the exit code
// (a harness that always exited 0 would pass every run).
#include <gtest/gtest.h>

#include "nodefl/core/status.h"

namespace {

TEST(DeliberateFailure, ACheckThatCannotHold) {
  EXPECT_EQ(nodefl::Status::Ok(), nodefl::Status::InvalidArgument()) << "deliberately failing";
}

}  // namespace
