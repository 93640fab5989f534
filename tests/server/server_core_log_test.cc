// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "nodefl/server/core/log.h"

namespace nodefl::server {
namespace {

constexpr std::string_view kTs = "2024-05-01T12:00:00.000001Z";

TEST(LogfmtFormat, PlainFieldsStayBare) {
  const Logger log(LogLevel::kDebug, LogFormat::kLogfmt, nullptr);
  const std::string line =
      log.FormatLine(kTs, LogLevel::kInfo, "device_registered",
                     {{"device", 12}, {"peer", "127.0.0.1:5555"}, {"queued", 1024u}});
  EXPECT_EQ(line,
            "ts=2024-05-01T12:00:00.000001Z level=info event=device_registered device=12 "
            "peer=127.0.0.1:5555 queued=1024\n");
}

TEST(LogfmtFormat, ValuesOfEveryType) {
  const Logger log(LogLevel::kDebug, LogFormat::kLogfmt, nullptr);
  const std::string s = "owned";
  const std::string line = log.FormatLine(
      kTs, LogLevel::kWarn, "e",
      {{"neg", -5}, {"big", std::numeric_limits<uint64_t>::max()}, {"half", 0.5}, {"yes", true},
       {"str", s}, {"nan", std::nan("")}, {"inf", -std::numeric_limits<double>::infinity()}});
  EXPECT_EQ(line, std::string("ts=") + std::string(kTs) +
                      " level=warn event=e neg=-5 big=18446744073709551615 half=0.5 yes=true "
                      "str=owned nan=NaN inf=-Inf\n");
}

TEST(LogfmtFormat, QuotesAndEscapesAnythingThatCouldForgeAField) {
  const Logger log(LogLevel::kDebug, LogFormat::kLogfmt, nullptr);
  const std::string line = log.FormatLine(
      kTs, LogLevel::kError, "bad hello",
      {{"software", "evil level=debug"},
       {"quote", "say \"hi\"\\"},
       {"newline", "a\nts=forged"},
       {"ctrl", std::string_view("\x01\t\r", 3)},
       {"empty", ""},
       {"utf8", "gr\xC3\xBC\xC3\x9F"},
       {"invalid", "\xFF\xC3"},
       {"bad key!", 1}});
  EXPECT_EQ(line, std::string("ts=") + std::string(kTs) +
                      " level=error event=\"bad hello\" software=\"evil level=debug\" "
                      "quote=\"say \\\"hi\\\"\\\\\" newline=\"a\\nts=forged\" "
                      "ctrl=\"\\x01\\t\\r\" empty=\"\" utf8=\"gr\xC3\xBC\xC3\x9F\" "
                      "invalid=\"\\xff\\xc3\" bad_key_=1\n");
  // Exactly one line, whatever the values held.
  EXPECT_EQ(line.find('\n'), line.size() - 1);
}

TEST(JsonFormat, EscapesPerRfc8259AndReplacesInvalidUtf8) {
  const Logger log(LogLevel::kDebug, LogFormat::kJson, nullptr);
  const std::string line = log.FormatLine(
      kTs, LogLevel::kInfo, "relay_queue_full",
      {{"device", 12},
       {"queued", 1024u},
       {"ratio", 0.25},
       {"ok", false},
       {"text", "q\"b\\n\nt\tc\x01\x1f"},
       {"utf8", "\xE2\x82\xAC"},
       {"invalid", "a\xC0\xAF" "b"},  // overlong '/' must not pass through
       {"nan", std::nan("")},
       {"k\"ey", 1}});
  EXPECT_EQ(line, std::string("{\"ts\":\"") + std::string(kTs) +
                      "\",\"level\":\"info\",\"event\":\"relay_queue_full\",\"device\":12,"
                      "\"queued\":1024,\"ratio\":0.25,\"ok\":false,"
                      "\"text\":\"q\\\"b\\\\n\\nt\\tc\\u0001\\u001f\","
                      "\"utf8\":\"\xE2\x82\xAC\",\"invalid\":\"a\\ufffd\\ufffdb\","
                      "\"nan\":null,\"k_ey\":1}\n");
}

TEST(Logger, FiltersByLevelAndWritesWholeLinesFromManyThreads) {
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  Logger log(LogLevel::kInfo, LogFormat::kLogfmt, file);
  log.Debug("hidden", {{"x", 1}});
  EXPECT_FALSE(log.Enabled(LogLevel::kDebug));
  constexpr int kThreads = 4;
  constexpr int kLines = 500;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&log, t] {
      for (int i = 0; i < kLines; ++i) {
        log.Info("tick", {{"thread", t}, {"i", i}, {"pad", std::string(100, 'a' + t)}});
      }
    });
  }
  for (auto& thread : threads) thread.join();
  log.set_level(LogLevel::kDebug);
  log.Debug("now_visible");

  std::rewind(file);
  std::set<std::string> seen;
  char buf[512];
  int lines = 0;
  while (std::fgets(buf, sizeof(buf), file) != nullptr) {
    const std::string line(buf);
    ASSERT_EQ(line.back(), '\n');
    ++lines;
    EXPECT_EQ(line.find("hidden"), std::string::npos);
    if (line.find("event=tick") == std::string::npos) continue;
    // An interleaved write would break the "thread=t ... pad=<t's letter>" pairing.
    const size_t tpos = line.find(" thread=");
    ASSERT_NE(tpos, std::string::npos) << line;
    const int t = line[tpos + 8] - '0';
    EXPECT_NE(line.find(" pad=" + std::string(100, static_cast<char>('a' + t)) + "\n"),
              std::string::npos)
        << line;
    seen.insert(line.substr(tpos, line.find(" pad=") - tpos));
  }
  std::fclose(file);
  EXPECT_EQ(lines, kThreads * kLines + 1);
  EXPECT_EQ(seen.size(), static_cast<size_t>(kThreads * kLines));
}

TEST(Logger, TimestampIsRfc3339WithMicroseconds) {
  const std::string ts = LogTimestampNow();
  ASSERT_EQ(ts.size(), 27u) << ts;
  EXPECT_EQ(ts[4], '-');
  EXPECT_EQ(ts[10], 'T');
  EXPECT_EQ(ts[19], '.');
  EXPECT_EQ(ts.back(), 'Z');
}

TEST(LogNames, ParseWhatTheyPrint) {
  for (LogLevel level : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn, LogLevel::kError}) {
    LogLevel parsed = LogLevel::kError;
    EXPECT_TRUE(ParseLogLevel(LogLevelName(level), &parsed));
    EXPECT_EQ(parsed, level);
  }
  LogFormat format = LogFormat::kLogfmt;
  EXPECT_TRUE(ParseLogFormat("json", &format));
  EXPECT_EQ(format, LogFormat::kJson);
  EXPECT_FALSE(ParseLogFormat("JSON", &format));
  LogLevel level = LogLevel::kInfo;
  EXPECT_FALSE(ParseLogLevel("trace", &level));
}

}  // namespace
}  // namespace nodefl::server
