// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Secure comparison (sdk/compare): exhaustive correctness at small widths,
// randomized at 16 and 32 bits, both OT modes, batches, XOR shares, input-
// independent transcripts, and aborts for a dropped or altered message at
// every step.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "nodefl/compare/comparison_plan.h"
#include "nodefl/compare/comparison_session.h"
#include "nodefl/crypto/rng.h"
#include "nodefl/random/drbg.h"

namespace nodefl::compare {
namespace {

using State = ComparisonSession::State;

// One party with its storage and DRBG.
struct Party {
  Party(Role r, const RunShape& shape, uint64_t seed)
      : role(r), slots(shape.count), tables(r == Role::kA ? shape.count * shape.plan.table_bytes() : 0),
        session(ComparisonStorage{Span<ComparisonSlot>(slots), ByteSpan(tables)}) {
    EXPECT_TRUE(rng.SeedDeterministic(seed, r == Role::kA ? 1 : 2).ok());
  }
  Role role;
  std::vector<ComparisonSlot> slots;
  std::vector<uint8_t> tables;
  Drbg rng;
  ComparisonSession session;
};

struct Message {
  Role from;
  std::vector<uint8_t> bytes;
};

// Moves messages between the two parties until neither has anything to
// send. `tamper` may change or drop (return false) the n-th message.
struct PairRun {
  PairRun(const RunShape& s, uint64_t seed) : shape(s), a(Role::kA, s, seed), b(Role::kB, s, seed) {
    for (auto& byte : tag.bytes) byte = static_cast<uint8_t>(seed);
  }

  void Start(const std::vector<uint32_t>& x, const std::vector<uint32_t>& y) {
    ASSERT_TRUE(a.session.Start(Role::kA, shape, tag, x, &crypto::DrbgRandom, &a.rng).ok());
    ASSERT_TRUE(b.session.Start(Role::kB, shape, tag, y, &crypto::DrbgRandom, &b.rng).ok());
  }

  // Returns the messages exchanged (as delivered, before tampering).
  std::vector<Message> Pump(const std::function<bool(size_t, Message&)>& tamper = nullptr) {
    std::vector<Message> log;
    std::vector<uint8_t> buffer(shape.max_message_bytes);
    bool progress = true;
    while (progress) {
      progress = false;
      for (Party* from : {&a, &b}) {
        Party* to = from == &a ? &b : &a;
        while (true) {
          const Result<size_t> n = from->session.NextMessage(buffer);
          EXPECT_TRUE(n.ok());
          if (!n.ok() || n.value() == 0) break;
          progress = true;
          Message m{from->role, std::vector<uint8_t>(buffer.begin(), buffer.begin() + n.value())};
          log.push_back(m);
          if (tamper && !tamper(log.size() - 1, m)) continue;
          (void)to->session.OnMessage(m.bytes);
        }
      }
    }
    return log;
  }

  RunShape shape;
  ot::OtTag tag;
  Party a, b;
};

RunShape Shape(uint32_t width, uint32_t count, OtMode mode, bool reveal = true, uint32_t digit_bits = 0) {
  RunShape s;
  auto plan = PlanComparison(width, digit_bits);
  EXPECT_TRUE(plan.ok());
  s.plan = plan.value();
  s.count = count;
  s.mode = mode;
  s.reveal = reveal;
  s.max_message_bytes = 4000;
  return s;
}

void ExpectCorrect(PairRun& run, const std::vector<uint32_t>& x, const std::vector<uint32_t>& y) {
  ASSERT_EQ(run.a.session.state(), State::kDone) << run.a.session.abort_reason().str();
  ASSERT_EQ(run.b.session.state(), State::kDone) << run.b.session.abort_reason().str();
  for (size_t i = 0; i < x.size(); ++i) {
    if (run.shape.reveal) {
      ASSERT_EQ(run.a.session.greater(i), x[i] > y[i]) << x[i] << " vs " << y[i];
      ASSERT_EQ(run.a.session.equal(i), x[i] == y[i]) << x[i] << " vs " << y[i];
      ASSERT_EQ(run.b.session.greater(i), x[i] > y[i]) << x[i] << " vs " << y[i];
      ASSERT_EQ(run.b.session.equal(i), x[i] == y[i]) << x[i] << " vs " << y[i];
    } else {
      const uint8_t both = run.a.session.share(i) ^ run.b.session.share(i);
      ASSERT_EQ((both & 1) != 0, x[i] > y[i]) << x[i] << " vs " << y[i];
      ASSERT_EQ((both & 2) != 0, x[i] == y[i]) << x[i] << " vs " << y[i];
    }
  }
}

void AllPairs(uint32_t width, std::vector<uint32_t>* x, std::vector<uint32_t>* y) {
  for (uint32_t u = 0; u < (1u << width); ++u) {
    for (uint32_t v = 0; v < (1u << width); ++v) {
      x->push_back(u);
      y->push_back(v);
    }
  }
}

TEST(ComparisonPlanTest, ShapesFollowTheDigitLayout) {
  auto p8 = PlanComparison(8);
  ASSERT_TRUE(p8.ok());
  EXPECT_EQ(p8.value().digits, 1);
  EXPECT_EQ(p8.value().ots, 8);
  EXPECT_EQ(p8.value().ands, 0);
  EXPECT_EQ(p8.value().depth, 0);
  auto p32 = PlanComparison(32);
  ASSERT_TRUE(p32.ok());
  EXPECT_EQ(p32.value().digits, 8);
  EXPECT_EQ(p32.value().ands, 14);
  EXPECT_EQ(p32.value().ots, 32 + 28);
  EXPECT_EQ(p32.value().depth, 3);
  auto p13 = PlanComparison(13, 4);
  ASSERT_TRUE(p13.ok());
  EXPECT_EQ(p13.value().top_digit_bits, 1);
  EXPECT_EQ(p13.value().Digit(0x1ABC, 0), 1u);
  EXPECT_EQ(p13.value().Digit(0x1ABC, 1), 0xAu);
  EXPECT_EQ(p13.value().Digit(0x1ABC, 3), 0xCu);
  EXPECT_EQ(p13.value().FirstOt(1), 1);
  EXPECT_FALSE(PlanComparison(0).ok());
  EXPECT_FALSE(PlanComparison(33).ok());
  EXPECT_FALSE(PlanComparison(16, 9).ok());
}

class ExhaustiveTest : public ::testing::TestWithParam<uint32_t> {};

// Every pair of inputs at widths 1..8 with the default single 1-out-of-2^w
// OT, batched over IKNP extension.
TEST_P(ExhaustiveTest, EveryPairWithTheExtension) {
  const uint32_t width = GetParam();
  std::vector<uint32_t> x, y;
  AllPairs(width, &x, &y);
  if (x.size() > 0xFFFF) {  // width 8: 65,536 pairs, one run holds 65,535
    x.pop_back();
    y.pop_back();
  }
  PairRun run(Shape(width, static_cast<uint32_t>(x.size()), OtMode::kExtension), 100 + width);
  run.Start(x, y);
  run.Pump();
  ExpectCorrect(run, x, y);
}

INSTANTIATE_TEST_SUITE_P(Widths, ExhaustiveTest, ::testing::Range(1u, 9u),
                         [](const ::testing::TestParamInfo<uint32_t>& param_info) {
                           return "width" + std::to_string(param_info.param);
                         });

// The last pair of width 8 (255 vs 255) and all pairs at widths 1..4 with
// base OTs only.
TEST(CompareTest, EveryPairWithBaseOtsAtSmallWidths) {
  for (uint32_t width = 1; width <= 4; ++width) {
    std::vector<uint32_t> x, y;
    AllPairs(width, &x, &y);
    PairRun run(Shape(width, static_cast<uint32_t>(x.size()), OtMode::kBase), 200 + width);
    run.Start(x, y);
    run.Pump();
    ExpectCorrect(run, x, y);
  }
  PairRun run(Shape(8, 1, OtMode::kBase), 7);
  run.Start({255}, {255});
  run.Pump();
  ExpectCorrect(run, {255}, {255});
}

// Random and boundary inputs: equal, off by one, differing only in the
// top or bottom bit, extremes.
void WideInputs(uint32_t width, size_t count, uint64_t seed, std::vector<uint32_t>* x, std::vector<uint32_t>* y) {
  Drbg rng;
  ASSERT_TRUE(rng.SeedDeterministic(seed).ok());
  const uint32_t max = width == 32 ? 0xFFFFFFFFu : (1u << width) - 1u;
  for (size_t i = 0; i < count; ++i) {
    const uint32_t u = rng.NextU32() & max;
    uint32_t v = rng.NextU32() & max;
    switch (i % 6) {
      case 0: v = u; break;
      case 1: v = u ^ 1u; break;
      case 2: v = u ^ (1u << (width - 1)); break;
      case 3: v = (i % 12 == 3) ? 0 : max; break;
      default: break;
    }
    x->push_back(u);
    y->push_back(v);
  }
}

struct WideCase {
  uint32_t width;
  uint32_t digit_bits;
  OtMode mode;
  bool reveal;
  uint32_t count;
};

// "width32_digits8_extension_reveal_300": the test's name and how GoogleTest
// prints the case, the same in every build (by default it would print the
// struct's bytes, padding included, and CTest would name the test by them).
std::string WideCaseName(const WideCase& c) {
  return "width" + std::to_string(c.width) + "_digits" + std::to_string(c.digit_bits) +
         (c.mode == OtMode::kBase ? "_base" : "_extension") + (c.reveal ? "_reveal_" : "_private_") +
         std::to_string(c.count);
}
void PrintTo(const WideCase& c, std::ostream* os) { *os << WideCaseName(c); }

class WideTest : public ::testing::TestWithParam<WideCase> {};

TEST_P(WideTest, RandomizedAndBoundaryInputs) {
  const WideCase c = GetParam();
  std::vector<uint32_t> x, y;
  WideInputs(c.width, c.count, c.width * 31 + c.count, &x, &y);
  PairRun run(Shape(c.width, c.count, c.mode, c.reveal, c.digit_bits), c.width + c.count);
  run.Start(x, y);
  run.Pump();
  ExpectCorrect(run, x, y);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, WideTest,
    ::testing::Values(WideCase{16, 0, OtMode::kBase, true, 12}, WideCase{32, 0, OtMode::kBase, true, 6},
                      WideCase{32, 0, OtMode::kBase, false, 6}, WideCase{16, 0, OtMode::kExtension, true, 1000},
                      WideCase{32, 0, OtMode::kExtension, true, 1000}, WideCase{32, 0, OtMode::kExtension, false, 300},
                      WideCase{32, 8, OtMode::kExtension, true, 300}, WideCase{32, 1, OtMode::kExtension, true, 200},
                      WideCase{27, 5, OtMode::kExtension, true, 300}, WideCase{12, 3, OtMode::kBase, true, 10}),
    [](const ::testing::TestParamInfo<WideCase>& param_info) { return WideCaseName(param_info.param); });

// What the peer and the relay see (message count and sizes) must not
// depend on the inputs.
TEST(CompareTest, TranscriptShapeDoesNotDependOnInputs) {
  for (OtMode mode : {OtMode::kBase, OtMode::kExtension}) {
    std::vector<std::vector<std::pair<int, size_t>>> shapes;
    for (uint32_t k = 0; k < 3; ++k) {
      const std::vector<uint32_t> x = {k == 0 ? 0u : 0xFFFFFFFFu, 12345u * k, 7u};
      const std::vector<uint32_t> y = {k == 1 ? 0u : 0xFFFFFFFFu, 999u, 7u + k};
      PairRun run(Shape(32, 3, mode), 50 + k);
      run.Start(x, y);
      const auto log = run.Pump();
      ExpectCorrect(run, x, y);
      std::vector<std::pair<int, size_t>> s;
      for (const auto& m : log) s.emplace_back(static_cast<int>(m.from), m.bytes.size());
      shapes.push_back(s);
    }
    EXPECT_EQ(shapes[0], shapes[1]);
    EXPECT_EQ(shapes[0], shapes[2]);
  }
}

// Drop or alter message n, for every n: nobody ends with a wrong result;
// the party that misses a message (its caller's deadline fires) or gets an
// altered one never finishes: it aborts, at once or when it checks the
// peer's output tag, and tells the other, who aborts too unless it had
// already finished with the right result (a coordinator reconciles that).
void CheckNoWrongResult(PairRun& run, const std::vector<uint32_t>& x, const std::vector<uint32_t>& y) {
  for (Party* p : {&run.a, &run.b}) {
    if (p->session.state() != State::kDone) {
      EXPECT_EQ(p->session.state(), State::kAborted);
      continue;
    }
    for (size_t i = 0; i < x.size(); ++i) {
      EXPECT_EQ(p->session.greater(i), x[i] > y[i]);
      EXPECT_EQ(p->session.equal(i), x[i] == y[i]);
    }
  }
}

// Alterations: every message is altered in its header byte, a payload byte
// in the middle and its last byte (three runs), or, with
// `one_alteration_per_message`, in one of those places, taking turns.
void AbortSweep(OtMode mode, uint32_t width, bool corrupt, bool one_alteration_per_message = false) {
  const std::vector<uint32_t> x = {5, 200, 77, 1000, 0};
  const std::vector<uint32_t> y = {9, 100, 77, 3, 0};
  std::vector<uint32_t> xs(x), ys(y);
  const uint32_t mask = width == 32 ? 0xFFFFFFFFu : (1u << width) - 1u;
  for (auto& v : xs) v &= mask;
  for (auto& v : ys) v &= mask;
  size_t total = 0;
  {
    PairRun clean(Shape(width, 5, mode), 1);
    clean.Start(xs, ys);
    total = clean.Pump().size();
    ExpectCorrect(clean, xs, ys);
  }
  ASSERT_GT(total, 3u);
#if defined(NODEFL_TESTS_UNDER_EMULATION)
  // One corruption kind per message, taking turns (tests/sdk/CMakeLists.txt).
  one_alteration_per_message = true;
#endif
  for (size_t n = 0; n < total; ++n) {
    const int first = corrupt && one_alteration_per_message ? static_cast<int>(n % 3) : 0;
    const int end = corrupt && !one_alteration_per_message ? 3 : first + 1;
    for (int variant = first; variant < end; ++variant) {
      PairRun run(Shape(width, 5, mode), 1);
      run.Start(xs, ys);
      Role victim = Role::kA;
      run.Pump([&](size_t index, Message& m) {
        if (index != n) return true;
        victim = m.from == Role::kA ? Role::kB : Role::kA;
        if (!corrupt) return false;
        // Header byte, a payload byte in the middle, the last byte.
        const size_t at = variant == 0 ? 1 + (n % 10) : variant == 1 ? m.bytes.size() / 2 + 5 : m.bytes.size() - 1;
        m.bytes[at % m.bytes.size()] ^= 0x10;
        return true;
      });
      // The stalled side's deadline: its caller aborts it, which sends
      // kAbort to the other.
      for (Party* p : {&run.a, &run.b}) {
        if (p->session.state() == State::kRunning) p->session.Abort(Status::DeadlineExceeded());
      }
      run.Pump();
      for (Party* p : {&run.a, &run.b}) {
        if (p->session.state() == State::kRunning) p->session.Abort(Status::DeadlineExceeded());
      }
      CheckNoWrongResult(run, xs, ys);
      const Party& receiver = victim == Role::kA ? run.a : run.b;
      EXPECT_EQ(receiver.session.state(), State::kAborted)
          << "message " << n << " of " << total << " variant " << variant;
    }
  }
}

TEST(CompareAbortTest, DroppedMessageAtEveryStepBase8) { AbortSweep(OtMode::kBase, 8, false); }
TEST(CompareAbortTest, DroppedMessageAtEveryStepExtension32) { AbortSweep(OtMode::kExtension, 32, false); }
// Every message of a base-OT comparison altered in each of the three
// places at 8 bits; at 16 bits (more digits, so more messages of each
// kind) in one place each, taking turns.
TEST(CompareAbortTest, AlteredMessageAtEveryStepBase8) { AbortSweep(OtMode::kBase, 8, true); }
TEST(CompareAbortTest, AlteredMessageAtEveryStepBase16) {
  AbortSweep(OtMode::kBase, 16, true, /*one_alteration_per_message=*/true);
}
// The extension's messages with one alteration each: the three places are
// the same decoder and AEAD checks the base-OT sweep makes at every step.
TEST(CompareAbortTest, AlteredMessageAtEveryStepExtension16) {
  AbortSweep(OtMode::kExtension, 16, true, /*one_alteration_per_message=*/true);
}

TEST(CompareTest, BadStartArgumentsAreRefused) {
  RunShape shape = Shape(8, 2, OtMode::kBase);
  Party a(Role::kA, shape, 1);
  ot::OtTag tag;
  const std::vector<uint32_t> two = {1, 2}, one = {1}, too_big = {1, 256}, three = {1, 2, 3};
  EXPECT_EQ(a.session.Start(Role::kA, shape, tag, one, &crypto::DrbgRandom, &a.rng), Status::InvalidArgument());
  EXPECT_EQ(a.session.Start(Role::kA, shape, tag, too_big, &crypto::DrbgRandom, &a.rng), Status::InvalidArgument());
  EXPECT_EQ(a.session.Start(Role::kA, shape, tag, two, nullptr, nullptr), Status::InvalidArgument());
  RunShape small = shape;
  small.max_message_bytes = 1000;
  EXPECT_EQ(a.session.Start(Role::kA, small, tag, two, &crypto::DrbgRandom, &a.rng), Status::InvalidArgument());
  RunShape more = Shape(8, 3, OtMode::kBase);
  EXPECT_EQ(a.session.Start(Role::kA, more, tag, three, &crypto::DrbgRandom, &a.rng),
            Status::InvalidArgument());  // storage for 2 only
  EXPECT_TRUE(a.session.Start(Role::kA, shape, tag, two, &crypto::DrbgRandom, &a.rng).ok());
  // A message from nowhere: refused, aborted.
  const uint8_t junk[20] = {1, 4, 0, 0};
  EXPECT_FALSE(a.session.OnMessage(ConstByteSpan(junk, sizeof(junk))).ok());
  EXPECT_EQ(a.session.state(), State::kAborted);
}

}  // namespace
}  // namespace nodefl::compare
