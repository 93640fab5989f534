// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// UnackedSends on its own: entries (RelaySends and JobData uploads) kept in
// order, released by cumulative acknowledgements, walked again after a
// rewind, refused without room.
#include "nodefl/device/unacked_sends.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace nodefl::device {
namespace {

nodefl_wire_Envelope Send(uint64_t send_id, uint32_t dst, size_t size, uint8_t fill) {
  nodefl_wire_Envelope e = nodefl_wire_Envelope_init_zero;
  e.which_body = nodefl_wire_Envelope_relay_send_tag;
  e.job_id = 100 + send_id;
  e.round = static_cast<uint32_t>(send_id % 3);
  e.body.relay_send.send_id = send_id;
  e.body.relay_send.dst = dst;
  e.body.relay_send.sealed.size = static_cast<pb_size_t>(size);
  std::memset(e.body.relay_send.sealed.bytes, fill, size);
  return e;
}

// A JobData record for the server (an upload), kept in the same numbering.
nodefl_wire_Envelope Upload(uint64_t send_id, uint32_t kind, size_t size, uint8_t fill) {
  nodefl_wire_Envelope e = nodefl_wire_Envelope_init_zero;
  e.which_body = nodefl_wire_Envelope_job_data_tag;
  e.job_id = 200 + send_id;
  e.round = static_cast<uint32_t>(send_id % 5);
  e.body.job_data.send_id = send_id;
  e.body.job_data.kind = kind;
  e.body.job_data.data.size = static_cast<pb_size_t>(size);
  std::memset(e.body.job_data.data.bytes, fill, size);
  return e;
}

void ExpectSameUpload(const nodefl_wire_Envelope& a, const nodefl_wire_Envelope& b) {
  ASSERT_EQ(a.which_body, nodefl_wire_Envelope_job_data_tag);
  EXPECT_EQ(a.which_body, b.which_body);
  EXPECT_EQ(a.job_id, b.job_id);
  EXPECT_EQ(a.round, b.round);
  EXPECT_EQ(a.body.job_data.send_id, b.body.job_data.send_id);
  EXPECT_EQ(a.body.job_data.kind, b.body.job_data.kind);
  ASSERT_EQ(a.body.job_data.data.size, b.body.job_data.data.size);
  EXPECT_EQ(std::memcmp(a.body.job_data.data.bytes, b.body.job_data.data.bytes, a.body.job_data.data.size), 0);
}

void ExpectSame(const nodefl_wire_Envelope& a, const nodefl_wire_Envelope& b) {
  EXPECT_EQ(a.which_body, b.which_body);
  EXPECT_EQ(a.job_id, b.job_id);
  EXPECT_EQ(a.round, b.round);
  EXPECT_EQ(a.body.relay_send.send_id, b.body.relay_send.send_id);
  EXPECT_EQ(a.body.relay_send.dst, b.body.relay_send.dst);
  ASSERT_EQ(a.body.relay_send.sealed.size, b.body.relay_send.sealed.size);
  EXPECT_EQ(std::memcmp(a.body.relay_send.sealed.bytes, b.body.relay_send.sealed.bytes, a.body.relay_send.sealed.size),
            0);
}

TEST(UnackedSendsTest, TooSmallAMemoryDisablesKeeping) {
  std::vector<uint8_t> memory(UnackedSends::kMaxEntryBytes - 1);
  UnackedSends kept{Span<uint8_t>(memory)};
  EXPECT_FALSE(kept.enabled());
  EXPECT_FALSE(kept.has_room());
  EXPECT_FALSE(kept.Keep(Send(1, 2, 10, 1), true));
}

TEST(UnackedSendsTest, ReleaseRewindAndResendInOrder) {
  std::vector<uint8_t> memory(3 * UnackedSends::kMaxEntryBytes);
  UnackedSends kept{Span<uint8_t>(memory)};
  std::vector<nodefl_wire_Envelope> sends;
  for (uint64_t id = 1; id <= 5; ++id) sends.push_back(Send(id, static_cast<uint32_t>(id * 7), id * 100, uint8_t(id)));
  for (const auto& s : sends) ASSERT_TRUE(kept.Keep(s, true));
  EXPECT_EQ(kept.count(), 5u);
  EXPECT_FALSE(kept.resend_pending());
  EXPECT_FALSE(kept.Keep(Send(5, 1, 1, 0), true)) << "ids only grow";

  EXPECT_EQ(kept.Release(2), 2u);
  EXPECT_EQ(kept.Release(2), 0u) << "acknowledgements are cumulative";
  EXPECT_EQ(kept.count(), 3u);

  kept.Rewind();
  nodefl_wire_Envelope out;
  for (size_t i = 2; i < 5; ++i) {
    ASSERT_TRUE(kept.resend_pending());
    kept.NextResend(&out);
    ExpectSame(out, sends[i]);
  }
  EXPECT_FALSE(kept.resend_pending());

  // Undo: the entry is offered again.
  kept.Rewind();
  kept.NextResend(&out);
  kept.UndoResend();
  kept.NextResend(&out);
  ExpectSame(out, sends[2]);
  // An acknowledgement during a resend moves the cursor with the entries.
  EXPECT_EQ(kept.Release(3), 1u);
  kept.NextResend(&out);
  ExpectSame(out, sends[3]);
}

TEST(UnackedSendsTest, ASendKeptWhileOthersWaitIsResentAfterThem) {
  std::vector<uint8_t> memory(2 * UnackedSends::kMaxEntryBytes);
  UnackedSends kept{Span<uint8_t>(memory)};
  ASSERT_TRUE(kept.Keep(Send(1, 1, 10, 1), true));
  ASSERT_TRUE(kept.Keep(Send(2, 1, 10, 2), true));
  kept.Rewind();
  ASSERT_TRUE(kept.Keep(Send(3, 1, 10, 3), /*sent=*/true));  // not written: 1 and 2 come first
  nodefl_wire_Envelope out;
  std::vector<uint64_t> order;
  while (kept.resend_pending()) {
    kept.NextResend(&out);
    order.push_back(out.body.relay_send.send_id);
  }
  EXPECT_EQ(order, (std::vector<uint64_t>{1, 2, 3}));
}

TEST(UnackedSendsTest, UploadsAndRelaySendsShareTheNumberingAndComeBackAsWhatTheyWere) {
  std::vector<uint8_t> memory(4 * UnackedSends::kMaxEntryBytes);
  UnackedSends kept{Span<uint8_t>(memory)};
  const nodefl_wire_Envelope a = Send(1, 9, 40, 1), b = Upload(2, 77, protocol::kMaxJobDataBytes, 2),
                             c = Send(3, 4, 0, 3), d = Upload(4, 78, 0, 4);
  for (const auto* e : {&a, &b, &c, &d}) ASSERT_TRUE(kept.Keep(*e, true));
  EXPECT_FALSE(kept.Keep(Upload(4, 1, 1, 0), true)) << "one numbering: ids only grow across both kinds";
  nodefl_wire_Envelope other = nodefl_wire_Envelope_init_zero;
  other.which_body = nodefl_wire_Envelope_job_report_tag;
  EXPECT_FALSE(UnackedSends::Keepable(other));
  EXPECT_FALSE(kept.Keep(other, true)) << "only RelaySend and JobData are kept";
  EXPECT_EQ(kept.Release(1), 1u);
  kept.Rewind();
  nodefl_wire_Envelope out;
  kept.NextResend(&out);
  ExpectSameUpload(out, b);
  kept.NextResend(&out);
  ExpectSame(out, c);
  kept.NextResend(&out);
  ExpectSameUpload(out, d);
  EXPECT_FALSE(kept.resend_pending());
}

TEST(UnackedSendsTest, RoomIsCountedInBytes) {
  std::vector<uint8_t> memory(UnackedSends::kMaxEntryBytes + 100);
  UnackedSends kept{Span<uint8_t>(memory)};
  ASSERT_TRUE(kept.Keep(Send(1, 1, protocol::kMaxSealedBytes, 9), true));
  EXPECT_FALSE(kept.has_room());
  EXPECT_TRUE(kept.Fits(Send(2, 1, 100 - UnackedSends::kHeaderBytes, 0)));
  EXPECT_FALSE(kept.Fits(Send(2, 1, 101 - UnackedSends::kHeaderBytes, 0)));
  EXPECT_TRUE(kept.Fits(Upload(2, 1, 100 - UnackedSends::kHeaderBytes, 0)));
  EXPECT_FALSE(kept.Fits(Upload(2, 1, 101 - UnackedSends::kHeaderBytes, 0)));
  EXPECT_EQ(kept.Clear(), 1u);
  EXPECT_TRUE(kept.has_room());
}

}  // namespace
}  // namespace nodefl::device
