// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/fedwalk/skipgram/walk_corpus.h"

#include <algorithm>

namespace nodefl::server::fedwalk {

WalkCorpus::WalkCorpus(uint32_t num_vertices) : counts_(num_vertices, 0) {}

std::optional<WalkCorpus> WalkCorpus::FromCsr(uint32_t num_vertices, std::vector<uint32_t> tokens,
                                              std::vector<uint64_t> offsets, std::string* error) {
  auto fail = [error](std::string message) -> std::optional<WalkCorpus> {
    if (error != nullptr) *error = std::move(message);
    return std::nullopt;
  };
  if (offsets.empty() || offsets.front() != 0 || offsets.back() != tokens.size()) {
    return fail("walk offsets must start at 0 and end at the token count");
  }
  WalkCorpus corpus(num_vertices);
  for (size_t i = 0; i + 1 < offsets.size(); ++i) {
    if (offsets[i + 1] < offsets[i]) return fail("walk offsets decrease at walk " + std::to_string(i));
    corpus.max_walk_length_ =
        std::max(corpus.max_walk_length_, static_cast<uint32_t>(std::min<uint64_t>(offsets[i + 1] - offsets[i],
                                                                                    UINT32_MAX)));
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] >= num_vertices) {
      return fail("token " + std::to_string(i) + " is vertex " + std::to_string(tokens[i]) +
                  ", not below the vertex count " + std::to_string(num_vertices));
    }
    ++corpus.counts_[tokens[i]];
  }
  corpus.tokens_ = std::move(tokens);
  corpus.offsets_ = std::move(offsets);
  return corpus;
}

bool WalkCorpus::AddWalk(std::span<const uint32_t> walk, std::string* error) {
  for (size_t i = 0; i < walk.size(); ++i) {
    if (walk[i] >= num_vertices()) {
      if (error != nullptr) {
        *error = "walk token " + std::to_string(i) + " is vertex " + std::to_string(walk[i]) +
                 ", not below the vertex count " + std::to_string(num_vertices());
      }
      return false;
    }
  }
  tokens_.insert(tokens_.end(), walk.begin(), walk.end());
  offsets_.push_back(tokens_.size());
  for (uint32_t v : walk) ++counts_[v];
  max_walk_length_ = std::max(max_walk_length_, static_cast<uint32_t>(std::min<size_t>(walk.size(), UINT32_MAX)));
  return true;
}

void WalkCorpus::Reserve(size_t walks, size_t tokens) {
  offsets_.reserve(walks + 1);
  tokens_.reserve(tokens);
}

}  // namespace nodefl::server::fedwalk
