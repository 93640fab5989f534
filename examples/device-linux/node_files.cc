// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "node_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace nodefl::device_linux {
namespace {

std::string ReadText(const std::string& path, std::string* text) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return path + ": cannot open (" + std::strerror(errno) + ")";
  std::ostringstream all;
  all << in.rdbuf();
  if (in.bad()) return path + ": read error";
  *text = all.str();
  return "";
}

// Calls `take(token, line)` for every token of `text` (separators: white
// space and commas; '#' starts a comment); stops at the first error.
template <class Take>
std::string ForEachToken(const std::string& text, Take take) {
  size_t line = 1;
  std::string token;
  bool comment = false;
  for (size_t i = 0; i <= text.size(); ++i) {
    const char c = i < text.size() ? text[i] : '\n';
    if (c == '\n') comment = false;
    if (c == '#') comment = true;
    const bool separator = comment || c == '\n' || c == ' ' || c == '\t' || c == '\r' || c == ',' || c == '#';
    if (!separator) {
      token.push_back(c);
      continue;
    }
    if (!token.empty()) {
      if (std::string why = take(token, line); !why.empty()) return why;
      token.clear();
    }
    if (c == '\n') ++line;
  }
  return "";
}

}  // namespace

std::string ReadNeighbours(const std::string& path, uint32_t self, std::vector<uint32_t>* out) {
  std::string text;
  if (std::string why = ReadText(path, &text); !why.empty()) return why;
  out->clear();
  std::string why = ForEachToken(text, [&](const std::string& token, size_t line) -> std::string {
    char* end = nullptr;
    errno = 0;
    const unsigned long long id = std::strtoull(token.c_str(), &end, 10);
    if (token[0] < '0' || token[0] > '9' || *end != '\0' || errno != 0 || id > UINT32_MAX) {
      return path + " line " + std::to_string(line) + ": '" + token + "' is not a node id";
    }
    if (id == self) return path + " line " + std::to_string(line) + ": the device's own id " + token;
    out->push_back(static_cast<uint32_t>(id));
    return "";
  });
  if (!why.empty()) return why;
  std::sort(out->begin(), out->end());
  out->erase(std::unique(out->begin(), out->end()), out->end());
  return "";
}

std::string ReadFeatures(const std::string& path, std::vector<float>* out) {
  std::string text;
  if (std::string why = ReadText(path, &text); !why.empty()) return why;
  out->clear();
  std::string why = ForEachToken(text, [&](const std::string& token, size_t line) -> std::string {
    char* end = nullptr;
    const float v = std::strtof(token.c_str(), &end);
    if (*end != '\0' || !std::isfinite(v)) {
      return path + " line " + std::to_string(line) + ": '" + token + "' is not a finite number";
    }
    out->push_back(v);
    return "";
  });
  if (!why.empty()) return why;
  if (out->empty()) return path + ": no feature values";
  return "";
}

std::string ReadSmallFile(const std::string& path, size_t max_bytes, std::vector<uint8_t>* out) {
  std::string text;
  if (std::string why = ReadText(path, &text); !why.empty()) return why;
  if (text.empty()) return path + ": empty";
  if (text.size() > max_bytes) return path + ": larger than " + std::to_string(max_bytes) + " bytes";
  out->assign(text.begin(), text.end());
  std::fill(text.begin(), text.end(), '\0');  // it may be a private key
  return "";
}

std::string ReadLedgerFile(const std::string& path, LifetimeSpent* out) {
  *out = LifetimeSpent();
  if (::access(path.c_str(), F_OK) != 0 && errno == ENOENT) return "";  // the device's first life
  std::ifstream in(path);
  if (!in) return path + ": cannot open (" + std::strerror(errno) + ")";
  std::string key;
  double value = 0;
  bool have_epsilon = false, have_delta = false;
  while (in >> key >> value) {
    if (!std::isfinite(value) || value < 0) return path + ": '" + key + "' is not a non-negative number";
    if (key == "lifetime_epsilon") {
      out->epsilon = value;
      have_epsilon = true;
    } else if (key == "lifetime_delta") {
      out->delta = value;
      have_delta = true;
    } else {
      return path + ": unknown key '" + key + "'";
    }
  }
  if (!in.eof() || !have_epsilon || !have_delta) {
    return path + ": expected the lines 'lifetime_epsilon E' and 'lifetime_delta D'";
  }
  return "";
}

std::string WriteLedgerFile(const std::string& path, const LifetimeSpent& spent) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return tmp + ": cannot create (" + std::strerror(errno) + ")";
  char text[128];
  // %.17g: the totals read back exactly.
  const int n = std::snprintf(text, sizeof text, "lifetime_epsilon %.17g\nlifetime_delta %.17g\n", spent.epsilon,
                              spent.delta);
  const bool written = n > 0 && ::write(fd, text, static_cast<size_t>(n)) == n && ::fsync(fd) == 0;
  const int saved = errno;
  ::close(fd);
  if (!written) return tmp + ": cannot write (" + std::strerror(saved) + ")";
  if (::rename(tmp.c_str(), path.c_str()) != 0) return path + ": cannot replace (" + std::strerror(errno) + ")";
  return "";
}

}  // namespace nodefl::device_linux
