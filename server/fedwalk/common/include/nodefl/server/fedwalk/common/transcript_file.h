// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// hct-transcript.bin: everything the server received and published in one
// FedWalk HCT job (HctTranscript), written to the job's output folder so that
// what the server learnt can be audited and attacked offline
// (neighbour_recovery.h, docs/privacy.md). Little-endian:
//   "NFHCTTR1", u8 mode, u32 vertex_count, u32 bins, u32 buckets,
//   bin plan (vertex_count bytes), dictionary (vertex_count x bins f32),
//   u32 uploads, then per upload: u32 device, u32 values, values x 4 bytes
//   (f32 rows of M_v in paper mode, i32 histogram cells in strict mode).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "nodefl/server/fedwalk/common/hct_transcript.h"

namespace nodefl::server::fedwalk {

std::vector<uint8_t> SerializeTranscript(const HctTranscript& transcript);
// std::nullopt (and *error) for a malformed file.
std::optional<HctTranscript> ParseTranscript(const std::vector<uint8_t>& bytes, std::string* error);
std::optional<HctTranscript> LoadTranscript(const std::filesystem::path& file, std::string* error);

}  // namespace nodefl::server::fedwalk
