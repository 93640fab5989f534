// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/host/net/tls_socket.h"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>

namespace nodefl::host::net {

TlsSocket::TlsSocket(tcp::socket socket, const Buffers& buffers)
    : socket_(std::move(socket)),
      inbound_(buffers.inbound),
      outbound_(buffers.outbound),
      read_scratch_(buffers.read_chunk) {}

Status TlsSocket::Init(const tls::TlsConfig& config, const char* server_name) {
  return endpoint_.Init(config, ByteSpan(inbound_), ByteSpan(outbound_), server_name);
}

std::string TlsSocket::remote() const {
  boost::system::error_code ec;
  const auto ep = socket_.remote_endpoint(ec);
  if (ec) return "?";
  return ep.address().to_string() + ":" + std::to_string(ep.port());
}

asio::awaitable<Status> TlsSocket::ReadMoreCiphertext() {
  // Hand over what an earlier read left (the endpoint's buffer was full),
  // otherwise read from the socket.
  if (read_scratch_begin_ == read_scratch_end_) {
    boost::system::error_code ec;
    const size_t n = co_await socket_.async_read_some(
        asio::buffer(read_scratch_), asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return Status::Aborted();
    bytes_in_ += n;
    read_scratch_begin_ = 0;
    read_scratch_end_ = n;
  }
  size_t consumed = 0;
  const Status fed = endpoint_.FeedCiphertext(
      ConstByteSpan(read_scratch_.data() + read_scratch_begin_, read_scratch_end_ - read_scratch_begin_),
      &consumed);
  read_scratch_begin_ += consumed;
  co_return fed;
}

asio::awaitable<Status> TlsSocket::Flush() {
  while (true) {
    const ConstByteSpan pending = endpoint_.PendingCiphertext();
    if (pending.empty()) co_return Status::Ok();
    // Copy out first: the endpoint may be used by the reader while this
    // coroutine waits for the socket.
    write_scratch_.assign(pending.begin(), pending.end());
    endpoint_.ConsumeCiphertext(pending.size());
    boost::system::error_code ec;
    co_await asio::async_write(socket_, asio::buffer(write_scratch_),
                               asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return Status::Aborted();
    bytes_out_ += write_scratch_.size();
  }
}

asio::awaitable<Status> TlsSocket::Handshake() {
  while (true) {
    Result<tls::TlsProgress> progress = endpoint_.Handshake();
    const Status flushed = co_await Flush();
    if (!progress.ok()) co_return progress.status();
    if (!flushed.ok()) co_return flushed;
    switch (*progress) {
      case tls::TlsProgress::kDone:
        co_return Status::Ok();
      case tls::TlsProgress::kWantWrite:
        break;  // flushed above; try again
      case tls::TlsProgress::kWantRead: {
        const Status read = co_await ReadMoreCiphertext();
        if (!read.ok()) co_return read;
        break;
      }
    }
  }
}

asio::awaitable<Result<size_t>> TlsSocket::Read(ByteSpan out) {
  while (true) {
    Result<size_t> n = endpoint_.ReadPlaintext(out);
    if (!endpoint_.PendingCiphertext().empty() && on_ciphertext_) on_ciphertext_();
    if (!n.ok()) {
      if (n.status() == Status::Aborted() && endpoint_.peer_closed()) co_return size_t{0};
      co_return n.status();
    }
    if (*n > 0) co_return n;
    const Status read = co_await ReadMoreCiphertext();
    if (!read.ok()) co_return read;
  }
}

asio::awaitable<Status> TlsSocket::Write(ConstByteSpan data) {
  size_t done = 0;
  while (done < data.size()) {
    Result<size_t> taken = endpoint_.WritePlaintext(data.subspan(done));
    if (!taken.ok()) co_return taken.status();
    done += *taken;
    const Status flushed = co_await Flush();
    if (!flushed.ok()) co_return flushed;
  }
  co_return Status::Ok();
}

asio::awaitable<void> TlsSocket::GracefulClose() {
  if (socket_.is_open() && endpoint_.handshake_done() && endpoint_.CloseNotify().ok()) {
    (void)co_await Flush();
  }
  Close();
}

void TlsSocket::Close() {
  boost::system::error_code ignored;
  socket_.shutdown(tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
}

}  // namespace nodefl::host::net
