// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The walks SkipGram trains on: every token of every walk in one contiguous
// vector, walk i being tokens[offsets[i] .. offsets[i+1]) (CSR), so the
// trainer streams memory and threads can take contiguous walk ranges. The
// vocabulary is the vertex ids 0 .. num_vertices-1; counts[v] is how often v
// occurs (the negative-sampling and subsampling statistics).
//
// The text walk file (walk_file.h) holds the same walks, one per line.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace nodefl::server::fedwalk {

class WalkCorpus {
 public:
  explicit WalkCorpus(uint32_t num_vertices = 0);

  // Takes ownership of CSR arrays built elsewhere (e.g. by the DeepWalk
  // generator, which fills the token array from several threads).
  // std::nullopt and *error if offsets do not start at 0, decrease, or end
  // somewhere other than tokens.size(), or a token is not below
  // num_vertices.
  static std::optional<WalkCorpus> FromCsr(uint32_t num_vertices, std::vector<uint32_t> tokens,
                                           std::vector<uint64_t> offsets, std::string* error);

  // Appends one walk. Returns false (and sets *error if given) without
  // changing the corpus if a token is not below num_vertices(). An empty
  // walk is kept (it trains nothing), so walks and file lines correspond.
  bool AddWalk(std::span<const uint32_t> walk, std::string* error = nullptr);

  void Reserve(size_t walks, size_t tokens);

  uint32_t num_vertices() const { return static_cast<uint32_t>(counts_.size()); }
  size_t num_walks() const { return offsets_.size() - 1; }
  uint64_t num_tokens() const { return tokens_.size(); }
  uint32_t max_walk_length() const { return max_walk_length_; }

  std::span<const uint32_t> Walk(size_t i) const {
    return {tokens_.data() + offsets_[i], static_cast<size_t>(offsets_[i + 1] - offsets_[i])};
  }
  const std::vector<uint32_t>& tokens() const { return tokens_; }
  const std::vector<uint64_t>& offsets() const { return offsets_; }
  const std::vector<uint64_t>& counts() const { return counts_; }

 private:
  std::vector<uint32_t> tokens_;
  std::vector<uint64_t> offsets_{0};
  std::vector<uint64_t> counts_;
  uint32_t max_walk_length_ = 0;
};

}  // namespace nodefl::server::fedwalk
