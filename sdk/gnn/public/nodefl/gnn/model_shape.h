// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The shape of the GNN a device runs on its tree (model.h) and where each
// parameter block sits in the one flat parameter vector. Apart from
// model.h so that code that only sizes, lays out or exchanges parameters
// (a server's training job, its configuration) does not parse Eigen.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nodefl/core/result.h"

namespace nodefl::gnn {

enum class LayerKind : uint8_t { kGcn = 1, kGat = 2 };

struct ModelShape {
  LayerKind layer = LayerKind::kGcn;
  uint32_t features = 0;
  uint32_t hidden = 16;
  uint32_t out = 16;
  uint32_t heads = 4;    // GAT: hidden and out divide by it (each head has hidden/heads columns, concatenated)
  uint32_t classes = 0;  // supervised: the classifier's outputs; 0: none (link prediction)
  float dropout = 0.01f;
  float leaky_slope = 0.2f;  // GAT's LeakyReLU
};

struct ParamBlock {
  size_t offset = 0;
  uint32_t rows = 0;
  uint32_t cols = 0;
  size_t size() const { return size_t{rows} * cols; }
};

struct ParamLayout {
  ParamBlock w[2], att_src[2], att_dst[2], b[2];  // att_*: GAT only (empty for GCN)
  ParamBlock classifier_w, classifier_b;          // classes > 0 only
  size_t total = 0;
};

// kInvalidArgument for a zero dimension, heads not dividing hidden and out
// (GAT), a dropout rate outside [0, 1) or more than 2^24 parameters.
Result<ParamLayout> LayoutOf(const ModelShape& shape);

// Scalars of workspace GnnModel needs for a graph of this size.
size_t WorkspaceScalars(const ModelShape& shape, uint32_t nodes, uint32_t csr_entries);

}  // namespace nodefl::gnn
