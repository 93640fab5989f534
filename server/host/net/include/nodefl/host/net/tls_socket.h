// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// TlsSocket: drives a sans-IO tls::TlsEndpoint over a byte stream (a TCP
// socket, or an in-memory stream in tests; byte_stream.h) with Boost.Asio
// C++20 coroutines. The same class carries the server's connections and test
// clients, so both sides run the SDK's TLS code.
//
// Concurrency: all calls happen on one strand. After the handshake, one
// coroutine reads (Read) and one writes (Write/Flush); only the writer
// touches the stream's write side. Read never writes: if decrypting produced
// ciphertext (an alert), it calls the `on_ciphertext` hook so the owner can
// wake its writer.
#pragma once

// Boost 1.74's awaitable.hpp uses std::exchange without including <utility>.
#include <utility>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nodefl/core/result.h"
#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/host/net/byte_stream.h"
#include "nodefl/tls/config.h"
#include "nodefl/tls/endpoint.h"

namespace nodefl::host::net {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

class TlsSocket {
 public:
  // Buffer sizes in bytes: the endpoint's inbound and outbound ciphertext
  // buffers, and the stream read chunk. Any non-zero sizes work (MbedTLS
  // resumes partial records); nodefl frames are at most ~4.6 KiB, so a few
  // KiB each keeps a connection small without extra round trips.
  struct Buffers {
    size_t inbound = 4096;
    size_t outbound = 8192;
    size_t read_chunk = 4096;
  };
  TlsSocket(std::unique_ptr<ByteStream> stream, const Buffers& buffers);
  // Over a connected TCP socket (a TcpStream).
  TlsSocket(tcp::socket socket, const Buffers& buffers);
  TlsSocket(const TlsSocket&) = delete;
  TlsSocket& operator=(const TlsSocket&) = delete;

  // `server_name` is required for clients (checked against the server
  // certificate) and nullptr for servers.
  Status Init(const tls::TlsConfig& config, const char* server_name);

  // Runs the handshake to completion. On failure the alert MbedTLS queued
  // (if any) is sent before returning.
  asio::awaitable<Status> Handshake();

  // Waits for and returns decrypted bytes; 0 means the peer closed cleanly.
  // Errors: kAborted (closed/reset), kDataLoss (bad record), ...
  asio::awaitable<Result<size_t>> Read(ByteSpan out);

  // Encrypts all of `data` and writes it.
  asio::awaitable<Status> Write(ConstByteSpan data);
  // Writes whatever ciphertext is pending (alerts, close_notify).
  asio::awaitable<Status> Flush();

  // Sends close_notify (best effort) and closes the stream.
  asio::awaitable<void> GracefulClose();
  // Immediate close: pending operations complete with an error.
  void Close();

  void set_on_ciphertext(std::function<void()> hook) { on_ciphertext_ = std::move(hook); }
  tls::TlsEndpoint& endpoint() { return endpoint_; }
  std::string remote() const { return stream_->remote(); }  // "ip:port" or "?" for TCP
  uint64_t bytes_in() const { return bytes_in_; }
  uint64_t bytes_out() const { return bytes_out_; }

 private:
  asio::awaitable<Status> ReadMoreCiphertext();

  std::unique_ptr<ByteStream> stream_;
  std::vector<uint8_t> inbound_;
  std::vector<uint8_t> outbound_;
  std::vector<uint8_t> read_scratch_;
  std::vector<uint8_t> write_scratch_;
  size_t read_scratch_begin_ = 0;
  size_t read_scratch_end_ = 0;
  tls::TlsEndpoint endpoint_;
  std::function<void()> on_ciphertext_;
  uint64_t bytes_in_ = 0;
  uint64_t bytes_out_ = 0;
};

}  // namespace nodefl::host::net
