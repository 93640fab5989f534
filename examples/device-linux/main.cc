// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// nodefl-device: one graph node's device as a Linux board runs it, one
// process per device. Its neighbour list and features come from small
// files, its credentials from `nodefl-ca devices`; it connects to
// nodefl-server over TLS (POSIX socket + poll, one thread, no Boost),
// serves the job's roles (host::node::DeviceRoles, the same as every
// emulated device), reconnects with backoff and resumes its session when
// the connection breaks, and says Goodbye on SIGTERM or SIGINT.
#include <malloc.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "connection_loop.h"
#include "nodefl/client/device_pump.h"
#include "nodefl/config.h"
#include "nodefl/host/cli/flag_parser.h"
#include "nodefl/host/node/device_roles.h"
#include "nodefl/tls/endpoint.h"
#include "node_files.h"
#include "tcp_link.h"

namespace {

namespace cli = nodefl::host::cli;
namespace dl = nodefl::device_linux;
using nodefl::Status;

constexpr char kTool[] = "nodefl-device";

struct Options {
  std::string server;
  std::string host;
  uint16_t port = 0;
  std::string server_name = "localhost";
  uint32_t id = 0;
  bool have_id = false;
  std::string ca, cert, key;
  std::string neighbours_file;
  std::string features_file;
  int32_t label = -1;
  uint32_t degree = 0;  // 0: the neighbour list's length
  std::string ledger_file;
  nodefl::host::node::RoleProfile profile;
  bool exit_when_done = false;
  uint32_t max_attempts = 0;  // consecutive failed connections; 0: never give up
  uint32_t backoff_max_ms = 30000;
  uint32_t handshake_timeout_s = 30;
  uint32_t tick_ms = 200;
  std::string log_level = "warning";
};

void PrintHelp() {
  std::puts(
      "usage: nodefl-device --server HOST:PORT --id N --ca FILE --cert FILE --key FILE\n"
      "                     --neighbours FILE [options]\n"
      "\n"
      "One graph node's device, as a Linux board (aarch64, armhf, x86-64) runs it:\n"
      "connects to nodefl-server over TLS, takes part in the job with the SDK's\n"
      "device roles, reconnects with backoff and resumes its session when the\n"
      "connection breaks, and says Goodbye on SIGTERM or SIGINT. docs/porting.md,\n"
      "\"Linux boards\", describes it.\n"
      "\n"
      "  --server HOST:PORT      the server\n"
      "  --server-name NAME      name in the server certificate (default localhost)\n"
      "  --id N                  this device's node id (its certificate's device id)\n"
      "  --ca FILE               the deployment CA certificate (ca.crt, PEM)\n"
      "  --cert FILE, --key FILE this device's certificate and key (device-<id>.crt and\n"
      "                          .key from nodefl-ca devices, PEM)\n"
      "  --neighbours FILE       the node's neighbour ids (white space or commas; '#' comments)\n"
      "  --degree N              the node's real degree when the list is a capped subset\n"
      "  --features FILE         the node's feature values (Lumos training)\n"
      "  --label N               the node's class (Lumos node classification; default none)\n"
      "  --job JOB               neighbour-echo (default), fedwalk-hct, fedwalk,\n"
      "                          fedwalk-histograms, secure-compare, lumos-trees or\n"
      "                          secure-aggregate: the roles this device serves, sized for it\n"
      "  --fedwalk-mode M        strict (default) or paper: the server's fedwalk_mode\n"
      "  --vertices N            FedWalk: the most vertices a job may have for this device\n"
      "                          to take part (sizes the tree, predictor and clusters it keeps;\n"
      "                          required for the fedwalk jobs)\n"
      "  --max-neighbours N      FedWalk: keep at most N neighbours (the public cap)\n"
      "  --lumos-train           lumos-trees: also serve the training role (needs --features)\n"
      "  --classes N             ... room for N classes (node task; default 0: link task only)\n"
      "  --hidden N, --out-width N  ... room for these layer widths (default 16 each)\n"
      "  --budget-job-epsilon E  refuse releases past E per job (default 16)\n"
      "  --budget-lifetime-epsilon E  ... past E over the device's life (default 256)\n"
      "  --unlimited-budget      no limits and exact releases allowed (the papers' modes)\n"
      "  --ledger-file FILE      keep the lifetime privacy spend here across restarts\n"
      "                          (strongly advised: without it each start begins at zero)\n"
      "  --noise-seed S          seed the noise generator (experiments only: not private)\n"
      "  --exit-when-done        exit 0 once this device's part of the job is done\n"
      "  --max-attempts N        give up after N failed connections in a row (default 0: never)\n"
      "  --backoff-max-ms MS     longest wait between connection attempts (default 30000)\n"
      "  --handshake-timeout S   give up on a TLS handshake after S seconds (default 30)\n"
      "  --log-level L           debug, info, warning (default) or error: the session's log\n"
      "\n"
      "Exit status: 0 after SIGTERM/SIGINT or, with --exit-when-done, once the job is done\n"
      "(or when the server ends the session after it); 1 on failure; 2 for bad arguments.\n"
      "At exit one line on stdout sums up the device (role counts, privacy spend,\n"
      "reconnects, peak memory).");
}

bool Parse(int argc, char** argv, Options* o) {
  double job_epsilon = o->profile.budget.job_epsilon, lifetime_epsilon = o->profile.budget.lifetime_epsilon;
  bool unlimited = false;
  uint64_t id = 0;
  int64_t label = -1;
  cli::FlagParser flags(kTool);
  flags.Value("--server", cli::Text(&o->server))
      .Value("--server-name", cli::Text(&o->server_name))
      .Value("--id",
             [&](const std::string& v) -> std::string {
               if (!cli::ParseWhole(v, UINT32_MAX, &id)) return cli::WholeRange(0, UINT32_MAX);
               o->have_id = true;
               return "";
             })
      .Value("--ca", cli::Text(&o->ca))
      .Value("--cert", cli::Text(&o->cert))
      .Value("--key", cli::Text(&o->key))
      .Value("--neighbours", cli::Text(&o->neighbours_file))
      .Value("--degree", cli::Whole(&o->degree, 1, UINT32_MAX))
      .Value("--features", cli::Text(&o->features_file))
      .Value("--label",
             [&](const std::string& v) -> std::string {
               uint64_t x = 0;
               if (!cli::ParseWhole(v, 65535, &x)) return cli::WholeRange(0, 65535);
               label = static_cast<int64_t>(x);
               return "";
             })
      .Value("--job", cli::OneOf({"neighbour-echo", "fedwalk-hct", "fedwalk", "fedwalk-histograms", "secure-compare",
                                  "lumos-trees", "secure-aggregate"},
                                 [o](const std::string& v) { o->profile.job = v; }))
      .Value("--fedwalk-mode", cli::OneOf({"strict", "paper"}, [o](const std::string& v) { o->profile.fedwalk_mode = v; }))
      .Value("--vertices", cli::Whole(&o->profile.vertex_count, 2, 65535))
      .Value("--max-neighbours", cli::Whole(&o->profile.max_neighbours, 1, UINT32_MAX))
      .Switch("--lumos-train", [o] { o->profile.lumos_train = true; })
      .Value("--classes", cli::Whole(&o->profile.train_classes, 0, 65535))
      .Value("--hidden", cli::Whole(&o->profile.train_hidden, 1, 1024))
      .Value("--out-width", cli::Whole(&o->profile.train_out, 1, 1024))
      .Value("--budget-job-epsilon", cli::Real(&job_epsilon, 0, true, 1e12))
      .Value("--budget-lifetime-epsilon", cli::Real(&lifetime_epsilon, 0, true, 1e12))
      .Switch("--unlimited-budget", [&] { unlimited = true; })
      .Value("--ledger-file", cli::Text(&o->ledger_file))
      .Value("--noise-seed", cli::Whole(&o->profile.noise_seed, 1, UINT64_MAX))
      .Switch("--exit-when-done", [o] { o->exit_when_done = true; })
      .Value("--max-attempts", cli::Whole(&o->max_attempts, 0, UINT32_MAX))
      .Value("--backoff-max-ms", cli::Whole(&o->backoff_max_ms, 100, 3'600'000))
      .Value("--handshake-timeout", cli::Whole(&o->handshake_timeout_s, 1, 3600))
      .Value("--log-level", cli::OneOf({"debug", "info", "warning", "error"}, [o](const std::string& v) { o->log_level = v; }));
  const cli::ParseOutcome outcome = flags.Parse(argc, argv);
  if (outcome == cli::ParseOutcome::kHelp) {
    PrintHelp();
    std::exit(0);
  }
  if (outcome == cli::ParseOutcome::kError) return false;
  const auto missing = [](const char* flag) {
    std::fprintf(stderr, "%s: %s is required (see --help)\n", kTool, flag);
    return false;
  };
  if (o->server.empty()) return missing("--server");
  if (!dl::SplitHostPort(o->server, &o->host, &o->port)) {
    std::fprintf(stderr, "%s: --server expects HOST:PORT, got '%s'\n", kTool, o->server.c_str());
    return false;
  }
  if (!o->have_id) return missing("--id");
  if (o->ca.empty()) return missing("--ca");
  if (o->cert.empty()) return missing("--cert");
  if (o->key.empty()) return missing("--key");
  if (o->neighbours_file.empty()) return missing("--neighbours");
  o->id = static_cast<uint32_t>(id);
  o->label = static_cast<int32_t>(label);
  const std::string& job = o->profile.job;
  const bool fedwalk = job == "fedwalk" || job == "fedwalk-hct" || job == "fedwalk-histograms";
  if (fedwalk && o->profile.vertex_count == 0) return missing("--vertices (for the fedwalk jobs)");
  if (o->profile.max_neighbours != 0 && !fedwalk) {
    std::fprintf(stderr, "%s: --max-neighbours applies to the fedwalk jobs only\n", kTool);
    return false;
  }
  if (o->profile.lumos_train && (job != "lumos-trees" || o->features_file.empty())) {
    std::fprintf(stderr, "%s: --lumos-train needs --job lumos-trees and --features\n", kTool);
    return false;
  }
  if (unlimited) {
    o->profile.budget = nodefl::PrivacyBudget::Unlimited();
  } else {
    o->profile.budget.job_epsilon = job_epsilon;
    o->profile.budget.lifetime_epsilon = lifetime_epsilon;
  }
  // Paper-mode walks need the kept tree and bin plan (the 2-hop predictor).
  o->profile.keep_tree_and_bin_plan = job == "fedwalk" && o->profile.fedwalk_mode == "paper";
  o->profile.device_log_level = o->log_level == "debug"  ? nodefl::LogLevel::kDebug
                                : o->log_level == "info" ? nodefl::LogLevel::kInfo
                                : o->log_level == "error" ? nodefl::LogLevel::kError
                                                          : nodefl::LogLevel::kWarning;
  return true;
}

volatile std::sig_atomic_t g_stop_signal = 0;
void OnStopSignal(int signal) { g_stop_signal = signal; }

// The device's working heap at its largest (sampled after every step):
// what the process allocated, QEMU's own memory excluded.
size_t g_peak_heap_bytes = 0;
void SampleHeap() {
  const struct mallinfo2 m = ::mallinfo2();
  g_peak_heap_bytes = std::max(g_peak_heap_bytes, m.uordblks + m.hblkhd);
}

int Fail(const std::string& why) {
  std::fprintf(stderr, "%s: %s\n", kTool, why.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  if (!Parse(argc, argv, &opt)) return 2;

  nodefl::host::node::NodeData node;
  node.id = opt.id;
  if (std::string why = dl::ReadNeighbours(opt.neighbours_file, opt.id, &node.neighbours); !why.empty()) {
    return Fail(why);
  }
  node.degree = std::max<uint32_t>(opt.degree, static_cast<uint32_t>(node.neighbours.size()));
  nodefl::host::node::CapNeighbours(&node.neighbours, opt.profile.max_neighbours);
  if (!opt.features_file.empty()) {
    if (std::string why = dl::ReadFeatures(opt.features_file, &node.features); !why.empty()) return Fail(why);
    opt.profile.train_features = static_cast<uint32_t>(node.features.size());
  }
  node.label = opt.label;
  dl::LifetimeSpent spent;
  if (!opt.ledger_file.empty()) {
    if (std::string why = dl::ReadLedgerFile(opt.ledger_file, &spent); !why.empty()) return Fail(why);
    node.lifetime_epsilon_spent = spent.epsilon;
    node.lifetime_delta_spent = spent.delta;
  }

  nodefl::host::node::DeviceRoles device(opt.profile, std::move(node));
  {
    std::vector<uint8_t> ca, cert, key;
    for (auto [path, bytes] : {std::pair{&opt.ca, &ca}, std::pair{&opt.cert, &cert}, std::pair{&opt.key, &key}}) {
      if (std::string why = dl::ReadSmallFile(*path, NODEFL_MAX_PEM_COPY_BYTES, bytes); !why.empty()) return Fail(why);
    }
    Status st = device.credentials().LoadCaChain(nodefl::ConstByteSpan(ca));
    if (!st.ok()) return Fail(opt.ca + ": not a usable CA certificate (" + st.str() + ")");
    st = device.credentials().LoadOwnIdentity(nodefl::ConstByteSpan(cert), nodefl::ConstByteSpan(key));
    std::fill(key.begin(), key.end(), 0);  // the key now lives in MbedTLS's context only
    if (!st.ok()) return Fail(opt.cert + ", " + opt.key + ": not a usable certificate and key (" + st.str() + ")");
  }
  if (const Status st = device.Init(); !st.ok()) return Fail(std::string("cannot set the device up: ") + st.str());

  // The connection's buffers (docs/porting.md, "The connection").
  static uint8_t tls_in[nodefl::client::kPumpTlsInboundBytes];
  static uint8_t tls_out[nodefl::client::kPumpTlsOutboundBytes];
  static uint8_t plaintext[nodefl::client::kPumpPlaintextBytes];
  nodefl::tls::TlsEndpoint endpoint;
  if (const Status st = endpoint.Init(device.tls_config(), nodefl::ByteSpan(tls_in), nodefl::ByteSpan(tls_out),
                                      opt.server_name.c_str());
      !st.ok()) {
    return Fail(std::string("TLS endpoint: ") + st.str());
  }
  nodefl::client::PumpOptions pump_options;
  pump_options.handshake_timeout_us = uint64_t{opt.handshake_timeout_s} * 1000000u;
  nodefl::client::DevicePump pump(endpoint, device.session(), nodefl::ByteSpan(plaintext), pump_options);

  struct sigaction action {};
  action.sa_handler = &OnStopSignal;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGTERM, &action, nullptr);
  ::sigaction(SIGINT, &action, nullptr);

  // Persists the lifetime spend whenever it grew: called before the output
  // carrying a release is written to the socket.
  std::string ledger_error;
  const auto persist_ledger = [&]() -> Status {
    if (opt.ledger_file.empty()) return Status::Ok();
    const nodefl::PrivacyLedger& ledger = device.ledger();
    if (ledger.lifetime_epsilon() == spent.epsilon && ledger.lifetime_delta() == spent.delta) return Status::Ok();
    const dl::LifetimeSpent now{ledger.lifetime_epsilon(), ledger.lifetime_delta()};
    if (std::string why = dl::WriteLedgerFile(opt.ledger_file, now); !why.empty()) {
      ledger_error = why;
      return Status::Unavailable();  // closes the session: no release may leave unrecorded
    }
    spent = now;
    return Status::Ok();
  };
  Status roles_status;
  dl::ConnectionHooks hooks;
  hooks.want_close = [&] { return g_stop_signal != 0 || (opt.exit_when_done && device.finished()); };
  hooks.after_step = [&]() -> Status {
    SampleHeap();
    if (Status st = device.Advance(); !st.ok()) {
      roles_status = st;
      return st;
    }
    return persist_ledger();
  };
  uint32_t connections = 0;
  hooks.on_open = [&] {
    std::fprintf(stderr, "%s: device %u connected to %s (connection %u)\n", kTool, opt.id, opt.server.c_str(),
                 connections);
  };

  std::minstd_rand jitter(opt.id ^ static_cast<uint32_t>(dl::NowMicros()));
  uint32_t failures_in_a_row = 0, reconnects = 0;
  int exit_code = 0;
  std::string end_reason;
  while (true) {
    std::string error;
    const int fd = dl::ConnectTcp(opt.host, opt.port, 10000, &error);
    dl::ConnectionOutcome outcome;
    if (fd >= 0) {
      ++connections;
      if (connections > 1) ++reconnects;
      outcome = dl::RunConnection(fd, pump, hooks, static_cast<int>(opt.tick_ms));
      ::close(fd);
      error = outcome.detail;
    }
    SampleHeap();
    if (!ledger_error.empty()) {
      exit_code = Fail("privacy ledger file: " + ledger_error);
      end_reason = "ledger file unwritable";
      break;
    }
    if (!roles_status.ok()) {
      exit_code = Fail(std::string("roles: ") + roles_status.str());
      end_reason = "roles failed";
      break;
    }
    if (g_stop_signal != 0) {
      end_reason = g_stop_signal == SIGTERM ? "SIGTERM" : "SIGINT";
      break;
    }
    if (opt.exit_when_done && device.finished()) {
      end_reason = "job done";
      break;
    }
    if (device.session().state() == nodefl::device::SessionState::kClosed) {
      // The server ended the session (after its jobs, or refusing this
      // device): a new connection would not bring it back.
      end_reason = std::string("session closed by the server: ") + device.session().last_error();
      if (!device.finished()) exit_code = Fail(end_reason);
      break;
    }
    if (outcome.end == dl::ConnectionEnd::kFailed && !outcome.opened &&
        pump.failure_layer() == nodefl::client::PumpLayer::kSession) {
      exit_code = Fail("the session could not start: " + error);  // not worth a retry
      end_reason = "session start failed";
      break;
    }
    failures_in_a_row = outcome.opened ? 0 : failures_in_a_row + 1;
    if (opt.max_attempts != 0 && failures_in_a_row >= opt.max_attempts) {
      exit_code = Fail("gave up after " + std::to_string(failures_in_a_row) + " failed connections: " + error);
      end_reason = "gave up connecting";
      break;
    }
    // Exponential backoff with jitter (a fleet that lost its server must
    // not come back all at once): 100 ms doubling to --backoff-max-ms.
    const uint32_t ceiling =
        std::min<uint32_t>(opt.backoff_max_ms, 100u << std::min<uint32_t>(failures_in_a_row, 16));
    const uint32_t wait_ms = ceiling / 2 + static_cast<uint32_t>(jitter() % (ceiling / 2 + 1));
    std::fprintf(stderr, "%s: device %u: connection ended (%s); reconnecting in %u ms\n", kTool, opt.id,
                 error.c_str(), wait_ms);
    for (uint32_t waited = 0; waited < wait_ms && g_stop_signal == 0; waited += 50) ::usleep(50 * 1000);
    if (g_stop_signal != 0) {
      end_reason = g_stop_signal == SIGTERM ? "SIGTERM" : "SIGINT";
      break;
    }
  }
  persist_ledger().IgnoreError();

  struct rusage usage {};
  ::getrusage(RUSAGE_SELF, &usage);
  const nodefl::PrivacyLedger& ledger = device.ledger();
  std::string roles;
  if (const auto* walks = device.walk_role()) {
    roles += " walks_forwarded=" + std::to_string(walks->stats().forwarded) +
             " walks_finished=" + std::to_string(walks->stats().finished) +
             " walks_dropped=" + std::to_string(walks->stats().dropped) +
             " walks_dropped_starts=" + std::to_string(walks->stats().dropped_starts) +
             " walks_lost=" + std::to_string(walks->stats().lost);
  }
  roles += " hct_reports=" + std::to_string(device.hct_role().stats().reports);
  if (const auto* histograms = device.histogram_role()) {
    roles += " histogram_releases=" + std::to_string(histograms->stats().releases);
  }
  if (const auto* compares = device.compare_role()) {
    roles += " compare_done=" + std::to_string(compares->stats().done) +
             " compare_aborted=" + std::to_string(compares->stats().aborted);
  }
  if (const auto* train = device.train_role()) roles += " train_epochs=" + std::to_string(train->stats().epochs);
  std::printf("device=%u job=%s finished=%d end=\"%s\" connections=%u reconnects=%u%s epsilon=%.17g "
              "lifetime_epsilon=%.17g arena_bytes=%zu peak_heap_bytes=%zu peak_rss_kib=%ld\n",
              opt.id, opt.profile.job.c_str(), device.finished() ? 1 : 0, end_reason.c_str(), connections, reconnects,
              roles.c_str(), ledger.total_epsilon(), ledger.lifetime_epsilon(), device.arena_bytes(),
              g_peak_heap_bytes, usage.ru_maxrss);
  return exit_code;
}
