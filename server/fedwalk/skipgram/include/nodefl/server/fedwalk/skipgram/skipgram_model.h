// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// A trained SkipGram model: the input ("embedding") vector and the output
// ("context") vector of every vertex. Row v of each matrix starts at
// v * stride floats; stride is dim rounded up to a multiple of 16 so every
// row is whole 64-byte cache lines and the training loops need no scalar
// tail. The padding floats are zero and stay zero through training (their
// gradients are products with zeros), so they never affect a dot product.
// For dim = 128 there is no padding and each matrix is a plain n x dim
// row-major array.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "nodefl/server/fedwalk/skipgram/aligned_floats.h"

namespace nodefl::server::fedwalk {

struct SkipGramModel {
  static constexpr uint32_t kRowAlignmentFloats = 16;
  static uint32_t StrideFor(uint32_t dim) {
    return (dim + kRowAlignmentFloats - 1) / kRowAlignmentFloats * kRowAlignmentFloats;
  }

  SkipGramModel() = default;
  // Zero matrices of n rows.
  SkipGramModel(uint32_t n, uint32_t d);

  uint32_t num_vertices = 0;
  uint32_t dim = 0;
  uint32_t stride = 0;
  AlignedFloats input;   // the embeddings, num_vertices * stride
  AlignedFloats output;  // context vectors (empty in a model read from text)

  std::span<const float> Embedding(uint32_t v) const { return {input.data() + size_t{v} * stride, dim}; }
  std::span<float> MutableEmbedding(uint32_t v) { return {input.data() + size_t{v} * stride, dim}; }
  std::span<const float> ContextVector(uint32_t v) const { return {output.data() + size_t{v} * stride, dim}; }

  // word2vec text format: a first line "N d", then one line per vertex, the
  // vertex id as the token followed by its d embedding values. Values are
  // written in the shortest form that reads back to the same float (at
  // most 9 significant digits), so a round trip is exact. Every vertex
  // 0 .. N-1 is written, in id order. false and *error on I/O failure.
  bool WriteWord2VecText(const std::filesystem::path& file, std::string* error) const;
};

// Reads word2vec text (ours or gensim's KeyedVectors.save_word2vec_format).
// Tokens must be vertex ids; the header's N rows must follow, each with
// exactly d values, no id twice. The model gets max id + 1 rows (at least
// the header's N); rows the file does not list are zero and, if `present`
// is given, marked false there. Only the input matrix is filled.
// std::nullopt and *error ("<file>:<line>: <problem>") on malformed input.
std::optional<SkipGramModel> ReadWord2VecText(const std::filesystem::path& file, std::string* error,
                                              std::vector<bool>* present = nullptr);

}  // namespace nodefl::server::fedwalk
