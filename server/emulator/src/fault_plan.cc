// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/emulator/fault_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>

namespace nodefl::emulator {
namespace {

using std::chrono::milliseconds;

// A whole number of ms or s, at most a day.
std::optional<milliseconds> ParseDelay(std::string_view text) {
  uint64_t scale = 0;
  if (text.size() > 2 && text.substr(text.size() - 2) == "ms") {
    scale = 1;
    text.remove_suffix(2);
  } else if (text.size() > 1 && text.back() == 's') {
    scale = 1000;
    text.remove_suffix(1);
  } else {
    return std::nullopt;
  }
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
    if (v > 86400000) return std::nullopt;
  }
  if (v * scale > 86400000) return std::nullopt;
  return milliseconds(v * scale);
}

// A number in [0, 1].
std::optional<double> ParseFraction(std::string_view text) {
  if (text.empty() || text.size() > 32) return std::nullopt;
  const std::string s(text);
  char* end = nullptr;
  const double x = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !(x >= 0.0 && x <= 1.0)) return std::nullopt;
  return x;
}

std::optional<uint64_t> ParseWholeNumber(std::string_view text) {
  if (text.empty() || text.size() > 19) return std::nullopt;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

std::optional<FaultPhase> ParsePhase(std::string_view text) {
  for (const FaultPhaseName& p : kFaultPhases) {
    if (text == p.name) return p.phase;
  }
  return std::nullopt;
}

std::string PhaseList() {
  std::string out;
  for (const FaultPhaseName& p : kFaultPhases) {
    if (!out.empty()) out += ", ";
    out += p.name;
  }
  return out;
}

uint64_t SplitMix(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::string FormatFraction(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

}  // namespace

const char* FaultPhaseText(FaultPhase phase) {
  for (const FaultPhaseName& p : kFaultPhases) {
    if (p.phase == phase) return p.name;
  }
  return "connect";
}

bool FaultPlan::any() const { return kill_fraction > 0 || slow_fraction > 0 || wire_faults(); }

std::string FaultPlan::Describe() const {
  if (!any()) return "none";
  std::string out;
  const auto add = [&out](const std::string& item) {
    if (!out.empty()) out += ", ";
    out += item;
  };
  if (kill_fraction > 0) {
    std::string item = "kill " + FormatFraction(kill_fraction) + " of the devices ";
    item += kill_phase == FaultPhase::kNone ? std::to_string(kill_delay.count()) + "ms after connecting"
                                            : std::string("at phase ") + FaultPhaseText(kill_phase) + " + " +
                                                  std::to_string(kill_delay.count()) + "ms";
    item += revive_after ? ", revived after " + std::to_string(revive_after->count()) + "ms" : ", for good";
    add(item);
  }
  if (slow_fraction > 0) {
    add("slow " + FormatFraction(slow_fraction) + " of the devices by " + std::to_string(slow_delay.count()) +
        "ms per read");
  }
  if (drop_probability > 0) add("drop " + FormatFraction(drop_probability) + " per write or read");
  if (corrupt_probability > 0) add("corrupt " + FormatFraction(corrupt_probability) + " per write or read");
  if (cut_probability > 0) add("cut " + FormatFraction(cut_probability) + " per write or read");
  add("seed " + std::to_string(seed));
  return out;
}

std::optional<std::string> ParseFaultPlan(std::string_view spec, FaultPlan* plan) {
  FaultPlan p;
  bool revive_given = false;
  if (spec.empty()) return std::string("the fault spec is empty");
  while (!spec.empty()) {
    const size_t comma = spec.find(',');
    const std::string_view item = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view() : spec.substr(comma + 1);
    if (comma != std::string_view::npos && spec.empty()) return std::string("the fault spec ends with a comma");
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      return "fault item '" + std::string(item) + "' is not KEY=VALUE";
    }
    const std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
    const std::string bad = "fault item '" + std::string(item) + "': ";
    if (key == "kill") {
      const size_t at = value.find('@');
      const auto f = ParseFraction(value.substr(0, at));
      if (!f || at == std::string_view::npos) {
        return bad + "expected kill=F@PHASE[+DELAY] or kill=F@DELAY with F in [0, 1]";
      }
      p.kill_fraction = *f;
      const std::string_view when = value.substr(at + 1);
      if (const auto delay = ParseDelay(when)) {
        p.kill_phase = FaultPhase::kNone;
        p.kill_delay = *delay;
      } else {
        const size_t plus = when.find('+');
        const auto phase = ParsePhase(when.substr(0, plus));
        if (!phase) return bad + "the phase is one of " + PhaseList() + ", or give a delay (500ms, 3s)";
        p.kill_phase = *phase;
        p.kill_delay = milliseconds(0);
        if (plus != std::string_view::npos) {
          const auto after = ParseDelay(when.substr(plus + 1));
          if (!after) return bad + "the delay after the phase is a whole number of ms or s (500ms, 3s)";
          p.kill_delay = *after;
        }
      }
    } else if (key == "revive") {
      const auto d = ParseDelay(value);
      if (!d) return bad + "expected revive=DELAY (500ms, 3s)";
      p.revive_after = *d;
      revive_given = true;
    } else if (key == "slow") {
      const size_t colon = value.find(':');
      const auto f = ParseFraction(value.substr(0, colon));
      const auto d = colon == std::string_view::npos ? std::nullopt : ParseDelay(value.substr(colon + 1));
      if (!f || !d) return bad + "expected slow=F:DELAY with F in [0, 1] (e.g. slow=0.1:20ms)";
      p.slow_fraction = *f;
      p.slow_delay = *d;
    } else if (key == "drop" || key == "corrupt" || key == "cut") {
      const auto f = ParseFraction(value);
      if (!f) return bad + "expected a probability in [0, 1]";
      (key == "drop" ? p.drop_probability : key == "corrupt" ? p.corrupt_probability : p.cut_probability) = *f;
    } else if (key == "seed") {
      const auto s = ParseWholeNumber(value);
      if (!s) return bad + "expected a whole number";
      p.seed = *s;
    } else {
      return bad + "unknown key (kill, revive, slow, drop, corrupt, cut, seed)";
    }
  }
  if (revive_given && p.kill_fraction == 0) return std::string("revive= needs a kill= item");
  if (p.drop_probability + p.corrupt_probability + p.cut_probability > 1.0) {
    return std::string("drop + corrupt + cut must not exceed 1");
  }
  *plan = p;
  return std::nullopt;
}

std::vector<DeviceFaults> AssignFaults(const FaultPlan& plan, uint32_t n) {
  std::vector<DeviceFaults> out(n);
  uint64_t state = plan.seed;
  for (DeviceFaults& d : out) d.wire_seed = SplitMix(state);
  // A seeded Fisher-Yates shuffle of the ids: the first ones are killed,
  // the next ones slowed.
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  for (uint32_t i = n; i > 1; --i) {
    const uint32_t j = static_cast<uint32_t>(SplitMix(state) % i);
    std::swap(order[i - 1], order[j]);
  }
  const auto count = [n](double f) { return std::min<uint32_t>(n, static_cast<uint32_t>(std::lround(f * n))); };
  const uint32_t killed = count(plan.kill_fraction);
  const uint32_t slowed = std::min(n - killed, count(plan.slow_fraction));
  for (uint32_t i = 0; i < killed; ++i) out[order[i]].kill = true;
  for (uint32_t i = killed; i < killed + slowed; ++i) out[order[i]].slow = true;
  return out;
}

uint64_t WireDice::Next() { return SplitMix(state_); }

WireFault DrawWireFault(const FaultPlan& plan, WireDice& dice) {
  if (!plan.wire_faults()) return WireFault::kNone;
  const double u = dice.Uniform();
  if (u < plan.cut_probability) return WireFault::kCut;
  if (u < plan.cut_probability + plan.drop_probability) return WireFault::kDrop;
  if (u < plan.cut_probability + plan.drop_probability + plan.corrupt_probability) return WireFault::kCorrupt;
  return WireFault::kNone;
}

}  // namespace nodefl::emulator
