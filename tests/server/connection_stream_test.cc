// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The server's Connection driven over an in-memory byte stream
// (support/memory_stream.h): a device that goes away in the middle of a
// frame, before and after registering. The connection must notice, end its
// session (registry and relay), and release itself; the other end of the
// stream is played by a TlsSocket with a device certificate.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "memory_stream.h"
#include "nodefl/host/net/tls_socket.h"
#include "nodefl/protocol/envelope_codec.h"
#include "nodefl/protocol/frame.h"
#include "nodefl/server/core/config.h"
#include "nodefl/server/core/log.h"
#include "nodefl/server/core/registry.h"
#include "nodefl/server/core/relay.h"
#include "nodefl/server/net/connection.h"
#include "nodefl/server/net/peer_certificates.h"
#include "test_pki.h"

namespace nodefl::server::net {
namespace {

using host::net::TlsSocket;
using testing::MemoryStream;
using testing::TestPki;

constexpr uint32_t kDevice = 4;
// Bounds io_context::run_for in case a coroutine never finishes (the bug
// these tests look for); every test ends long before it.
constexpr auto kHangGuard = std::chrono::seconds(20);

// The server side (context, registry, relay, a Connection) and a device
// TlsSocket, joined by a MemoryStream pair, all on one io_context.
class ConnectionStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    log_file_ = std::tmpfile();
    ASSERT_NE(log_file_, nullptr);
    log_ = std::make_unique<Logger>(LogLevel::kDebug, LogFormat::kLogfmt, log_file_);
    ASSERT_TRUE(pki_.Load(pki_.Server("localhost"), &server_credentials_).ok());
    ASSERT_TRUE(pki_.Load(pki_.Device(kDevice), &device_credentials_).ok());
    ASSERT_TRUE(server_tls_.Init(tls::TlsRole::kServer, server_credentials_, pki_.random_function(),
                                 pki_.random_context())
                    .ok());
    ASSERT_TRUE(device_tls_.Init(tls::TlsRole::kClient, device_credentials_, pki_.random_function(),
                                 pki_.random_context())
                    .ok());
    std::string error;
    registry_ = DeviceRegistry::Create({kDevice}, RegistryOptions{}, &error);
    ASSERT_NE(registry_, nullptr) << error;
    relay_ = std::make_unique<Relay>(*registry_, RelayLimitsFromConfig(context_.config));
    context_.log = log_.get();
    context_.tls = &server_tls_;
    context_.registry = registry_.get();
    context_.relay = relay_.get();
    context_.certificates = &certificates_;

    auto [device_end, server_end] = MemoryStream::Pair(io_.get_executor(), "device", "server");
    device_stream_ = device_end.get();
    device_ = std::make_unique<TlsSocket>(std::move(device_end), TlsSocket::Buffers{});
    ASSERT_TRUE(device_->Init(device_tls_, "localhost").ok());
    auto connection = std::make_shared<Connection>(context_, std::move(server_end), 1);
    connection_ = connection;
    connection->Start();
  }

  void TearDown() override {
    if (log_file_ != nullptr) std::fclose(log_file_);
  }

  // Runs the io_context until `done` (set by the device's coroutine) and
  // the connection has released itself, or until the hang guard.
  void Run(const bool& done) {
    const auto give_up = std::chrono::steady_clock::now() + kHangGuard;
    while ((!done || !connection_.expired()) && std::chrono::steady_clock::now() < give_up) {
      io_.run_for(std::chrono::milliseconds(100));
      io_.restart();
    }
  }

  // One frame's bytes, with the device's next sequence number.
  std::vector<uint8_t> Frame(nodefl_wire_Envelope& env) {
    env.seq = next_seq_++;
    std::vector<uint8_t> frame(protocol::kFrameHeaderBytes + protocol::kMaxFramePayloadBytes);
    const Result<size_t> n = protocol::EncodeFrame(env, ByteSpan(frame));
    EXPECT_TRUE(n.ok());
    frame.resize(n.ok() ? *n : 0);
    return frame;
  }

  std::vector<uint8_t> Hello() {
    auto env = std::make_unique<nodefl_wire_Envelope>();
    protocol::InitEnvelope(env.get(), nodefl_wire_Envelope_hello_tag);
    env->body.hello.device_id = kDevice;
    env->body.hello.max_frame_bytes = protocol::kMaxFramePayloadBytes;
    return Frame(*env);
  }

  std::vector<uint8_t> Heartbeat() {
    auto env = std::make_unique<nodefl_wire_Envelope>();
    protocol::InitEnvelope(env.get(), nodefl_wire_Envelope_heartbeat_tag);
    env->body.heartbeat.sent_at_us = 123;
    return Frame(*env);
  }

  // Reads frames until one with `body` arrives; false if the stream ends.
  asio::awaitable<bool> ReadUntil(pb_size_t body) {
    std::vector<uint8_t> storage(protocol::FrameDecoder::StorageBytes());
    protocol::FrameDecoder decoder{ByteSpan(storage)};
    auto env = std::make_unique<nodefl_wire_Envelope>();
    std::vector<uint8_t> plain(4096);
    while (true) {
      const Result<size_t> n = co_await device_->Read(ByteSpan(plain));
      if (!n.ok() || *n == 0) co_return false;
      size_t offset = 0;
      while (offset < *n || decoder.has_frame()) {
        if (!decoder.has_frame()) {
          size_t consumed = 0;
          if (!decoder.Feed(ConstByteSpan(plain.data() + offset, *n - offset), &consumed).ok()) co_return false;
          offset += consumed;
          if (!decoder.has_frame()) break;
        }
        const bool match = protocol::DecodeEnvelope(decoder.frame(), env.get()).ok() && env->which_body == body;
        decoder.PopFrame();
        if (match) co_return true;
      }
    }
  }

  std::string LogText() {
    std::fflush(log_file_);
    std::rewind(log_file_);
    std::string text;
    char buffer[4096];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof(buffer), log_file_)) > 0) text.append(buffer, n);
    return text;
  }

  asio::io_context io_;
  TestPki pki_{43};
  tls::TlsCredentials server_credentials_, device_credentials_;
  tls::TlsConfig server_tls_, device_tls_;
  std::FILE* log_file_ = nullptr;
  std::unique_ptr<Logger> log_;
  PeerCertificateStore certificates_;
  std::unique_ptr<DeviceRegistry> registry_;
  std::unique_ptr<Relay> relay_;
  ServerContext context_;
  MemoryStream* device_stream_ = nullptr;  // owned by device_
  std::unique_ptr<TlsSocket> device_;
  std::weak_ptr<Connection> connection_;
  uint64_t next_seq_ = 1;
};

TEST_F(ConnectionStreamTest, ADeviceGoneInTheMiddleOfItsHelloIsDroppedUnregistered) {
  bool done = false;
  Status handshake = Status::Unknown(), written = Status::Unknown();
  asio::co_spawn(
      io_,
      [&]() -> asio::awaitable<void> {
        handshake = co_await device_->Handshake();
        if (handshake.ok()) {
          const std::vector<uint8_t> hello = Hello();
          // Half a frame, then the device's side of the stream is gone.
          written = co_await device_->Write(ConstByteSpan(hello.data(), hello.size() / 2));
          device_stream_->Close();
        }
        done = true;
      },
      asio::detached);
  Run(done);
  ASSERT_TRUE(done);
  ASSERT_TRUE(handshake.ok()) << handshake.str();
  EXPECT_TRUE(written.ok()) << written.str();
  EXPECT_TRUE(connection_.expired()) << "the connection never released itself\n" << LogText();
  EXPECT_EQ(context_.counters.handshakes_ok.load(), 1u);
  EXPECT_EQ(context_.counters.registered.load(), 0u);
  EXPECT_EQ(context_.counters.open_connections.load(), 0u);
  EXPECT_EQ(registry_->Stats().attaches, 0u);
  const std::string log = LogText();
  EXPECT_NE(log.find("disconnected"), std::string::npos) << log;
}

TEST_F(ConnectionStreamTest, ARegisteredDeviceGoneInTheMiddleOfAFrameIsDetached) {
  bool done = false, welcomed = false;
  asio::co_spawn(
      io_,
      [&]() -> asio::awaitable<void> {
        const std::vector<uint8_t> hello = Hello();
        if ((co_await device_->Handshake()).ok() && (co_await device_->Write(ConstByteSpan(hello))).ok()) {
          welcomed = co_await ReadUntil(nodefl_wire_Envelope_welcome_tag);
        }
        if (welcomed) {
          // A whole heartbeat, then 10 bytes of the next frame's TLS record
          // and the device is gone.
          const std::vector<uint8_t> beat = Heartbeat(), next = Heartbeat();
          (void)co_await device_->Write(ConstByteSpan(beat));
          device_stream_->CloseAfterBytes(10);
          (void)co_await device_->Write(ConstByteSpan(next));
        }
        done = true;
      },
      asio::detached);
  Run(done);
  ASSERT_TRUE(done);
  ASSERT_TRUE(welcomed) << LogText();
  EXPECT_TRUE(connection_.expired()) << "the connection never released itself\n" << LogText();
  EXPECT_EQ(context_.counters.registered.load(), 1u);
  EXPECT_EQ(context_.counters.protocol_errors.load(), 0u);
  EXPECT_EQ(context_.counters.open_connections.load(), 0u);
  const RegistryStats stats = registry_->Stats();
  EXPECT_EQ(stats.attaches, 1u);
  EXPECT_EQ(stats.detaches, 1u);
  EXPECT_EQ(stats.online_devices, 0u);
  EXPECT_EQ(registry_->CurrentTarget(kDevice), nullptr);
}

}  // namespace
}  // namespace nodefl::server::net
