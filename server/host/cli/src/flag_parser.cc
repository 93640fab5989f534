// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/host/cli/flag_parser.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <utility>

namespace nodefl::host::cli {

bool RequireDirectory(const std::string& tool, const std::string& flag, const std::string& path) {
  if (path.empty()) {
    std::fprintf(stderr, "%s: %s is required (see --help)\n", tool.c_str(), flag.c_str());
    return false;
  }
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) {
    std::fprintf(stderr, "%s: %s %s is not a directory\n", tool.c_str(), flag.c_str(), path.c_str());
    return false;
  }
  return true;
}

FlagParser& FlagParser::Switch(std::string name, std::function<void()> set) {
  flags_.push_back({std::move(name), std::move(set), nullptr});
  return *this;
}

FlagParser& FlagParser::Value(std::string name, ValueFn take) {
  flags_.push_back({std::move(name), nullptr, std::move(take)});
  return *this;
}

FlagParser& FlagParser::Shared(SharedFlagsFn flags) {
  shared_.push_back(std::move(flags));
  return *this;
}

const FlagParser::Flag* FlagParser::Find(std::string_view name) const {
  for (const Flag& flag : flags_) {
    if (flag.name == name) return &flag;
  }
  return nullptr;
}

ParseOutcome FlagParser::Parse(int argc, char** argv) const {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i] == nullptr ? "" : argv[i];
    if (arg == "--help" || arg == "-h") return ParseOutcome::kHelp;
    bool taken = false;
    for (const SharedFlagsFn& shared : shared_) {
      std::string error;
      const SharedFlag r = shared(argc, argv, &i, &error);
      if (r == SharedFlag::kBad) {
        std::fprintf(stderr, "%s: %s\n", tool_.c_str(), error.c_str());
        return ParseOutcome::kError;
      }
      if (r == SharedFlag::kTaken) {
        taken = true;
        break;
      }
    }
    if (taken) continue;
    // --flag=value is the same as --flag value.
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(0, eq);
    const Flag* flag = Find(name);
    if (flag == nullptr) {
      std::fprintf(stderr, "%s: unknown argument '%s' (see --help)\n", tool_.c_str(), arg.c_str());
      return ParseOutcome::kError;
    }
    if (flag->set) {
      if (eq != std::string::npos) {
        std::fprintf(stderr, "%s: %s takes no value (see --help)\n", tool_.c_str(), name.c_str());
        return ParseOutcome::kError;
      }
      flag->set();
      continue;
    }
    std::string value;
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else if (i + 1 < argc && argv[i + 1] != nullptr) {
      value = argv[++i];
    } else {
      std::fprintf(stderr, "%s: %s needs a value (see --help)\n", tool_.c_str(), name.c_str());
      return ParseOutcome::kError;
    }
    const std::string wanted = flag->take(value);
    if (!wanted.empty()) {
      std::fprintf(stderr, "%s: %s expects %s, got '%s'\n", tool_.c_str(), name.c_str(), wanted.c_str(),
                   value.c_str());
      return ParseOutcome::kError;
    }
  }
  return ParseOutcome::kOk;
}

bool ParseWhole(const std::string& text, uint64_t max, uint64_t* value) {
  if (text.empty() || text[0] < '0' || text[0] > '9') return false;  // no sign, no space
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || v > max) return false;
  *value = v;
  return true;
}

bool ParseReal(const std::string& text, double* value) {
  if (text.empty()) return false;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (*end != '\0' || !std::isfinite(v)) return false;
  *value = v;
  return true;
}

ValueFn Text(std::string* out) {
  return [out](const std::string& value) {
    *out = value;
    return std::string();
  };
}

std::string WholeRange(uint64_t min, uint64_t max) {
  if (max == std::numeric_limits<uint64_t>::max()) return "a whole number >= " + std::to_string(min);
  return "a whole number " + std::to_string(min) + " .. " + std::to_string(max);
}

namespace {

// 0.5 rather than 0.500000.
std::string Short(double x) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%g", x);
  return buffer;
}

}  // namespace

ValueFn Real(double* out, double min, bool min_exclusive, double max) {
  return [=](const std::string& value) {
    double v = 0;
    if (!ParseReal(value, &v) || (min_exclusive ? !(v > min) : !(v >= min)) || v > max) {
      if (min == 0 && min_exclusive && max == std::numeric_limits<double>::max()) {
        return std::string("a positive number");
      }
      std::string text = std::string("a number ") + (min_exclusive ? "above " : "from ") + Short(min);
      if (max != std::numeric_limits<double>::max()) text += " to " + Short(max);
      return text;
    }
    *out = v;
    return std::string();
  };
}

ValueFn OneOf(std::vector<std::string> choices, std::function<void(const std::string&)> set) {
  return [choices = std::move(choices), set = std::move(set)](const std::string& value) {
    for (const std::string& choice : choices) {
      if (choice == value) {
        set(value);
        return std::string();
      }
    }
    std::string list;
    for (size_t k = 0; k < choices.size(); ++k) {
      list += (k == 0 ? "" : k + 1 == choices.size() ? " or " : ", ") + choices[k];
    }
    return list;
  };
}

}  // namespace nodefl::host::cli
