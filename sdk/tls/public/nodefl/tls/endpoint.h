// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// TlsEndpoint: one TLS connection, sans-IO. The app (or the device session,
// or the server's connection strand) owns the socket and moves bytes:
//
//   loop:
//     FeedCiphertext(bytes received from the socket, &consumed)
//     Handshake() / ReadPlaintext(...) / WritePlaintext(...)
//     send PendingCiphertext(), then ConsumeCiphertext(bytes sent)
//
// After *every* call, drain PendingCiphertext(): MbedTLS may have produced
// handshake messages, alerts or records. A call never blocks; "needs more
// input" or "needs output space" are results, not errors.
//
// Errors are sticky: once an operation fails (bad certificate, bad record,
// fatal alert) every later call returns the same Status. An alert MbedTLS
// queued for the peer may still be in PendingCiphertext(); send it, then
// close the socket. last_mbedtls_error() and last_error_text() say why, for
// logs; verify_flags() has the X.509 verification flags.
//
// Memory per connection:
//   * this object: sizeof(TlsEndpoint), about 0.5-1 KiB (mbedtls_ssl_context
//     inline);
//   * the two caller buffers (ciphertext in and out). Any non-zero size
//     works, because MbedTLS resumes partial reads and writes, but a buffer
//     smaller than one TLS record costs extra pump rounds, and the outbound
//     buffer bounds the records WritePlaintext produces.
//     kTlsRecommendedBufferBytes (one maximal record) each is the simple
//     choice; connections carrying only nodefl frames (at most a few KiB)
//     do well with 4-8 KiB each;
//   * allocated by MbedTLS itself (heap inside MbedTLS; see credentials.h):
//     its record input and output buffers, MBEDTLS_SSL_IN_CONTENT_LEN and
//     MBEDTLS_SSL_OUT_CONTENT_LEN (16 KiB each in Debian's build) plus about
//     0.3 KiB overhead each, for the connection's lifetime; the handshake
//     state (several KiB, freed when the handshake ends); the peer's parsed
//     certificate (about 1-2 KiB, kept). docs/security.md has measured
//     figures. A port can shrink MbedTLS's buffers with
//     MBEDTLS_SSL_IN/OUT_CONTENT_LEN (nodefl frames fit in 8 KiB records).
//
// Not thread-safe: one connection is driven by one thread (or strand) at a
// time. Many endpoints may share one TlsConfig across threads. Neither
// copyable nor movable: MbedTLS keeps the endpoint's address for its I/O
// callbacks (hold endpoints by pointer or in stable storage).
#pragma once

#include <mbedtls/ssl.h>

#include <cstddef>
#include <cstdint>

#include "nodefl/core/result.h"
#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/tls/config.h"

namespace nodefl::tls {

// AES-GCM records in TLS 1.2: 5-byte header, 8-byte explicit nonce, 16-byte
// tag around at most 16 KiB of plaintext.
inline constexpr size_t kTlsRecordOverheadBytes = 5 + 8 + 16;
inline constexpr size_t kTlsMaxPlaintextRecordBytes = 16384;
inline constexpr size_t kTlsRecommendedBufferBytes =
    kTlsMaxPlaintextRecordBytes + kTlsRecordOverheadBytes;

enum class TlsProgress : uint8_t {
  kDone,       // handshake complete; application data may flow
  kWantRead,   // send PendingCiphertext(), then feed more received bytes
  kWantWrite,  // the outbound buffer is full: send PendingCiphertext() first
};

class TlsEndpoint {
 public:
  TlsEndpoint();
  ~TlsEndpoint();
  TlsEndpoint(const TlsEndpoint&) = delete;
  TlsEndpoint& operator=(const TlsEndpoint&) = delete;

  // Binds the endpoint to `config` (which must be ready and outlive it) and
  // to the caller's ciphertext buffers (both non-empty, not overlapping,
  // outliving the endpoint). A client must name the server it expects
  // (`server_name`, NUL-terminated, checked against the server certificate's
  // subject alternative DNS names, or its common name if it has none); a
  // server passes nullptr. kFailedPrecondition if already initialised or the
  // config is not ready, kInvalidArgument for bad arguments.
  Status Init(const TlsConfig& config, ByteSpan inbound_buffer, ByteSpan outbound_buffer,
              const char* server_name);

  // Forgets the connection (keeps config, buffers, server name and
  // MbedTLS's record buffers) so that the endpoint can serve a new
  // connection without reallocating. Clears errors.
  Status Reset();

  // Queues received ciphertext. Copies as much as fits into the inbound
  // buffer and reports it in *consumed (0 when the buffer is full: run
  // Handshake()/ReadPlaintext() first). kFailedPrecondition before Init.
  Status FeedCiphertext(ConstByteSpan in, size_t* consumed);

  // Ciphertext waiting to be sent, oldest first. Valid until the next call
  // on this endpoint.
  ConstByteSpan PendingCiphertext() const;
  // Drops the first `count` bytes of PendingCiphertext() (they were sent).
  // `count` larger than what is pending is a programming error.
  void ConsumeCiphertext(size_t count);

  // Advances the handshake as far as the available bytes allow.
  Result<TlsProgress> Handshake();
  bool handshake_done() const { return handshake_done_; }

  // Encrypts up to data.size() bytes into records in the outbound buffer and
  // returns how many it took: possibly fewer (at most one record, and no
  // more than the outbound buffer has room for), 0 when the outbound buffer
  // is full (send PendingCiphertext() first). kFailedPrecondition before
  // the handshake is done or after CloseNotify().
  Result<size_t> WritePlaintext(ConstByteSpan data);

  // Decrypts received records into `out`; returns the number of bytes, 0
  // when no complete record is available yet. Call it until it returns 0:
  // one fed chunk may hold several records. kAborted when the peer has
  // closed (peer_closed() then says whether it did so cleanly with
  // close_notify) or sent a fatal alert; kDataLoss for a corrupted record.
  Result<size_t> ReadPlaintext(ByteSpan out);

  // Queues a close_notify alert. kUnavailable if the outbound buffer is full
  // (send PendingCiphertext() and call again).
  Status CloseNotify();
  bool peer_closed() const { return peer_closed_; }

  // The id in the peer certificate's subject CN "device-<id>", available
  // after the handshake. The server uses it as the connection's identity.
  // kFailedPrecondition before the handshake is done, kUnauthenticated if
  // the peer certificate does not name a device (e.g. on a client, whose
  // peer is the server).
  Result<uint32_t> PeerDeviceId() const;

  // The failure that made the endpoint fail (or the last one seen).
  Status status() const { return failure_; }
  int last_mbedtls_error() const { return last_mbedtls_error_; }
  const char* last_error_text() const;
  // MBEDTLS_X509_BADCERT_* flags from the peer certificate's verification.
  uint32_t verify_flags() const;
  // Negotiated ciphersuite name, or "none" before the handshake.
  const char* ciphersuite() const;

 private:
  static int SendToBuffer(void* self, const unsigned char* data, size_t length);
  static int ReceiveFromBuffer(void* self, unsigned char* out, size_t length);
  static int RecordPeerIdentity(void* self, mbedtls_x509_crt* certificate, int depth,
                                uint32_t* flags);

  Status Fail(int mbedtls_error);
  void ClearConnectionState();

  mbedtls_ssl_context ssl_;
  ByteSpan inbound_;
  ByteSpan outbound_;
  size_t inbound_begin_ = 0;
  size_t inbound_end_ = 0;
  size_t outbound_begin_ = 0;
  size_t outbound_end_ = 0;
  Result<uint32_t> peer_device_id_ = Status::FailedPrecondition();
  Status failure_;
  int last_mbedtls_error_ = 0;
  bool initialised_ = false;
  bool handshake_done_ = false;
  bool close_sent_ = false;
  bool peer_closed_ = false;
};

}  // namespace nodefl::tls
