// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Support for the transport integration tests: a real nodefl server running
// in-process on 127.0.0.1 (its own threads), the deployment files it reads
// (written from the in-memory TestPki into a temporary folder), a log file
// the tests can search, and RawClient: a device that speaks TLS for real but
// lets the test put any bytes into the connection (well-formed envelopes,
// wrong sequence numbers, garbage), so the server's reaction to every
// protocol violation can be observed from the outside.
//
// Threading: the server runs on its own threads; every client of a test runs
// on one test-local io_context driven from the test thread (RunUntil), so the
// test code reads like blocking calls with deadlines.
#pragma once

// Boost 1.74's awaitable.hpp uses std::exchange without including <utility>.
#include <utility>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "nodefl/core/span.h"
#include "nodefl/core/status.h"
#include "nodefl/random/drbg.h"
#include "nodefl/server/core/config.h"
#include "nodefl/server/core/log.h"
#include "nodefl/server/net/server.h"
#include "nodefl/host/net/tls_socket.h"
#include "nodefl/tls/config.h"
#include "nodefl/tls/credentials.h"
#include "nodefl/protocol/envelope.pb.h"
#include "nodefl/protocol/frame.h"
#include "test_pki.h"

namespace nodefl::transport_test {

namespace asio = boost::asio;
using Millis = std::chrono::milliseconds;

// ---- driving a test-local io_context ----------------------------------------

// Runs `io` on the calling thread until `done()` holds or `timeout` passes;
// returns done(). Restarts `io` when it runs out of work.
bool RunUntil(asio::io_context& io, const std::function<bool()>& done, Millis timeout);

// Runs the coroutine `task` on `io` until it finishes (its result) or
// `timeout` passes (nullopt; the coroutine is left pending and must be ended
// by closing what it waits on).
template <typename T>
std::optional<T> RunFor(asio::io_context& io, asio::awaitable<T> task, Millis timeout) {
  // Shared with the completion handler: it may outlive this call on timeout.
  struct Slot {
    bool done = false;
    std::optional<T> value;
  };
  auto slot = std::make_shared<Slot>();
  asio::co_spawn(io, std::move(task), [slot](std::exception_ptr error, T value) {
    slot->done = true;
    if (!error) slot->value = std::move(value);
  });
  RunUntil(io, [&slot] { return slot->done; }, timeout);
  return slot->value;
}

// ---- deployment files ---------------------------------------------------------

// A PKI plus the files a server reads: ca.crt, server.crt, server.key and
// credentials/device-<id>.crt for `device_ids`, in a fresh temporary folder
// removed on destruction.
class TestDeployment {
 public:
  explicit TestDeployment(const std::vector<uint32_t>& device_ids, uint64_t seed = 1);
  ~TestDeployment();
  TestDeployment(const TestDeployment&) = delete;
  TestDeployment& operator=(const TestDeployment&) = delete;

  // False (and error() says why) if the files could not be written.
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }

  testing::TestPki& pki() { return pki_; }
  const std::filesystem::path& dir() const { return dir_; }
  // The identity issued for `device_id` (one of the ids given at
  // construction; aborts otherwise: a mistake in the test).
  const testing::TestIdentity& device(uint32_t device_id) const;

  // Defaults with this deployment's files, an OS-chosen port on 127.0.0.1,
  // short timeouts for tests, and no job.
  server::ServerConfig BaseConfig() const;

 private:
  testing::TestPki pki_;
  std::filesystem::path dir_;
  std::map<uint32_t, testing::TestIdentity> devices_;
  std::string error_;
};

// ---- the server under test ------------------------------------------------------

// A log line with `event=<event>` and each of `fields` ("key=value", matched
// as whole logfmt tokens, so "peer=127.0.0.1:4000" does not match port 40001).
bool LogHasLine(std::string_view log_text, std::string_view event, const std::vector<std::string>& fields);

// The unsigned integer value of `key` on the first line with `event=<event>`;
// nullopt if there is no such line, no such key, or the value is not a number.
std::optional<uint64_t> LogNumber(std::string_view log_text, std::string_view event, std::string_view key);

// Creates the server from `config` (logging at debug level into
// `log_path`) and runs Server::Run() on its own thread.
class ServerUnderTest {
 public:
  ServerUnderTest(const server::ServerConfig& config, const std::filesystem::path& log_path);
  // Stops the server if it still runs and joins its thread.
  ~ServerUnderTest();
  ServerUnderTest(const ServerUnderTest&) = delete;
  ServerUnderTest& operator=(const ServerUnderTest&) = delete;

  bool ok() const { return server_ != nullptr; }
  const std::string& error() const { return error_; }
  uint16_t port() const { return port_; }
  bool running() const { return !returned_.load(); }

  // Waits for Run() to return on its own; its exit status, or nullopt if it
  // did not return within `timeout`.
  std::optional<int> WaitForExit(Millis timeout);
  // Stop(), then WaitForExit(timeout).
  std::optional<int> StopAndWait(Millis timeout);

  // Everything logged so far.
  std::string LogText() const;
  // Waits until LogHasLine() holds for the log.
  bool WaitForLog(std::string_view event, const std::vector<std::string>& fields, Millis timeout) const;

 private:
  std::filesystem::path log_path_;
  std::FILE* log_file_ = nullptr;
  std::unique_ptr<server::Logger> logger_;
  std::unique_ptr<server::net::Server> server_;
  std::string error_;
  uint16_t port_ = 0;
  std::thread thread_;
  std::atomic<bool> returned_{false};
  std::promise<int> exit_promise_;
  std::shared_future<int> exit_future_;
};

// ---- a hand-driven device -------------------------------------------------------

// What one test client proves and trusts: its own DRBG (TLS randomness,
// seal blinding), credentials and a client TLS configuration.
struct ClientCredentials {
  Drbg drbg;
  tls::TlsCredentials credentials;
  tls::TlsConfig tls;
};

// Credentials that trust `trusted_ca_der` and present `identity`; nullptr
// (with `*error`) on failure.
std::unique_ptr<ClientCredentials> MakeClientCredentials(const std::vector<uint8_t>& trusted_ca_der,
                                                         const testing::TestIdentity& identity, uint64_t seed,
                                                         std::string* error);

// One TLS connection to the server whose every byte the test chooses. A
// reader coroutine collects everything the server sends (decoded envelopes)
// and notices when the server closes the connection.
class RawClient {
 public:
  RawClient(asio::io_context& io, const ClientCredentials& credentials);
  // Closes the connection and lets the reader finish.
  ~RawClient();
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  // TCP connect and TLS handshake (server name "localhost"). On failure the
  // connection is closed and the handshake status returned.
  Status Connect(uint16_t port, Millis timeout = Millis(5000));
  // This side's TCP port (known once connected, even if the handshake
  // failed): the server logs it as peer=127.0.0.1:<port>.
  uint16_t local_port() const { return local_port_; }
  std::string peer_field() const { return "peer=127.0.0.1:" + std::to_string(local_port_); }

  // Plaintext bytes into the TLS connection, exactly as given.
  Status WriteRaw(ConstByteSpan bytes, Millis timeout = Millis(3000));
  // Frames `env` (version and the next sequence number filled in) and writes it.
  Status Send(nodefl_wire_Envelope& env);
  // As Send, but with sequence number `seq`; the client's own count still
  // advances by one.
  Status SendWithSeq(nodefl_wire_Envelope& env, uint64_t seq);

  // The next envelope from the server, or nullptr if none arrived within
  // `timeout` or the connection is closed and nothing is left.
  std::unique_ptr<nodefl_wire_Envelope> Next(Millis timeout = Millis(3000));
  // True once the server has closed the connection (within `timeout`).
  bool WaitClosed(Millis timeout = Millis(3000));
  bool closed() const { return closed_; }
  // Envelopes received and not taken with Next() yet.
  size_t queued() const { return inbox_.size(); }
  // Frames from the server that did not decode or broke the sequence
  // numbering (1, 2, ... per connection); both must stay 0.
  uint64_t bad_frames() const { return bad_frames_; }

  // Hello, then waits for the Welcome; nullopt if anything else came.
  std::optional<nodefl_wire_Welcome> Register(uint32_t device_id, ConstByteSpan resume_token = {},
                                              uint64_t last_delivered_relay_id = 0,
                                              Millis timeout = Millis(5000));

  // Closes the connection without a Goodbye (a lost connection).
  void Close();

 private:
  asio::awaitable<Status> ConnectTask(uint16_t port);
  asio::awaitable<Status> WriteTask(std::vector<uint8_t> bytes);
  asio::awaitable<void> ReadLoop();

  asio::io_context& io_;
  const ClientCredentials& credentials_;
  std::unique_ptr<host::net::TlsSocket> tls_;
  uint16_t local_port_ = 0;
  uint64_t next_seq_ = 1;
  uint64_t expected_in_seq_ = 1;
  bool reader_running_ = false;
  bool closed_ = false;
  uint64_t bad_frames_ = 0;
  std::vector<uint8_t> frame_storage_;
  protocol::FrameDecoder decoder_;
  std::deque<std::unique_ptr<nodefl_wire_Envelope>> inbox_;
};

// A fresh envelope with `body_tag` set (heap: an envelope is ~4 KiB).
std::unique_ptr<nodefl_wire_Envelope> NewEnvelope(pb_size_t body_tag, uint64_t job_id = 0, uint32_t round = 0);

}  // namespace nodefl::transport_test
