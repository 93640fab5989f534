// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// UnackedSends on its own: entries kept in order, released by cumulative
// acknowledgements, walked again after a rewind, refused without room.
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

TEST(UnackedSendsTest, RoomIsCountedInBytes) {
  std::vector<uint8_t> memory(UnackedSends::kMaxEntryBytes + 100);
  UnackedSends kept{Span<uint8_t>(memory)};
  ASSERT_TRUE(kept.Keep(Send(1, 1, protocol::kMaxSealedBytes, 9), true));
  EXPECT_FALSE(kept.has_room());
  EXPECT_TRUE(kept.Fits(Send(2, 1, 100 - UnackedSends::kHeaderBytes, 0).body.relay_send));
  EXPECT_FALSE(kept.Fits(Send(2, 1, 101 - UnackedSends::kHeaderBytes, 0).body.relay_send));
  EXPECT_EQ(kept.Clear(), 1u);
  EXPECT_TRUE(kept.has_room());
}

}  // namespace
}  // namespace nodefl::device
