// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// A device's identity is the subject common name of its certificate, which
// must read exactly "device-<id>" with <id> in canonical decimal (no sign,
// no leading zeros, at most 4294967295). The server binds a connection to
// that id (a device cannot claim another id in its Hello) and the seal
// module checks it before deriving keys with a peer. Keeping the parser
// strict means one certificate names exactly one device.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/result.h"
#include "nodefl/core/span.h"

struct mbedtls_x509_crt;

namespace nodefl::tls {

inline constexpr char kDeviceCommonNamePrefix[] = "device-";
// "device-" + 10 digits + NUL.
inline constexpr size_t kMaxDeviceCommonNameBytes = 18;

// Parses "device-<id>". kUnauthenticated for anything else (it is a claim
// about identity that does not hold).
Result<uint32_t> DeviceIdFromCommonName(Span<const char> common_name);

// The device id named by `certificate`'s subject. The subject must carry
// exactly one common name, of the form above; kUnauthenticated otherwise.
// Does not verify the certificate (the TLS handshake or
// seal::VerifyPeerCertificate does that).
Result<uint32_t> DeviceIdFromCertificate(const mbedtls_x509_crt& certificate);

// Writes "device-<id>" and a NUL into `out` (at least
// kMaxDeviceCommonNameBytes); returns the length without the NUL, or
// kResourceExhausted if `out` is too small.
Result<size_t> FormatDeviceCommonName(uint32_t device_id, Span<char> out);

}  // namespace nodefl::tls
