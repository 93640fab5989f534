// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/privacy/ledger.h"

#include <gtest/gtest.h>

#include <cmath>

#include "heap_counter.h"

namespace nodefl {
namespace {

TEST(LedgerTest, SumsPerEntryAndPhase) {
  LedgerEntry storage[4];
  PrivacyLedger ledger(storage);
  NODEFL_EXPECT_NO_HEAP({
    EXPECT_TRUE(ledger.Record(1, Mechanism::kDiscreteLaplace, PrivacyMode::kStrict, 0.5, 4).ok());
    EXPECT_TRUE(ledger.Record(1, Mechanism::kDiscreteLaplace, PrivacyMode::kStrict, 0.5).ok());
    EXPECT_TRUE(ledger.Record(2, Mechanism::kExponential, PrivacyMode::kPaper, 2.0, 3).ok());
  });
  ASSERT_EQ(ledger.entries().size(), 2u);
  EXPECT_EQ(ledger.entries()[0].releases, 5u);
  EXPECT_DOUBLE_EQ(ledger.phase_epsilon(1), 2.5);
  EXPECT_DOUBLE_EQ(ledger.phase_epsilon(2), 6.0);
  EXPECT_DOUBLE_EQ(ledger.total_epsilon(), 8.5);
  EXPECT_STREQ(MechanismName(Mechanism::kOneBit), "one-bit");
  EXPECT_STREQ(PrivacyModeName(kDefaultPrivacyMode), "strict");
}

TEST(LedgerTest, RefusesBadEpsilonAndOverflow) {
  LedgerEntry storage[1];
  PrivacyLedger ledger(storage);
  EXPECT_EQ(ledger.Record(1, Mechanism::kLaplace, PrivacyMode::kStrict, -1.0),
            Status::InvalidArgument());
  EXPECT_EQ(ledger.Record(1, Mechanism::kLaplace, PrivacyMode::kStrict, std::nan("")),
            Status::InvalidArgument());
  EXPECT_TRUE(ledger.Record(1, Mechanism::kLaplace, PrivacyMode::kStrict, 1.0).ok());
  EXPECT_EQ(ledger.Record(2, Mechanism::kLaplace, PrivacyMode::kStrict, 1.0),
            Status::ResourceExhausted());
  EXPECT_DOUBLE_EQ(ledger.total_epsilon(), 1.0);
}

}  // namespace
}  // namespace nodefl
