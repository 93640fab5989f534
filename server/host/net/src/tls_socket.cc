// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/host/net/tls_socket.h"

#include <algorithm>

#include "nodefl/host/net/tcp_stream.h"

namespace nodefl::host::net {

TlsSocket::TlsSocket(std::unique_ptr<ByteStream> stream, const Buffers& buffers)
    : stream_(std::move(stream)),
      inbound_(buffers.inbound),
      outbound_(buffers.outbound),
      read_scratch_(buffers.read_chunk) {}

TlsSocket::TlsSocket(tcp::socket socket, const Buffers& buffers)
    : TlsSocket(std::make_unique<TcpStream>(std::move(socket)), buffers) {}

Status TlsSocket::Init(const tls::TlsConfig& config, const char* server_name) {
  return endpoint_.Init(config, ByteSpan(inbound_), ByteSpan(outbound_), server_name);
}

asio::awaitable<Status> TlsSocket::ReadMoreCiphertext() {
  // Hand over what an earlier read left (the endpoint's buffer was full),
  // otherwise read from the stream.
  if (read_scratch_begin_ == read_scratch_end_) {
    const Result<size_t> n = co_await stream_->ReadSome(ByteSpan(read_scratch_));
    if (!n.ok()) co_return n.status();
    bytes_in_ += *n;
    read_scratch_begin_ = 0;
    read_scratch_end_ = *n;
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
    // coroutine waits for the stream.
    write_scratch_.assign(pending.begin(), pending.end());
    endpoint_.ConsumeCiphertext(pending.size());
    const Status written = co_await stream_->WriteAll(ConstByteSpan(write_scratch_));
    if (!written.ok()) co_return written;
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
  if (stream_->is_open() && endpoint_.handshake_done() && endpoint_.CloseNotify().ok()) {
    (void)co_await Flush();
  }
  Close();
}

void TlsSocket::Close() { stream_->Close(); }

}  // namespace nodefl::host::net
