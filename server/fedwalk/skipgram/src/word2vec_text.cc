// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The word2vec text format of skipgram_model.h, both directions.
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>

#include "nodefl/server/fedwalk/skipgram/skipgram_model.h"

namespace nodefl::server::fedwalk {

bool SkipGramModel::WriteWord2VecText(const std::filesystem::path& file, std::string* error) const {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> out(std::fopen(file.c_str(), "wb"), &std::fclose);
  if (!out) {
    if (error != nullptr) *error = file.string() + ": cannot create: " + std::strerror(errno);
    return false;
  }
  std::string line = std::to_string(num_vertices) + " " + std::to_string(dim) + "\n";
  bool ok = std::fwrite(line.data(), 1, line.size(), out.get()) == line.size();
  char number[32];
  for (uint32_t v = 0; v < num_vertices && ok; ++v) {
    line = std::to_string(v);
    for (float x : Embedding(v)) {
      // Shortest representation that reads back to the same float.
      const auto r = std::to_chars(number, number + sizeof number, x);
      line.push_back(' ');
      line.append(number, r.ptr);
    }
    line.push_back('\n');
    ok = std::fwrite(line.data(), 1, line.size(), out.get()) == line.size();
  }
  const int close_result = std::fclose(out.release());
  if (!ok || close_result != 0) {
    if (error != nullptr) *error = file.string() + ": write failed: " + std::strerror(errno);
    return false;
  }
  return true;
}

namespace {

// Splits `line` at spaces/tabs (a trailing '\r' or space is tolerated, as
// word2vec.c ends every value with a space).
std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t i = 0;
  while (i < line.size()) {
    if (line[i] == ' ' || line[i] == '\t' || line[i] == '\r') {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '\r') ++j;
    fields.push_back(line.substr(i, j - i));
    i = j;
  }
  return fields;
}

template <typename T>
bool ParseNumber(std::string_view s, T* value) {
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *value);
  return ec == std::errc() && ptr == s.data() + s.size();
}

}  // namespace

std::optional<SkipGramModel> ReadWord2VecText(const std::filesystem::path& file, std::string* error,
                                              std::vector<bool>* present) {
  uint64_t line_number = 0;
  auto fail = [&](const std::string& problem) -> std::optional<SkipGramModel> {
    if (error != nullptr) *error = file.string() + ":" + std::to_string(line_number) + ": " + problem;
    return std::nullopt;
  };
  std::ifstream in(file, std::ios::binary);
  if (!in) return fail(std::string("cannot open: ") + std::strerror(errno));

  std::string line;
  ++line_number;
  if (!std::getline(in, line)) return fail("empty file, expected the header 'N d'");
  std::vector<std::string_view> fields = Fields(line);
  uint32_t rows = 0, dim = 0;
  if (fields.size() != 2 || !ParseNumber(fields[0], &rows) || !ParseNumber(fields[1], &dim) || dim == 0) {
    return fail("header must be 'N d' with d >= 1");
  }
  // Ids are expected dense; the bound keeps a corrupt id from demanding a
  // huge allocation.
  const uint64_t id_limit = uint64_t{rows} * 16 + 1024;
  std::vector<std::pair<uint32_t, std::vector<float>>> parsed;
  parsed.reserve(rows);
  uint32_t max_id = 0;
  for (uint32_t r = 0; r < rows; ++r) {
    ++line_number;
    if (!std::getline(in, line)) return fail("expected " + std::to_string(rows) + " vector lines, file ends");
    fields = Fields(line);
    if (fields.size() != size_t{dim} + 1) {
      return fail("expected a vertex id and " + std::to_string(dim) + " values, got " +
                  std::to_string(fields.size()) + " fields");
    }
    uint32_t id = 0;
    if (!ParseNumber(fields[0], &id) || id >= id_limit) {
      return fail("token '" + std::string(fields[0]) + "' is not a vertex id below " + std::to_string(id_limit));
    }
    std::vector<float> values(dim);
    for (uint32_t k = 0; k < dim; ++k) {
      if (!ParseNumber(fields[k + 1], &values[k]) || !std::isfinite(values[k])) {
        return fail("value " + std::to_string(k + 1) + " '" + std::string(fields[k + 1]) +
                    "' is not a finite number");
      }
    }
    max_id = std::max(max_id, id);
    parsed.emplace_back(id, std::move(values));
  }
  ++line_number;
  while (std::getline(in, line)) {
    if (!Fields(line).empty()) return fail("unexpected line after the " + std::to_string(rows) + " vectors");
    ++line_number;
  }

  const uint32_t n = parsed.empty() ? rows : std::max(rows, max_id + 1);
  SkipGramModel model;
  model.num_vertices = n;
  model.dim = dim;
  model.stride = SkipGramModel::StrideFor(dim);
  model.input.assign(size_t{n} * model.stride, 0.0f);
  std::vector<bool> seen(n, false);
  for (size_t r = 0; r < parsed.size(); ++r) {
    const uint32_t id = parsed[r].first;
    if (seen[id]) {
      line_number = r + 2;
      return fail("vertex " + std::to_string(id) + " is listed twice");
    }
    seen[id] = true;
    std::copy(parsed[r].second.begin(), parsed[r].second.end(), model.MutableEmbedding(id).begin());
  }
  if (present != nullptr) *present = std::move(seen);
  return model;
}

}  // namespace nodefl::server::fedwalk
