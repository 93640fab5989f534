// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// ByteStream: the bytes under a TlsSocket and a server Connection. In
// production a TCP socket (tcp_stream.h); in tests an in-memory pair that
// can fail on purpose (tests/server/support/memory_stream.h), so TLS and the
// server's connection handling can be tested without sockets or timing.
//
// Concurrency: the TlsSocket's rules. All calls happen on one strand; at
// most one ReadSome and one WriteAll are outstanding at a time (the reader
// and the writer coroutine).
#pragma once

// Boost 1.74's awaitable.hpp uses std::exchange without including <utility>.
#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <cstddef>
#include <string>

#include "nodefl/core/result.h"
#include "nodefl/core/span.h"
#include "nodefl/core/status.h"

namespace nodefl::host::net {

class ByteStream {
 public:
  virtual ~ByteStream() = default;

  // Where the stream's completions run; owners make their strand from it.
  virtual boost::asio::any_io_executor get_executor() = 0;
  // Waits for at least one byte and copies up to out.size() bytes; returns
  // the count. kAborted once the stream is closed, reset or ended: no byte
  // follows.
  virtual boost::asio::awaitable<Result<size_t>> ReadSome(ByteSpan out) = 0;
  // Writes all of `data`; kAborted if the stream broke on the way.
  virtual boost::asio::awaitable<Status> WriteAll(ConstByteSpan data) = 0;
  // Ends the stream now: pending and later reads and writes fail with
  // kAborted. Safe to call more than once.
  virtual void Close() = 0;
  virtual bool is_open() const = 0;
  // Who is on the other side, for logs ("ip:port" for TCP, "?" if unknown).
  virtual std::string remote() const = 0;
};

}  // namespace nodefl::host::net
