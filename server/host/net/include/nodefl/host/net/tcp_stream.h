// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// TcpStream: a ByteStream over a connected Asio TCP socket.
#pragma once

#include <boost/asio/ip/tcp.hpp>

#include "nodefl/host/net/byte_stream.h"

namespace nodefl::host::net {

class TcpStream final : public ByteStream {
 public:
  explicit TcpStream(boost::asio::ip::tcp::socket socket) : socket_(std::move(socket)) {}

  boost::asio::any_io_executor get_executor() override { return socket_.get_executor(); }
  // End of stream, a reset and a local close all read as kAborted: nothing
  // more will come.
  boost::asio::awaitable<Result<size_t>> ReadSome(ByteSpan out) override;
  boost::asio::awaitable<Status> WriteAll(ConstByteSpan data) override;
  // Shuts both directions down, then closes.
  void Close() override;
  bool is_open() const override { return socket_.is_open(); }
  std::string remote() const override;  // "ip:port", or "?" once unknown

 private:
  boost::asio::ip::tcp::socket socket_;
};

}  // namespace nodefl::host::net
