// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Command-line options of nodefl-ca: "--name value", "--name=value" and
// value-less switches, each allowed once, checked against the options a
// subcommand knows.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace nodefl::ca {

class Options {
 public:
  // Parses `args` (the words after the subcommand). `with_value` and
  // `switches` list the known option names without "--". On failure
  // returns std::nullopt and sets *error.
  static std::optional<Options> Parse(const std::vector<std::string>& args,
                                      const std::set<std::string>& with_value,
                                      const std::set<std::string>& switches, std::string* error);

  bool Has(const std::string& name) const { return values_.count(name) != 0; }
  // The value of a required option; sets *error if missing.
  std::optional<std::string> Required(const std::string& name, std::string* error) const;
  std::string Or(const std::string& name, const std::string& fallback) const;

  // A decimal integer in [min, max], or the fallback if the option is
  // absent; sets *error for anything else.
  std::optional<uint64_t> Number(const std::string& name, uint64_t fallback, uint64_t min,
                                 uint64_t max, std::string* error) const;

 private:
  std::map<std::string, std::string> values_;
};

}  // namespace nodefl::ca
