// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/host/cli/flag_parser.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

namespace nodefl::host::cli {
namespace {

struct Args {
  explicit Args(std::vector<std::string> a) : storage(std::move(a)) {
    storage.insert(storage.begin(), "tool");
    for (auto& s : storage) argv.push_back(s.data());
  }
  int argc() const { return static_cast<int>(argv.size()); }
  std::vector<std::string> storage;
  std::vector<char*> argv;
};

struct Parsed {
  std::string graph;
  uint32_t bins = 0;
  double epsilon = 2;
  bool fast = false;
  std::string mode = "strict";
};

FlagParser MakeParser(Parsed* p) {
  FlagParser flags("tool");
  flags.Value("--graph", Text(&p->graph))
      .Value("--bins", Whole(&p->bins, 1, 16))
      .Value("--epsilon", Real(&p->epsilon, 0, true, std::numeric_limits<double>::max()))
      .Value("--mode", OneOf({"strict", "paper"}, [p](const std::string& v) { p->mode = v; }))
      .Switch("--fast", [p] { p->fast = true; });
  return flags;
}

ParseOutcome ParseArgs(std::vector<std::string> a, Parsed* p, std::string* err = nullptr) {
  Args args(std::move(a));
  ::testing::internal::CaptureStderr();
  const ParseOutcome outcome = MakeParser(p).Parse(args.argc(), args.argv.data());
  const std::string text = ::testing::internal::GetCapturedStderr();
  if (err != nullptr) *err = text;
  return outcome;
}

TEST(FlagParser, TakesValuesSwitchesAndEqualsForm) {
  Parsed p;
  EXPECT_EQ(ParseArgs({"--graph", "g", "--bins=3", "--fast", "--epsilon", "0.5", "--mode", "paper"}, &p), ParseOutcome::kOk);
  EXPECT_EQ(p.graph, "g");
  EXPECT_EQ(p.bins, 3u);
  EXPECT_TRUE(p.fast);
  EXPECT_EQ(p.epsilon, 0.5);
  EXPECT_EQ(p.mode, "paper");
}

TEST(FlagParser, HelpWinsWherever) {
  Parsed p;
  EXPECT_EQ(ParseArgs({"--graph", "g", "-h"}, &p), ParseOutcome::kHelp);
  EXPECT_EQ(ParseArgs({"--help", "--nope"}, &p), ParseOutcome::kHelp);
}

TEST(FlagParser, ErrorsNameTheFlagAndWhatItWants) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--bins", "17"}, "tool: --bins expects a whole number 1 .. 16, got '17'"},
      {{"--bins", "-1"}, "tool: --bins expects a whole number 1 .. 16, got '-1'"},
      {{"--bins", "3x"}, "tool: --bins expects a whole number 1 .. 16, got '3x'"},
      {{"--epsilon", "0"}, "tool: --epsilon expects a positive number, got '0'"},
      {{"--epsilon", "inf"}, "tool: --epsilon expects a positive number, got 'inf'"},
      {{"--mode", "loose"}, "tool: --mode expects strict or paper, got 'loose'"},
      {{"--graph"}, "tool: --graph needs a value (see --help)"},
      {{"--fast=1"}, "tool: --fast takes no value (see --help)"},
      {{"graph"}, "tool: unknown argument 'graph' (see --help)"},
      {{"--grap", "x"}, "tool: unknown argument '--grap' (see --help)"},
  };
  for (const Case& c : cases) {
    Parsed p;
    std::string err;
    EXPECT_EQ(ParseArgs(c.args, &p, &err), ParseOutcome::kError) << c.message;
    EXPECT_EQ(err, c.message + "\n");
  }
}

TEST(FlagParser, SharedFlagSetsGoFirst) {
  Parsed p;
  int shared_seen = 0;
  FlagParser flags = MakeParser(&p);
  flags.Shared([&shared_seen](int argc, char** argv, int* i, std::string* error) {
    const std::string arg = argv[*i];
    if (arg == "--dim") {
      if (*i + 1 >= argc || std::string(argv[*i + 1]) == "0") {
        *error = "dim must be 1 .. 4096";
        return SharedFlag::kBad;
      }
      ++*i;
      ++shared_seen;
      return SharedFlag::kTaken;
    }
    return SharedFlag::kNotMine;
  });
  Args ok({"--dim", "8", "--graph", "g"});
  EXPECT_EQ(flags.Parse(ok.argc(), ok.argv.data()), ParseOutcome::kOk);
  EXPECT_EQ(shared_seen, 1);
  EXPECT_EQ(p.graph, "g");
  Args bad({"--dim", "0"});
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(flags.Parse(bad.argc(), bad.argv.data()), ParseOutcome::kError);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "tool: dim must be 1 .. 4096\n");
}

}  // namespace
}  // namespace nodefl::host::cli
