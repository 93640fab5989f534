// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// MemoryStream: two connected in-memory ends of a byte stream, for testing
// what runs over a host::net::ByteStream (TlsSocket, the server's Connection)
// without sockets, threads or timing. Modelled on Boost.Beast's test stream:
// what one end writes the other reads, and a test can make an end misbehave.
//
//   FailNthRead(n)      this end's n-th ReadSome from now fails (kAborted)
//   FailNthWrite(n)     this end's n-th WriteAll from now fails (kAborted)
//                       A failure resets the pair as a TCP reset would:
//                       every pending and later call on either end fails.
//   CloseAfterBytes(n)  this end delivers n more bytes, then closes: the
//                       write that crosses the limit delivers its first part
//                       and fails; the other end reads those bytes, then
//                       sees the end of the stream (a peer gone mid-frame)
//   set_read_chunk(n)   this end's reads return at most n bytes (records
//                       and frames arrive in small pieces)
//   Close()             as a socket close: this end's calls fail; the
//                       other end reads what was sent, then the end
//
// Single-threaded: both ends and everything using them run on one thread
// (the test's io_context). As with a socket, an end must outlive the calls
// pending on it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <utility>

#include "nodefl/host/net/byte_stream.h"
#include "nodefl/host/net/wake_latch.h"

namespace nodefl::testing {

class MemoryStream final : public host::net::ByteStream {
 public:
  using Ends = std::pair<std::unique_ptr<MemoryStream>, std::unique_ptr<MemoryStream>>;

  // Two connected ends; each reports the other's name as remote().
  static Ends Pair(const boost::asio::any_io_executor& executor, const std::string& first_name = "memory-a",
                   const std::string& second_name = "memory-b");
  ~MemoryStream() override;

  boost::asio::any_io_executor get_executor() override { return executor_; }
  boost::asio::awaitable<Result<size_t>> ReadSome(ByteSpan out) override;
  boost::asio::awaitable<Status> WriteAll(ConstByteSpan data) override;
  void Close() override;
  bool is_open() const override { return !closed_; }
  std::string remote() const override { return remote_name_; }

  void FailNthRead(uint64_t n) { fail_read_in_ = n; }
  void FailNthWrite(uint64_t n) { fail_write_in_ = n; }
  void CloseAfterBytes(uint64_t n) { write_budget_ = n; }
  void set_read_chunk(size_t bytes) { read_chunk_ = bytes; }

  uint64_t bytes_read() const { return bytes_read_; }
  uint64_t bytes_written() const { return bytes_written_; }

 private:
  // One direction: written by one end, read by the other.
  struct Pipe {
    explicit Pipe(const boost::asio::any_io_executor& executor) : readable(executor) {}
    std::deque<uint8_t> bytes;
    bool ended = false;   // the writer closed: the reader gets the rest, then the end
    bool broken = false;  // reset: the reader fails at once
    host::net::WakeLatch readable;  // the reader waits here
  };
  struct Shared;

  MemoryStream(std::shared_ptr<Shared> shared, boost::asio::any_io_executor executor, bool first,
               std::string remote_name);
  Pipe& in();   // what this end reads
  Pipe& out();  // what this end writes
  // Counts down an injected failure; true if this call is the one to fail.
  static bool Trips(uint64_t& countdown);
  void Reset();

  std::shared_ptr<Shared> shared_;
  boost::asio::any_io_executor executor_;
  bool first_;
  std::string remote_name_;
  bool closed_ = false;
  uint64_t fail_read_in_ = 0;   // 0: never
  uint64_t fail_write_in_ = 0;  // 0: never
  uint64_t write_budget_ = UINT64_MAX;
  size_t read_chunk_ = 0;       // 0: no limit
  uint64_t bytes_read_ = 0;
  uint64_t bytes_written_ = 0;
};

}  // namespace nodefl::testing
