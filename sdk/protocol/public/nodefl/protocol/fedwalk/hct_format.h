// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The FedWalk HCT job's contract between devices and the server (seed
// FedWalk Sec. 4.2 and Alg. 2; docs/fedwalk.md): the job
// parameters carried in JobStart, and the byte layout of every artefact the
// job streams with ChunkHeader/Chunk. One header for both sides, so the
// device and the server cannot disagree on a layout.
//
// Vertex ids are device ids, 0 .. vertex_count-1. Every multi-byte value is
// little-endian; floats are IEEE-754 binary32.
//
// Artefacts (ChunkHeader.artefact):
//   kBinPlan          server -> device  vertex_count bytes: bin of vertex v
//                                       (0 .. bins-1), or kAbsentBin for an
//                                       id that takes no part in the job.
//   kDegreeVector     device -> server  bins x f32: the noised c_v.
//   kDictionary       server -> device  vertex_count rows of bins x f32 (row
//                                       v = c_v); a vertex that uploaded no
//                                       degree vector has a row of NaN.
//   kOrderedMatrix    device -> server  (paper mode) u32 rows m, then m rows
//                                       of bins x f32: M_v, rows in ascending
//                                       order of estimated degree (Eq. 5).
//   kDegreeHistogram  device -> server  (strict mode) bins x buckets x i32:
//                                       noised histogram H_v[i][b] (below).
//   kTree             server -> device  u32 leaves m, m x u32 leaf vertex ids,
//                                       then m-1 merges {u32 a, u32 b, f32
//                                       height}: node ids < m are leaves,
//                                       m + i is merge i; merges in
//                                       non-decreasing height.
//   kCodebook         server -> device  u32 vertex_count, u16 K, u16 0, then
//                                       one row per vertex 0 .. vertex_count-1:
//                                       u16 count, u16 0, f32 truncated mass,
//                                       then count x {u32 vertex, u32 accept
//                                       (Q31), u32 alias (index in the row)}:
//                                       the top-K alias table of Eq. 12. An
//                                       absent vertex has count 0.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/result.h"
#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/privacy/privacy_mode.h"

namespace nodefl::fedwalk {

// Protocol rounds (Envelope.round) of JOB_KIND_FEDWALK_HCT.
inline constexpr uint32_t kRoundBinning = 1;     // bin plan down, degree vector up
inline constexpr uint32_t kRoundMatrix = 2;      // dictionary down, M_v / H_v up
inline constexpr uint32_t kRoundPublish = 3;     // tree and codebook down

// Ledger phases (PrivacyLedger::Record) of this job.
inline constexpr uint16_t kPhaseBinning = 1;
inline constexpr uint16_t kPhaseMatrix = 2;

enum class HctArtefact : uint32_t {
  kBinPlan = 1,
  kDegreeVector = 2,
  kDictionary = 3,
  kOrderedMatrix = 4,
  kDegreeHistogram = 5,
  kTree = 6,
  kCodebook = 7,
};

inline constexpr uint32_t kMaxBins = 16;
inline constexpr uint32_t kMinBuckets = 2;
inline constexpr uint32_t kMaxBuckets = 24;
inline constexpr uint32_t kDefaultBuckets = 16;
inline constexpr uint8_t kAbsentBin = 0xFF;
inline constexpr uint32_t kMaxCodebookK = 1024;
// Artefact layout sizes.
inline constexpr size_t kTreeMergeBytes = 12;
inline constexpr size_t kCodebookHeaderBytes = 8;
inline constexpr size_t kCodebookRowHeaderBytes = 8;
inline constexpr size_t kCodebookEntryBytes = 12;
inline constexpr uint32_t kQ31One = 1u << 31;

// JobStart.parameters of round 1 (later rounds carry none).
struct HctParameters {
  PrivacyMode mode = kDefaultPrivacyMode;
  uint8_t bins = 0;                    // k, 1 .. kMaxBins
  uint8_t buckets = kDefaultBuckets;   // strict histogram buckets per bin
  uint32_t vertex_count = 0;           // n; ids 0 .. n-1
  double epsilon_bins = 2.0;           // degree vector (both modes)
  double epsilon_upload = 2.0;         // strict histogram (unused in paper mode)
  double epsilon_walk = 2.0;           // Eq. 12 codebook (informational here)
  uint16_t codebook_k = 256;           // most entries kept per codebook row (rows drop
                                       // entries below 1e-12; see docs/fedwalk.md)
};

inline constexpr size_t kHctParametersBytes = 36;
inline constexpr uint8_t kHctParametersVersion = 1;

// Writes the 36-byte encoding into `out` (at least kHctParametersBytes).
// kInvalidArgument if a field is out of range (CheckHctParameters).
Status EncodeHctParameters(const HctParameters& params, ByteSpan out);
// Parses and range-checks; kInvalidArgument for a wrong size, version or a
// field out of range.
Result<HctParameters> DecodeHctParameters(ConstByteSpan bytes);
// Ranges: mode known; 1 <= bins <= kMaxBins; kMinBuckets <= buckets <=
// kMaxBuckets; 1 <= vertex_count < kAbsentVertex; epsilons finite and > 0;
// 1 <= codebook_k <= kMaxCodebookK.
Status CheckHctParameters(const HctParameters& params);
inline constexpr uint32_t kAbsentVertex = 0xFFFFFFFFu;

// Strict-mode histogram bucket of a neighbour's noised count `value` (one
// entry of its degree vector): bucket 0 holds value < 1 (noise can make
// counts zero or negative), bucket b >= 1 holds 2^(b-1) <= value < 2^b, and
// the last bucket also holds everything above. Fixed and public, so a
// histogram reveals nothing about the bucket edges. NaN goes to bucket 0.
uint32_t HistogramBucket(double value, uint32_t buckets);

// One entry of a codebook row as stored by a device.
struct CodebookEntry {
  uint32_t vertex = 0;
  uint32_t accept_q31 = 0;  // accept this entry with probability accept/2^31
  uint32_t alias = 0;       // else take entries[alias]
};

// Size of the kTree artefact for `leaves` leaves.
constexpr uint64_t TreeArtefactBytes(uint64_t leaves) {
  return leaves == 0 ? 4 : 4 + 4 * leaves + kTreeMergeBytes * (leaves - 1);
}

}  // namespace nodefl::fedwalk
