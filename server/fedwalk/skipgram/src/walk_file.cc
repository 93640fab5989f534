// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/fedwalk/skipgram/walk_file.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>

namespace nodefl::server::fedwalk {

namespace {

bool IsSeparator(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// Shows a bad token in an error message without flooding it.
std::string Quote(std::string_view token) {
  constexpr size_t kMaxShown = 24;
  return "'" + std::string(token.substr(0, kMaxShown)) + (token.size() > kMaxShown ? "...'" : "'");
}

}  // namespace

std::optional<WalkCorpus> ParseWalkText(std::string_view text, uint32_t num_vertices, std::string_view name,
                                        std::string* error) {
  std::vector<uint32_t> tokens;
  std::vector<uint64_t> offsets{0};
  offsets.reserve(static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) + 2);
  uint64_t line_number = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    ++line_number;
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    size_t i = 0;
    while (i < line.size()) {
      if (IsSeparator(line[i])) {
        ++i;
        continue;
      }
      size_t j = i;
      while (j < line.size() && !IsSeparator(line[j])) ++j;
      const std::string_view token = line.substr(i, j - i);
      i = j;
      uint64_t id = 0;
      const auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), id);
      // from_chars accepts a leading '-' for no unsigned type, but would
      // stop early at one; a full match of digits only is required.
      if (ec == std::errc::result_out_of_range || (ec == std::errc() && ptr == token.data() + token.size() &&
                                                   id >= num_vertices)) {
        if (error != nullptr) {
          *error = std::string(name) + ":" + std::to_string(line_number) + ": vertex id " + Quote(token) +
                   " is not below the vertex count " + std::to_string(num_vertices);
        }
        return std::nullopt;
      }
      if (ec != std::errc() || ptr != token.data() + token.size()) {
        if (error != nullptr) {
          *error = std::string(name) + ":" + std::to_string(line_number) + ": token " + Quote(token) +
                   " is not a vertex id (a non-negative decimal integer)";
        }
        return std::nullopt;
      }
      tokens.push_back(static_cast<uint32_t>(id));
    }
    offsets.push_back(tokens.size());
  }
  return WalkCorpus::FromCsr(num_vertices, std::move(tokens), std::move(offsets), error);
}

std::optional<WalkCorpus> LoadWalkFile(const std::filesystem::path& file, uint32_t num_vertices,
                                       std::string* error) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    if (error != nullptr) *error = file.string() + ": cannot open: " + std::strerror(errno);
    return std::nullopt;
  }
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  in.seekg(0, std::ios::beg);
  std::string text(static_cast<size_t>(std::max<std::streamoff>(size, 0)), '\0');
  if (size < 0 || !in.read(text.data(), size)) {
    if (error != nullptr) *error = file.string() + ": read failed";
    return std::nullopt;
  }
  return ParseWalkText(text, num_vertices, file.string(), error);
}

bool SaveWalkFile(const WalkCorpus& corpus, const std::filesystem::path& file, std::string* error) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> out(std::fopen(file.c_str(), "wb"), &std::fclose);
  if (!out) {
    if (error != nullptr) *error = file.string() + ": cannot create: " + std::strerror(errno);
    return false;
  }
  // Formatted into a buffer that is flushed in large writes: the BlogCatalog
  // DeepWalk corpus is 33M tokens.
  constexpr size_t kFlushAt = 1 << 20;
  std::string buffer;
  buffer.reserve(kFlushAt + 64);
  bool ok = true;
  auto flush = [&] {
    ok = ok && std::fwrite(buffer.data(), 1, buffer.size(), out.get()) == buffer.size();
    buffer.clear();
  };
  char digits[16];
  for (size_t w = 0; w < corpus.num_walks() && ok; ++w) {
    const std::span<const uint32_t> walk = corpus.Walk(w);
    for (size_t i = 0; i < walk.size(); ++i) {
      if (i > 0) buffer.push_back(' ');
      const auto r = std::to_chars(digits, digits + sizeof digits, walk[i]);
      buffer.append(digits, r.ptr);
      if (buffer.size() >= kFlushAt) flush();
    }
    buffer.push_back('\n');
  }
  flush();
  const int close_result = std::fclose(out.release());
  if (!ok || close_result != 0) {
    if (error != nullptr) *error = file.string() + ": write failed: " + std::strerror(errno);
    return false;
  }
  return true;
}

}  // namespace nodefl::server::fedwalk
