// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// TlsSocket over an in-memory byte stream (support/memory_stream.h): the
// handshake and data in both directions, in one piece and in small chunks,
// and injected transport failures, which must surface as an error Status
// from the call that met them, not as a hang or a crash.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "memory_stream.h"
#include "nodefl/host/net/tls_socket.h"
#include "nodefl/tls/config.h"
#include "nodefl/tls/credentials.h"
#include "test_pki.h"

namespace nodefl::host::net {
namespace {

namespace asio = boost::asio;
using testing::MemoryStream;
using testing::TestPki;

constexpr uint32_t kDevice = 9;
// Bounds io_context::run_for in case a coroutine never finishes (the bug
// these tests look for); every test ends long before it.
constexpr auto kHangGuard = std::chrono::seconds(20);

// A server and a device TlsSocket joined by a MemoryStream pair.
struct TlsPair {
  TlsPair() {
    EXPECT_TRUE(pki.Load(pki.Server("localhost"), &server_credentials).ok());
    EXPECT_TRUE(pki.Load(pki.Device(kDevice), &device_credentials).ok());
    EXPECT_TRUE(server_config.Init(tls::TlsRole::kServer, server_credentials, pki.random_function(),
                                   pki.random_context())
                    .ok());
    EXPECT_TRUE(device_config.Init(tls::TlsRole::kClient, device_credentials, pki.random_function(),
                                   pki.random_context())
                    .ok());
    auto [device_end, server_end] = MemoryStream::Pair(io.get_executor(), "device", "server");
    device_stream = device_end.get();
    server_stream = server_end.get();
    device = std::make_unique<TlsSocket>(std::move(device_end), TlsSocket::Buffers{});
    server = std::make_unique<TlsSocket>(std::move(server_end), TlsSocket::Buffers{});
    EXPECT_TRUE(device->Init(device_config, "localhost").ok());
    EXPECT_TRUE(server->Init(server_config, nullptr).ok());
  }

  // Runs both handshakes to completion; their results.
  std::pair<Status, Status> Handshake() {
    std::optional<Status> device_result, server_result;
    asio::co_spawn(io, [&]() -> asio::awaitable<void> { device_result = co_await device->Handshake(); },
                   asio::detached);
    asio::co_spawn(io, [&]() -> asio::awaitable<void> { server_result = co_await server->Handshake(); },
                   asio::detached);
    io.run_for(kHangGuard);
    io.restart();
    EXPECT_TRUE(device_result.has_value()) << "the device's handshake never finished";
    EXPECT_TRUE(server_result.has_value()) << "the server's handshake never finished";
    return {device_result.value_or(Status::Unknown()), server_result.value_or(Status::Unknown())};
  }

  // `from` writes `data`; `to` reads until it has as many bytes or fails.
  // The write's status, and what was read.
  std::pair<Status, std::vector<uint8_t>> Send(TlsSocket& from, TlsSocket& to, const std::vector<uint8_t>& data) {
    std::optional<Status> written;
    std::vector<uint8_t> received;
    bool reader_done = false;
    asio::co_spawn(io, [&]() -> asio::awaitable<void> { written = co_await from.Write(ConstByteSpan(data)); },
                   asio::detached);
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          std::vector<uint8_t> buffer(1000);
          while (received.size() < data.size()) {
            const Result<size_t> n = co_await to.Read(ByteSpan(buffer));
            if (!n.ok() || *n == 0) break;
            received.insert(received.end(), buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(*n));
          }
          reader_done = true;
        },
        asio::detached);
    io.run_for(kHangGuard);
    io.restart();
    EXPECT_TRUE(written.has_value()) << "the write never finished";
    EXPECT_TRUE(reader_done) << "the reader never finished";
    return {written.value_or(Status::Unknown()), received};
  }

  asio::io_context io;
  TestPki pki{31};
  tls::TlsCredentials server_credentials, device_credentials;
  tls::TlsConfig server_config, device_config;
  MemoryStream* device_stream = nullptr;  // owned by `device`
  MemoryStream* server_stream = nullptr;  // owned by `server`
  std::unique_ptr<TlsSocket> device, server;
};

std::vector<uint8_t> Bytes(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7);
  return v;
}

TEST(TlsSocketStreamTest, HandshakesAndExchangesDataBothWays) {
  TlsPair p;
  const auto [device_hs, server_hs] = p.Handshake();
  ASSERT_TRUE(device_hs.ok()) << device_hs.str();
  ASSERT_TRUE(server_hs.ok()) << server_hs.str();
  const Result<uint32_t> id = p.server->endpoint().PeerDeviceId();
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(*id, kDevice);
  EXPECT_EQ(p.server->remote(), "device");

  // Larger than one TLS record and than the sockets' buffers.
  const std::vector<uint8_t> up = Bytes(40000, 1), down = Bytes(20000, 2);
  const auto [up_status, up_received] = p.Send(*p.device, *p.server, up);
  EXPECT_TRUE(up_status.ok()) << up_status.str();
  EXPECT_EQ(up_received, up);
  const auto [down_status, down_received] = p.Send(*p.server, *p.device, down);
  EXPECT_TRUE(down_status.ok()) << down_status.str();
  EXPECT_EQ(down_received, down);
  EXPECT_EQ(p.device->bytes_out(), p.server->bytes_in());
  EXPECT_EQ(p.server->bytes_out(), p.device->bytes_in());
}

TEST(TlsSocketStreamTest, RecordsArrivingAFewBytesAtATimeStillDecrypt) {
  TlsPair p;
  p.device_stream->set_read_chunk(3);
  p.server_stream->set_read_chunk(5);
  const auto [device_hs, server_hs] = p.Handshake();
  ASSERT_TRUE(device_hs.ok()) << device_hs.str();
  ASSERT_TRUE(server_hs.ok()) << server_hs.str();
  const std::vector<uint8_t> up = Bytes(9000, 3);
  const auto [status, received] = p.Send(*p.device, *p.server, up);
  EXPECT_TRUE(status.ok()) << status.str();
  EXPECT_EQ(received, up);
  EXPECT_GT(p.server_stream->bytes_read(), 9000u);  // records carry overhead
}

TEST(TlsSocketStreamTest, AReadFailureDuringTheHandshakeFailsBothSides) {
  TlsPair p;
  p.server_stream->FailNthRead(2);  // after the ClientHello
  const auto [device_hs, server_hs] = p.Handshake();
  EXPECT_EQ(server_hs, Status::Aborted());
  EXPECT_FALSE(device_hs.ok());  // the reset reaches the device too
  EXPECT_FALSE(p.server->endpoint().handshake_done());
}

TEST(TlsSocketStreamTest, AWriteFailureDuringTheHandshakeFailsBothSides) {
  TlsPair p;
  p.device_stream->FailNthWrite(2);  // the device's second flight
  const auto [device_hs, server_hs] = p.Handshake();
  EXPECT_EQ(device_hs, Status::Aborted());
  EXPECT_FALSE(server_hs.ok());
}

TEST(TlsSocketStreamTest, AWriteFailureAfterTheHandshakeIsTheWritersStatusAndEndsTheReader) {
  TlsPair p;
  const auto [device_hs, server_hs] = p.Handshake();
  ASSERT_TRUE(device_hs.ok() && server_hs.ok());
  p.device_stream->FailNthWrite(1);
  const auto [status, received] = p.Send(*p.device, *p.server, Bytes(5000, 4));
  EXPECT_EQ(status, Status::Aborted());
  EXPECT_TRUE(received.empty());
}

TEST(TlsSocketStreamTest, APeerThatClosesMidRecordEndsTheReadWithAnError) {
  TlsPair p;
  const auto [device_hs, server_hs] = p.Handshake();
  ASSERT_TRUE(device_hs.ok() && server_hs.ok());
  // Half of a ~3 KB record, then the device's side goes away without
  // close_notify.
  const uint64_t read_before = p.server_stream->bytes_read();
  p.device_stream->CloseAfterBytes(1500);
  const auto [status, received] = p.Send(*p.device, *p.server, Bytes(3000, 5));
  EXPECT_EQ(status, Status::Aborted());
  EXPECT_TRUE(received.empty());  // a partial record yields nothing
  EXPECT_EQ(p.server_stream->bytes_read() - read_before, 1500u);
}

TEST(TlsSocketStreamTest, GracefulCloseReadsAsACleanEndOnTheOtherSide) {
  TlsPair p;
  const auto [device_hs, server_hs] = p.Handshake();
  ASSERT_TRUE(device_hs.ok() && server_hs.ok());
  std::optional<Result<size_t>> read;
  asio::co_spawn(p.io, [&]() -> asio::awaitable<void> { co_await p.device->GracefulClose(); }, asio::detached);
  asio::co_spawn(
      p.io,
      [&]() -> asio::awaitable<void> {
        std::vector<uint8_t> buffer(100);
        read = co_await p.server->Read(ByteSpan(buffer));
      },
      asio::detached);
  p.io.run_for(kHangGuard);
  ASSERT_TRUE(read.has_value());
  ASSERT_TRUE(read->ok()) << read->status().str();
  EXPECT_EQ(**read, 0u);  // close_notify: a clean end, not an error
  EXPECT_FALSE(p.device_stream->is_open());
}

}  // namespace
}  // namespace nodefl::host::net
