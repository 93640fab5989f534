// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// How MbedTLS error codes become nodefl Status codes, in one place, so that
// the TLS endpoint, the seal module and the server log the same thing for
// the same failure:
//   kUnauthenticated     a certificate or the peer's identity did not verify
//   kDataLoss            a record or handshake message was malformed or
//                        failed its integrity check
//   kAborted             the peer closed the connection or sent a fatal alert
//   kFailedPrecondition  no common protocol version, ciphersuite or curve
//   kResourceExhausted   MbedTLS ran out of memory (it allocates internally)
//   kInvalidArgument     an input MbedTLS refused (bad key or certificate
//                        encoding, bad parameters)
//   kInternal            anything else
#pragma once

#include "nodefl/core/status.h"

namespace nodefl::tls {

// Maps a negative MbedTLS return code (SSL, X.509, PK, ECP, cipher, ...) to
// a Status; 0 maps to Ok. WANT_READ/WANT_WRITE are not errors and must be
// handled by the caller before asking (they map to kUnavailable).
Status StatusFromMbedtls(int mbedtls_error);

// A short static description of an MbedTLS error for logs ("certificate
// verification failed", "peer sent a fatal alert", ...). Never nullptr.
const char* DescribeMbedtlsError(int mbedtls_error);

}  // namespace nodefl::tls
