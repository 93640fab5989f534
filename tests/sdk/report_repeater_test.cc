// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/roles/report_repeater.h"

#include <gtest/gtest.h>

#include <vector>

namespace nodefl::roles {
namespace {

struct Sent {
  uint32_t round;
  StatusCode code;
};

Status Flush(ReportRepeater& r, bool can_send, std::vector<Sent>* sent) {
  return r.Flush(can_send, [sent](uint32_t round, Status outcome) {
    sent->push_back({round, outcome.code()});
    return Status::Ok();
  });
}

TEST(ReportRepeater, NothingToRepeatBeforeTheFirstReport) {
  ReportRepeater r;
  std::vector<Sent> sent;
  r.OnSessionRestart();
  r.OnRepeatedRound(1);
  EXPECT_FALSE(r.due());
  EXPECT_TRUE(Flush(r, true, &sent).ok());
  EXPECT_TRUE(sent.empty());
}

TEST(ReportRepeater, ARestartRepeatsTheLatestReportOnceTheSessionCanSend) {
  ReportRepeater r;
  std::vector<Sent> sent;
  r.Sent(1, Status::Ok());
  r.Sent(2, Status::Unauthenticated());
  r.OnSessionRestart();
  EXPECT_TRUE(r.due());
  EXPECT_TRUE(Flush(r, false, &sent).ok());  // output full: wait
  EXPECT_TRUE(sent.empty());
  EXPECT_TRUE(Flush(r, true, &sent).ok());
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].round, 2u);
  EXPECT_EQ(sent[0].code, StatusCode::kUnauthenticated);
  EXPECT_TRUE(Flush(r, true, &sent).ok());  // once
  EXPECT_EQ(sent.size(), 1u);
}

TEST(ReportRepeater, ARepeatedRoundRepeatsOnlyItsOwnReport) {
  ReportRepeater r;
  std::vector<Sent> sent;
  r.Sent(2, Status::Ok());
  r.OnRepeatedRound(1);  // an older round: its report is not the latest
  EXPECT_FALSE(r.due());
  r.OnRepeatedRound(2);
  EXPECT_TRUE(Flush(r, true, &sent).ok());
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].round, 2u);
  r.Reset();
  EXPECT_EQ(r.last_round(), 0u);
  r.OnSessionRestart();
  EXPECT_FALSE(r.due());
}

TEST(ReportRepeater, ASendFailureIsReturned) {
  ReportRepeater r;
  r.Sent(1, Status::Ok());
  r.OnSessionRestart();
  const Status s = r.Flush(true, [](uint32_t, Status) { return Status::ResourceExhausted(); });
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace nodefl::roles
