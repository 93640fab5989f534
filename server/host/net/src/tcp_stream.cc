// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/host/net/tcp_stream.h"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

namespace nodefl::host::net {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

asio::awaitable<Result<size_t>> TcpStream::ReadSome(ByteSpan out) {
  boost::system::error_code ec;
  const size_t n = co_await socket_.async_read_some(asio::buffer(out.data(), out.size()),
                                                    asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return Status::Aborted();
  co_return n;
}

asio::awaitable<Status> TcpStream::WriteAll(ConstByteSpan data) {
  boost::system::error_code ec;
  co_await asio::async_write(socket_, asio::buffer(data.data(), data.size()),
                             asio::redirect_error(asio::use_awaitable, ec));
  co_return ec ? Status::Aborted() : Status::Ok();
}

void TcpStream::Close() {
  boost::system::error_code ignored;
  socket_.shutdown(tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
}

std::string TcpStream::remote() const {
  boost::system::error_code ec;
  const auto ep = socket_.remote_endpoint(ec);
  if (ec) return "?";
  return ep.address().to_string() + ":" + std::to_string(ep.port());
}

}  // namespace nodefl::host::net
