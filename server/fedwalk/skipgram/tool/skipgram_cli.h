// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Command-line pieces shared by nodefl-skipgram and nodefl-deepwalk: the
// SkipGram flags (same names in both tools) and a throttled progress line.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "nodefl/host/cli/flag_parser.h"
#include "nodefl/server/fedwalk/skipgram/skipgram_options.h"
#include "nodefl/server/fedwalk/skipgram/walk_corpus.h"

namespace nodefl::server::fedwalk::cli {

// The help lines for the SkipGram flags, each ending in '\n'.
const char* SkipGramFlagsHelp();

// Handles argv[*i] if it is a SkipGram flag. Flags that take a value read
// argv[*i + 1] and advance *i. kBad sets *error to a message for the user.
host::cli::SharedFlag ParseSkipGramFlag(int argc, char** argv, int* i, SkipGramOptions* options,
                                        std::string* error);

// The SkipGram flags as a shared flag set for host::cli::FlagParser.
host::cli::SharedFlagsFn SkipGramFlags(SkipGramOptions* options);

// Prints "<what> 12.3% of N <unit>, R <unit>/s" to stderr at most every
// `interval`, and never for the final call (done == total), which the tool
// reports itself.
// If options->epochs is 0 (chosen from the walks), sets it to
// AutoEpochs(MeasureCoverage(corpus)) and prints the coverage behind the
// choice on stderr as "<tool>: the walks cross ...".
void ChooseEpochs(const char* tool, const WalkCorpus& corpus, SkipGramOptions* options);

class ProgressLine {
 public:
  ProgressLine(const char* what, const char* unit, std::chrono::seconds interval = std::chrono::seconds(5));
  void operator()(uint64_t done, uint64_t total);

 private:
  const char* what_;
  const char* unit_;
  std::chrono::steady_clock::duration interval_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_;
};

}  // namespace nodefl::server::fedwalk::cli
