// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Every job's record decoders (the payload formats of protocol/<job>/*.h,
// what arrives in job_start.parameters, job_data and sealed peer messages)
// on any bytes: byte 0 picks the decoder, the rest is the record. Whatever
// decodes is read through the format's accessors, so a view that promised
// more than the bytes hold shows up under ASan.
#include <cstddef>
#include <cstdint>

#include "nodefl/protocol/compare/job_format.h"
#include "nodefl/protocol/echo/job_format.h"
#include "nodefl/protocol/fedwalk/hct_format.h"
#include "nodefl/protocol/fedwalk/histogram_format.h"
#include "nodefl/protocol/fedwalk/walk_format.h"
#include "nodefl/protocol/kcagc/job_format.h"
#include "nodefl/protocol/lumos/mcmc_format.h"
#include "nodefl/protocol/lumos/train_format.h"
#include "nodefl/protocol/lumos/trim_format.h"
#include "nodefl/protocol/secagg/aggregation_format.h"
#include "nodefl/protocol/secagg/job_format.h"

namespace {

using nodefl::ConstByteSpan;

// Touches a decoded value, so that the decoder's result is not optimised
// away and every byte of it is read (uninitialised or out-of-bounds reads
// then show).
template <typename T>
void Use(const nodefl::Result<T>& r) {
  if (!r.ok()) return;
  volatile uint8_t sink = 0;
  const auto* bytes = reinterpret_cast<const volatile uint8_t*>(&r.value());
  for (size_t i = 0; i < sizeof(T); ++i) sink = sink ^ bytes[i];
  (void)sink;
}

void WalkRecords(ConstByteSpan b) {
  namespace fw = nodefl::fedwalk;
  const nodefl::Result<uint32_t> starts = fw::DecodeStartWalks(b);
  if (starts.ok()) {
    for (uint32_t i = 0; i < *starts; ++i) {
      const fw::StartWalk w = fw::StartWalkAt(b, i);
      (void)w;
    }
  }
  Use(fw::DecodeDroppedStarts(b));
  Use(fw::DecodeWalkResult(b));
  Use(fw::DecodeWalkMessage(b));
}

void AggregationRecords(ConstByteSpan b, uint8_t selector) {
  namespace sa = nodefl::secagg;
  Use(sa::DecodeAggStart(b));
  Use(sa::DecodeAggRun(b));
  Use(sa::DecodeAggKey(b, selector));  // any peer count 0..255
  Use(sa::DecodeAggAbort(b));
  Use(sa::DecodeAggPeerMessage(b));
  const nodefl::Result<sa::AggSharesView> shares = sa::DecodeAggShares(b);
  if (shares.ok()) {
    for (uint16_t i = 0; i < shares->count; ++i) Use(sa::RevealedShareAt(*shares, i));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t selector = data[0];
  const ConstByteSpan b(data + 1, size - 1);
  switch (selector % 12) {
    case 0: {
      Use(nodefl::echo::DecodeEchoParameters(b));
      const nodefl::Result<uint32_t> gone = nodefl::echo::DecodeEchoPeersGone(b);
      if (gone.ok()) {
        for (uint32_t i = 0; i < *gone; ++i) (void)nodefl::echo::EchoPeersGoneAt(b, i);
      }
      break;
    }
    case 1:
      Use(nodefl::compare::DecodeCompareParameters(b));
      Use(nodefl::compare::DecodeSessionStart(b));
      Use(nodefl::compare::DecodeSessionResult(b));
      break;
    case 2:
      Use(nodefl::fedwalk::DecodeHctParameters(b));
      Use(nodefl::fedwalk::DecodeHistogramParameters(b));
      Use(nodefl::fedwalk::DecodeWalkParameters(b));
      break;
    case 3:
      WalkRecords(b);
      break;
    case 4:
      Use(nodefl::kcagc::DecodeKcagcParameters(b));
      Use(nodefl::kcagc::DecodeKcagcWelcome(b));
      Use(nodefl::kcagc::DecodeKcagcReady(b));
      break;
    case 5:
      Use(nodefl::kcagc::DecodeKcagcArrayRun(b));
      Use(nodefl::kcagc::DecodeKcagcContribute(b));
      Use(nodefl::kcagc::DecodeKcagcStage(b));
      Use(nodefl::kcagc::DecodeKcagcSpectralStep(b));
      Use(nodefl::kcagc::DecodeKcagcWord(b));
      Use(nodefl::kcagc::DecodeKcagcRefuse(b));
      break;
    case 6:
      Use(nodefl::lumos::DecodeMcmcParameters(b));
      Use(nodefl::lumos::DecodeMcmcSessionStart(b));
      Use(nodefl::lumos::DecodeMcmcMoveDone(b));
      Use(nodefl::lumos::DecodeMcmcSummary(b));
      Use(nodefl::lumos::DecodeMcmcLeafMessage(b));
      break;
    case 7:
      Use(nodefl::lumos::DecodeTrainParameters(b));
      Use(nodefl::lumos::DecodeTrainMetrics(b));
      Use(nodefl::lumos::DecodeTrainSummary(b));
      if (const auto gone = nodefl::lumos::DecodeTrainPeersGone(b); gone.ok()) {
        for (uint32_t i = 0; i < gone->count; ++i) (void)nodefl::lumos::TrainPeersGoneAt(b, i);
      }
      break;
    case 8:
      Use(nodefl::lumos::DecodeTrimParameters(b));
      Use(nodefl::lumos::DecodeTrimMessage(b));
      Use(nodefl::lumos::DecodeTrimStepOutcome(b));
      Use(nodefl::lumos::DecodeTrimSummary(b));
      break;
    case 9:
      AggregationRecords(b, static_cast<uint8_t>(selector / 12));
      break;
    case 10:
      Use(nodefl::secagg::DecodeSecureAggregateParameters(b));
      break;
    default:
      WalkRecords(b);
      AggregationRecords(b, 0);
      break;
  }
  return 0;
}
