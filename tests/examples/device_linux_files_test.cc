// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The board client's files (examples/device-linux/node_files.h): what a
// board keeps is read exactly or refused with the line at fault, and the
// lifetime privacy spend survives a restart bit for bit.
#include "node_files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace nodefl::device_linux {
namespace {

class NodeFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/nodefl_files_XXXXXX";
    ASSERT_NE(::mkdtemp(name), nullptr);
    dir_ = name;
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  std::string dir_;
};

TEST_F(NodeFilesTest, NeighboursAreSortedDeduplicatedAndCommentsSkipped) {
  const std::string path = Write("n.txt", "# node 7's neighbours\n12 3,9\n\n3 # again\r\n40\t1\n");
  std::vector<uint32_t> ids;
  ASSERT_EQ(ReadNeighbours(path, 7, &ids), "");
  EXPECT_EQ(ids, (std::vector<uint32_t>{1, 3, 9, 12, 40}));
}

TEST_F(NodeFilesTest, NeighboursRefuseWhatIsNotANodeIdNamingTheLine) {
  std::vector<uint32_t> ids;
  EXPECT_NE(ReadNeighbours(Write("a.txt", "1\n2\nx3\n"), 7, &ids).find("line 3: 'x3' is not a node id"),
            std::string::npos);
  EXPECT_NE(ReadNeighbours(Write("b.txt", "1 -2\n"), 7, &ids).find("'-2'"), std::string::npos);
  EXPECT_NE(ReadNeighbours(Write("c.txt", "4294967296\n"), 7, &ids).find("not a node id"), std::string::npos);
  EXPECT_NE(ReadNeighbours(Write("d.txt", "1 7\n"), 7, &ids).find("the device's own id"), std::string::npos);
  EXPECT_NE(ReadNeighbours(dir_ + "/missing.txt", 7, &ids).find("cannot open"), std::string::npos);
}

TEST_F(NodeFilesTest, FeaturesAreReadInOrderAndMustBeFiniteNumbers) {
  std::vector<float> values;
  ASSERT_EQ(ReadFeatures(Write("f.txt", "0 1.5, -2e-3\n# comment\n4\n"), &values), "");
  ASSERT_EQ(values.size(), 4u);
  EXPECT_FLOAT_EQ(values[1], 1.5f);
  EXPECT_FLOAT_EQ(values[2], -2e-3f);
  EXPECT_NE(ReadFeatures(Write("g.txt", "1 nan\n"), &values).find("line 1: 'nan' is not a finite number"),
            std::string::npos);
  EXPECT_NE(ReadFeatures(Write("h.txt", "1 2x\n"), &values).find("'2x'"), std::string::npos);
  EXPECT_NE(ReadFeatures(Write("i.txt", "# nothing\n"), &values).find("no feature values"), std::string::npos);
}

TEST_F(NodeFilesTest, SmallFilesAreBoundedAndNotEmpty) {
  std::vector<uint8_t> bytes;
  ASSERT_EQ(ReadSmallFile(Write("k.pem", "-----BEGIN-----\n"), 64, &bytes), "");
  EXPECT_EQ(bytes.size(), 16u);
  EXPECT_NE(ReadSmallFile(Write("big.pem", std::string(65, 'a')), 64, &bytes).find("larger than 64 bytes"),
            std::string::npos);
  EXPECT_NE(ReadSmallFile(Write("empty.pem", ""), 64, &bytes).find("empty"), std::string::npos);
}

TEST_F(NodeFilesTest, TheLedgerStartsAtZeroAndReadsBackExactly) {
  const std::string path = dir_ + "/ledger.txt";
  LifetimeSpent spent{1.0, 1.0};
  ASSERT_EQ(ReadLedgerFile(path, &spent), "");  // a first life
  EXPECT_EQ(spent.epsilon, 0.0);
  EXPECT_EQ(spent.delta, 0.0);
  // Values that lose bits in a short decimal form.
  const LifetimeSpent written{0.1 + 0.2, 1.0 / 3.0 * 1e-5};
  ASSERT_EQ(WriteLedgerFile(path, written), "");
  ASSERT_EQ(ReadLedgerFile(path, &spent), "");
  EXPECT_EQ(spent.epsilon, written.epsilon);
  EXPECT_EQ(spent.delta, written.delta);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_NE(::access((path + ".tmp").c_str(), F_OK), 0);  // renamed, not left behind
}

TEST_F(NodeFilesTest, AnUnreadableLedgerIsAnErrorNotAFreshBudget) {
  LifetimeSpent spent;
  EXPECT_NE(ReadLedgerFile(Write("l1.txt", "lifetime_epsilon 3\n"), &spent).find("expected the lines"),
            std::string::npos);
  EXPECT_NE(ReadLedgerFile(Write("l2.txt", "lifetime_epsilon -1\nlifetime_delta 0\n"), &spent).find("non-negative"),
            std::string::npos);
  EXPECT_NE(ReadLedgerFile(Write("l3.txt", "lifetime_epsilon 1\nlifetime_delta 0\nbudget 5\n"), &spent)
                .find("unknown key 'budget'"),
            std::string::npos);
  EXPECT_NE(ReadLedgerFile(Write("l4.txt", "lifetime_epsilon 1\nlifetime_delta zero\n"), &spent)
                .find("expected the lines"),
            std::string::npos);
}

}  // namespace
}  // namespace nodefl::device_linux
