// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The job catalog: every job's keys parse, print, validate and reach the
// job like the server's own; ranges come from the contract's constants.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "nodefl/protocol/compare/job_format.h"
#include "nodefl/protocol/echo/job_format.h"
#include "nodefl/protocol/fedwalk/hct_format.h"
#include "nodefl/server/jobs/fedwalk_kind.h"
#include "nodefl/server/jobs/job_catalog.h"
#include "nodefl/server/jobs/job_factory.h"
#include "nodefl/server/jobs/neighbour_echo_kind.h"
#include "nodefl/server/jobs/secure_compare_kind.h"

namespace nodefl::server::jobs {
namespace {

ServerConfig ValidBase() {
  ServerConfig config = DefaultServerConfigWithJobs();
  config.tls_ca_cert = "ca.crt";
  config.tls_server_cert = "server.crt";
  config.tls_server_key = "server.key";
  config.credentials_dir = "creds";
  return config;
}

ConfigStatus Flags(std::vector<std::string> args, ServerConfig& config) {
  args.insert(args.begin(), "nodefl-server");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  return ApplyFlags(static_cast<int>(argv.size()), argv.data(), config);
}

std::string Problem(const ServerConfig& config) {
  const ConfigStatus status = ValidateConfig(config);
  return status.ok ? std::string() : status.message;
}

TEST(JobCatalog, EveryRegisteredJobValidatesAndHasStages) {
  for (const JobKind* kind : JobKinds()) {
    ServerConfig config = ValidBase();
    config.job = std::string(kind->name);
    EXPECT_EQ(Problem(config), "") << kind->name;
    EXPECT_FALSE(JobStages(config).empty()) << kind->name;
    EXPECT_EQ(FindJobKind(kind->name), kind);
  }
  ServerConfig config = ValidBase();
  config.job = "fedwalks";
  EXPECT_NE(Problem(config).find("job: 'fedwalks' is not a known job"), std::string::npos);
  EXPECT_TRUE(JobStages(config).empty());
}

TEST(JobCatalog, FedWalkStagesFollowTheMode) {
  ServerConfig config = ValidBase();
  config.job = "fedwalk";
  EXPECT_EQ(JobStages(config), std::vector<std::string>{"fedwalk-histograms"});
  Options<FedWalkJobConfig>(config).mode = "paper";
  EXPECT_EQ(JobStages(config), (std::vector<std::string>{"fedwalk-hct", "fedwalk-walks"}));
}

TEST(JobCatalog, JobKeysParseFromFlagsIntoTheirJobsOptions) {
  ServerConfig config = ValidBase();
  ASSERT_TRUE(Flags({"--fedwalk-score-clip", "250.5", "--compare_results_public", "false", "--job_payload_bytes=100",
                     "--job", "secure-compare"},
                    config)
                  .ok);
  EXPECT_EQ(Options<FedWalkJobConfig>(config).score_clip, 250.5);
  EXPECT_FALSE(Options<SecureCompareJobConfig>(config).results_public);
  EXPECT_EQ(Options<NeighbourEchoJobConfig>(config).payload_bytes, 100u);
  EXPECT_EQ(Problem(config), "");
  // A copy is independent (the groups are cloned).
  ServerConfig copy = config;
  Options<FedWalkJobConfig>(copy).score_clip = 1;
  EXPECT_EQ(Options<FedWalkJobConfig>(config).score_clip, 250.5);
}

TEST(JobCatalog, BadValuesNameTheKey) {
  ServerConfig config = ValidBase();
  const ConfigStatus not_bool = Flags({"--compare_results_public", "yes"}, config);
  EXPECT_FALSE(not_bool.ok);
  EXPECT_NE(not_bool.message.find("compare_results_public: 'yes' is not true or false"), std::string::npos)
      << not_bool.message;
  const ConfigStatus unknown = Flags({"--fedwalk_bogus", "1"}, config);
  EXPECT_FALSE(unknown.ok);
  EXPECT_NE(unknown.message.find("fedwalk_bogus: unknown flag"), std::string::npos);
}

// The ranges are the contract's: one past each bound is refused.
TEST(JobCatalog, RangesComeFromTheContract) {
  struct Case {
    void (*mutate)(ServerConfig&);
    std::string expected;
  };
  const std::vector<Case> cases = {
      {[](ServerConfig& c) { Options<FedWalkJobConfig>(c).bins = nodefl::fedwalk::kMaxBins + 1; }, "fedwalk_bins"},
      {[](ServerConfig& c) { Options<FedWalkJobConfig>(c).buckets = nodefl::fedwalk::kMaxBuckets + 1; },
       "fedwalk_buckets"},
      {[](ServerConfig& c) { Options<FedWalkJobConfig>(c).codebook_k = nodefl::fedwalk::kMaxCodebookK + 1; },
       "fedwalk_codebook_k"},
      {[](ServerConfig& c) { Options<SecureCompareJobConfig>(c).width = nodefl::compare::kMaxCompareWidth + 1; },
       "compare_width"},
      {[](ServerConfig& c) {
         Options<SecureCompareJobConfig>(c).digit_bits = nodefl::compare::kMaxCompareDigitBits + 1;
       },
       "compare_digit_bits"},
      {[](ServerConfig& c) { Options<NeighbourEchoJobConfig>(c).payload_bytes = echo::kEchoMaxPayloadBytes + 1; },
       "job_payload_bytes: " + std::to_string(echo::kEchoMaxPayloadBytes + 1) + " is outside 56..4064"},
      {[](ServerConfig& c) { Options<NeighbourEchoJobConfig>(c).payload_bytes = echo::kEchoHeaderBytes - 1; },
       "job_payload_bytes"},
      {[](ServerConfig& c) { Options<FedWalkJobConfig>(c).mode = "loose"; }, "fedwalk_mode: 'loose'"},
      {[](ServerConfig& c) { Options<FedWalkJobConfig>(c).predictor = "oracle"; },
       "fedwalk_predictor: 'oracle' is not tree or neighbours"},
      {[](ServerConfig& c) { Options<SecureCompareJobConfig>(c).mode = "fast"; }, "compare_mode: 'fast'"},
  };
  for (const Case& c : cases) {
    ServerConfig config = ValidBase();
    c.mutate(config);
    EXPECT_NE(Problem(config).find(c.expected), std::string::npos)
        << "wanted '" << c.expected << "', got: " << Problem(config);
  }
  // The bounds themselves pass.
  ServerConfig config = ValidBase();
  Options<FedWalkJobConfig>(config).bins = nodefl::fedwalk::kMaxBins;
  Options<NeighbourEchoJobConfig>(config).payload_bytes = echo::kEchoMaxPayloadBytes;
  Options<SecureCompareJobConfig>(config).width = nodefl::compare::kMaxCompareWidth;
  EXPECT_EQ(Problem(config), "");
}

// FedWalk's optional Eq. 10 clip: 0 (none, the paper's score) by default,
// else a positive bound; the help says what it does.
TEST(JobCatalog, FedWalkScoreClipIsZeroOrAPositiveBound) {
  ServerConfig config = ValidBase();
  EXPECT_EQ(Options<FedWalkJobConfig>(config).score_clip, 0.0);
  for (double bad : {-1.0, 1e-9, 1e13, std::numeric_limits<double>::infinity(), std::nan("")}) {
    Options<FedWalkJobConfig>(config).score_clip = bad;
    EXPECT_NE(Problem(config).find("fedwalk_score_clip: must be 0 (no clip)"), std::string::npos) << bad;
  }
}

TEST(JobCatalog, HelpAndFormatCoverEveryJobKey) {
  const ServerConfig defaults = DefaultServerConfigWithJobs();
  const std::string help = JobsHelpText(defaults);
  for (size_t g = 0; g < defaults.job_options.size(); ++g) {
    for (size_t i = 0; i < defaults.job_options[g].size(); ++i) {
      EXPECT_NE(help.find("--" + std::string(defaults.job_options[g].key(i)) + " "), std::string::npos)
          << defaults.job_options[g].key(i);
    }
  }
  EXPECT_NE(help.find("(default: true)"), std::string::npos);  // compare_results_public, a bool
  EXPECT_NE(help.find("[-B, 0]"), std::string::npos);
  EXPECT_NE(help.find("semi-honest"), std::string::npos);
  for (const JobKind* kind : JobKinds()) EXPECT_NE(help.find("  " + std::string(kind->name) + " "), std::string::npos);
  // FormatConfig's lines read back into an equal configuration.
  ServerConfig changed = ValidBase();
  Options<FedWalkJobConfig>(changed).epsilon_walk = 0.75;
  Options<SecureCompareJobConfig>(changed).results_public = false;
  const std::string text = FormatConfig(changed);
  ServerConfig reread = ValidBase();
  size_t at = 0;
  while (at < text.size()) {
    const size_t end = text.find('\n', at);
    const std::string line = text.substr(at, end - at);
    at = end + 1;
    const size_t eq = line.find(" = ");
    ASSERT_NE(eq, std::string::npos) << line;
    std::string value = line.substr(eq + 3);
    if (value.size() >= 2 && value.front() == '"') value = value.substr(1, value.size() - 2);
    ASSERT_TRUE(SetConfigValue(reread, line.substr(0, eq), value).ok) << line;
  }
  EXPECT_EQ(FormatConfig(reread), text);
  EXPECT_EQ(Options<FedWalkJobConfig>(reread).epsilon_walk, 0.75);
  EXPECT_FALSE(Options<SecureCompareJobConfig>(reread).results_public);
}

}  // namespace
}  // namespace nodefl::server::jobs
