// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/tls/errors.h"

#include <mbedtls/ecp.h>
#include <mbedtls/error.h>
#include <mbedtls/pk.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509.h>

namespace nodefl::tls {
namespace {

// MbedTLS 2.x composes error codes as (high-level | low-level); the
// high-level part is in 0x1000..0x7F80 and the low-level part below it.
int HighLevel(int error) { return -((-error) & 0xFF80); }
int LowLevel(int error) { return -((-error) & 0x007F); }

bool IsX509ParseError(int high) {
  // X.509 parse and format errors occupy -0x2000..-0x2FFF (except the
  // verification failure, handled separately).
  return high <= -0x2000 && high > -0x3000 && high != MBEDTLS_ERR_X509_CERT_VERIFY_FAILED;
}

bool IsPkError(int high) { return high <= -0x3800 && high > -0x4000; }

bool IsPemError(int high) { return high <= -0x1000 && high > -0x1500; }

}  // namespace

Status StatusFromMbedtls(int error) {
  if (error == 0) return Status::Ok();
  if (error > 0) return Status::Internal();
  const int high = HighLevel(error);
  switch (high == 0 ? error : high) {
    case MBEDTLS_ERR_SSL_WANT_READ:
    case MBEDTLS_ERR_SSL_WANT_WRITE:
      return Status::Unavailable();

    case MBEDTLS_ERR_X509_CERT_VERIFY_FAILED:
    case MBEDTLS_ERR_SSL_NO_CLIENT_CERTIFICATE:
    case MBEDTLS_ERR_SSL_CERTIFICATE_REQUIRED:
    case MBEDTLS_ERR_SSL_PEER_VERIFY_FAILED:
    case MBEDTLS_ERR_SSL_BAD_HS_CERTIFICATE:
    case MBEDTLS_ERR_SSL_BAD_HS_CERTIFICATE_VERIFY:
    case MBEDTLS_ERR_SSL_PK_TYPE_MISMATCH:
      return Status::Unauthenticated();

    case MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY:
    case MBEDTLS_ERR_SSL_FATAL_ALERT_MESSAGE:
    case MBEDTLS_ERR_SSL_CONN_EOF:
      return Status::Aborted();

    case MBEDTLS_ERR_SSL_NO_CIPHER_CHOSEN:
    case MBEDTLS_ERR_SSL_NO_USABLE_CIPHERSUITE:
    case MBEDTLS_ERR_SSL_BAD_HS_PROTOCOL_VERSION:
    case MBEDTLS_ERR_SSL_FEATURE_UNAVAILABLE:
      return Status::FailedPrecondition();

    case MBEDTLS_ERR_SSL_INVALID_MAC:
    case MBEDTLS_ERR_SSL_INVALID_RECORD:
    case MBEDTLS_ERR_SSL_UNEXPECTED_MESSAGE:
    case MBEDTLS_ERR_SSL_UNEXPECTED_RECORD:
    case MBEDTLS_ERR_SSL_BAD_HS_CLIENT_HELLO:
    case MBEDTLS_ERR_SSL_BAD_HS_SERVER_HELLO:
    case MBEDTLS_ERR_SSL_BAD_HS_CERTIFICATE_REQUEST:
    case MBEDTLS_ERR_SSL_BAD_HS_SERVER_KEY_EXCHANGE:
    case MBEDTLS_ERR_SSL_BAD_HS_SERVER_HELLO_DONE:
    case MBEDTLS_ERR_SSL_BAD_HS_CLIENT_KEY_EXCHANGE:
    case MBEDTLS_ERR_SSL_BAD_HS_CLIENT_KEY_EXCHANGE_RP:
    case MBEDTLS_ERR_SSL_BAD_HS_CLIENT_KEY_EXCHANGE_CS:
    case MBEDTLS_ERR_SSL_BAD_HS_CHANGE_CIPHER_SPEC:
    case MBEDTLS_ERR_SSL_BAD_HS_FINISHED:
    case MBEDTLS_ERR_SSL_BAD_HS_NEW_SESSION_TICKET:
      return Status::DataLoss();

    case MBEDTLS_ERR_SSL_ALLOC_FAILED:
    case MBEDTLS_ERR_X509_ALLOC_FAILED:
    case MBEDTLS_ERR_PK_ALLOC_FAILED:
    case MBEDTLS_ERR_ECP_ALLOC_FAILED:
      return Status::ResourceExhausted();

    default:
      break;
  }
  if (LowLevel(error) == MBEDTLS_ERR_MPI_ALLOC_FAILED) return Status::ResourceExhausted();
  if (IsX509ParseError(high) || IsPkError(high) || IsPemError(high)) {
    return Status::InvalidArgument();
  }
  return Status::Internal();
}

const char* DescribeMbedtlsError(int error) {
  if (error == 0) return "ok";
  const int high = HighLevel(error);
  switch (high == 0 ? error : high) {
    case MBEDTLS_ERR_SSL_WANT_READ: return "waiting for input";
    case MBEDTLS_ERR_SSL_WANT_WRITE: return "waiting for output space";
    case MBEDTLS_ERR_X509_CERT_VERIFY_FAILED: return "certificate verification failed";
    case MBEDTLS_ERR_SSL_NO_CLIENT_CERTIFICATE: return "client sent no certificate";
    case MBEDTLS_ERR_SSL_CERTIFICATE_REQUIRED: return "certificate required";
    case MBEDTLS_ERR_SSL_PEER_VERIFY_FAILED: return "peer verification failed";
    case MBEDTLS_ERR_SSL_BAD_HS_CERTIFICATE: return "bad certificate message";
    case MBEDTLS_ERR_SSL_BAD_HS_CERTIFICATE_VERIFY: return "bad certificate-verify signature";
    case MBEDTLS_ERR_SSL_PK_TYPE_MISMATCH: return "key type not allowed";
    case MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY: return "peer closed the connection";
    case MBEDTLS_ERR_SSL_FATAL_ALERT_MESSAGE: return "peer sent a fatal alert";
    case MBEDTLS_ERR_SSL_CONN_EOF: return "connection ended";
    case MBEDTLS_ERR_SSL_NO_CIPHER_CHOSEN:
    case MBEDTLS_ERR_SSL_NO_USABLE_CIPHERSUITE: return "no common ciphersuite";
    case MBEDTLS_ERR_SSL_BAD_HS_PROTOCOL_VERSION: return "no common protocol version";
    case MBEDTLS_ERR_SSL_INVALID_MAC: return "record failed its integrity check";
    case MBEDTLS_ERR_SSL_INVALID_RECORD: return "malformed record";
    case MBEDTLS_ERR_SSL_UNEXPECTED_MESSAGE:
    case MBEDTLS_ERR_SSL_UNEXPECTED_RECORD: return "unexpected message";
    case MBEDTLS_ERR_SSL_ALLOC_FAILED:
    case MBEDTLS_ERR_X509_ALLOC_FAILED:
    case MBEDTLS_ERR_PK_ALLOC_FAILED:
    case MBEDTLS_ERR_ECP_ALLOC_FAILED: return "out of memory inside MbedTLS";
    default: break;
  }
  if (high <= -0x7000 && high > -0x8000) return "malformed handshake message";
  if (IsX509ParseError(high)) return "malformed certificate";
  if (IsPkError(high)) return "malformed or unsupported key";
  if (IsPemError(high)) return "malformed PEM";
  return "MbedTLS error";
}

}  // namespace nodefl::tls
