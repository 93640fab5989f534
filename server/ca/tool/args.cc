// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "args.h"

namespace nodefl::ca {

std::optional<Options> Options::Parse(const std::vector<std::string>& args,
                                      const std::set<std::string>& with_value,
                                      const std::set<std::string>& switches, std::string* error) {
  Options options;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (word.rfind("--", 0) != 0 || word.size() == 2) {
      *error = "unexpected argument '" + word + "'";
      return std::nullopt;
    }
    std::string name = word.substr(2);
    std::optional<std::string> value;
    if (const size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (options.values_.count(name) != 0) {
      *error = "--" + name + " given twice";
      return std::nullopt;
    }
    if (switches.count(name) != 0) {
      if (value) {
        *error = "--" + name + " takes no value";
        return std::nullopt;
      }
      options.values_[name] = "";
    } else if (with_value.count(name) != 0) {
      if (!value) {
        if (i + 1 >= args.size()) {
          *error = "--" + name + " needs a value";
          return std::nullopt;
        }
        value = args[++i];
      }
      if (value->empty()) {
        *error = "--" + name + " needs a non-empty value";
        return std::nullopt;
      }
      options.values_[name] = *value;
    } else {
      *error = "unknown option --" + name;
      return std::nullopt;
    }
  }
  return options;
}

std::optional<std::string> Options::Required(const std::string& name, std::string* error) const {
  const auto it = values_.find(name);
  if (it == values_.end()) {
    *error = "missing --" + name;
    return std::nullopt;
  }
  return it->second;
}

std::string Options::Or(const std::string& name, const std::string& fallback) const {
  const auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

std::optional<uint64_t> Options::Number(const std::string& name, uint64_t fallback, uint64_t min,
                                        uint64_t max, std::string* error) const {
  const auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  const std::string& text = it->second;
  uint64_t value = 0;
  bool ok = !text.empty() && text.size() <= 20;
  for (const char c : text) {
    if (!ok) break;
    if (c < '0' || c > '9') {
      ok = false;
      break;
    }
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (value > (UINT64_MAX - digit) / 10) {
      ok = false;
      break;
    }
    value = value * 10 + digit;
  }
  if (!ok || value < min || value > max) {
    *error = "--" + name + " must be a whole number from " + std::to_string(min) + " to " +
             std::to_string(max) + " (got '" + text + "')";
    return std::nullopt;
  }
  return value;
}

}  // namespace nodefl::ca
