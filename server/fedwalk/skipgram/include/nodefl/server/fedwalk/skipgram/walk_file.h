// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Text walk files: one walk per line, vertex ids in decimal separated by
// single spaces, '\n' after every line. This is what gensim's LineSentence
// reads (it splits each line on whitespace), so gensim can train on exactly
// the walks our trainer sees.
//
// The reader is a little more tolerant than the writer: any run of spaces,
// tabs or a trailing '\r' separates tokens, and a blank line is an empty
// walk (as LineSentence yields an empty sentence). Anything else - a token
// that is not a plain decimal number, or an id not below the vertex count -
// is reported with the file name and line number instead of being skipped.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "nodefl/server/fedwalk/skipgram/walk_corpus.h"

namespace nodefl::server::fedwalk {

// std::nullopt and *error ("<file>:<line>: <problem>") on failure.
std::optional<WalkCorpus> LoadWalkFile(const std::filesystem::path& file, uint32_t num_vertices,
                                       std::string* error);

// The same, from text already in memory; `name` only labels error messages.
std::optional<WalkCorpus> ParseWalkText(std::string_view text, uint32_t num_vertices, std::string_view name,
                                        std::string* error);

// false and *error if the file cannot be written completely.
bool SaveWalkFile(const WalkCorpus& corpus, const std::filesystem::path& file, std::string* error);

}  // namespace nodefl::server::fedwalk
