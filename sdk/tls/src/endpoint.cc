// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/tls/endpoint.h"

#include <cstring>

#include "nodefl/tls/device_identity.h"
#include "nodefl/tls/errors.h"

namespace nodefl::tls {
namespace {

bool Overlap(ByteSpan a, ByteSpan b) {
  const uint8_t* a_end = a.data() + a.size();
  const uint8_t* b_end = b.data() + b.size();
  return a.data() < b_end && b.data() < a_end;
}

// Moves the live bytes [begin, end) of `buffer` to its front so that the
// free space is contiguous at the back.
void Compact(ByteSpan buffer, size_t* begin, size_t* end) {
  if (*begin == 0) return;
  const size_t live = *end - *begin;
  if (live > 0) std::memmove(buffer.data(), buffer.data() + *begin, live);
  *begin = 0;
  *end = live;
}

}  // namespace

TlsEndpoint::TlsEndpoint() { mbedtls_ssl_init(&ssl_); }

TlsEndpoint::~TlsEndpoint() { mbedtls_ssl_free(&ssl_); }

Status TlsEndpoint::Init(const TlsConfig& config, ByteSpan inbound_buffer,
                         ByteSpan outbound_buffer, const char* server_name) {
  if (initialised_ || !config.ready()) return Status::FailedPrecondition();
  if (inbound_buffer.empty() || outbound_buffer.empty() ||
      Overlap(inbound_buffer, outbound_buffer)) {
    return Status::InvalidArgument();
  }
  const bool is_client = config.role() == TlsRole::kClient;
  // A client that does not say whom it expects would accept any server
  // certificate the CA ever issued (including a device's), so the name is
  // mandatory; a server has no use for one.
  if (is_client != (server_name != nullptr) || (is_client && server_name[0] == '\0')) {
    return Status::InvalidArgument();
  }
  int rc = mbedtls_ssl_setup(&ssl_, config.get());
  if (rc == 0 && is_client) rc = mbedtls_ssl_set_hostname(&ssl_, server_name);
  if (rc != 0) {
    mbedtls_ssl_free(&ssl_);
    mbedtls_ssl_init(&ssl_);
    return StatusFromMbedtls(rc);
  }
  mbedtls_ssl_set_bio(&ssl_, this, &TlsEndpoint::SendToBuffer, &TlsEndpoint::ReceiveFromBuffer,
                      nullptr);
  mbedtls_ssl_set_verify(&ssl_, &TlsEndpoint::RecordPeerIdentity, this);
  inbound_ = inbound_buffer;
  outbound_ = outbound_buffer;
  ClearConnectionState();
  initialised_ = true;
  return Status::Ok();
}

void TlsEndpoint::ClearConnectionState() {
  inbound_begin_ = inbound_end_ = 0;
  outbound_begin_ = outbound_end_ = 0;
  peer_device_id_ = Status::Unauthenticated();
  failure_ = Status::Ok();
  last_mbedtls_error_ = 0;
  handshake_done_ = false;
  close_sent_ = false;
  peer_closed_ = false;
}

Status TlsEndpoint::Reset() {
  if (!initialised_) return Status::FailedPrecondition();
  const int rc = mbedtls_ssl_session_reset(&ssl_);
  ClearConnectionState();
  if (rc != 0) return Fail(rc);
  return Status::Ok();
}

Status TlsEndpoint::Fail(int mbedtls_error) {
  last_mbedtls_error_ = mbedtls_error;
  failure_ = StatusFromMbedtls(mbedtls_error);
  if (failure_.ok() || failure_.code() == StatusCode::kUnavailable) failure_ = Status::Internal();
  if (mbedtls_error == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY) peer_closed_ = true;
  return failure_;
}

int TlsEndpoint::SendToBuffer(void* self, const unsigned char* data, size_t length) {
  auto* endpoint = static_cast<TlsEndpoint*>(self);
  if (endpoint->outbound_.size() - endpoint->outbound_end_ < length) {
    Compact(endpoint->outbound_, &endpoint->outbound_begin_, &endpoint->outbound_end_);
  }
  const size_t room = endpoint->outbound_.size() - endpoint->outbound_end_;
  if (room == 0) return MBEDTLS_ERR_SSL_WANT_WRITE;
  const size_t take = length < room ? length : room;
  std::memcpy(endpoint->outbound_.data() + endpoint->outbound_end_, data, take);
  endpoint->outbound_end_ += take;
  return static_cast<int>(take);
}

int TlsEndpoint::ReceiveFromBuffer(void* self, unsigned char* out, size_t length) {
  auto* endpoint = static_cast<TlsEndpoint*>(self);
  const size_t available = endpoint->inbound_end_ - endpoint->inbound_begin_;
  if (available == 0) return MBEDTLS_ERR_SSL_WANT_READ;
  const size_t take = length < available ? length : available;
  std::memcpy(out, endpoint->inbound_.data() + endpoint->inbound_begin_, take);
  endpoint->inbound_begin_ += take;
  if (endpoint->inbound_begin_ == endpoint->inbound_end_) {
    endpoint->inbound_begin_ = endpoint->inbound_end_ = 0;
  }
  return static_cast<int>(take);
}

int TlsEndpoint::RecordPeerIdentity(void* self, mbedtls_x509_crt* certificate, int depth,
                                    uint32_t* /*flags*/) {
  // Called for every certificate of the peer's chain while MbedTLS verifies
  // it; depth 0 is the peer's own. Only records the claim: whether the chain
  // verified is MbedTLS's verdict (the handshake fails if it did not), and
  // PeerDeviceId() is only answered after a successful handshake.
  if (depth == 0) {
    static_cast<TlsEndpoint*>(self)->peer_device_id_ = DeviceIdFromCertificate(*certificate);
  }
  return 0;
}

Status TlsEndpoint::FeedCiphertext(ConstByteSpan in, size_t* consumed) {
  if (consumed == nullptr) return Status::InvalidArgument();
  *consumed = 0;
  if (!initialised_) return Status::FailedPrecondition();
  if (inbound_.size() - inbound_end_ < in.size()) {
    Compact(inbound_, &inbound_begin_, &inbound_end_);
  }
  const size_t room = inbound_.size() - inbound_end_;
  const size_t take = in.size() < room ? in.size() : room;
  if (take > 0) std::memcpy(inbound_.data() + inbound_end_, in.data(), take);
  inbound_end_ += take;
  *consumed = take;
  return Status::Ok();
}

ConstByteSpan TlsEndpoint::PendingCiphertext() const {
  if (!initialised_) return ConstByteSpan();
  return ConstByteSpan(outbound_.data() + outbound_begin_, outbound_end_ - outbound_begin_);
}

void TlsEndpoint::ConsumeCiphertext(size_t count) {
  NODEFL_CHECK(count <= outbound_end_ - outbound_begin_);
  outbound_begin_ += count;
  if (outbound_begin_ == outbound_end_) outbound_begin_ = outbound_end_ = 0;
}

Result<TlsProgress> TlsEndpoint::Handshake() {
  if (!initialised_) return Status::FailedPrecondition();
  if (!failure_.ok()) return failure_;
  if (handshake_done_) return TlsProgress::kDone;
  const int rc = mbedtls_ssl_handshake(&ssl_);
  if (rc == 0) {
    handshake_done_ = true;
    return TlsProgress::kDone;
  }
  if (rc == MBEDTLS_ERR_SSL_WANT_READ) return TlsProgress::kWantRead;
  if (rc == MBEDTLS_ERR_SSL_WANT_WRITE) return TlsProgress::kWantWrite;
  return Fail(rc);
}

Result<size_t> TlsEndpoint::WritePlaintext(ConstByteSpan data) {
  if (!initialised_) return Status::FailedPrecondition();
  if (!failure_.ok()) return failure_;
  if (!handshake_done_ || close_sent_) return Status::FailedPrecondition();
  if (data.empty()) return size_t{0};
  const int expansion = mbedtls_ssl_get_record_expansion(&ssl_);
  const int max_payload = mbedtls_ssl_get_max_out_record_payload(&ssl_);
  if (expansion < 0) return Fail(expansion);
  if (max_payload <= 0) return Fail(max_payload < 0 ? max_payload : MBEDTLS_ERR_SSL_INTERNAL_ERROR);
  // Only ever hand MbedTLS a record that fits into the outbound buffer as a
  // whole. Otherwise mbedtls_ssl_write would return WANT_WRITE with the
  // record half sent and insist on being called again with the same data,
  // which the "accepted n bytes" contract of this function cannot express.
  Compact(outbound_, &outbound_begin_, &outbound_end_);
  const size_t room = outbound_.size() - outbound_end_;
  if (room <= static_cast<size_t>(expansion)) return size_t{0};
  size_t chunk = data.size();
  if (chunk > static_cast<size_t>(max_payload)) chunk = static_cast<size_t>(max_payload);
  if (chunk > room - static_cast<size_t>(expansion)) chunk = room - static_cast<size_t>(expansion);
  const int rc = mbedtls_ssl_write(&ssl_, data.data(), chunk);
  if (rc >= 0) return static_cast<size_t>(rc);
  // WANT_WRITE cannot happen given the room check above; if MbedTLS ever
  // disagrees, failing loudly beats silently duplicating or losing data.
  return Fail(rc == MBEDTLS_ERR_SSL_WANT_WRITE ? MBEDTLS_ERR_SSL_INTERNAL_ERROR : rc);
}

Result<size_t> TlsEndpoint::ReadPlaintext(ByteSpan out) {
  if (!initialised_) return Status::FailedPrecondition();
  if (!failure_.ok()) return failure_;
  if (!handshake_done_) return Status::FailedPrecondition();
  if (out.empty()) return size_t{0};
  const int rc = mbedtls_ssl_read(&ssl_, out.data(), out.size());
  if (rc >= 0) return static_cast<size_t>(rc);
  // WANT_WRITE: MbedTLS has an answer (an alert) to flush first.
  if (rc == MBEDTLS_ERR_SSL_WANT_READ || rc == MBEDTLS_ERR_SSL_WANT_WRITE) return size_t{0};
  return Fail(rc);
}

Status TlsEndpoint::CloseNotify() {
  if (!initialised_) return Status::FailedPrecondition();
  if (!failure_.ok()) return failure_;
  const int rc = mbedtls_ssl_close_notify(&ssl_);
  if (rc == MBEDTLS_ERR_SSL_WANT_WRITE) return Status::Unavailable();
  if (rc != 0) return Fail(rc);
  close_sent_ = true;
  return Status::Ok();
}

Result<uint32_t> TlsEndpoint::PeerDeviceId() const {
  if (!handshake_done_) return Status::FailedPrecondition();
  return peer_device_id_;
}

const char* TlsEndpoint::last_error_text() const {
  return DescribeMbedtlsError(last_mbedtls_error_);
}

uint32_t TlsEndpoint::verify_flags() const { return mbedtls_ssl_get_verify_result(&ssl_); }

const char* TlsEndpoint::ciphersuite() const {
  const char* name = mbedtls_ssl_get_ciphersuite(&ssl_);
  return name == nullptr ? "none" : name;
}

}  // namespace nodefl::tls
