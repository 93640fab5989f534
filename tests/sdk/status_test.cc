// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/core/result.h"
#include "nodefl/core/status.h"

#include <gtest/gtest.h>

#include "heap_counter.h"

namespace nodefl {
namespace {

Status FailIfNegative(int x) { return x < 0 ? Status::InvalidArgument() : Status::Ok(); }

Status Chain(int x, int* reached) {
  NODEFL_TRY(FailIfNegative(x));
  *reached = 1;
  return Status::Ok();
}

Result<int> Half(int x) {
  if (x % 2 != 0) return Status::InvalidArgument();
  return x / 2;
}

Status Quarter(int x, int* out) {
  NODEFL_TRY_ASSIGN(const int h, Half(x));
  NODEFL_TRY_ASSIGN(*out, Half(h));
  return Status::Ok();
}

TEST(StatusTest, DefaultIsOkAndNamesAreStable) {
  EXPECT_TRUE(Status().ok());
  EXPECT_STREQ(Status().str(), "OK");
  EXPECT_STREQ(Status::ResourceExhausted().str(), "RESOURCE_EXHAUSTED");
  EXPECT_STREQ(Status::Unauthenticated().str(), "UNAUTHENTICATED");
  EXPECT_NE(Status::Aborted(), Status::Cancelled());
}

TEST(StatusTest, TryReturnsEarly) {
  int reached = 0;
  EXPECT_EQ(Chain(-1, &reached), Status::InvalidArgument());
  EXPECT_EQ(reached, 0);
  EXPECT_TRUE(Chain(1, &reached).ok());
  EXPECT_EQ(reached, 1);
}

TEST(ResultTest, ValueAndErrorPaths) {
  int out = 0;
  EXPECT_TRUE(Quarter(12, &out).ok());
  EXPECT_EQ(out, 3);
  EXPECT_EQ(Quarter(6, &out), Status::InvalidArgument());  // 6/2 = 3 is odd
  Result<int> r = Half(7);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.value_or(-1), -1);
}

TEST(ResultTest, OkStatusWithoutValueBecomesInternal) {
  Result<int> r = Status::Ok();
  EXPECT_EQ(r.status(), Status::Internal());
}

TEST(ResultTest, CopyAndMoveKeepValue) {
  Result<int> a = 5;
  Result<int> b = a;
  Result<int> c = std::move(a);
  EXPECT_EQ(*b, 5);
  EXPECT_EQ(*c, 5);
  b = Result<int>(Status::NotFound());
  EXPECT_EQ(b.status(), Status::NotFound());
}

TEST(ResultDeathTest, ReadingFailedValuePanics) {
  Result<int> r = Status::DataLoss();
  EXPECT_DEATH({ (void)r.value(); }, "");
}

TEST(StatusTest, NoHeap) {
  int out = 0;
  NODEFL_EXPECT_NO_HEAP({
    Quarter(40, &out).IgnoreError();
    (void)Status::Aborted().str();
  });
  EXPECT_EQ(out, 10);
}

}  // namespace
}  // namespace nodefl
