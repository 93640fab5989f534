// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// File helpers for nodefl-ca. Every output file is created exclusively
// (O_EXCL): the tool never overwrites a key or certificate.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace nodefl::ca {

// Creates `path` with permissions `mode` and writes `data`; fails (with
// *error set) if it exists. A partly written file is removed.
bool WriteNewFile(const std::string& path, const void* data, size_t size, mode_t mode,
                  std::string* error);
bool WriteNewFile(const std::string& path, const std::string& text, mode_t mode,
                  std::string* error);

bool ReadWholeFile(const std::string& path, std::vector<uint8_t>* out, std::string* error);

// Creates the directory (and missing parents) with `mode`; succeeds if it
// already exists as a directory.
bool EnsureDirectory(const std::string& path, mode_t mode, std::string* error);

bool PathExists(const std::string& path);

}  // namespace nodefl::ca
