// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "transport_test_support.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "nodefl/crypto/rng.h"
#include "nodefl/protocol/envelope_codec.h"
#include "nodefl/server/jobs/job_catalog.h"
#include "nodefl/protocol/limits.h"

namespace nodefl::transport_test {
namespace {

namespace fs = std::filesystem;

bool WriteText(const fs::path& path, const std::string& text, std::string* error) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) {
    *error = path.string() + ": cannot write";
    return false;
  }
  return true;
}

// Token boundary in a logfmt line: start, end, a space or the newline.
bool IsBoundary(std::string_view line, size_t pos) { return pos >= line.size() || line[pos] == ' '; }

bool LineHasToken(std::string_view line, std::string_view token) {
  size_t pos = 0;
  while ((pos = line.find(token, pos)) != std::string_view::npos) {
    const bool starts = pos == 0 || line[pos - 1] == ' ';
    if (starts && IsBoundary(line, pos + token.size())) return true;
    ++pos;
  }
  return false;
}

// TLS record buffers: one maximal record each, like the server's connections.
constexpr size_t kClientTlsBufferBytes = 16 * 1024 + 64;

}  // namespace

bool RunUntil(asio::io_context& io, const std::function<bool()>& done, Millis timeout) {
  const auto give_up = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= give_up) return false;
    if (io.stopped()) io.restart();
    // Short slices so `done` is re-checked soon after the handler that made
    // it true; run_for returns at once when there is no work, so idle waits
    // sleep instead of spinning.
    io.run_for(std::min<std::chrono::steady_clock::duration>(give_up - now, Millis(10)));
    if (io.stopped() && !done()) std::this_thread::sleep_for(Millis(2));
  }
  return true;
}

// ---- TestDeployment -----------------------------------------------------------

TestDeployment::TestDeployment(const std::vector<uint32_t>& device_ids, uint64_t seed) : pki_(seed) {
  std::string pattern = (fs::temp_directory_path() / "nodefl-transport-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) {
    error_ = "cannot create a temporary folder";
    return;
  }
  dir_ = pattern;
  std::error_code ec;
  fs::create_directories(dir_ / "credentials", ec);
  if (ec) {
    error_ = ec.message();
    return;
  }
  const testing::TestIdentity server = pki_.Server("localhost");
  if (!WriteText(dir_ / "ca.crt", pki_.ca_pem(), &error_) ||
      !WriteText(dir_ / "server.crt", server.certificate_pem, &error_) ||
      !WriteText(dir_ / "server.key", server.private_key_pem, &error_)) {
    return;
  }
  for (uint32_t id : device_ids) {
    testing::TestIdentity identity = pki_.Device(id);
    if (!WriteText(dir_ / "credentials" / ("device-" + std::to_string(id) + ".crt"), identity.certificate_pem,
                   &error_)) {
      return;
    }
    devices_.emplace(id, std::move(identity));
  }
}

TestDeployment::~TestDeployment() {
  if (dir_.empty()) return;
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

const testing::TestIdentity& TestDeployment::device(uint32_t device_id) const {
  const auto it = devices_.find(device_id);
  if (it == devices_.end()) {
    std::fprintf(stderr, "TestDeployment: no identity issued for device %u\n", device_id);
    std::abort();
  }
  return it->second;
}

server::ServerConfig TestDeployment::BaseConfig() const {
  server::ServerConfig c = server::jobs::DefaultServerConfigWithJobs();
  c.listen_address = "127.0.0.1";
  c.listen_port = 0;
  c.tls_ca_cert = (dir_ / "ca.crt").string();
  c.tls_server_cert = (dir_ / "server.crt").string();
  c.tls_server_key = (dir_ / "server.key").string();
  c.credentials_dir = (dir_ / "credentials").string();
  // Short enough that timeout paths run within a test, long enough that a
  // loaded two-core machine never trips them by accident.
  c.handshake_timeout_ms = 5000;
  c.hello_timeout_ms = 800;
  c.idle_timeout_ms = 5000;
  c.heartbeat_interval_ms = 1000;
  c.relay_backpressure_wait_ms = 1000;
  c.threads = 2;
  c.log_level = server::LogLevel::kDebug;
  return c;
}

// ---- log ------------------------------------------------------------------------

bool LogHasLine(std::string_view log_text, std::string_view event, const std::vector<std::string>& fields) {
  const std::string event_token = "event=" + std::string(event);
  size_t begin = 0;
  while (begin < log_text.size()) {
    size_t end = log_text.find('\n', begin);
    if (end == std::string_view::npos) end = log_text.size();
    const std::string_view line = log_text.substr(begin, end - begin);
    begin = end + 1;
    if (!LineHasToken(line, event_token)) continue;
    bool all = true;
    for (const std::string& f : fields) all = all && LineHasToken(line, f);
    if (all) return true;
  }
  return false;
}

std::optional<uint64_t> LogNumber(std::string_view log_text, std::string_view event, std::string_view key) {
  const std::string event_token = "event=" + std::string(event);
  const std::string prefix = " " + std::string(key) + "=";
  size_t begin = 0;
  while (begin < log_text.size()) {
    size_t end = log_text.find('\n', begin);
    if (end == std::string_view::npos) end = log_text.size();
    const std::string_view line = log_text.substr(begin, end - begin);
    begin = end + 1;
    if (!LineHasToken(line, event_token)) continue;
    const size_t at = line.find(prefix);
    if (at == std::string_view::npos) return std::nullopt;
    size_t i = at + prefix.size();
    if (i >= line.size() || line[i] < '0' || line[i] > '9') return std::nullopt;
    uint64_t value = 0;
    for (; i < line.size() && line[i] >= '0' && line[i] <= '9'; ++i) value = value * 10 + static_cast<uint64_t>(line[i] - '0');
    if (i < line.size() && line[i] != ' ') return std::nullopt;
    return value;
  }
  return std::nullopt;
}

// ---- ServerUnderTest -------------------------------------------------------------

ServerUnderTest::ServerUnderTest(const server::ServerConfig& config, const std::filesystem::path& log_path)
    : log_path_(log_path) {
  exit_future_ = exit_promise_.get_future().share();
  log_file_ = std::fopen(log_path.string().c_str(), "w");
  if (log_file_ == nullptr) {
    error_ = log_path.string() + ": cannot open";
    return;
  }
  logger_ = std::make_unique<server::Logger>(config.log_level, server::LogFormat::kLogfmt, log_file_);
  server_ = server::net::Server::Create(config, *logger_, &error_);
  if (!server_) return;
  port_ = server_->port();
  thread_ = std::thread([this] {
    const int status = server_->Run();
    returned_ = true;
    exit_promise_.set_value(status);
  });
}

ServerUnderTest::~ServerUnderTest() {
  if (thread_.joinable()) {
    if (!returned_) server_->Stop();
    thread_.join();
  }
  server_.reset();
  logger_.reset();
  if (log_file_ != nullptr) std::fclose(log_file_);
}

std::optional<int> ServerUnderTest::WaitForExit(Millis timeout) {
  if (!thread_.joinable()) return std::nullopt;
  if (exit_future_.wait_for(timeout) != std::future_status::ready) return std::nullopt;
  thread_.join();
  return exit_future_.get();
}

std::optional<int> ServerUnderTest::StopAndWait(Millis timeout) {
  if (!thread_.joinable()) return std::nullopt;
  server_->Stop();
  return WaitForExit(timeout);
}

std::string ServerUnderTest::LogText() const {
  std::ifstream in(log_path_, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool ServerUnderTest::WaitForLog(std::string_view event, const std::vector<std::string>& fields,
                                 Millis timeout) const {
  const auto give_up = std::chrono::steady_clock::now() + timeout;
  while (true) {
    // The server logs from its own threads, sometimes just after the client
    // saw the effect (the Error frame is queued after the log line, but a
    // close may be noticed first).
    if (LogHasLine(LogText(), event, fields)) return true;
    if (std::chrono::steady_clock::now() >= give_up) return false;
    std::this_thread::sleep_for(Millis(10));
  }
}

// ---- clients ----------------------------------------------------------------------

std::unique_ptr<ClientCredentials> MakeClientCredentials(const std::vector<uint8_t>& trusted_ca_der,
                                                         const testing::TestIdentity& identity, uint64_t seed,
                                                         std::string* error) {
  auto c = std::make_unique<ClientCredentials>();
  Status st = c->drbg.SeedDeterministic(seed, /*stream=*/0xc11e47);
  if (st.ok()) st = c->credentials.LoadCaChain(ConstByteSpan(trusted_ca_der));
  if (st.ok()) {
    st = c->credentials.LoadOwnIdentity(ConstByteSpan(identity.certificate_der),
                                        ConstByteSpan(identity.private_key_der));
  }
  if (st.ok()) st = c->tls.Init(tls::TlsRole::kClient, c->credentials, &crypto::DrbgRandom, &c->drbg);
  if (!st.ok()) {
    *error = std::string("client credentials: ") + st.str();
    return nullptr;
  }
  return c;
}

std::unique_ptr<nodefl_wire_Envelope> NewEnvelope(pb_size_t body_tag, uint64_t job_id, uint32_t round) {
  auto env = std::make_unique<nodefl_wire_Envelope>();
  protocol::InitEnvelope(env.get(), body_tag, 0, job_id, round);
  return env;
}

RawClient::RawClient(asio::io_context& io, const ClientCredentials& credentials)
    : io_(io),
      credentials_(credentials),
      frame_storage_(protocol::FrameDecoder::StorageBytes()),
      decoder_(ByteSpan(frame_storage_)) {}

RawClient::~RawClient() {
  Close();
  // The reader refers to this object: let it see the close and finish.
  if (!RunUntil(io_, [this] { return !reader_running_; }, Millis(3000))) {
    std::fprintf(stderr, "RawClient: reader did not finish\n");
    std::abort();
  }
}

void RawClient::Close() {
  if (tls_) tls_->Close();
}

asio::awaitable<Status> RawClient::ConnectTask(uint16_t port) {
  asio::ip::tcp::socket socket(io_);
  boost::system::error_code ec;
  co_await socket.async_connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port),
                                asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return Status::Unavailable();
  local_port_ = socket.local_endpoint(ec).port();
  socket.set_option(asio::ip::tcp::no_delay(true), ec);
  tls_ = std::make_unique<host::net::TlsSocket>(std::move(socket), host::net::TlsSocket::Buffers{});
  const Status init = tls_->Init(credentials_.tls, "localhost");
  if (!init.ok()) co_return init;
  const Status handshake = co_await tls_->Handshake();
  co_return handshake;
}

Status RawClient::Connect(uint16_t port, Millis timeout) {
  const std::optional<Status> st = RunFor(io_, ConnectTask(port), timeout);
  if (!st || !st->ok()) {
    Close();
    closed_ = true;
    return st ? *st : Status::DeadlineExceeded();
  }
  reader_running_ = true;
  asio::co_spawn(io_, ReadLoop(), asio::detached);
  return Status::Ok();
}

asio::awaitable<void> RawClient::ReadLoop() {
  std::vector<uint8_t> plain(kClientTlsBufferBytes);
  bool stream_ok = true;
  while (stream_ok) {
    Result<size_t> n = co_await tls_->Read(ByteSpan(plain));
    if (!n.ok() || *n == 0) break;
    size_t offset = 0;
    while (offset < *n || decoder_.has_frame()) {
      if (!decoder_.has_frame()) {
        size_t consumed = 0;
        const Status fed = decoder_.Feed(ConstByteSpan(plain.data() + offset, *n - offset), &consumed);
        offset += consumed;
        if (!fed.ok()) {
          ++bad_frames_;
          stream_ok = false;
          break;
        }
        if (!decoder_.has_frame()) break;
      }
      auto env = std::make_unique<nodefl_wire_Envelope>();
      const Status decoded = protocol::DecodeEnvelope(decoder_.frame(), env.get());
      decoder_.PopFrame();
      if (!decoded.ok() || env->seq != expected_in_seq_) ++bad_frames_;
      ++expected_in_seq_;
      if (decoded.ok()) inbox_.push_back(std::move(env));
    }
  }
  closed_ = true;
  reader_running_ = false;
}

asio::awaitable<Status> RawClient::WriteTask(std::vector<uint8_t> bytes) {
  const Status written = co_await tls_->Write(ConstByteSpan(bytes));
  co_return written;
}

Status RawClient::WriteRaw(ConstByteSpan bytes, Millis timeout) {
  if (!tls_ || closed_) return Status::FailedPrecondition();
  const std::optional<Status> st = RunFor(io_, WriteTask(std::vector<uint8_t>(bytes.begin(), bytes.end())), timeout);
  if (!st) {
    // A write still pending would overlap the next one: give up on the connection.
    Close();
    return Status::DeadlineExceeded();
  }
  return *st;
}

Status RawClient::SendWithSeq(nodefl_wire_Envelope& env, uint64_t seq) {
  env.version = protocol::kProtocolVersion;
  env.seq = seq;
  ++next_seq_;
  std::vector<uint8_t> frame(protocol::kMaxFrameBytes);
  const Result<size_t> n = protocol::EncodeFrame(env, ByteSpan(frame));
  if (!n.ok()) return n.status();
  return WriteRaw(ConstByteSpan(frame.data(), *n));
}

Status RawClient::Send(nodefl_wire_Envelope& env) { return SendWithSeq(env, next_seq_); }

std::unique_ptr<nodefl_wire_Envelope> RawClient::Next(Millis timeout) {
  RunUntil(io_, [this] { return !inbox_.empty() || closed_; }, timeout);
  if (inbox_.empty()) return nullptr;
  std::unique_ptr<nodefl_wire_Envelope> env = std::move(inbox_.front());
  inbox_.pop_front();
  return env;
}

bool RawClient::WaitClosed(Millis timeout) {
  return RunUntil(io_, [this] { return closed_; }, timeout);
}

std::optional<nodefl_wire_Welcome> RawClient::Register(uint32_t device_id, ConstByteSpan resume_token,
                                                       uint64_t last_delivered_relay_id, Millis timeout) {
  auto hello = NewEnvelope(nodefl_wire_Envelope_hello_tag);
  hello->body.hello.device_id = device_id;
  hello->body.hello.max_frame_bytes = protocol::kMaxFramePayloadBytes;
  hello->body.hello.last_delivered_relay_id = last_delivered_relay_id;
  protocol::SetString(hello->body.hello.software, "nodefl-transport-test");
  if (!protocol::SetBytes(&hello->body.hello.resume_token, resume_token).ok()) return std::nullopt;
  if (!Send(*hello).ok()) return std::nullopt;
  std::unique_ptr<nodefl_wire_Envelope> answer = Next(timeout);
  if (!answer || answer->which_body != nodefl_wire_Envelope_welcome_tag) {
    // Keep an Error for the caller to inspect.
    if (answer) inbox_.push_front(std::move(answer));
    return std::nullopt;
  }
  return answer->body.welcome;
}

}  // namespace nodefl::transport_test
