// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// ServerStateStore (server/store): what a server keeps across restarts.
// Each test works in a fresh directory under the system's temporary one;
// "restarting" is destroying the store and opening the directory again.
#include "nodefl/server/store/state_store.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "nodefl/server/store/sqlite.h"

namespace nodefl::server::store {
namespace {

namespace fs = std::filesystem;

class StateStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("nodefl-state-store-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<ServerStateStore> OpenOrFail() {
    std::string error;
    auto store = ServerStateStore::Open(dir_.string(), &error);
    EXPECT_NE(store, nullptr) << error;
    return store;
  }

  static ResumeToken Token(uint8_t fill) {
    ResumeToken t;
    t.fill(fill);
    return t;
  }

  fs::path dir_;
};

TEST_F(StateStoreTest, EachOpenIsANewStartAndTheFileIsCreated) {
  {
    auto store = OpenOrFail();
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->start(), 1u);
    EXPECT_TRUE(fs::exists(dir_ / kStateFileName));
  }
  for (uint64_t expected : {2u, 3u}) {
    auto store = OpenOrFail();
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->start(), expected);
  }
}

TEST_F(StateStoreTest, ASecondServerOnTheSameDirectoryIsRefused) {
  auto first = OpenOrFail();
  ASSERT_NE(first, nullptr);
  std::string error;
  EXPECT_EQ(ServerStateStore::Open(dir_.string(), &error), nullptr);
  EXPECT_NE(error.find("in use by another server"), std::string::npos) << error;
  // The first one still works, and once it is gone the directory opens.
  uint64_t id = 0;
  EXPECT_TRUE(first->BeginJob("neighbour-echo", 1, &id, &error)) << error;
  first.reset();
  auto again = OpenOrFail();
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->start(), 2u);
}

TEST_F(StateStoreTest, SessionsSurviveARestartAndTheHigherSessionWins) {
  {
    auto store = OpenOrFail();
    ASSERT_NE(store, nullptr);
    std::string error;
    ASSERT_TRUE(store->SaveSession(7, 1, Token(0x11), &error)) << error;
    ASSERT_TRUE(store->SaveSession(3, 1, Token(0x33), &error)) << error;
    ASSERT_TRUE(store->SaveSession(7, 3, Token(0x77), &error)) << error;
    // Written late by a slower connection: must not replace session 3.
    ASSERT_TRUE(store->SaveSession(7, 2, Token(0x22), &error)) << error;
  }
  auto store = OpenOrFail();
  ASSERT_NE(store, nullptr);
  std::vector<StoredSession> sessions;
  std::string error;
  ASSERT_TRUE(store->LoadSessions(&sessions, &error)) << error;
  ASSERT_EQ(sessions.size(), 2u);
  EXPECT_EQ(sessions[0].device_id, 3u);
  EXPECT_EQ(sessions[0].session, 1u);
  EXPECT_EQ(sessions[0].token, Token(0x33));
  EXPECT_EQ(sessions[1].device_id, 7u);
  EXPECT_EQ(sessions[1].session, 3u);
  EXPECT_EQ(sessions[1].token, Token(0x77));
}

TEST_F(StateStoreTest, JobIdsContinueAndRunningJobsOfAnEarlierStartAreAbandoned) {
  std::string error;
  {
    auto store = OpenOrFail();
    ASSERT_NE(store, nullptr);
    uint64_t a = 0, b = 0;
    ASSERT_TRUE(store->BeginJob("fedwalk-hct", 1, &a, &error)) << error;
    ASSERT_TRUE(store->EndJob(a, "verified", "", &error)) << error;
    ASSERT_TRUE(store->BeginJob("fedwalk-walks", 2, &b, &error)) << error;
    EXPECT_EQ(a, 1u);
    EXPECT_EQ(b, 2u);
    // Killed here: job 2 is still recorded as running.
  }
  auto store = OpenOrFail();
  ASSERT_NE(store, nullptr);
  std::vector<StoredJob> abandoned;
  ASSERT_TRUE(store->AbandonInterruptedJobs(&abandoned, &error)) << error;
  ASSERT_EQ(abandoned.size(), 1u);
  EXPECT_EQ(abandoned[0].job_id, 2u);
  EXPECT_EQ(abandoned[0].kind, "fedwalk-walks");
  EXPECT_EQ(abandoned[0].stage, 2u);
  EXPECT_EQ(abandoned[0].start, 1u);
  uint64_t c = 0;
  ASSERT_TRUE(store->BeginJob("fedwalk-hct", 1, &c, &error)) << error;
  EXPECT_EQ(c, 3u);
  // This start's own running job is not abandoned by a second call.
  ASSERT_TRUE(store->AbandonInterruptedJobs(&abandoned, &error)) << error;
  EXPECT_TRUE(abandoned.empty());
  std::vector<StoredJob> jobs;
  ASSERT_TRUE(store->LoadJobs(&jobs, &error)) << error;
  ASSERT_EQ(jobs.size(), 3u);
  EXPECT_EQ(jobs[0].state, "verified");
  EXPECT_EQ(jobs[1].state, "abandoned");
  EXPECT_EQ(jobs[1].reason, "server restart");
  EXPECT_EQ(jobs[2].state, "running");
  EXPECT_EQ(jobs[2].start, 2u);
}

TEST_F(StateStoreTest, AFileThatIsNotAStateFileIsRefusedAndLeftAlone) {
  fs::create_directories(dir_);
  {
    std::ofstream(dir_ / kStateFileName) << "these are not the bytes of a database, not even close to one.";
  }
  std::string error;
  EXPECT_EQ(ServerStateStore::Open(dir_.string(), &error), nullptr);
  EXPECT_FALSE(error.empty());
  std::ifstream in(dir_ / kStateFileName);
  std::string first;
  in >> first;
  EXPECT_EQ(first, "these");
}

TEST_F(StateStoreTest, ADatabaseWithTablesOfItsOwnIsRefused) {
  fs::create_directories(dir_);
  {
    Database db;
    std::string error;
    ASSERT_TRUE(db.Open((dir_ / kStateFileName).string(), &error)) << error;
    ASSERT_TRUE(db.Exec("CREATE TABLE photos(id INTEGER PRIMARY KEY, name TEXT)", &error)) << error;
  }
  std::string error;
  EXPECT_EQ(ServerStateStore::Open(dir_.string(), &error), nullptr);
  EXPECT_NE(error.find("not a nodefl server state file"), std::string::npos) << error;
}

TEST_F(StateStoreTest, AnotherSchemaVersionIsRefused) {
  { ASSERT_NE(OpenOrFail(), nullptr); }
  {
    Database db;
    std::string error;
    ASSERT_TRUE(db.Open((dir_ / kStateFileName).string(), &error)) << error;
    ASSERT_TRUE(db.Exec("UPDATE meta SET value = 99 WHERE key = 'schema_version'", &error)) << error;
  }
  std::string error;
  EXPECT_EQ(ServerStateStore::Open(dir_.string(), &error), nullptr);
  EXPECT_NE(error.find("schema version 99"), std::string::npos) << error;
}

TEST_F(StateStoreTest, AVersionOneFileGainsTheJournalAndKeepsItsSessions) {
  {
    auto store = OpenOrFail();
    ASSERT_NE(store, nullptr);
    std::string error;
    ASSERT_TRUE(store->SaveSession(7, 3, Token(0x11), &error)) << error;
  }
  {  // as the first schema left it: no journal or relay tables, version 1
    Database db;
    std::string error;
    ASSERT_TRUE(db.Open((dir_ / kStateFileName).string(), &error)) << error;
    ASSERT_TRUE(db.Exec("DROP TABLE job_events; DROP TABLE job_inputs;"
                        "DROP TABLE relay_messages; DROP TABLE relay_sources;"
                        "UPDATE meta SET value = 1 WHERE key = 'schema_version'",
                        &error))
        << error;
  }
  auto store = OpenOrFail();
  ASSERT_NE(store, nullptr);
  std::string error;
  std::vector<StoredSession> sessions;
  ASSERT_TRUE(store->LoadSessions(&sessions, &error)) << error;
  ASSERT_EQ(sessions.size(), 1u);
  EXPECT_EQ(sessions[0].session, 3u);
  uint64_t id = 0;
  ASSERT_TRUE(store->BeginJob("secure-compare", 1, &id, &error)) << error;
  EXPECT_TRUE(store->SaveJobInputs(id, {1, 2}, {}, &error)) << error;
  RelayBatch batch;
  batch.sources.push_back(RelayBatch::Source{4, false, 9});
  EXPECT_TRUE(store->WriteRelayBatch(batch, &error)) << error;
  store.reset();
  Database db;
  ASSERT_TRUE(db.Open((dir_ / kStateFileName).string(), &error)) << error;
  Statement version;
  ASSERT_TRUE(db.Prepare("SELECT value FROM meta WHERE key = 'schema_version'", &version, &error)) << error;
  ASSERT_EQ(version.Next(&error), Step::kRow);
  EXPECT_EQ(version.Int(0), kSchemaVersion);
}

JournalEvent Event(uint64_t seq, uint32_t type, uint64_t now_us) {
  JournalEvent e;
  e.seq = seq;
  e.type = type;
  e.device = 1000 + static_cast<uint32_t>(seq);
  e.round = 2;
  e.artefact = 3;
  e.now_us = now_us;
  e.payload = {uint8_t(seq), 0, 0xff};
  e.entropy = seq == 1 ? std::vector<uint8_t>(32, 0xab) : std::vector<uint8_t>();
  e.undeliverable = {5, 0, 0, 0, 1};
  e.digest = 0xf000'0000'0000'0000ull + seq;  // above INT64_MAX: kept as the same 64 bits
  return e;
}

TEST_F(StateStoreTest, AJobJournalSurvivesARestartInOrderAndGoesWhenTheJobEnds) {
  uint64_t job = 0;
  {
    auto store = OpenOrFail();
    ASSERT_NE(store, nullptr);
    std::string error;
    ASSERT_TRUE(store->BeginJob("fedwalk-walks", 2, &job, &error)) << error;
    ASSERT_TRUE(store->SaveJobInputs(job, {4, 9, 33}, {1, 2, 3, 4}, &error)) << error;
    ASSERT_TRUE(store->AppendJobEvents(job, {Event(1, 1, 10), Event(2, 4, 20)}, &error)) << error;
    ASSERT_TRUE(store->AppendJobEvents(job, {Event(3, 2, 30)}, &error)) << error;
  }
  auto store = OpenOrFail();
  ASSERT_NE(store, nullptr);
  std::string error;
  std::vector<StoredJob> interrupted;
  ASSERT_TRUE(store->InterruptedJobs(&interrupted, &error)) << error;
  ASSERT_EQ(interrupted.size(), 1u);
  EXPECT_EQ(interrupted[0].job_id, job);
  EXPECT_EQ(interrupted[0].state, "running");  // nothing changed by looking
  std::vector<uint32_t> participants;
  std::vector<uint8_t> handoff;
  bool found = false;
  ASSERT_TRUE(store->LoadJobInputs(job, &participants, &handoff, &found, &error)) << error;
  ASSERT_TRUE(found);
  EXPECT_EQ(participants, (std::vector<uint32_t>{4, 9, 33}));
  EXPECT_EQ(handoff, (std::vector<uint8_t>{1, 2, 3, 4}));
  std::vector<JournalEvent> events;
  ASSERT_TRUE(store->LoadJobEvents(job, &events, &error)) << error;
  ASSERT_EQ(events.size(), 3u);
  for (uint64_t i = 0; i < 3; ++i) {
    const JournalEvent want = Event(i + 1, i == 0 ? 1 : i == 1 ? 4 : 2, 10 * (i + 1));
    EXPECT_EQ(events[i].seq, want.seq);
    EXPECT_EQ(events[i].type, want.type);
    EXPECT_EQ(events[i].device, want.device);
    EXPECT_EQ(events[i].round, want.round);
    EXPECT_EQ(events[i].artefact, want.artefact);
    EXPECT_EQ(events[i].now_us, want.now_us);
    EXPECT_EQ(events[i].payload, want.payload);
    EXPECT_EQ(events[i].entropy, want.entropy);
    EXPECT_EQ(events[i].undeliverable, want.undeliverable);
    EXPECT_EQ(events[i].digest, want.digest);
  }
  // Adopted by this start: a further restart finds it interrupted again.
  ASSERT_TRUE(store->AdoptJob(job, &error)) << error;
  ASSERT_TRUE(store->InterruptedJobs(&interrupted, &error)) << error;
  EXPECT_TRUE(interrupted.empty());
  ASSERT_TRUE(store->EndJob(job, "verified", "", &error)) << error;
  ASSERT_TRUE(store->LoadJobInputs(job, &participants, &handoff, &found, &error)) << error;
  EXPECT_FALSE(found);
  ASSERT_TRUE(store->LoadJobEvents(job, &events, &error)) << error;
  EXPECT_TRUE(events.empty());
}

TEST_F(StateStoreTest, AJournalWithAGapIsRefusedAndABatchIsAllOrNothing) {
  auto store = OpenOrFail();
  ASSERT_NE(store, nullptr);
  std::string error;
  uint64_t job = 0;
  ASSERT_TRUE(store->BeginJob("secure-compare", 1, &job, &error)) << error;
  ASSERT_TRUE(store->AppendJobEvents(job, {Event(1, 1, 10)}, &error)) << error;
  // A batch repeating event 1 fails as a whole: event 2 is not kept either.
  EXPECT_FALSE(store->AppendJobEvents(job, {Event(2, 4, 20), Event(1, 4, 30)}, &error));
  std::vector<JournalEvent> events;
  ASSERT_TRUE(store->LoadJobEvents(job, &events, &error)) << error;
  EXPECT_EQ(events.size(), 1u);
  ASSERT_TRUE(store->AppendJobEvents(job, {Event(3, 4, 30)}, &error)) << error;
  EXPECT_FALSE(store->LoadJobEvents(job, &events, &error));
  EXPECT_NE(error.find("misses event 2"), std::string::npos) << error;
}

TEST_F(StateStoreTest, AJobWhoseJournalFailedIsInterruptedButKeepsItsState) {
  uint64_t job = 0;
  {
    auto store = OpenOrFail();
    ASSERT_NE(store, nullptr);
    std::string error;
    ASSERT_TRUE(store->BeginJob("secure-compare", 1, &job, &error)) << error;
    ASSERT_TRUE(store->EndJob(job, "running-unjournaled", "disk full", &error)) << error;
  }
  auto store = OpenOrFail();
  ASSERT_NE(store, nullptr);
  std::string error;
  std::vector<StoredJob> interrupted;
  ASSERT_TRUE(store->InterruptedJobs(&interrupted, &error)) << error;
  ASSERT_EQ(interrupted.size(), 1u);
  EXPECT_EQ(interrupted[0].state, "running-unjournaled");
}

TEST_F(StateStoreTest, ADataDirectoryThatCannotBeCreatedIsAnError) {
  fs::create_directories(dir_);
  { std::ofstream(dir_ / "file") << "x"; }
  std::string error;
  EXPECT_EQ(ServerStateStore::Open((dir_ / "file" / "state").string(), &error), nullptr);
  EXPECT_NE(error.find("data directory"), std::string::npos) << error;
  EXPECT_EQ(ServerStateStore::Open("", &error), nullptr);
}

TEST_F(StateStoreTest, AnUncommittedTransactionLeavesNothing) {
  fs::create_directories(dir_);
  Database db;
  std::string error;
  ASSERT_TRUE(db.Open((dir_ / "t.sqlite").string(), &error)) << error;
  ASSERT_TRUE(db.Exec("CREATE TABLE t(a INTEGER)", &error)) << error;
  {
    Transaction tx(db, &error);
    ASSERT_TRUE(tx.ok()) << error;
    ASSERT_TRUE(db.Exec("INSERT INTO t VALUES(1)", &error)) << error;
  }  // rolled back
  {
    Transaction tx(db, &error);
    ASSERT_TRUE(tx.ok()) << error;
    ASSERT_TRUE(db.Exec("INSERT INTO t VALUES(2)", &error)) << error;
    ASSERT_TRUE(tx.Commit(&error)) << error;
  }
  Statement count;
  ASSERT_TRUE(db.Prepare("SELECT count(*), sum(a) FROM t", &count, &error)) << error;
  ASSERT_EQ(count.Next(&error), Step::kRow) << error;
  EXPECT_EQ(count.Int(0), 1);
  EXPECT_EQ(count.Int(1), 2);
}

}  // namespace
}  // namespace nodefl::server::store
