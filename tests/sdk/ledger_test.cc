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

TEST(LedgerTest, DeltaEdgeEpsilonAndFlagsAddUp) {
  LedgerEntry storage[4];
  PrivacyLedger ledger(storage, PrivacyBudget::Unlimited());
  ReleaseCost walk;
  walk.epsilon = 0.5;
  walk.delta = 1e-7;
  walk.edge_epsilon = 4.0;  // the whole rest of a walk
  walk.unbounded_against_server = true;
  ASSERT_TRUE(ledger.Record(3, Mechanism::kExponential, PrivacyMode::kPaper, walk, 2).ok());
  ASSERT_TRUE(ledger.Record(1, Mechanism::kDiscreteLaplace, PrivacyMode::kStrict, 2.0).ok());
  EXPECT_DOUBLE_EQ(ledger.total_epsilon(), 3.0);
  EXPECT_DOUBLE_EQ(ledger.total_delta(), 2e-7);
  // Per edge: the walk step's 4.0 plus the count vector's own 2.0.
  EXPECT_DOUBLE_EQ(ledger.total_edge_epsilon(), 6.0);
  EXPECT_DOUBLE_EQ(ledger.phase_edge_epsilon(3), 4.0);
  EXPECT_TRUE(ledger.unbounded_against_server());
  EXPECT_TRUE(ledger.phase_unbounded_against_server(3));
  EXPECT_FALSE(ledger.phase_unbounded_against_server(1));
  EXPECT_FALSE(ledger.unbounded());
  // A job is charged the larger of epsilon and per-edge epsilon.
  EXPECT_DOUBLE_EQ(ledger.job_epsilon(), 4.0 + 2.0);
  // Malformed costs.
  ReleaseCost bad;
  bad.delta = 1.5;
  EXPECT_EQ(ledger.Record(1, Mechanism::kLaplace, PrivacyMode::kStrict, bad), Status::InvalidArgument());
  bad = ReleaseCost();
  bad.edge_epsilon = std::nan("");
  EXPECT_EQ(ledger.Record(1, Mechanism::kLaplace, PrivacyMode::kStrict, bad), Status::InvalidArgument());
}

TEST(LedgerTest, TheDevicesBudgetRefusesPerJobAndOverItsLifetime) {
  LedgerEntry storage[4];
  PrivacyBudget budget;
  budget.job_epsilon = 8.0;
  budget.lifetime_epsilon = 20.0;
  budget.job_delta = 1e-6;
  PrivacyLedger ledger(storage, budget, /*lifetime_epsilon_spent=*/4.0);
  EXPECT_DOUBLE_EQ(ledger.lifetime_epsilon(), 4.0);
  ledger.BeginJob(1);
  EXPECT_TRUE(ledger.Record(1, Mechanism::kDiscreteLaplace, PrivacyMode::kStrict, 4.0, 2).ok());  // exactly 8
  EXPECT_EQ(ledger.Record(1, Mechanism::kDiscreteLaplace, PrivacyMode::kStrict, 0.01), Status::PermissionDenied());
  EXPECT_EQ(ledger.CanRecord(1, Mechanism::kDiscreteLaplace, PrivacyMode::kStrict, ReleaseCost{0.01}),
            Status::PermissionDenied());
  ledger.BeginJob(1);  // the same job again: nothing new to spend
  EXPECT_EQ(ledger.Record(1, Mechanism::kDiscreteLaplace, PrivacyMode::kStrict, 0.01), Status::PermissionDenied());
  ledger.BeginJob(2);
  EXPECT_TRUE(ledger.Record(1, Mechanism::kDiscreteLaplace, PrivacyMode::kStrict, 8.0).ok());  // lifetime 20
  ledger.BeginJob(3);
  EXPECT_EQ(ledger.Record(1, Mechanism::kDiscreteLaplace, PrivacyMode::kStrict, 0.5), Status::PermissionDenied());
  EXPECT_DOUBLE_EQ(ledger.lifetime_epsilon(), 20.0);
  EXPECT_DOUBLE_EQ(ledger.total_epsilon(), 16.0);  // this life only
  // Delta per job; per-edge epsilon counts against the job's epsilon.
  PrivacyLedger fresh(storage, budget);
  fresh.BeginJob(9);
  ReleaseCost c;
  c.epsilon = 0.1;
  c.delta = 6e-7;
  EXPECT_TRUE(fresh.Record(3, Mechanism::kExponential, PrivacyMode::kStrict, c).ok());
  EXPECT_EQ(fresh.Record(3, Mechanism::kExponential, PrivacyMode::kStrict, c), Status::PermissionDenied());
  c.delta = 0.0;
  c.edge_epsilon = 9.0;
  EXPECT_EQ(fresh.Record(3, Mechanism::kExponential, PrivacyMode::kStrict, c), Status::PermissionDenied());
  EXPECT_EQ(fresh.entries()[0].releases, 1u);  // refusals recorded nothing
}

TEST(LedgerTest, ExactReleasesNeedTheBudgetsConsent) {
  LedgerEntry storage[2];
  PrivacyLedger strict_device(storage);  // the default budget
  ReleaseCost exact;
  exact.unbounded = true;
  EXPECT_EQ(strict_device.Record(2, Mechanism::kExact, PrivacyMode::kPaper, exact), Status::PermissionDenied());
  EXPECT_EQ(strict_device.Record(2, Mechanism::kExact, PrivacyMode::kPaper, 0.0), Status::PermissionDenied());
  EXPECT_TRUE(strict_device.entries().empty());
  PrivacyBudget consenting;
  consenting.allow_unbounded = true;
  strict_device.set_budget(consenting);
  EXPECT_TRUE(strict_device.Record(2, Mechanism::kExact, PrivacyMode::kPaper, exact).ok());
  EXPECT_TRUE(strict_device.unbounded());
  EXPECT_TRUE(strict_device.phase_unbounded(2));
  EXPECT_STREQ(MechanismName(Mechanism::kExact), "exact");
}

}  // namespace
}  // namespace nodefl
