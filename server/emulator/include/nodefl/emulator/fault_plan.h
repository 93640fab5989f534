// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// FaultPlan: the failures nodefl-emulate injects into a fleet (--faults
// SPEC), so that every job is measured on runs where devices die, come
// back, run slowly and lose or garble bytes on the wire. Seeded: the same
// SPEC on the same fleet picks the same devices and draws the same wire
// faults per device (the timing of a run still varies).
//
// SPEC is a comma-separated list of KEY=VALUE items:
//   kill=F@PHASE[+DELAY]  kill round(F n) devices when each reaches PHASE
//                         (below), DELAY after it (default 0). A killed
//                         device's connection is cut without a Goodbye and
//                         it says nothing more: to the server it is gone.
//   kill=F@DELAY          ... DELAY after the device first connected.
//   revive=DELAY          killed devices come back DELAY after their death
//                         and resume their session with their token (an
//                         app the OS suspended; its memory survived).
//                         Without it they stay dead.
//   slow=F:DELAY          round(F n) devices (chosen apart from the killed
//                         ones) wait DELAY after every read from the socket
//                         before the next one, as a slow board would.
//   drop=P                per write (and per read), with probability P the
//                         bytes are lost on the wire: the TLS stream breaks
//                         and the connection ends at the next record.
//   corrupt=P             ... one byte of them is flipped (TLS refuses the
//                         record: the connection ends).
//   cut=P                 ... the connection is cut instead, abruptly.
//   seed=S                the choice of devices and the wire draws (default 1).
// DELAY is a whole number with unit ms or s ("500ms", "3s"). PHASE is one
// of the names in kFaultPhases: the first sign on the device that it is
// working on that stage of its job.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nodefl::emulator {

// The stages a kill can be tied to, as a device observes them.
enum class FaultPhase : uint8_t {
  kNone,       // kill by time since the first connection
  kEcho,       // neighbour-echo: sealed its first message
  kEchoKeys,   // neighbour-echo: reported its keys (round 1), before sending any
  kTree,       // FedWalk HCT: reported its first round
  kWalks,      // FedWalk walks: started, forwarded or ended a walk
  kHistograms, // strict FedWalk: released its first histogram
  kCompare,    // secure comparison: sent its first comparison message
  kTrim,       // Lumos trimming (exact or MCMC): sent its first message
  kTrain,      // Lumos training: uploaded its first epoch
  kAggregate,  // secure aggregation: sealed its first peer message
};

struct FaultPhaseName {
  FaultPhase phase;
  const char* name;
};
inline constexpr FaultPhaseName kFaultPhases[] = {
    {FaultPhase::kEcho, "echo"},           {FaultPhase::kEchoKeys, "echo-keys"},
    {FaultPhase::kTree, "tree"},
    {FaultPhase::kWalks, "walks"},         {FaultPhase::kHistograms, "histograms"},
    {FaultPhase::kCompare, "compare"},     {FaultPhase::kTrim, "trim"},
    {FaultPhase::kTrain, "train"},         {FaultPhase::kAggregate, "aggregate"},
};
const char* FaultPhaseText(FaultPhase phase);

struct FaultPlan {
  double kill_fraction = 0;
  FaultPhase kill_phase = FaultPhase::kNone;
  std::chrono::milliseconds kill_delay{0};
  std::optional<std::chrono::milliseconds> revive_after;
  double slow_fraction = 0;
  std::chrono::milliseconds slow_delay{0};
  double drop_probability = 0;
  double corrupt_probability = 0;
  double cut_probability = 0;
  uint64_t seed = 1;

  bool any() const;
  bool wire_faults() const { return drop_probability + corrupt_probability + cut_probability > 0; }
  // One line for the summary, e.g. "kill 0.1@walks+0ms, revive after 2000ms, seed 1".
  std::string Describe() const;
};

// Parses SPEC into *plan; on error returns why (and leaves *plan as it was).
std::optional<std::string> ParseFaultPlan(std::string_view spec, FaultPlan* plan);

// What the plan does to one device.
struct DeviceFaults {
  bool kill = false;
  bool slow = false;
  uint64_t wire_seed = 0;  // the device's own stream of wire draws
};

// The plan applied to devices 0..n-1: exactly round(kill_fraction n)
// killed and round(slow_fraction n) slowed among the rest, chosen by seed.
std::vector<DeviceFaults> AssignFaults(const FaultPlan& plan, uint32_t n);

// A device's wire draws: a small seeded generator (SplitMix64), one per
// device, used on its strand only.
class WireDice {
 public:
  explicit WireDice(uint64_t seed) : state_(seed) {}
  uint64_t Next();
  // Uniform in [0, 1).
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_;
};

// What happens to one batch of bytes on the wire.
enum class WireFault : uint8_t { kNone, kDrop, kCorrupt, kCut };
WireFault DrawWireFault(const FaultPlan& plan, WireDice& dice);

}  // namespace nodefl::emulator
