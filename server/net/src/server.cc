// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/net/server.h"

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <atomic>
#include <fstream>
#include <iterator>
#include <mutex>
#include <thread>

#include "nodefl/server/core/device_ids.h"
#include "nodefl/server/net/connection.h"
#include "nodefl/server/net/job_runner.h"
#include "nodefl/server/net/peer_certificates.h"
#include "nodefl/host/net/process_limits.h"
#include "nodefl/server/net/server_context.h"
#include "nodefl/server/core/registry.h"
#include "nodefl/server/core/relay.h"
#include "nodefl/server/store/relay_journal_store.h"
#include "nodefl/tls/config.h"
#include "nodefl/tls/credentials.h"

namespace nodefl::server::net {

using host::net::CurrentRssKiB;
using host::net::PeakRssKiB;
namespace {

bool ReadFile(const std::string& path, std::vector<uint8_t>* out, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = path + ": cannot open";
    return false;
  }
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  out->push_back(0);  // PEM parsing wants the terminating NUL counted
  return true;
}

}  // namespace

struct Server::Impl {
  ServerConfig config;
  Logger& log;
  asio::io_context io;
  // Accepting, signals and shutdown all run here, so the acceptor is never
  // touched from two threads.
  asio::strand<asio::io_context::executor_type> control = asio::make_strand(io);
  tcp::acceptor acceptor{control};
  asio::signal_set signals{io, SIGINT, SIGTERM};

  mbedtls_entropy_context entropy;
  mbedtls_ctr_drbg_context drbg;
  tls::TlsCredentials credentials;
  tls::TlsConfig tls_config;
  PeerCertificateStore certificates;
  JobKeyTable job_keys;
  std::unique_ptr<store::ServerStateStore> state;  // before the registry, which writes to it
  std::unique_ptr<DeviceRegistry> registry;
  // Between the store and the relay: destroyed after the relay that calls
  // it, before the store it writes to.
  std::unique_ptr<store::StoredRelayJournal> relay_journal;
  std::unique_ptr<Relay> relay;
  std::unique_ptr<JobRunner> jobs;
  // Jobs an earlier process left running, for the job runner to continue
  // or abandon.
  std::vector<store::StoredJob> interrupted;
  ServerContext context;
  std::atomic<uint64_t> next_connection{1};
  std::atomic<bool> stopping{false};
  std::atomic<int> exit_status{0};

  Impl(const ServerConfig& c, Logger& l) : config(c), log(l) {
    mbedtls_entropy_init(&entropy);
    mbedtls_ctr_drbg_init(&drbg);
  }
  ~Impl() {
    mbedtls_ctr_drbg_free(&drbg);
    mbedtls_entropy_free(&entropy);
  }

  asio::awaitable<void> Accept() {
    while (!stopping.load()) {
      boost::system::error_code ec;
      tcp::socket socket = co_await acceptor.async_accept(asio::redirect_error(asio::use_awaitable, ec));
      if (ec) {
        if (stopping.load() || ec == asio::error::operation_aborted) break;
        log.Warn("accept_failed", {{"error", ec.message()}});
        continue;
      }
      socket.set_option(tcp::no_delay(true), ec);
      auto connection = std::make_shared<Connection>(context, std::move(socket), next_connection++);
      connection->Start();
    }
  }

  void PostStop(const char* why) {
    asio::post(control, [this, why] { BeginStop(why); });
  }

  void BeginStop(const char* why) {
    if (stopping.exchange(true)) return;
    log.Info("shutdown", {{"reason", why}, {"online", registry->Stats().online_devices}});
    boost::system::error_code ec;
    acceptor.close(ec);
    signals.cancel(ec);
    if (jobs) jobs->Stop();
    registry->RequestCloseAll(CloseReason::kServerShutdown);
    // Give connections a moment to write their Goodbye, then end the loop
    // even if a peer does not cooperate.
    auto grace = std::make_shared<asio::steady_timer>(io, std::chrono::seconds(2));
    grace->async_wait([this, grace](const boost::system::error_code&) { io.stop(); });
  }
};

namespace {

// Sessions an earlier server process handed out, and the jobs it left
// running (`interrupted`: the job runner continues the latest from its
// journal or records it as abandoned, docs/reliability.md).
bool RestoreState(Server::Impl& s, std::vector<store::StoredJob>* interrupted, std::string* error) {
  std::vector<store::StoredSession> sessions;
  if (!s.state->LoadSessions(&sessions, error)) {
    *error = s.state->path() + ": " + *error;
    return false;
  }
  uint64_t restored = 0, unknown = 0;
  for (const store::StoredSession& session : sessions) {
    if (s.registry->RestoreSession(session.device_id, session.session, session.token)) {
      ++restored;
    } else {
      ++unknown;  // credentials withdrawn since: that device is refused anyway
    }
  }
  if (!s.state->InterruptedJobs(interrupted, error)) {
    *error = s.state->path() + ": " + *error;
    return false;
  }
  s.log.Info("state_restored", {{"path", s.state->path()},
                                {"start", s.state->start()},
                                {"sessions", restored},
                                {"sessions_of_unknown_devices", unknown},
                                {"jobs_interrupted", interrupted->size()}});
  return true;
}

// The messages an earlier process's relay held, queued again with their
// ids, and the sources' routed send ids; then the relay journals from here.
bool RestoreRelay(Server::Impl& s, std::string* error) {
  std::vector<store::StoredRelayMessage> messages;
  std::vector<std::pair<uint32_t, uint64_t>> floors;
  if (!s.state->LoadRelayMessages(&messages, error) || !s.state->LoadRelaySendFloors(&floors, error)) {
    *error = s.state->path() + ": " + *error;
    return false;
  }
  s.relay_journal = std::make_unique<store::StoredRelayJournal>(
      *s.state, std::chrono::milliseconds(s.config.relay_journal_ms), [log = &s.log](const std::string& why) {
        log->Warn("state_not_saved", {{"what", "relay messages"}, {"error", why}});
      });
  uint64_t restored = 0, bytes = 0, refused = 0, destinations = 0;
  uint32_t last_dst = 0;
  for (store::StoredRelayMessage& stored : messages) {
    const uint32_t size = stored.message.sealed_size;
    if (s.relay->Restore(stored.dst, std::move(stored.message))) {
      if (restored == 0 || stored.dst != last_dst) ++destinations;
      last_dst = stored.dst;
      ++restored;
      bytes += size;
    } else {
      // A device whose credentials were withdrawn since: its rows go.
      ++refused;
      s.relay_journal->Dropped(stored.dst);
    }
  }
  for (const auto& [src, floor] : floors) s.relay->RestoreSendFloor(src, floor);
  s.relay->SetJournal(s.relay_journal.get());
  s.log.Info("relay_restored", {{"messages", restored},
                                {"bytes", bytes},
                                {"destinations", destinations},
                                {"sources", floors.size()},
                                {"refused", refused}});
  return true;
}

}  // namespace

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Server::~Server() = default;

std::unique_ptr<Server> Server::Create(const ServerConfig& config, Logger& log, std::string* error) {
  auto impl = std::make_unique<Impl>(config, log);
  Impl& s = *impl;

  static constexpr char kPersonalization[] = "nodefl-server tls";
  if (mbedtls_ctr_drbg_seed(&s.drbg, mbedtls_entropy_func, &s.entropy,
                            reinterpret_cast<const unsigned char*>(kPersonalization),
                            sizeof(kPersonalization) - 1) != 0) {
    *error = "cannot seed the random generator";
    return nullptr;
  }
  std::vector<uint8_t> ca, cert, key;
  if (!ReadFile(config.tls_ca_cert, &ca, error) || !ReadFile(config.tls_server_cert, &cert, error) ||
      !ReadFile(config.tls_server_key, &key, error)) {
    return nullptr;
  }
  if (Status st = s.credentials.LoadCaChain(ConstByteSpan(ca)); !st.ok()) {
    *error = config.tls_ca_cert + ": not a usable CA certificate (" + st.str() + ")";
    return nullptr;
  }
  if (Status st = s.credentials.LoadOwnIdentity(ConstByteSpan(cert), ConstByteSpan(key)); !st.ok()) {
    *error = config.tls_server_cert + " / " + config.tls_server_key + ": not a usable P-256 identity (" +
             st.str() + ")";
    return nullptr;
  }
  if (Status st = s.tls_config.Init(tls::TlsRole::kServer, s.credentials, &mbedtls_ctr_drbg_random, &s.drbg);
      !st.ok()) {
    *error = std::string("TLS configuration failed: ") + st.str();
    return nullptr;
  }
  if (!s.certificates.Load(config.credentials_dir, error)) return nullptr;

  RegistryOptions registry_options;
  registry_options.max_online = config.max_devices;
  if (!config.data_dir.empty()) {
    s.state = store::ServerStateStore::Open(config.data_dir, error);
    if (!s.state) {
      *error = "data_dir: " + *error;
      return nullptr;
    }
    registry_options.session_log = s.state.get();
  }
  s.registry = DeviceRegistry::Create(s.certificates.Ids(), registry_options, error);
  if (!s.registry) return nullptr;
  // Relay ids of a restarted server start above any an earlier process
  // handed out (relay.h).
  const uint64_t first_relay_id = s.state ? (s.state->start() << 40) + 1 : 1;
  s.relay = std::make_unique<Relay>(*s.registry, RelayLimitsFromConfig(config), first_relay_id);
  if (s.state && (!RestoreState(s, &s.interrupted, error) || !RestoreRelay(s, error))) return nullptr;

  s.context.config = config;
  s.context.log = &log;
  s.context.tls = &s.tls_config;
  s.context.registry = s.registry.get();
  s.context.relay = s.relay.get();
  s.context.certificates = &s.certificates;
  s.context.job_keys = &s.job_keys;
  s.context.state = s.state.get();
  s.context.relay_journal = s.relay_journal.get();

  if (config.job != "none") {
    Impl* raw = &s;
    s.jobs = std::make_unique<JobRunner>(s.io, s.context, s.certificates.Ids(), [raw](bool verified) {
      if (!verified) raw->exit_status = 1;
    }, [raw] { raw->PostStop("exit_after_jobs reached"); });
    s.context.jobs = s.jobs.get();
  } else if (s.state) {
    // No job runs here: nothing can continue them.
    std::vector<store::StoredJob> abandoned;
    if (!s.state->AbandonInterruptedJobs(&abandoned, error)) return nullptr;
    for (const store::StoredJob& job : abandoned) {
      log.Warn("job_abandoned", {{"job", job.job_id}, {"kind", job.kind}, {"stage", job.stage}, {"start", job.start},
                                 {"reason", job.reason}, {"not_continued", "no job configured"}});
    }
    s.interrupted.clear();
  }

  boost::system::error_code ec;
  const auto address = asio::ip::make_address(config.listen_address, ec);
  if (ec) {
    *error = "listen_address '" + config.listen_address + "': " + ec.message();
    return nullptr;
  }
  const tcp::endpoint endpoint(address, config.listen_port);
  s.acceptor.open(endpoint.protocol(), ec);
  if (!ec) s.acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) s.acceptor.bind(endpoint, ec);
  if (!ec) s.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    *error = "cannot listen on " + config.listen_address + ":" + std::to_string(config.listen_port) + ": " +
             ec.message();
    return nullptr;
  }
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

uint16_t Server::port() const { return impl_->acceptor.local_endpoint().port(); }

void Server::Stop() {
  impl_->PostStop("stop requested");
}

int Server::Run() {
  Impl& s = *impl_;
  s.log.Info("listening", {{"address", s.config.listen_address},
                           {"port", port()},
                           {"devices_with_credentials", s.certificates.size()},
                           {"threads", s.config.threads},
                           {"job", s.config.job},
                           {"rss_kib", CurrentRssKiB()}});
  s.signals.async_wait([&s](const boost::system::error_code& ec, int signal) {
    if (!ec) s.PostStop(signal == SIGINT ? "SIGINT" : "SIGTERM");
  });
  asio::co_spawn(s.control, s.Accept(), asio::detached);
  if (s.jobs) s.jobs->Start(std::move(s.interrupted));
  if (s.relay_journal) s.relay_journal->Start();

  std::vector<std::thread> threads;
  const unsigned extra = s.config.threads > 1 ? s.config.threads - 1 : 0;
  for (unsigned i = 0; i < extra; ++i) threads.emplace_back([&s] { s.io.run(); });
  s.io.run();
  for (auto& t : threads) t.join();
  // What the relay still holds is kept for the next start.
  store::RelayJournalStats journal;
  if (s.relay_journal) {
    s.relay_journal->Stop();
    journal = s.relay_journal->Stats();
  }

  const RegistryStats rs = s.registry->Stats();
  const RelayStats relay = s.relay->Stats();
  const ServerCounters& c = s.context.counters;
  s.log.Info("stopped", {{"accepted", c.accepted.load()},
                         {"handshakes_ok", c.handshakes_ok.load()},
                         {"handshakes_failed", c.handshakes_failed.load()},
                         {"registered", c.registered.load()},
                         {"refused", c.refused.load()},
                         {"protocol_errors", c.protocol_errors.load()},
                         {"timeouts", c.timeouts.load()},
                         {"relay_sent", c.relay_sent.load()},
                         {"relay_delivered", c.relay_delivered.load()},
                         {"relay_acked", relay.acked},
                         {"relay_resends_dropped", relay.duplicate_sends},
                         {"relay_sends_parked", c.relay_parked.load()},
                         {"relay_restored", relay.restored},
                         {"relay_restored_acked", relay.restored_acked},
                         {"relay_restored_dropped", relay.restored_dropped},
                         {"relay_journal_writes", journal.writes},
                         {"relay_journal_messages", journal.messages_written},
                         {"resumes", rs.resumes},
                         {"peak_rss_kib", PeakRssKiB()}});
  return s.exit_status.load();
}

}  // namespace nodefl::server::net
