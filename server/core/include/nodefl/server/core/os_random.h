// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Bytes from the operating system's entropy source (getrandom(2)), for
// public values that must never repeat: job salts. Never from a seeded
// generator, so that a rerun with the same experiment seed (fedwalk_seed)
// or a restarted server draws new ones.
#pragma once

#include <cstdint>
#include <span>

namespace nodefl::server {

// Fills `out`; aborts the process if the kernel cannot deliver (it blocks
// only until the entropy pool is initialised, once per boot).
void FillFromOsEntropy(std::span<uint8_t> out);

}  // namespace nodefl::server
