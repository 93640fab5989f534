// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// FlagParser: the command-line loop every nodefl tool and benchmark shares.
// A tool declares its flags (switches, and flags that take a value with a
// function that checks and stores it); Parse() walks argv once, accepts
// `--flag value` and `--flag=value`, answers --help/-h, and reports the first
// problem as "<tool>: <flag> expects <what>, got '<value>'" (or an unknown
// argument, or a missing value) on stderr, so every tool words its errors
// the same way.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace nodefl::host::cli {

// Checks and stores one value: returns "" when taken, else what the value
// should have been ("a positive number"), for the error line.
using ValueFn = std::function<std::string(const std::string& value)>;

// A shared flag set (e.g. SkipGram's): looks at argv[*i] and, when it is
// one of its flags, consumes it (advancing *i past a value) and returns
// kTaken, or kBad with *error set; kNotMine otherwise.
enum class SharedFlag { kNotMine, kTaken, kBad };
using SharedFlagsFn = std::function<SharedFlag(int argc, char** argv, int* i, std::string* error)>;

enum class ParseOutcome { kOk, kHelp, kError };

class FlagParser {
 public:
  explicit FlagParser(std::string tool) : tool_(std::move(tool)) {}

  FlagParser& Switch(std::string name, std::function<void()> set);
  FlagParser& Value(std::string name, ValueFn take);
  FlagParser& Shared(SharedFlagsFn flags);

  // kHelp: the caller prints its usage to stdout and exits 0; kError: the
  // problem has been printed, the caller exits 2.
  ParseOutcome Parse(int argc, char** argv) const;

 private:
  struct Flag {
    std::string name;
    std::function<void()> set;  // switches
    ValueFn take;               // flags with a value
  };
  const Flag* Find(std::string_view name) const;

  std::string tool_;
  std::vector<Flag> flags_;
  std::vector<SharedFlagsFn> shared_;
};

// A required directory flag (e.g. --graph): false, with "<tool>: <flag> is
// required (see --help)" or "<tool>: <flag> <path> is not a directory" on
// stderr, when it is empty or not a directory.
bool RequireDirectory(const std::string& tool, const std::string& flag, const std::string& path);

// Value checkers for the common kinds.
ValueFn Text(std::string* out);
// A finite number x with min < x (exclusive) or min <= x, and x <= max.
ValueFn Real(double* out, double min, bool min_exclusive, double max);
// One of `choices`; `set` receives the chosen one.
ValueFn OneOf(std::vector<std::string> choices, std::function<void(const std::string&)> set);

// The parsing itself, for tools that check values their own way.
bool ParseWhole(const std::string& text, uint64_t max, uint64_t* value);
bool ParseReal(const std::string& text, double* value);
// "a whole number min .. max", the wording of Whole()'s errors.
std::string WholeRange(uint64_t min, uint64_t max);

// A whole decimal number in min..max (no sign, no trailing text) into any
// unsigned integer type.
template <class T>
ValueFn Whole(T* out, uint64_t min, uint64_t max) {
  return [out, min, max](const std::string& value) {
    uint64_t v = 0;
    if (!ParseWhole(value, max, &v) || v < min) return WholeRange(min, max);
    *out = static_cast<T>(v);
    return std::string();
  };
}

}  // namespace nodefl::host::cli
