// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Checking a peer device's certificate before sealing anything for it.
// Devices get each other's certificates from the server (PeerCertificate
// messages); the server is not trusted with them, so every certificate is
// verified here against the pinned deployment CA and the id the device
// expects. A server that substitutes another device's certificate, or one
// it minted itself, is caught by this check.
//
// Heap: X.509 parsing and verification allocate inside MbedTLS (see
// nodefl/tls/credentials.h); nodefl's code does not.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/tls/credentials.h"

namespace nodefl::seal {

// SEC1 uncompressed P-256 point: 0x04 || X (32) || Y (32).
inline constexpr size_t kP256PublicKeyBytes = 65;

// A verified peer's public key, small and copyable so that a device can keep
// the keys of its neighbours in a fixed table.
struct PeerPublicKey {
  uint32_t device_id = 0;
  uint8_t point[kP256PublicKeyBytes] = {};
  bool valid = false;
};

// Verifies `certificate_der` (exactly one DER certificate, no trailing
// bytes) and extracts its key:
//   * it chains to the CA chain in `trust` (signatures, validity period when
//     MbedTLS has a clock, the deployment X.509 profile);
//   * it is a leaf (not a CA) whose subject CN is "device-<expected id>";
//   * its key is P-256 and, if the certificate restricts key usage, usable
//     for key agreement.
// kInvalidArgument for input that does not parse, kUnauthenticated for a
// certificate that parses but fails any check, kFailedPrecondition if
// `trust` has no CA chain. `out` is written only on success.
Status VerifyPeerCertificate(const tls::TlsCredentials& trust, ConstByteSpan certificate_der,
                             uint32_t expected_device_id, PeerPublicKey* out);

}  // namespace nodefl::seal
