// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "nodefl/server/core/config.h"

namespace nodefl::server {
namespace {

// A config file in a fresh temporary folder, removed with the fixture.
class ConfigFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("nodefl_config_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path Write(const std::string& name, const std::string& text) {
    const auto path = dir_ / name;
    std::ofstream(path) << text;
    return path;
  }

  std::filesystem::path dir_;
};

ServerConfig ValidBase() {
  ServerConfig config = DefaultServerConfig();
  config.tls_ca_cert = "ca.crt";
  config.tls_server_cert = "server.crt";
  config.tls_server_key = "server.key";
  config.credentials_dir = "creds";
  return config;
}

// Runs ApplyFlags on a list of strings (argv[0] is added).
ConfigStatus Flags(std::vector<std::string> args, ServerConfig& config) {
  args.insert(args.begin(), "nodefl_server");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  return ApplyFlags(static_cast<int>(argv.size()), argv.data(), config);
}

TEST(ServerConfigDefaults, MatchTheDocumentedValues) {
  const ServerConfig c = DefaultServerConfig();
  EXPECT_EQ(c.listen_address, "127.0.0.1");
  EXPECT_EQ(c.listen_port, 7443);
  EXPECT_EQ(c.idle_timeout_ms, 60000u);
  EXPECT_EQ(c.heartbeat_interval_ms, 15000u);
  EXPECT_EQ(c.handshake_timeout_ms, 10000u);
  EXPECT_EQ(c.hello_timeout_ms, 5000u);
  EXPECT_EQ(c.max_frame_bytes, 4608u);
  EXPECT_EQ(c.outbound_queue_messages, 1024u);
  EXPECT_EQ(c.offline_queue_messages, 4096u);
  EXPECT_EQ(c.relay_backpressure_wait_ms, 5000u);
  EXPECT_EQ(c.relay_parked_bytes, 32768u);
  EXPECT_GE(c.threads, 1u);
  EXPECT_EQ(c.log_level, LogLevel::kInfo);
  EXPECT_EQ(c.log_format, LogFormat::kLogfmt);
}

TEST(ServerConfigDefaults, NeedOnlyTheRequiredPathsToValidate) {
  const ConfigStatus missing = ValidateConfig(DefaultServerConfig());
  EXPECT_FALSE(missing.ok);
  EXPECT_NE(missing.message.find("tls_ca_cert"), std::string::npos) << missing.message;
  const ConfigStatus ok = ValidateConfig(ValidBase());
  EXPECT_TRUE(ok.ok) << ok.message;
}

TEST_F(ConfigFileTest, LoadsKeysCommentsBlankLinesAndQuotes) {
  const auto path = Write("good.conf",
                          "# server settings\n"
                          "\n"
                          "listen_address = 0.0.0.0\n"
                          "  listen_port=9000  \n"
                          "tls_ca_cert = \" /tmp/with spaces/ca.pem \"\n"
                          "idle_timeout_ms = 30000\r\n"
                          "   # indented comment\n"
                          "log_format = json\n"
                          "log_level = debug\n"
                          "relay_memory_bytes = 8589934592\n");
  ServerConfig config = DefaultServerConfig();
  const ConfigStatus status = LoadConfigFile(path, config);
  ASSERT_TRUE(status.ok) << status.message;
  EXPECT_EQ(config.listen_address, "0.0.0.0");
  EXPECT_EQ(config.listen_port, 9000);
  EXPECT_EQ(config.tls_ca_cert, " /tmp/with spaces/ca.pem ");
  EXPECT_EQ(config.idle_timeout_ms, 30000u);
  EXPECT_EQ(config.log_format, LogFormat::kJson);
  EXPECT_EQ(config.log_level, LogLevel::kDebug);
  EXPECT_EQ(config.relay_memory_bytes, 8589934592ull);
  EXPECT_EQ(config.heartbeat_interval_ms, 15000u);  // untouched keys keep defaults
}

TEST_F(ConfigFileTest, UnknownKeyIsAnErrorWithItsLineNumber) {
  const auto path = Write("bad.conf", "listen_port = 1\n# comment\nidle_timeout = 5\n");
  ServerConfig config = DefaultServerConfig();
  const ConfigStatus status = LoadConfigFile(path, config);
  ASSERT_FALSE(status.ok);
  EXPECT_NE(status.message.find("bad.conf:3:"), std::string::npos) << status.message;
  EXPECT_NE(status.message.find("unknown key 'idle_timeout'"), std::string::npos) << status.message;
}

// The file loader is the text loader on the file's bytes: the same verdicts,
// named after the file or the caller's name.
TEST_F(ConfigFileTest, TextLoaderMatchesTheFileLoader) {
  const std::string good = "listen_port = 9100\r\n\n# c\nlog_level = \"debug\"";  // no final newline
  const std::string bad = "listen_port = 9100\nlisten_port = 9101\n";
  ServerConfig from_file = DefaultServerConfig(), from_text = DefaultServerConfig();
  ASSERT_TRUE(LoadConfigFile(Write("good.conf", good), from_file).ok);
  ASSERT_TRUE(LoadConfigText(good, "memory", from_text).ok);
  EXPECT_EQ(FormatConfig(from_file), FormatConfig(from_text));
  EXPECT_EQ(from_text.listen_port, 9100);
  EXPECT_EQ(from_text.log_level, LogLevel::kDebug);
  ServerConfig scratch = DefaultServerConfig();
  const ConfigStatus text_status = LoadConfigText(bad, "memory", scratch);
  ASSERT_FALSE(text_status.ok);
  EXPECT_EQ(text_status.message.rfind("memory:2: duplicate key 'listen_port' (first set on line 1)", 0), 0u)
      << text_status.message;
  const auto bad_path = Write("dup.conf", bad);
  const ConfigStatus file_status = LoadConfigFile(bad_path, scratch);
  ASSERT_FALSE(file_status.ok);
  EXPECT_EQ(file_status.message, bad_path.string() + text_status.message.substr(6));
  // An empty text sets nothing.
  ServerConfig empty = DefaultServerConfig();
  EXPECT_TRUE(LoadConfigText("", "memory", empty).ok);
  EXPECT_EQ(FormatConfig(empty), FormatConfig(DefaultServerConfig()));
}

TEST_F(ConfigFileTest, BadValuesNameTheLineAndTheKey) {
  struct Case {
    std::string line;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"listen_port = 70000", "listen_port: '70000' is out of range (0..65535)"},
      {"listen_port = -1", "listen_port: '-1' is not a non-negative integer"},
      {"idle_timeout_ms = 12abc", "idle_timeout_ms: '12abc' is not a non-negative integer"},
      {"max_devices =", "max_devices: '' is not a non-negative integer"},
      {"threads = 99999999999", "threads: '99999999999' is out of range"},
      {"log_level = verbose", "log_level: 'verbose' is not one of debug, info, warn, error"},
      {"log_format = xml", "log_format: 'xml' is not one of logfmt, json"},
      {"just some words", "expected 'key = value'"},
      {"= 5", "missing key"},
  };
  for (const Case& c : cases) {
    const auto path = Write("values.conf", "# first line\n" + c.line + "\n");
    ServerConfig config = DefaultServerConfig();
    const ConfigStatus status = LoadConfigFile(path, config);
    EXPECT_FALSE(status.ok) << c.line;
    EXPECT_NE(status.message.find("values.conf:2: "), std::string::npos) << status.message;
    EXPECT_NE(status.message.find(c.expected), std::string::npos)
        << "line '" << c.line << "' gave: " << status.message;
  }
}

TEST_F(ConfigFileTest, DuplicateKeyPointsAtTheFirstOne) {
  const auto path = Write("dup.conf", "threads = 2\nlisten_port = 1\nthreads = 3\n");
  ServerConfig config = DefaultServerConfig();
  const ConfigStatus status = LoadConfigFile(path, config);
  ASSERT_FALSE(status.ok);
  EXPECT_NE(status.message.find("dup.conf:3: duplicate key 'threads' (first set on line 1)"),
            std::string::npos)
      << status.message;
}

TEST_F(ConfigFileTest, MissingFileIsAnError) {
  ServerConfig config = DefaultServerConfig();
  const ConfigStatus status = LoadConfigFile(dir_ / "nope.conf", config);
  EXPECT_FALSE(status.ok);
  EXPECT_NE(status.message.find("cannot open"), std::string::npos);
}

TEST_F(ConfigFileTest, FlagsOverrideTheFileWhereverConfigAppears) {
  const auto path = Write("base.conf", "listen_port = 9000\nthreads = 3\nlog_format = json\n");
  ServerConfig config = DefaultServerConfig();
  // --listen_port comes BEFORE --config and must still win.
  const ConfigStatus status = Flags({"--listen_port", "9100", "--config", path.string(),
                                     "--idle-timeout-ms=20000", "--threads", "5"},
                                    config);
  ASSERT_TRUE(status.ok) << status.message;
  EXPECT_FALSE(status.help_requested);
  EXPECT_EQ(config.listen_port, 9100);
  EXPECT_EQ(config.threads, 5u);
  EXPECT_EQ(config.idle_timeout_ms, 20000u);
  EXPECT_EQ(config.log_format, LogFormat::kJson);  // from the file, not overridden
}

TEST_F(ConfigFileTest, ErrorsInAConfigFileGivenByFlagKeepTheirLocation) {
  const auto path = Write("flagged.conf", "listen_port = 1\nbogus = 2\n");
  ServerConfig config = DefaultServerConfig();
  const ConfigStatus status = Flags({"--config", path.string()}, config);
  ASSERT_FALSE(status.ok);
  EXPECT_NE(status.message.find("flagged.conf:2: unknown key 'bogus'"), std::string::npos)
      << status.message;
}

TEST(ServerConfigFlags, ReportBadFlagsClearly) {
  struct Case {
    std::vector<std::string> args;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {{"--no_such_key", "1"}, "--no_such_key: unknown flag"},
      {{"--listen_port"}, "--listen_port: missing value"},
      {{"--listen_port", "--threads", "2"}, "--listen_port: missing value"},
      {{"--listen_port", "x"}, "--listen_port: 'x' is not a non-negative integer"},
      {{"positional"}, "'positional': expected --key value"},
      {{"--config"}, "--config: missing value"},
  };
  for (const Case& c : cases) {
    ServerConfig config = DefaultServerConfig();
    const ConfigStatus status = Flags(c.args, config);
    EXPECT_FALSE(status.ok) << c.expected;
    EXPECT_NE(status.message.find(c.expected), std::string::npos)
        << "wanted '" << c.expected << "', got: " << status.message;
  }
}

TEST(ServerConfigFlags, HelpIsReportedAndListsEveryKeyWithDefaults) {
  ServerConfig config = DefaultServerConfig();
  const ConfigStatus status = Flags({"--threads", "2", "--help"}, config);
  EXPECT_TRUE(status.ok);
  EXPECT_TRUE(status.help_requested);
  const std::string help = ConfigHelpText();
  for (const char* key :
       {"listen_address", "listen_port", "tls_ca_cert", "tls_server_cert", "tls_server_key",
        "credentials_dir", "max_devices", "idle_timeout_ms", "heartbeat_interval_ms",
        "handshake_timeout_ms", "hello_timeout_ms", "max_frame_bytes", "outbound_queue_messages",
        "outbound_queue_bytes", "offline_queue_messages", "offline_queue_bytes",
        "relay_memory_bytes", "relay_backpressure_wait_ms", "relay_parked_bytes", "threads", "log_level", "log_format"}) {
    EXPECT_NE(help.find(std::string("--") + key + " "), std::string::npos) << key;
  }
  EXPECT_NE(help.find("--config FILE"), std::string::npos);
  EXPECT_NE(help.find("(default: 7443)"), std::string::npos);
  EXPECT_NE(help.find("(default: 127.0.0.1)"), std::string::npos);
  EXPECT_NE(help.find("(default: logfmt)"), std::string::npos);
}

TEST(ServerConfigValidate, RejectsBadCombinationsWithTheKeyNamed) {
  struct Case {
    void (*mutate)(ServerConfig&);
    std::string expected;
  };
  const std::vector<Case> cases = {
      {[](ServerConfig& c) { c.max_devices = 0; }, "max_devices: must be at least 1"},
      {[](ServerConfig& c) { c.heartbeat_interval_ms = c.idle_timeout_ms; },
       "heartbeat_interval_ms: 60000 must be below idle_timeout_ms (60000)"},
      {[](ServerConfig& c) { c.hello_timeout_ms = 0; }, "hello_timeout_ms"},
      {[](ServerConfig& c) { c.max_frame_bytes = 10; }, "max_frame_bytes: 10 is outside"},
      {[](ServerConfig& c) { c.outbound_queue_messages = 0; }, "outbound_queue_messages"},
      {[](ServerConfig& c) { c.offline_queue_bytes = 100; }, "offline_queue_bytes: must be at least"},
      {[](ServerConfig& c) { c.relay_memory_bytes = 1; }, "relay_memory_bytes"},
      {[](ServerConfig& c) { c.relay_journal_ms = 0; }, "relay_journal_ms: must be from 1 to 60000"},
      {[](ServerConfig& c) { c.relay_journal_ms = 60001; }, "relay_journal_ms: must be from 1 to 60000"},
      {[](ServerConfig& c) { c.threads = 0; }, "threads: 0 is outside 1..1024"},
      {[](ServerConfig& c) { c.credentials_dir.clear(); }, "credentials_dir: required"},
      {[](ServerConfig& c) { c.listen_address.clear(); }, "listen_address"},
  };
  for (const Case& c : cases) {
    ServerConfig config = ValidBase();
    c.mutate(config);
    const ConfigStatus status = ValidateConfig(config);
    EXPECT_FALSE(status.ok) << c.expected;
    EXPECT_NE(status.message.find(c.expected), std::string::npos)
        << "wanted '" << c.expected << "', got: " << status.message;
  }
}

// Without job options installed, `job` names nothing but "none".
TEST(ServerConfigValidate, JobNeedsARegisteredKind) {
  ServerConfig config = ValidBase();
  config.job = "fedwalk";
  const ConfigStatus status = ValidateConfig(config);
  EXPECT_FALSE(status.ok);
  EXPECT_NE(status.message.find("job: 'fedwalk' is not a known job"), std::string::npos) << status.message;
}

TEST_F(ConfigFileTest, FormatConfigRoundTripsThroughAFile) {
  ServerConfig original = ValidBase();
  original.tls_server_key = " key with edge spaces ";
  original.listen_port = 0;
  original.log_format = LogFormat::kJson;
  original.offline_queue_bytes = 123456789;
  const auto path = Write("round.conf", FormatConfig(original));
  ServerConfig loaded = DefaultServerConfig();
  const ConfigStatus status = LoadConfigFile(path, loaded);
  ASSERT_TRUE(status.ok) << status.message;
  EXPECT_EQ(FormatConfig(loaded), FormatConfig(original));
  EXPECT_EQ(loaded.tls_server_key, original.tls_server_key);
}

// Found by tests/fuzz/fuzz_config_file: the loader trims '\r' off an
// unquoted value, but FormatConfig quoted only edge spaces, tabs and
// quotes, so a value ending in '\r' (from a quoted value in a CRLF file)
// came back without it. (A '\n' cannot be in a line-based file at all.)
TEST_F(ConfigFileTest, FormatConfigQuotesValuesWithEdgeCarriageReturns) {
  ServerConfig original = ValidBase();
  original.tls_server_key = "key\r";
  original.tls_ca_cert = "\rca";
  const auto path = Write("breaks.conf", FormatConfig(original));
  ServerConfig loaded = DefaultServerConfig();
  const ConfigStatus status = LoadConfigFile(path, loaded);
  ASSERT_TRUE(status.ok) << status.message;
  EXPECT_EQ(loaded.tls_server_key, original.tls_server_key);
  EXPECT_EQ(loaded.tls_ca_cert, original.tls_ca_cert);
}

}  // namespace
}  // namespace nodefl::server
