// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// RunWalkStep: one device's part of a FedWalk walk (walk_format.h, "Walk
// semantics"; seed Sec. 4.3, Alg. 1 "Device operation"), as a pure
// function of the walk, the device's HCT-job knowledge and a DRBG. No I/O,
// no keys: the walk role (walk_role.h) decides how the walk travels on.
//
// Draw order (fixed, so a replica with the same DRBG stream reproduces a
// step): [Enc(w) if kSelfEncodeFirst], neighbour index, Enc(u),
// [predictor coin if remaining > 2], [pool index if the coin came up and
// the pool is not empty]. The pool is the predictor's candidates:
//   kTree        NearestInBins (tree_index.h): the vertices nearest u in
//                the HCT, round(max(c_u[i], 0)) from each bin i;
//   kNeighbours  the device's walk neighbours other than u (id order) in
//                bins where that quota is not 0; all of them if none is.
// An empty pool (kTree without a tree or with u outside it; kNeighbours
// on a device whose only walk neighbour is u) means no jump: the walk
// goes on to u. Every Enc() is SampleCodebookRow on a codebook
// row (own row for Enc(w), u's row for Enc(u)) and is counted in
// WalkStepResult::encodings: each is one ε release the caller must record
// before the walk leaves the device.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/result.h"
#include "nodefl/core/span.h"
#include "nodefl/fedwalk/codebook_sampling.h"
#include "nodefl/protocol/fedwalk/hct_format.h"
#include "nodefl/fedwalk/hct_storage.h"
#include "nodefl/fedwalk/tree_index.h"
#include "nodefl/protocol/fedwalk/walk_format.h"
#include "nodefl/random/drbg.h"

namespace nodefl::fedwalk {

// What a device knows, all of it from the HCT job (FedWalkHctRole once
// finished()).
struct WalkStepContext {
  uint32_t own_id = 0;
  // The neighbour records and the pool their codebook rows live in
  // (HctNeighbour::codebook_offset/count). Only neighbours with a codebook
  // row take part in walks (CountWalkNeighbours).
  Span<const HctNeighbour> neighbours;
  Span<const CodebookEntry> codebook_pool;
  uint32_t walk_neighbours = 0;  // CountWalkNeighbours(neighbours)
  // The device's own codebook row, for kSelfEncodeFirst (may be empty).
  Span<const CodebookEntry> own_row;
  // The 2-hop predictor's inputs. No predictor (step 5 always) if `tree`
  // is null or empty or bin_sizes is empty. bin_sizes: one entry per bin
  // (CountLeavesPerBin); a neighbour's dictionary row holds as many values.
  const TreeIndex* tree = nullptr;
  ConstByteSpan bin_plan;
  Span<const uint32_t> bin_sizes;
  double p = 0.0;
  // Where a jump goes. kTree needs the tree, bin_plan and bin_sizes;
  // kNeighbours uses bin_plan and bin_sizes when given (without them every
  // other neighbour is a candidate).
  JumpPredictor predictor = JumpPredictor::kTree;
};

uint32_t CountWalkNeighbours(Span<const HctNeighbour> neighbours);

enum class WalkHop : uint8_t {
  kNeighbour,  // forward to the neighbour u (remaining - 1)
  kPredicted,  // forward to the predicted u' (remaining - 2, kSelfEncodeFirst)
  kServer,     // the walk ends here: send it to the server with `outcome`
};

struct WalkStepResult {
  WalkHop hop = WalkHop::kServer;
  uint32_t destination = 0;                      // device id for kNeighbour/kPredicted
  WalkOutcome outcome = WalkOutcome::kComplete;  // for kServer
  uint32_t encodings = 0;                        // Enc() draws made in this step
  bool predictor_triggered = false;              // the coin came up (the pool may have been empty)
  uint32_t pool_size = 0;                        // the pool built, if any
};

// Runs the step on `walk` whose walk->count ids are in `ids` (4 bytes each,
// little-endian, as in a walk message; ids.size() / 4 is the capacity).
// On success the new entries are appended and *walk updated: count grows
// by the encodings; for a forward, remaining drops by 1 or 2, hops grows
// by 1 (the message about to be sent) and kSelfEncodeFirst is set for
// kPredicted only; a complete walk has remaining 0. A walk that cannot be
// carried on is returned unchanged with kServer/kDropped (kSelfEncodeFirst
// without an own codebook row) or, after the own entry, kServer/kDeadEnd
// (no walk neighbours).
// Errors leave *walk unchanged (bytes beyond count may be overwritten):
// kInvalidArgument for a header failing CheckWalkHeader or a capacity
// below WalkLength(*walk); a DRBG failure; kDataLoss for a corrupt row.
// `pool`: scratch for the predictor's pool (its capacity bounds the pool,
// see NearestInBins).
Result<WalkStepResult> RunWalkStep(const WalkStepContext& context, WalkHeader* walk, ByteSpan ids,
                                   Drbg& rng, Span<uint32_t> pool);

}  // namespace nodefl::fedwalk
