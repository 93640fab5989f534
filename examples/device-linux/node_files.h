// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The small files a board keeps for its device: its neighbour list, its
// features, its credentials (PEM, from `nodefl-ca devices`) and its
// privacy ledger's lifetime totals. Each reader returns "" on success or
// the problem, worded for the user ("FILE line 3: 'x' is not a node id").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace nodefl::device_linux {

// Node ids separated by white space or commas, '#' to the end of a line a
// comment. Sorted and deduplicated on return; `self` may not appear.
std::string ReadNeighbours(const std::string& path, uint32_t self, std::vector<uint32_t>* out);

// Feature values (finite decimal numbers) separated by white space or commas.
std::string ReadFeatures(const std::string& path, std::vector<float>* out);

// The whole file (credentials): at most `max_bytes`, not empty.
std::string ReadSmallFile(const std::string& path, size_t max_bytes, std::vector<uint8_t>* out);

// What earlier lives of the device released (PrivacyLedger's lifetime
// totals), kept across restarts so that a restart never resets the budget.
struct LifetimeSpent {
  double epsilon = 0.0;
  double delta = 0.0;
};
// A missing file is a first life (zeros); anything unreadable is an error.
std::string ReadLedgerFile(const std::string& path, LifetimeSpent* out);
// Written to PATH.tmp, flushed to disk, then renamed over PATH, so that a
// crash leaves the old totals or the new ones, never a torn file.
std::string WriteLedgerFile(const std::string& path, const LifetimeSpent& spent);

}  // namespace nodefl::device_linux
