// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// nodefl-emulate: runs every node of a graph (shared TSV layout) as a real
// nodefl device, each with its own TLS connection to a running nodefl-server,
// all inside this process. Each device is given only its own neighbour list.
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>

#include "nodefl/core/sorted_search.h"
#include "nodefl/emulator/emulated_device.h"
#if NODEFL_WITH_KCAGC
#include "nodefl/emulator/kcagc_fleet.h"
#endif
#include "nodefl/host/cli/flag_parser.h"
#include "nodefl/host/dataset/graph_dataset.h"
#include "nodefl/host/pki/device_bundle.h"
#include "nodefl/privacy/ledger.h"
#include "nodefl/protocol/secagg/aggregation_format.h"
#include "nodefl/host/net/process_limits.h"

namespace {

namespace asio = boost::asio;
using nodefl::emulator::DeviceSetup;
using nodefl::emulator::EmulatedDevice;
using nodefl::emulator::FleetSetup;
using nodefl::emulator::FleetStats;

struct Options {
  std::string graph;
  std::string host = "127.0.0.1";
  uint16_t port = 7443;
  std::string server_name = "localhost";
  std::string bundle;
  uint32_t devices = 0;  // 0: all nodes
  // --external-nodes: node ids played by devices outside this process.
  std::vector<uint32_t> external;
  uint32_t threads = 2;
  uint32_t connect_concurrency = 128;
  uint32_t timeout_s = 1800;
  uint32_t messages_per_edge = 1;
  std::string job = "neighbour-echo";
  std::string fedwalk_mode = "strict";
  uint32_t codebook_capacity = 8;
  uint32_t compare_sessions = 4;
  bool keep_tree = false;
  bool shared_pair_keys = true;
  uint32_t max_neighbours = 0;  // 0: every device keeps all its neighbours
  nodefl::PrivacyBudget budget;
  bool lumos_train = false;
  uint32_t train_hidden = 16;
  uint32_t train_out = 16;
  uint32_t train_partners = 8;
  uint32_t train_secagg_peers = 0;
  uint64_t noise_seed = 0;  // 0: each device's noise from entropy
  uint32_t secagg_peers = 64;
  uint32_t secagg_length = 10000;
  uint32_t participants = 2;  // kcagc: L
  uint64_t kcagc_seed = 1;    // kcagc: the column split's seed (the server's kcagc_seed)
  nodefl::emulator::FaultPlan faults;  // --faults; none by default
};

void PrintHelp() {
  std::puts(
      "usage: nodefl-emulate --graph DIR --bundle FILE [options]\n"
      "\n"
      "Runs every node of a graph as a nodefl device with its own TLS connection to a\n"
      "running nodefl-server, all in this process, and takes part in the server's job\n"
      "(neighbour-echo, fedwalk-hct, fedwalk, ...). Each device knows only its own\n"
      "neighbour list.\n"
      "\n"
      "  --graph DIR              graph in the shared TSV layout (edges.tsv, ...)\n"
      "  --bundle FILE            devices.bundle written by `nodefl-ca devices`\n"
      "  --server HOST:PORT       server address (default 127.0.0.1:7443)\n"
      "  --server-name NAME       name in the server certificate (default localhost)\n"
      "  --devices N              emulate only nodes 0..N-1 and the edges among them\n"
      "  --external-nodes LIST    leave these node ids (e.g. 0,5,30-33) to devices outside this\n"
      "                           process (board clients: examples/device-linux); the emulator\n"
      "                           plays the rest and waits for its own devices only (jobs\n"
      "                           fedwalk, fedwalk-hct, fedwalk-histograms, secure-compare)\n"
      "  --threads N              event-loop threads (default 2)\n"
      "  --connect-concurrency N  handshakes in flight at once (default 128)\n"
      "  --timeout S              give up after S seconds (default 1800)\n"
      "  --job NAME               the job the server runs, to know what success means:\n"
      "                           neighbour-echo (default), fedwalk-hct, fedwalk (with\n"
      "                           --fedwalk-mode), fedwalk-histograms (strict FedWalk by\n"
      "                           name), secure-compare (Lumos greedy initialisation by\n"
      "                           secure comparisons) or lumos-trees (greedy, then trimming:\n"
      "                           the exact method or the paper's MCMC, as the server's\n"
      "                           lumos_method says; docs/lumos.md), or secure-aggregate\n"
      "                           (secure aggregation of synthetic vectors, checked by the\n"
      "                           server; docs/secure-aggregation.md), or kcagc (kCAGC\n"
      "                           clustering among --participants organisations; docs/kcagc.md)\n"
      "  --fedwalk-mode M         fedwalk: the server's fedwalk_mode: strict (default; the\n"
      "                           devices upload noised cluster histograms, the server walks)\n"
      "                           or paper (tree, then device-to-device walks; implies\n"
      "                           --keep-tree)\n"
      "  --compare-sessions N     secure-compare: sessions a device runs at once (default 4;\n"
      "                           at least the server's compare_max_sessions)\n"
      "  --messages-per-edge M    neighbour-echo: the server's job_messages_per_edge\n"
      "                           (default 1), to check the devices' totals against the graph\n"
      "  --codebook-capacity K    fedwalk-hct: codebook entries each device can keep per\n"
      "                           neighbour, plus 1024 spare (default 8; rows at the paper's\n"
      "                           epsilon hold 1-3 entries; a device out of room reports it)\n"
      "  --lumos-train            lumos-trees: the devices also serve Lumos training (the\n"
      "                           server's lumos_train=node or link); features (and, for\n"
      "                           node classification, labels) come from the dataset's\n"
      "                           features.tsv and labels.tsv\n"
      "  --train-partners N       link prediction: partners each device has room for (default\n"
      "                           8; the server's lumos_negatives + lumos_eval_negatives)\n"
      "  --train-secagg-peers N   Lumos training with the server's lumos_secure_sum: mask peers\n"
      "                           each device has room for (default 0: none, and the devices\n"
      "                           refuse a secure-sum job; the server gives each device about\n"
      "                           lumos_secure_peers, 2 ceil(log2 n) by default, plus a few:\n"
      "                           64 covers 10,000 devices)\n"
      "  --secagg-peers N         secure-aggregate: mask peers each device has room for\n"
      "                           (default 64; at least the server's secagg_peers, or n - 1\n"
      "                           for the full graph)\n"
      "  --secagg-length N        secure-aggregate: the longest vector a device has room for\n"
      "                           (default 10000; at least the server's secagg_length)\n"
      "  --participants L         kcagc: devices 0..L-1 are the participants, each with the\n"
      "                           whole graph and its share of the feature columns (default 2;\n"
      "                           the server's job_quorum must be L)\n"
      "  --kcagc-seed S           kcagc: seed of the column split, as nodefl-kcagc-sim's --seed\n"
      "                           (default 1; give the server's kcagc_seed)\n"
      "  --train-hidden N, --train-out N  widths the devices make room for (default 16; the\n"
      "                           server's lumos model must not be wider)\n"
      "  --keep-tree              fedwalk-hct: every device also keeps the published tree\n"
      "                           and the whole bin plan (~13 bytes per vertex per device)\n"
      "  --no-shared-pair-keys    every device checks its peers' certificates and runs each\n"
      "                           ECDH itself, as real devices do (default: the emulated\n"
      "                           devices share certificate checks, pair keys and job keys,\n"
      "                           which are the same either way, so that the emulator's CPU\n"
      "                           is not spent twice on each pair; the summary counts both)\n"
      "  --max-neighbours N       fedwalk jobs: each device keeps at most N neighbours, chosen\n"
      "                           in the public order of privacy/neighbour_cap.h (as an app\n"
      "                           with room for N would); capped devices take part anyway and\n"
      "                           record twice the epsilon (default 0: no cap)\n"
      "  --budget-job-epsilon E   every device refuses releases past E per job (default 16)\n"
      "  --budget-lifetime-epsilon E  ... past E over the run (default 256)\n"
      "  --budget-job-delta D     ... past delta D per job (default 1e-5)\n"
      "  --budget-lifetime-delta D    ... past delta D over the run (default 1e-4)\n"
      "  --allow-unbounded-releases   devices make exact releases (paper modes; refused by\n"
      "                           default)\n"
      "  --unlimited-budget       no limits at all and exact releases allowed: the paper's\n"
      "                           mechanisms as published, for comparison runs\n"
      "  --noise-seed S           seed every device's noise generator (encodings, randomised\n"
      "                           response, dropout) from S and its id instead of entropy, so\n"
      "                           that two runs draw the same noise (comparison runs only: S\n"
      "                           replays every draw; default: entropy)\n"
      "  --faults SPEC            inject failures (docs/reliability.md): comma-separated\n"
      "                           kill=F@PHASE[+DELAY] or kill=F@DELAY (kill round(F n)\n"
      "                           devices when each reaches PHASE: echo, tree, walks,\n"
      "                           histograms, compare, trim, train, aggregate; or DELAY after\n"
      "                           connecting), revive=DELAY (killed devices come back and\n"
      "                           resume), slow=F:DELAY (F of the devices wait DELAY after each\n"
      "                           read), drop=P, corrupt=P, cut=P (per write or read: bytes\n"
      "                           lost, a byte flipped, the connection cut), seed=S (default 1).\n"
      "                           DELAY: 500ms, 3s. Example: kill=0.1@walks+200ms,revive=2s\n"
      "  --help                   this text\n"
      "\n"
      "Exit status: 0 when every device finished its job (neighbour-echo: with every\n"
      "expected message received and verified exactly once; fedwalk-hct: all three\n"
      "rounds without a failure), 1 otherwise, 2 for bad arguments. With --faults: 0 when\n"
      "every device not killed for good finished (the exact totals are the server's to\n"
      "account: its job_finished line).");
}

// "0,5,30-33" into sorted, distinct ids; false on anything else.
bool ParseIdList(const std::string& text, std::vector<uint32_t>* out) {
  out->clear();
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    const size_t dash = item.find('-');
    uint64_t first = 0, last = 0;
    if (!nodefl::host::cli::ParseWhole(item.substr(0, dash), UINT32_MAX, &first)) return false;
    last = first;
    if (dash != std::string::npos &&
        (!nodefl::host::cli::ParseWhole(item.substr(dash + 1), UINT32_MAX, &last) || last < first ||
         last - first >= (1u << 24))) {
      return false;
    }
    for (uint64_t id = first; id <= last; ++id) out->push_back(static_cast<uint32_t>(id));
    at = comma + 1;
  }
  std::sort(out->begin(), out->end());
  out->erase(std::unique(out->begin(), out->end()), out->end());
  return !out->empty();
}

std::optional<uint64_t> ParseCount(const char* text, uint64_t max) {
  uint64_t v = 0;
  if (!nodefl::host::cli::ParseWhole(text, max, &v)) return std::nullopt;
  return v;
}

std::optional<Options> Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      PrintHelp();
      std::exit(0);
    }
    if (arg == "--keep-tree") {
      o.keep_tree = true;
      continue;
    }
    if (arg == "--lumos-train") {
      o.lumos_train = true;
      continue;
    }
    if (arg == "--no-shared-pair-keys") {
      o.shared_pair_keys = false;
      continue;
    }
    if (arg == "--allow-unbounded-releases") {
      o.budget.allow_unbounded = true;
      continue;
    }
    if (arg == "--unlimited-budget") {
      o.budget = nodefl::PrivacyBudget::Unlimited();
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "nodefl-emulate: %s needs a value (see --help)\n", arg.c_str());
      return std::nullopt;
    }
    const char* v = argv[++i];
    auto count = [&](uint64_t max, uint64_t min = 1) -> std::optional<uint64_t> {
      auto n = ParseCount(v, max);
      if (!n || *n < min) {
        std::fprintf(stderr, "nodefl-emulate: %s expects a whole number %llu..%llu, got '%s'\n", arg.c_str(),
                     static_cast<unsigned long long>(min), static_cast<unsigned long long>(max), v);
        return std::nullopt;
      }
      return n;
    };
    // A non-negative real, or "inf".
    auto real = [&]() -> std::optional<double> {
      if (std::strcmp(v, "inf") == 0) return nodefl::kUnlimitedBudget;
      char* end = nullptr;
      const double x = std::strtod(v, &end);
      if (end == v || *end != '\0' || !(x >= 0.0) || !std::isfinite(x)) {
        std::fprintf(stderr, "nodefl-emulate: %s expects a number >= 0 or inf, got '%s'\n", arg.c_str(), v);
        return std::nullopt;
      }
      return x;
    };
    if (arg == "--budget-job-epsilon" || arg == "--budget-lifetime-epsilon" || arg == "--budget-job-delta" ||
        arg == "--budget-lifetime-delta") {
      const auto x = real();
      if (!x) return std::nullopt;
      double& field = arg == "--budget-job-epsilon"        ? o.budget.job_epsilon
                      : arg == "--budget-lifetime-epsilon" ? o.budget.lifetime_epsilon
                      : arg == "--budget-job-delta"        ? o.budget.job_delta
                                                           : o.budget.lifetime_delta;
      field = *x;
      continue;
    }
    if (arg == "--graph") {
      o.graph = v;
    } else if (arg == "--bundle") {
      o.bundle = v;
    } else if (arg == "--server-name") {
      o.server_name = v;
    } else if (arg == "--server") {
      const std::string s = v;
      const size_t colon = s.rfind(':');
      auto port = colon == std::string::npos ? std::nullopt : ParseCount(s.c_str() + colon + 1, 65535);
      if (!port || *port == 0) {
        std::fprintf(stderr, "nodefl-emulate: --server expects HOST:PORT, got '%s'\n", v);
        return std::nullopt;
      }
      o.host = s.substr(0, colon);
      o.port = static_cast<uint16_t>(*port);
    } else if (arg == "--devices") {
      auto n = count(UINT32_MAX);
      if (!n) return std::nullopt;
      o.devices = static_cast<uint32_t>(*n);
    } else if (arg == "--external-nodes") {
      if (!ParseIdList(v, &o.external)) {
        std::fprintf(stderr, "nodefl-emulate: --external-nodes expects ids and ranges such as 0,5,30-33, got '%s'\n", v);
        return std::nullopt;
      }
    } else if (arg == "--threads") {
      auto n = count(256);
      if (!n) return std::nullopt;
      o.threads = static_cast<uint32_t>(*n);
    } else if (arg == "--connect-concurrency") {
      auto n = count(100000);
      if (!n) return std::nullopt;
      o.connect_concurrency = static_cast<uint32_t>(*n);
    } else if (arg == "--job") {
      o.job = v;
      if (o.job != "neighbour-echo" && o.job != "fedwalk-hct" && o.job != "fedwalk" &&
          o.job != "fedwalk-histograms" && o.job != "secure-compare" && o.job != "lumos-trees" &&
          o.job != "secure-aggregate" && o.job != "kcagc") {
        std::fprintf(stderr,
                     "nodefl-emulate: --job is neighbour-echo, fedwalk-hct, fedwalk, fedwalk-histograms, "
                     "secure-compare, lumos-trees, secure-aggregate or kcagc, not '%s'\n",
                     v);
        return std::nullopt;
      }
      if (o.job == "kcagc" && !NODEFL_WITH_KCAGC) {
        std::fprintf(stderr, "nodefl-emulate: this build has no kcagc job (configured with NODEFL_WITH_KCAGC=OFF)\n");
        return std::nullopt;
      }
    } else if (arg == "--fedwalk-mode") {
      o.fedwalk_mode = v;
      if (o.fedwalk_mode != "strict" && o.fedwalk_mode != "paper") {
        std::fprintf(stderr, "nodefl-emulate: --fedwalk-mode is strict or paper, not '%s'\n", v);
        return std::nullopt;
      }
    } else if (arg == "--secagg-peers") {
      auto n = count(nodefl::secagg::kMaxAggPeers);
      if (!n) return std::nullopt;
      o.secagg_peers = static_cast<uint32_t>(*n);
    } else if (arg == "--secagg-length") {
      auto n = count(nodefl::secagg::kMaxAggLength);
      if (!n) return std::nullopt;
      o.secagg_length = static_cast<uint32_t>(*n);
    } else if (arg == "--participants") {
      const auto n = count(1024, 2);
      if (!n) return std::nullopt;
      o.participants = static_cast<uint32_t>(*n);
    } else if (arg == "--kcagc-seed") {
      const auto n = count(UINT64_MAX, 0);
      if (!n) return std::nullopt;
      o.kcagc_seed = *n;
    } else if (arg == "--faults") {
      if (const auto why = nodefl::emulator::ParseFaultPlan(v, &o.faults)) {
        std::fprintf(stderr, "nodefl-emulate: --faults: %s (see --help)\n", why->c_str());
        return std::nullopt;
      }
    } else if (arg == "--noise-seed") {
      const auto n = count(UINT64_MAX);
      if (!n) return std::nullopt;
      o.noise_seed = *n;
    } else if (arg == "--train-secagg-peers") {
      const auto n = count(nodefl::secagg::kMaxAggPeers);
      if (!n) return std::nullopt;
      o.train_secagg_peers = static_cast<uint32_t>(*n);
    } else if (arg == "--train-partners") {
      const auto n = count(512);
      if (!n) return std::nullopt;
      o.train_partners = static_cast<uint32_t>(*n);
    } else if (arg == "--train-hidden" || arg == "--train-out") {
      const auto n = count(4096);
      if (!n) return std::nullopt;
      (arg == "--train-hidden" ? o.train_hidden : o.train_out) = static_cast<uint32_t>(*n);
    } else if (arg == "--compare-sessions") {
      const auto n = count(64);
      if (!n) return std::nullopt;
      o.compare_sessions = static_cast<uint32_t>(*n);
    } else if (arg == "--codebook-capacity") {
      const auto n = count(1024);
      if (!n) return std::nullopt;
      o.codebook_capacity = static_cast<uint32_t>(*n);
    } else if (arg == "--max-neighbours") {
      const auto n = count(UINT32_MAX, 0);
      if (!n) return std::nullopt;
      o.max_neighbours = static_cast<uint32_t>(*n);
    } else if (arg == "--messages-per-edge") {
      auto n = count(1u << 20);
      if (!n) return std::nullopt;
      o.messages_per_edge = static_cast<uint32_t>(*n);
    } else if (arg == "--timeout") {
      auto n = count(7 * 24 * 3600);
      if (!n) return std::nullopt;
      o.timeout_s = static_cast<uint32_t>(*n);
    } else {
      std::fprintf(stderr, "nodefl-emulate: unknown argument '%s' (see --help)\n", arg.c_str());
      return std::nullopt;
    }
  }
  if (o.graph.empty() || o.bundle.empty()) {
    std::fprintf(stderr, "nodefl-emulate: --graph and --bundle are required (see --help)\n");
    return std::nullopt;
  }
  if (!o.external.empty() && o.job != "fedwalk-hct" && o.job != "fedwalk" && o.job != "fedwalk-histograms" &&
      o.job != "secure-compare") {
    // The other jobs' checks here need every device's own state (echo
    // counts, Lumos's edge cover, kcagc's participants).
    std::fprintf(stderr, "nodefl-emulate: --external-nodes applies to --job fedwalk, fedwalk-hct, fedwalk-histograms "
                         "or secure-compare only\n");
    return std::nullopt;
  }
  if (o.max_neighbours != 0 && o.job != "fedwalk-hct" && o.job != "fedwalk" && o.job != "fedwalk-histograms") {
    // The other jobs message every neighbour and expect every neighbour's
    // message: a one-sided cap would only show up as lost messages.
    std::fprintf(stderr,
                 "nodefl-emulate: --max-neighbours applies to --job fedwalk-hct, fedwalk or fedwalk-histograms only\n");
    return std::nullopt;
  }
  return o;
}


// The job's own counters on the progress line (between the connection
// counts and finished/failed).
std::string JobCounters(const std::string& job, bool strict_fedwalk, const nodefl::emulator::FleetStats& s,
                        uint64_t expected) {
  const auto v = [](const std::atomic<uint64_t>& a) { return std::to_string(a.load()); };
  if (job == "lumos-trees") {
    return "sessions done " + v(s.compare_done) + ", aborted " + v(s.compare_aborted) + ", trimming: bound " +
           v(s.trim_bound) + ", steps " + v(s.trim_steps) + " (summed), messages " + v(s.trim_messages) +
           ", training epochs uploaded " + v(s.train_epochs) + " (summed)";
  }
  if (job == "secure-compare") {
    return "sessions done " + v(s.compare_done) + ", aborted " + v(s.compare_aborted) + ", messages " +
           v(s.compare_messages);
  }
  if (job == "secure-aggregate") {
    return "aggregation parts done " + v(s.secagg_completed) + ", peer messages sealed " + v(s.secagg_sealed) +
           ", refused " + v(s.secagg_refused);
  }
  if (job == "kcagc") {
    return "instructions followed " + v(s.kcagc_instructions) + ", vectors contributed " + v(s.kcagc_contributions);
  }
  if (strict_fedwalk) {
    return "histograms released " + v(s.histogram_releases) + ", failed rounds " + v(s.histogram_failures);
  }
  if (job == "fedwalk-hct" || job == "fedwalk") {
    return "tree round reports " + v(s.hct_rounds_reported) + " (3 per device), walk messages " +
           v(s.walks_forwarded) + ", walks ended " + std::to_string(s.walks_finished.load() + s.walks_dropped.load()) +
           " (dropped " + v(s.walks_dropped) + ")";
  }
  return "sealed sent " + v(s.sealed_sent) + ", verified " + v(s.verified_received) + "/" + std::to_string(expected);
}

}  // namespace

int main(int argc, char** argv) {
  const auto opt = Parse(argc, argv);
  if (!opt) return 2;
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&t0] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };

  auto loaded = nodefl::dataset::LoadGraph(opt->graph);
  if (!loaded.ok) {
    std::fprintf(stderr, "nodefl-emulate: %s\n", loaded.error.c_str());
    return 1;
  }
  const nodefl::dataset::Graph& g = loaded.graph;
  if (opt->lumos_train && (opt->job != "lumos-trees" || g.num_feature_dims == 0)) {
    std::fprintf(stderr, "nodefl-emulate: --lumos-train needs --job lumos-trees and a dataset with features.tsv "
                         "(%s has %u features; labels are needed only for node classification)\n",
                 opt->graph.c_str(), g.num_feature_dims);
    return 1;
  }
#if NODEFL_WITH_KCAGC
  // kcagc: L participants (devices 0..L-1), not one device per node.
  std::vector<nodefl::kcagc::ParticipantData> kcagc_participants;
  if (opt->job == "kcagc") {
    const std::string why =
        nodefl::emulator::MakeKcagcParticipants(g, opt->participants, opt->kcagc_seed, &kcagc_participants);
    if (!why.empty()) {
      std::fprintf(stderr, "nodefl-emulate: %s\n", why.c_str());
      return 1;
    }
  }
#endif
  const uint32_t n = opt->job == "kcagc" ? opt->participants
                     : opt->devices == 0 ? g.num_nodes
                                         : std::min(opt->devices, g.num_nodes);

  std::string note;
  if (const uint64_t files = nodefl::host::net::RaiseOpenFileLimit(&note); files < uint64_t{n} + 64) {
    std::fprintf(stderr, "nodefl-emulate: only %llu open files allowed for %u devices%s%s\n",
                 static_cast<unsigned long long>(files), n, note.empty() ? "" : ": ", note.c_str());
    return 1;
  }

  nodefl::pki::DeviceBundle bundle;
  if (auto r = nodefl::pki::ReadDeviceBundle(opt->bundle, &bundle); !r.ok()) {
    std::fprintf(stderr, "nodefl-emulate: %s: %s\n", opt->bundle.c_str(), r.message().c_str());
    return 1;
  }
  if (!opt->external.empty() && (opt->external.back() >= n || opt->external.size() >= n)) {
    std::fprintf(stderr, "nodefl-emulate: --external-nodes must name some, not all, of the %u nodes 0..%u\n", n, n - 1);
    return 1;
  }
  std::unordered_map<uint32_t, size_t> by_id;
  for (size_t i = 0; i < bundle.devices.size(); ++i) by_id[bundle.devices[i].device_id] = i;
  uint32_t missing = 0;
  const auto external = [&opt](uint32_t v) {
    return std::binary_search(opt->external.begin(), opt->external.end(), v);
  };
  for (uint32_t v = 0; v < n; ++v) missing += by_id.count(v) || external(v) ? 0 : 1;
  if (missing != 0) {
    std::fprintf(stderr, "nodefl-emulate: %u of the %u devices have no credentials in %s "
                 "(issue them with nodefl-ca devices --first-id 0 --count %u)\n",
                 missing, n, opt->bundle.c_str(), n);
    return 1;
  }

  nodefl::tls::TlsCredentials ca;
  if (auto st = ca.LoadCaChain(nodefl::ConstByteSpan(bundle.ca_der)); !st.ok()) {
    std::fprintf(stderr, "nodefl-emulate: the bundle's CA certificate is unusable (%s)\n", st.str());
    return 1;
  }
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(opt->host, ec);
  if (ec) {
    std::fprintf(stderr, "nodefl-emulate: '%s' is not an IP address\n", opt->host.c_str());
    return 1;
  }

  FleetStats stats;
  nodefl::emulator::ConnectGate gate(opt->connect_concurrency);
  FleetSetup fleet;
  fleet.server = asio::ip::tcp::endpoint(address, opt->port);
  fleet.server_name = opt->server_name;
  fleet.ca = &ca;
  fleet.stats = &stats;
  fleet.gate = &gate;
  fleet.codebook_entries_per_neighbour = opt->codebook_capacity;
  // Strict FedWalk's devices need neither (they upload histograms only).
  const bool strict_fedwalk =
      opt->job == "fedwalk-histograms" || (opt->job == "fedwalk" && opt->fedwalk_mode == "strict");
  fleet.keep_tree_and_bin_plan = opt->keep_tree || (opt->job == "fedwalk" && !strict_fedwalk);
  fleet.fedwalk_mode = opt->fedwalk_mode;
  fleet.job = opt->job;
  fleet.vertex_count = n;
  fleet.compare_contexts = opt->compare_sessions;
  fleet.budget = opt->budget;
  fleet.max_neighbours = opt->max_neighbours;
  fleet.lumos_train = opt->lumos_train;
  fleet.train_hidden = opt->train_hidden;
  fleet.train_out = opt->train_out;
  fleet.train_partners = opt->train_partners;
  fleet.train_secagg_peers = opt->train_secagg_peers;
  fleet.noise_seed = opt->noise_seed;
  fleet.secagg_peers = opt->secagg_peers;
  fleet.secagg_length = opt->secagg_length;
#if NODEFL_WITH_KCAGC
  fleet.kcagc_participants = &kcagc_participants;
#endif
  fleet.train_features = g.num_feature_dims;
  fleet.train_classes = g.num_label_classes;
  nodefl::emulator::SharedPairKeys shared_pair_keys;
  if (opt->shared_pair_keys) fleet.shared_pair_keys = &shared_pair_keys;

  const std::vector<nodefl::emulator::DeviceFaults> device_faults = nodefl::emulator::AssignFaults(opt->faults, n);
  if (opt->faults.any()) fleet.faults = &opt->faults;

  asio::io_context io;
  std::vector<std::shared_ptr<EmulatedDevice>> devices;
  devices.reserve(n);
  uint64_t expected = 0;
  for (uint32_t v = 0; v < n; ++v) {
    if (external(v)) continue;  // a device outside this process plays it
    DeviceSetup setup;
    setup.id = v;
    setup.faults = device_faults[v];
    for (uint64_t i = g.offsets[v]; i < g.offsets[v + 1]; ++i) {
      if (g.neighbours[i] < n) setup.neighbours.push_back(g.neighbours[i]);
    }
    setup.degree = static_cast<uint32_t>(setup.neighbours.size());
    nodefl::host::node::CapNeighbours(&setup.neighbours, opt->max_neighbours);
    expected += setup.neighbours.size() * uint64_t{opt->messages_per_edge};
    if (opt->lumos_train) {
      // The node's own data, as the app on a phone would hold it.
      setup.features.assign(g.num_feature_dims, 0.0f);
      for (uint64_t i = g.feature_offsets[v]; i < g.feature_offsets[v + 1]; ++i) setup.features[g.features[i]] = 1.0f;
      if (g.label_offsets.size() == size_t{g.num_nodes} + 1 && g.label_offsets[v + 1] > g.label_offsets[v]) {
        setup.label = static_cast<int32_t>(g.labels[g.label_offsets[v]]);
      }
    }
    auto& record = bundle.devices[by_id[v]];
    setup.certificate_der = std::move(record.certificate_der);
    setup.private_key_der = std::move(record.private_key_der);
    auto device = std::make_shared<EmulatedDevice>(io, fleet, std::move(setup));
    if (auto st = device->Init(); !st.ok()) {
      std::fprintf(stderr, "nodefl-emulate: device %u: cannot initialise (%s)\n", v, st.str());
      return 1;
    }
    devices.push_back(std::move(device));
    if ((v + 1) % 2000 == 0) std::fprintf(stderr, "loaded %u/%u devices\n", v + 1, n);
  }
  bundle = {};  // private keys now live only inside the devices' TLS contexts
  // The devices this process plays (all n unless some are external).
  const uint32_t fleet_size = static_cast<uint32_t>(devices.size());
  if (opt->job != "neighbour-echo") {
    std::printf("emulating %u devices of %s for %s against %s:%u\n", fleet_size, g.name.c_str(), opt->job.c_str(),
                opt->host.c_str(), opt->port);
    if (!opt->external.empty()) {
      std::printf("external devices (not emulated here): %zu of the graph's %u nodes\n", opt->external.size(), n);
    }
    // Which randomness the devices' noise draws from (docs/privacy.md).
    if (opt->noise_seed != 0) {
      std::printf("device noise: DETERMINISTIC from seed %llu (reproducible, not private)\n",
                  static_cast<unsigned long long>(opt->noise_seed));
    }
  } else {
    std::printf("emulating %u devices of %s (%llu sealed messages expected: directed edges x %u) against %s:%u\n",
                n, g.name.c_str(), static_cast<unsigned long long>(expected), opt->messages_per_edge,
                opt->host.c_str(), opt->port);
  }
  if (fleet.faults != nullptr) std::printf("faults injected: %s\n", opt->faults.Describe().c_str());
  std::fflush(stdout);

  for (auto& d : devices) d->Start();

  // Progress and completion run on their own thread: with thousands of
  // devices doing crypto, the event loop's timers can run late, and the
  // progress line must not.
  std::atomic<bool> interrupted{false};
  asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& e, int) {
    if (!e) interrupted = true;
  });
  double all_connected_s = 0;  // when the last device finished its handshake
  std::thread monitor([&] {
    auto last_print = std::chrono::steady_clock::now() - std::chrono::seconds(10);
    while (true) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const uint64_t finished = stats.finished.load(), failed = stats.failed.load();
      const bool all_done = finished + failed >= fleet_size;
      const bool timed_out = elapsed() > opt->timeout_s;
      if (all_connected_s == 0 && stats.connected.load() >= fleet_size) all_connected_s = elapsed();
      const bool stop = all_done || timed_out || interrupted.load();
      if (std::chrono::steady_clock::now() - last_print >= std::chrono::seconds(2) || stop) {
        last_print = std::chrono::steady_clock::now();
        std::fprintf(stderr, "[%6.1fs] connected %llu/%u (in handshake %llu), reconnects %llu, %s, finished %llu, failed %llu\n",
                     elapsed(), static_cast<unsigned long long>(stats.connected.load()), fleet_size,
                     static_cast<unsigned long long>(stats.connecting.load()),
                     static_cast<unsigned long long>(stats.reconnects.load()),
                     JobCounters(opt->job, strict_fedwalk, stats, expected).c_str(),
                     static_cast<unsigned long long>(finished), static_cast<unsigned long long>(failed));
      }
      if (stop) {
        if (timed_out) std::fprintf(stderr, "nodefl-emulate: timeout after %u s\n", opt->timeout_s);
        for (auto& d : devices) d->Stop();
        // Let Goodbyes go out, then end the loop whatever the peers do.
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        io.stop();
        return;
      }
    }
  });

  std::vector<std::thread> threads;
  for (uint32_t i = 1; i < opt->threads; ++i) threads.emplace_back([&io] { io.run(); });
  io.run();
  for (auto& t : threads) t.join();
  monitor.join();

  uint64_t sent = 0, received = 0, duplicates = 0, rejected = 0, unfinished = 0, shown = 0, killed_for_good = 0;
  for (auto& d : devices) {
    if (d->killed_for_good()) {
      ++killed_for_good;  // the fault plan's doing, reported below
      continue;
    }
    if (const auto* s = d->stats()) {
      sent += s->sent;
      received += s->received;
      duplicates += s->duplicates;
      rejected += s->rejected;
    }
    if (!d->finished()) {
      ++unfinished;
      if (shown++ < 5) std::fprintf(stderr, "device %u did not finish: %s\n", d->id(), d->last_error());
    }
  }
  const bool hct = !strict_fedwalk && (opt->job == "fedwalk-hct" || opt->job == "fedwalk");
  const bool compare = opt->job == "secure-compare";
  const bool lumos = opt->job == "lumos-trees";
  // Lumos: every edge must be kept by at least one endpoint (Lumos Eq. 10),
  // checked here over every device's own state, which no party of the job
  // sees as a whole.
  uint64_t uncovered = 0, kept_twice = 0, edges_seen = 0, workload_sum = 0;
  uint32_t max_workload = 0;
  if (lumos) {
    std::unordered_map<uint32_t, std::vector<std::pair<uint32_t, bool>>> kept;
    for (auto& d : devices) kept[d->id()] = d->LumosOrientation();
    const auto keeps = [&kept](uint32_t a, uint32_t b) {
      auto it = kept.find(a);
      if (it == kept.end()) return false;
      const auto* p = nodefl::FindSorted(nodefl::Span<const std::pair<uint32_t, bool>>(it->second.data(), it->second.size()),
                                         b, [](const std::pair<uint32_t, bool>& x) { return x.first; });
      return p != nullptr && p->second;
    };
    for (auto& d : devices) {
      const auto& mine = kept[d->id()];
      uint32_t workload = 0;
      for (const auto& [peer, keep] : mine) {
        workload += keep ? 1u : 0u;
        if (peer < d->id()) continue;  // each edge once
        ++edges_seen;
        const bool a = keep, b = keeps(peer, d->id());
        if (!a && !b) ++uncovered;
        if (a && b) ++kept_twice;
      }
      max_workload = std::max(max_workload, workload);
      workload_sum += workload;
    }
  }
  // secure-aggregate: the server checks the sums; the devices must all
  // finish and refuse nothing.
  const bool secagg = opt->job == "secure-aggregate";
  bool kcagc_agreed = false;
#if NODEFL_WITH_KCAGC
  if (opt->job == "kcagc") std::printf("%s\n", nodefl::emulator::KcagcFleetSummary(devices, &kcagc_agreed).c_str());
#endif
  const bool faulty = fleet.faults != nullptr;
  const bool verified = faulty ? unfinished == 0
                        : opt->job == "kcagc" ? unfinished == 0 && kcagc_agreed
                        : secagg    ? unfinished == 0 && stats.secagg_refused.load() == 0
                        : lumos     ? unfinished == 0 && stats.compare_aborted.load() == 0 && uncovered == 0
                        : compare ? unfinished == 0 && stats.compare_aborted.load() == 0
                        : strict_fedwalk ? unfinished == 0 && stats.histogram_failures.load() == 0
                        : hct ? unfinished == 0 && stats.hct_failures.load() == 0
                            : unfinished == 0 && sent == expected && received == expected && duplicates == 0 &&
                                  rejected == 0;
  if (hct) {
    // The devices' own ledgers: what each device released in this job.
    std::vector<double> eps;
    uint64_t unbounded = 0, truncated = 0;
    for (auto& d : devices) {
      if (d->ledger() != nullptr) eps.push_back(d->ledger()->total_epsilon());
      if (d->hct_role() != nullptr && d->hct_role()->unbounded_release()) ++unbounded;
      if (d->hct_role() != nullptr && d->hct_role()->truncated()) ++truncated;
    }
    std::sort(eps.begin(), eps.end());
    std::printf("fedwalk-hct: rounds reported %llu, codebook rows kept %llu, failed rounds %llu, "
                "neighbour lists capped %llu\n"
                "privacy ledger (devices): epsilon max %.4f, median %.4f; devices with an unbounded release %llu\n",
                static_cast<unsigned long long>(stats.hct_rounds_reported.load()),
                static_cast<unsigned long long>(stats.hct_codebook_rows.load()),
                static_cast<unsigned long long>(stats.hct_failures.load()), static_cast<unsigned long long>(truncated),
                eps.empty() ? 0.0 : eps.back(), eps.empty() ? 0.0 : eps[eps.size() / 2],
                static_cast<unsigned long long>(unbounded));
  }
  if (strict_fedwalk) {
    // The devices' own ledgers: what each device released in this job.
    std::vector<double> eps;
    uint64_t truncated = 0, other_messages = 0;
    for (auto& d : devices) {
      if (d->ledger() != nullptr) eps.push_back(d->ledger()->total_epsilon());
      if (d->histogram_role() != nullptr && d->histogram_role()->truncated()) ++truncated;
    }
    other_messages = stats.sealed_sent.load() + stats.walks_forwarded.load();
    std::sort(eps.begin(), eps.end());
    std::printf("fedwalk-histograms: histograms released %llu, failed rounds %llu, neighbour lists capped %llu, "
                "device-to-device messages %llu\n"
                "privacy ledger (devices): epsilon max %.4f, median %.4f (per edge against the server: twice that)\n",
                static_cast<unsigned long long>(stats.histogram_releases.load()),
                static_cast<unsigned long long>(stats.histogram_failures.load()),
                static_cast<unsigned long long>(truncated), static_cast<unsigned long long>(other_messages),
                eps.empty() ? 0.0 : eps.back(), eps.empty() ? 0.0 : eps[eps.size() / 2]);
  }
  if (opt->job == "secure-aggregate") {
    std::printf("secure-aggregate: device parts done %llu, peer messages sealed %llu, bytes to the server %llu, "
                "refused %llu\n",
                static_cast<unsigned long long>(stats.secagg_completed.load()),
                static_cast<unsigned long long>(stats.secagg_sealed.load()),
                static_cast<unsigned long long>(stats.secagg_bytes_to_server.load()),
                static_cast<unsigned long long>(stats.secagg_refused.load()));
  }
  if (compare) {
    // Each session is counted by both of its parties.
    std::printf("secure-compare: party results done %llu, aborted %llu; comparison messages %llu, %llu bytes "
                "(before sealing)\n",
                static_cast<unsigned long long>(stats.compare_done.load()),
                static_cast<unsigned long long>(stats.compare_aborted.load()),
                static_cast<unsigned long long>(stats.compare_messages.load()),
                static_cast<unsigned long long>(stats.compare_bytes.load()));
  }
  if (lumos) {
    std::printf("lumos-trees: greedy sessions done %llu, aborted %llu (party results); trimming messages %llu; "
                "edges %llu, uncovered %llu, kept by both ends %llu; workload max %u, mean %.3f (devices' own "
                "state)\n",
                static_cast<unsigned long long>(stats.compare_done.load()),
                static_cast<unsigned long long>(stats.compare_aborted.load()),
                static_cast<unsigned long long>(stats.trim_messages.load()),
                static_cast<unsigned long long>(edges_seen), static_cast<unsigned long long>(uncovered),
                static_cast<unsigned long long>(kept_twice), max_workload,
                n ? static_cast<double>(workload_sum) / n : 0.0);
    if (opt->lumos_train) {
      std::printf("lumos-train: epochs uploaded %llu (summed over devices)\n",
                  static_cast<unsigned long long>(stats.train_epochs.load()));
    }
  }
  if (opt->job == "fedwalk" && !strict_fedwalk) {
    const auto keys = shared_pair_keys.counters();
    std::printf("fedwalk-walks: walk messages sent %llu, walks ended %llu (dropped %llu)\n",
                static_cast<unsigned long long>(stats.walks_forwarded.load()),
                static_cast<unsigned long long>(stats.walks_finished.load() + stats.walks_dropped.load()),
                static_cast<unsigned long long>(stats.walks_dropped.load()));
    if (opt->shared_pair_keys) {
      std::printf("pair keys: %llu derived by the devices (each a certificate check + ECDH on a real device); "
                  "the emulator ran %llu checks and %llu ECDH (shared between its devices)\n",
                  static_cast<unsigned long long>(keys.derivations), static_cast<unsigned long long>(keys.verifications),
                  static_cast<unsigned long long>(keys.ecdh));
      std::printf("job keys: %llu derived by the devices (each an ECDH on a real device); the emulator ran %llu "
                  "ECDH (shared between a pair's devices)\n",
                  static_cast<unsigned long long>(keys.job_derivations),
                  static_cast<unsigned long long>(keys.job_ecdh));
    }
  }
  const uint64_t connected = stats.connected.load();
  std::printf("summary: devices %u, finished %llu, failed %llu, reconnects %llu, failed connection attempts %llu\n", fleet_size,
              static_cast<unsigned long long>(stats.finished.load()), static_cast<unsigned long long>(stats.failed.load()),
              static_cast<unsigned long long>(stats.reconnects.load()),
              static_cast<unsigned long long>(stats.connect_failures.load()));
  if (!hct && !compare && !strict_fedwalk && !lumos) {
    std::printf("         sealed messages: expected %llu, sent %llu, received and verified %llu, duplicates %llu, "
                "rejected %llu\n",
                static_cast<unsigned long long>(expected), static_cast<unsigned long long>(sent),
                static_cast<unsigned long long>(received), static_cast<unsigned long long>(duplicates),
                static_cast<unsigned long long>(rejected));
  }
  if (faulty || stats.reconnects.load() != 0) {
    std::printf("sessions: sends kept %llu, written again after a resume %llu, sent unkept (no room) %llu, "
                "forgotten with a fresh session %llu; job records seen again %llu, relay re-deliveries skipped %llu\n",
                static_cast<unsigned long long>(stats.sends_kept.load()),
                static_cast<unsigned long long>(stats.sends_resent.load()),
                static_cast<unsigned long long>(stats.sends_unkept.load()),
                static_cast<unsigned long long>(stats.sends_forgotten.load()),
                static_cast<unsigned long long>(stats.records_repeated.load()),
                static_cast<unsigned long long>(stats.relay_duplicates.load()));
  }
  if (faulty) {
    std::printf("faults: %s\n"
                "         killed %llu (for good %llu, revived %llu, finished before their kill %llu), slow-device "
                "waits %llu, wire: dropped %llu, corrupted %llu, cut %llu\n",
                opt->faults.Describe().c_str(), static_cast<unsigned long long>(stats.faults_killed.load()),
                static_cast<unsigned long long>(killed_for_good),
                static_cast<unsigned long long>(stats.faults_revived.load()),
                static_cast<unsigned long long>(stats.faults_kill_missed.load()),
                static_cast<unsigned long long>(stats.faults_slow_waits.load()),
                static_cast<unsigned long long>(stats.faults_dropped.load()),
                static_cast<unsigned long long>(stats.faults_corrupted.load()),
                static_cast<unsigned long long>(stats.faults_cut.load()));
  }
  const double peak_kib = static_cast<double>(nodefl::host::net::PeakRssKiB());
  std::printf("         all connected after %.2f s (%.0f handshakes/s), mean handshake %.1f ms\n"
              "         wall time %.1f s, peak memory %.1f MiB (%.1f KiB per device)\n"
              "result: %s\n",
              all_connected_s, all_connected_s > 0 ? fleet_size / all_connected_s : 0.0,
              connected ? stats.handshake_us_total.load() / 1000.0 / connected : 0.0, elapsed(), peak_kib / 1024.0,
              fleet_size ? peak_kib / fleet_size : 0.0,
              verified ? (faulty ? "VERIFIED: every device the faults left alive finished its part (totals: the "
                                   "server's job_finished line)"
                  : opt->job == "kcagc" ? "VERIFIED: every participant received the same final clustering"
                  : lumos ? "VERIFIED: every device finished both stages, every edge kept by at least one end"
                  : compare ? "VERIFIED: every device finished, no comparison session aborted"
                  : strict_fedwalk ? "VERIFIED: every device made its strict FedWalk histogram releases"
                  : opt->job == "fedwalk" ? "VERIFIED: every device completed the FedWalk tree and walk jobs"
                  : hct        ? "VERIFIED: every device completed the FedWalk HCT job"
                              : "VERIFIED: every message arrived intact exactly once")
                       : "NOT VERIFIED");
  return verified ? 0 : 1;
}
