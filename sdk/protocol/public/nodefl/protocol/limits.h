// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Limits of the nodefl wire protocol (docs/protocol.md). The bounds of
// variable-size fields mirror sdk/protocol/proto/nodefl/protocol/envelope.options;
// the static_asserts below fail the build if the two drift apart.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/protocol/envelope.pb.h"

// The SDK never lets nanopb touch the heap: every field is statically
// bounded (checked when envelope.pb.h is generated) and PB_ENABLE_MALLOC
// stays off in everything the SDK compiles.
#if defined(PB_ENABLE_MALLOC)
#error "nodefl: do not define PB_ENABLE_MALLOC for the SDK (no heap on devices)"
#endif

namespace nodefl::protocol {

// Envelope.version of everything this code sends and the only one it accepts.
// 2: device-to-device job keys mix in per-job ephemeral keys (JobKey,
// PeerCertificate.job_key); a version-1 device would seal under keys its
// version-2 peers never derive.
inline constexpr uint32_t kProtocolVersion = 2;

// Framing: a big-endian u32 payload length, then the payload (one encoded
// Envelope). The length counts the payload only, never the prefix.
inline constexpr size_t kFrameHeaderBytes = 4;
// Largest payload any peer may send or must accept. Hello/Welcome
// max_frame_bytes may advertise less (never more); 0 there means this value.
inline constexpr size_t kMaxFramePayloadBytes = 4608;
// Largest frame on the wire, prefix included (envelope.proto's kMaxFrameBytes).
inline constexpr size_t kMaxFrameBytes = kFrameHeaderBytes + kMaxFramePayloadBytes;

// Field bounds (envelope.options). Strings count characters without the NUL
// terminator nanopb stores.
inline constexpr size_t kMaxResumeTokenBytes = 32;      // Hello/Welcome.resume_token
inline constexpr size_t kMaxSoftwareChars = 31;         // Hello.software
inline constexpr size_t kMaxErrorMessageChars = 95;     // Error.message
inline constexpr size_t kMaxGoodbyeReasonChars = 63;    // Goodbye.reason
inline constexpr size_t kMaxPeerKeyRequestIds = 32;     // PeerKeyRequest.device_ids
inline constexpr size_t kMaxCertificateDerBytes = 1024; // PeerCertificate.certificate_der
inline constexpr size_t kJobKeyBytes = 65;              // JobKey.public_key, PeerCertificate.job_key
inline constexpr size_t kMaxSealedBytes = 4096;         // RelaySend/RelayDeliver.sealed
// A sealed payload (sdk/seal) is key id (8) | counter (8) | AES-GCM
// ciphertext | tag (16): the largest plaintext two devices can exchange.
inline constexpr size_t kSealedOverheadBytes = 8 + 8 + 16;
inline constexpr size_t kMaxSealedPlaintextBytes = kMaxSealedBytes - kSealedOverheadBytes;
inline constexpr size_t kMaxJobParametersBytes = 256;   // JobStart.parameters
inline constexpr size_t kSha256Bytes = 32;              // ChunkHeader.sha256
inline constexpr size_t kMaxChunkDataBytes = 4096;      // Chunk.data
inline constexpr size_t kMaxJobDataBytes = 4096;        // JobData.data

// Every envelope, at the maximum size of every field, fits in one frame.
static_assert(nodefl_wire_Envelope_size <= kMaxFramePayloadBytes,
              "the largest Envelope must fit in kMaxFramePayloadBytes");

// The generated structs match the bounds above.
static_assert(sizeof(nodefl_wire_Hello_resume_token_t::bytes) == kMaxResumeTokenBytes);
static_assert(sizeof(nodefl_wire_Welcome_resume_token_t::bytes) == kMaxResumeTokenBytes);
static_assert(sizeof(nodefl_wire_Hello::software) == kMaxSoftwareChars + 1);
static_assert(sizeof(nodefl_wire_Error::message) == kMaxErrorMessageChars + 1);
static_assert(sizeof(nodefl_wire_Goodbye::reason) == kMaxGoodbyeReasonChars + 1);
static_assert(sizeof(nodefl_wire_PeerKeyRequest::device_ids) / sizeof(uint32_t) ==
              kMaxPeerKeyRequestIds);
static_assert(sizeof(nodefl_wire_PeerCertificate_certificate_der_t::bytes) ==
              kMaxCertificateDerBytes);
static_assert(sizeof(nodefl_wire_PeerCertificate_job_key_t::bytes) == kJobKeyBytes);
static_assert(sizeof(nodefl_wire_JobKey_public_key_t::bytes) == kJobKeyBytes);
static_assert(sizeof(nodefl_wire_RelaySend_sealed_t::bytes) == kMaxSealedBytes);
static_assert(sizeof(nodefl_wire_RelayDeliver_sealed_t::bytes) == kMaxSealedBytes);
static_assert(sizeof(nodefl_wire_JobStart_parameters_t::bytes) == kMaxJobParametersBytes);
static_assert(sizeof(nodefl_wire_ChunkHeader_sha256_t::bytes) == kSha256Bytes);
static_assert(sizeof(nodefl_wire_Chunk_data_t::bytes) == kMaxChunkDataBytes);
static_assert(sizeof(nodefl_wire_JobData_data_t::bytes) == kMaxJobDataBytes);

// The nanopb runtime the SDK links (Debian's libprotobuf-nanopb.a) is built
// without PB_FIELD_32BIT; the generated structs and descriptors must agree.
static_assert(sizeof(pb_size_t) == 2, "nanopb runtime and SDK disagree on PB_FIELD_32BIT");

}  // namespace nodefl::protocol
