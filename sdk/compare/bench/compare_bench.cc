// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// nodefl-compare-bench: cost of secure comparisons (sdk/compare) between two
// in-process parties, per width and batch size: bytes and messages each
// party sends, flights (changes of direction) and CPU time each party
// spends, per comparison. Built for the host and the cross targets, so the
// same binary runs under qemu-aarch64 (docs/secure-comparison.md).
#include <time.h>

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "nodefl/compare/comparison_plan.h"
#include "nodefl/compare/comparison_session.h"
#include "nodefl/crypto/rng.h"
#include "nodefl/random/drbg.h"

namespace {

using namespace nodefl;
using namespace nodefl::compare;

double CpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct Measured {
  uint64_t bytes[2] = {0, 0};
  uint32_t messages[2] = {0, 0};
  double cpu[2] = {0, 0};
  uint32_t flights = 0;
  bool correct = true;
};

// Both parties of one run: storage, sessions, DRBGs and inputs (a quarter
// of the pairs equal).
struct Pair {
  Pair(uint32_t width, uint32_t count, OtMode mode, uint64_t seed)
      : slots_a(count), slots_b(count) {
    auto plan = PlanComparison(width);
    ok = plan.ok() && rng_a.SeedDeterministic(seed, 1).ok() && rng_b.SeedDeterministic(seed, 2).ok() &&
         inputs.SeedDeterministic(seed, 3).ok();
    if (!ok) return;
    shape.plan = plan.value();
    shape.count = count;
    shape.mode = mode;
    shape.reveal = true;
    shape.max_message_bytes = 4068;  // a sealed relay message's plaintext, less the session id
    tables.resize(size_t{count} * shape.plan.table_bytes());
    ok = a.SetStorage(ComparisonStorage{Span<ComparisonSlot>(slots_a), ByteSpan(tables)}).ok() &&
         b.SetStorage(ComparisonStorage{Span<ComparisonSlot>(slots_b), ByteSpan()}).ok();
    x.resize(count);
    y.resize(count);
    for (uint32_t i = 0; i < count; ++i) {
      x[i] = inputs.NextU32() & shape.plan.MaxValue();
      y[i] = (i % 4 == 0) ? x[i] : inputs.NextU32() & shape.plan.MaxValue();
    }
    tag.bytes[0] = static_cast<uint8_t>(seed);
  }
  bool Correct() const {
    if (!a.done() || !b.done()) return false;
    for (uint32_t i = 0; i < shape.count; ++i) {
      if (a.greater(i) != (x[i] > y[i]) || a.equal(i) != (x[i] == y[i]) || b.greater(i) != (x[i] > y[i]) ||
          b.equal(i) != (x[i] == y[i])) {
        return false;
      }
    }
    return true;
  }

  bool ok = false;
  RunShape shape;
  std::vector<ComparisonSlot> slots_a, slots_b;
  std::vector<uint8_t> tables;
  ComparisonSession a, b;
  Drbg rng_a, rng_b, inputs;
  std::vector<uint32_t> x, y;
  ot::OtTag tag;
};

bool Run(uint32_t width, uint32_t count, OtMode mode, uint64_t seed, Measured* m) {
  Pair pair(width, count, mode, seed);
  if (!pair.ok) return false;
  const RunShape& shape = pair.shape;
  ComparisonSession& a = pair.a;
  ComparisonSession& b = pair.b;
  const ot::OtTag& tag = pair.tag;
  Drbg& rng_a = pair.rng_a;
  Drbg& rng_b = pair.rng_b;
  const std::vector<uint32_t>& x = pair.x;
  const std::vector<uint32_t>& y = pair.y;
  ComparisonSession* party[2] = {&a, &b};
  double t = CpuSeconds();
  if (!a.Start(Role::kA, shape, tag, x, &crypto::DrbgRandom, &rng_a).ok()) return false;
  m->cpu[0] += CpuSeconds() - t;
  t = CpuSeconds();
  if (!b.Start(Role::kB, shape, tag, y, &crypto::DrbgRandom, &rng_b).ok()) return false;
  m->cpu[1] += CpuSeconds() - t;
  std::vector<uint8_t> buffer(shape.max_message_bytes);
  int last_sender = -1;
  bool progress = true;
  while (progress) {
    progress = false;
    for (int p = 0; p < 2; ++p) {
      while (true) {
        t = CpuSeconds();
        const Result<size_t> n = party[p]->NextMessage(buffer);
        m->cpu[p] += CpuSeconds() - t;
        if (!n.ok() || n.value() == 0) break;
        progress = true;
        if (last_sender != p) ++m->flights;
        last_sender = p;
        m->bytes[p] += n.value();
        ++m->messages[p];
        t = CpuSeconds();
        (void)party[1 - p]->OnMessage(ConstByteSpan(buffer.data(), n.value()));
        m->cpu[1 - p] += CpuSeconds() - t;
      }
    }
  }
  if (!a.done() || !b.done()) return false;
  m->correct = m->correct && pair.Correct();
  return true;
}

// --threaded: each party on its own thread (party A's thread is created
// first), messages through in-memory queues, so that a per-thread counter
// (the qemu plugin of compare-insn-count.sh) sees each party apart.
struct Channel {
  std::mutex mutex;
  std::condition_variable ready;
  std::deque<std::vector<uint8_t>> queue;
  bool closed = false;
};

void PartyLoop(ComparisonSession& me, Channel& in, Channel& out, size_t max_message) {
  std::vector<uint8_t> buffer(max_message);
  while (true) {
    while (true) {
      const Result<size_t> n = me.NextMessage(buffer);
      if (!n.ok() || n.value() == 0) break;
      std::lock_guard<std::mutex> lock(out.mutex);
      out.queue.emplace_back(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(n.value()));
      out.ready.notify_one();
    }
    if (me.state() != ComparisonSession::State::kRunning) break;
    std::vector<uint8_t> message;
    {
      std::unique_lock<std::mutex> lock(in.mutex);
      in.ready.wait(lock, [&] { return !in.queue.empty() || in.closed; });
      if (in.queue.empty()) {
        me.Abort(Status::Aborted());
        break;
      }
      message = std::move(in.queue.front());
      in.queue.pop_front();
    }
    (void)me.OnMessage(message);
  }
  std::lock_guard<std::mutex> lock(out.mutex);
  out.closed = true;
  out.ready.notify_one();
}

bool RunThreaded(uint32_t width, uint32_t count, OtMode mode, uint64_t seed) {
  Pair pair(width, count, mode, seed);
  if (!pair.ok) return false;
  Channel to_a, to_b;
  bool started_a = false, started_b = false;
  std::thread ta([&] {
    started_a = pair.a.Start(Role::kA, pair.shape, pair.tag, pair.x, &crypto::DrbgRandom, &pair.rng_a).ok();
    if (started_a) {
      PartyLoop(pair.a, to_a, to_b, pair.shape.max_message_bytes);
    } else {
      std::lock_guard<std::mutex> lock(to_b.mutex);
      to_b.closed = true;
      to_b.ready.notify_one();
    }
  });
  std::thread tb([&] {
    started_b = pair.b.Start(Role::kB, pair.shape, pair.tag, pair.y, &crypto::DrbgRandom, &pair.rng_b).ok();
    if (started_b) {
      PartyLoop(pair.b, to_b, to_a, pair.shape.max_message_bytes);
    } else {
      std::lock_guard<std::mutex> lock(to_a.mutex);
      to_a.closed = true;
      to_a.ready.notify_one();
    }
  });
  ta.join();
  tb.join();
  return pair.Correct();
}

void PrintHelp() {
  std::puts(
      "usage: nodefl-compare-bench [--widths 4,8,16,32] [--batch N] [--repeat R] [--modes base,extension]\n"
      "\n"
      "Runs secure comparisons between two in-process parties and prints, per width,\n"
      "OT mode and batch size (1 and N, default 1000), what each party sends per\n"
      "comparison (bytes, messages), the flights of the run (changes of direction;\n"
      "round trips = flights / 2) and CPU time per comparison for each party.\n"
      "Single comparisons are repeated R times (default 20) and averaged.\n"
      "Every result is checked against the plaintext comparison.\n"
      "\n"
      "  --threaded   run one width, mode and batch (the first of each list; --batch N\n"
      "               or 1 with --single) with each party on its own thread, party A's\n"
      "               created first, and print only whether it succeeded (for per-thread\n"
      "               instruction counts under qemu: tests/bench/compare-insn-count.sh)\n"
      "  --single     with --threaded: a single comparison instead of the batch");
}

std::vector<uint32_t> ParseList(const char* s) {
  std::vector<uint32_t> out;
  std::string item;
  for (const char* p = s;; ++p) {
    if (*p == ',' || *p == '\0') {
      if (!item.empty()) out.push_back(static_cast<uint32_t>(std::strtoul(item.c_str(), nullptr, 10)));
      item.clear();
      if (*p == '\0') break;
    } else {
      item += *p;
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<uint32_t> widths = {4, 8, 16, 32};
  uint32_t batch = 1000, repeat = 20;
  std::vector<OtMode> modes = {OtMode::kBase, OtMode::kExtension};
  bool threaded = false, single = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      PrintHelp();
      return 0;
    }
    if (arg == "--threaded" || arg == "--single") {
      (arg == "--threaded" ? threaded : single) = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "nodefl-compare-bench: %s needs a value (see --help)\n", arg.c_str());
      return 2;
    }
    const char* v = argv[++i];
    if (arg == "--widths") {
      widths = ParseList(v);
    } else if (arg == "--batch") {
      batch = static_cast<uint32_t>(std::strtoul(v, nullptr, 10));
    } else if (arg == "--repeat") {
      repeat = static_cast<uint32_t>(std::strtoul(v, nullptr, 10));
    } else if (arg == "--modes") {
      modes.clear();
      for (const char* m : {"base", "extension"}) {
        if (std::strstr(v, m) != nullptr) modes.push_back(std::strcmp(m, "base") == 0 ? OtMode::kBase : OtMode::kExtension);
      }
    } else {
      std::fprintf(stderr, "nodefl-compare-bench: unknown argument '%s' (see --help)\n", arg.c_str());
      return 2;
    }
  }
  for (uint32_t w : widths) {
    if (w < 1 || w > 32) {
      std::fprintf(stderr, "nodefl-compare-bench: widths are 1..32, not %u\n", w);
      return 2;
    }
  }
  if (batch < 1 || batch > 65535 || repeat < 1 || modes.empty()) {
    std::fprintf(stderr, "nodefl-compare-bench: --batch 1..65535, --repeat >= 1, --modes base and/or extension\n");
    return 2;
  }
  if (threaded) {
    const uint32_t n = single ? 1 : batch;
    const bool ok = RunThreaded(widths[0], n, modes[0], 1000);
    std::printf("threaded run: mode %s, width %u, batch %u: %s\n", modes[0] == OtMode::kBase ? "base" : "extension",
                widths[0], n, ok ? "correct" : "FAILED");
    return ok ? 0 : 1;
  }
  std::printf("%-9s %5s %6s | %10s %10s | %7s %7s | %7s | %11s %11s\n", "mode", "width", "batch", "A bytes/cmp",
              "B bytes/cmp", "A msgs", "B msgs", "flights", "A cpu us/cmp", "B cpu us/cmp");
  int status = 0;
  for (OtMode mode : modes) {
    for (uint32_t w : widths) {
      for (uint32_t n : {1u, batch}) {
        const uint32_t runs = n == 1 ? repeat : 1;
        Measured m;
        bool ok = true;
        for (uint32_t r = 0; r < runs && ok; ++r) ok = Run(w, n, mode, 1000 + r, &m);
        if (!ok || !m.correct) {
          std::printf("%-9s %5u %6u | FAILED\n", mode == OtMode::kBase ? "base" : "extension", w, n);
          status = 1;
          continue;
        }
        const double per = static_cast<double>(runs) * n;
        std::printf("%-9s %5u %6u | %10.1f %10.1f | %7.1f %7.1f | %7.1f | %11.1f %11.1f\n",
                    mode == OtMode::kBase ? "base" : "extension", w, n, m.bytes[0] / per, m.bytes[1] / per,
                    m.messages[0] / static_cast<double>(runs), m.messages[1] / static_cast<double>(runs),
                    m.flights / static_cast<double>(runs), 1e6 * m.cpu[0] / per, 1e6 * m.cpu[1] / per);
        std::fflush(stdout);
      }
    }
  }
  return status;
}
