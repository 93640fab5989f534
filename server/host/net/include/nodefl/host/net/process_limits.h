// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Thousands of TLS connections need thousands of file descriptors; the
// default soft limit (often 1024) is far below what the hard limit allows.
#pragma once

#include <cstdint>
#include <string>

namespace nodefl::host::net {

// Raises the soft RLIMIT_NOFILE to the hard limit. Returns the soft limit
// now in force; `*note` explains if it could not be raised.
uint64_t RaiseOpenFileLimit(std::string* note);

// Resident memory of this process now and at its peak, in KiB (0 if
// /proc is unavailable).
uint64_t CurrentRssKiB();
uint64_t PeakRssKiB();

}  // namespace nodefl::host::net
