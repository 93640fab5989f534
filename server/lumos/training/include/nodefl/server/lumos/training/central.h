// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The centralized baselines of Lumos Sec. VIII (GCN and GAT on the whole
// graph with raw features): the same layer code the devices run
// (sdk/gnn's GnnModel on the whole graph instead of a tree), the same
// hyper-parameters (2 layers, 16 hidden and output, 4 GAT heads, dropout
// 0.01, Adam at 0.01) and the same seeded split, so the federated runs are
// compared with the model, not with another implementation.
//
// Node classification: the classifier (Eq. 32) on every node's embedding,
// the mean softmax cross-entropy over the training nodes; accuracy per
// split each epoch; the test accuracy reported is the one at the best
// validation accuracy.
//
// Link prediction (Sec. VI-C, VIII-A): the edges split 80/5/15 by
// EdgeSplitOf(edge_seed, u, v), the rule the devices apply; message passing
// over the training edges only, raw features, no classifier (classes 0).
// Every node u takes Eq. 33's loss (sign fixed, gnn/losses.h) over its
// training-edge neighbours (positives) and its training partners that are
// not neighbours (negatives), the partners drawn by LinkPartners over all
// node ids (link_task.h): the pairing the federated job draws when the node
// ids are the participants and the partner seed is the job's split seed.
// So every training edge and every training pair counts from both ends, as
// two devices count it; the loss is the sum divided by the number of terms.
// Each epoch (without dropout) the validation and test edges and the
// evaluation partners that are not edges (each pair once) are scored
// (ScoreBin of h_u . h_v) and ranked by BinnedAuc; the test AUC reported is
// the one at the best validation AUC.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "nodefl/core/result.h"
#include "nodefl/core/span.h"
#include "nodefl/gnn/model_shape.h"
#include "nodefl/host/dataset/graph_dataset.h"
#include "nodefl/server/lumos/training/adam.h"
#include "nodefl/server/lumos/training/link_task.h"
#include "nodefl/server/lumos/training/splits.h"

namespace nodefl::server::lumos {

struct CentralOptions {
  gnn::ModelShape shape;  // features and classes are taken from the dataset
  uint32_t epochs = 300;  // Lumos Sec. VIII-A
  uint64_t seed = 1;      // parameters' initialisation and dropout
  AdamOptions adam;
};

struct EpochMetrics {
  uint32_t epoch = 0;
  double loss = 0;                      // mean training loss
  double accuracy[kSplits] = {0, 0, 0};  // per split
  double seconds = 0;
};

struct CentralResult {
  std::vector<EpochMetrics> epochs;
  uint32_t best_epoch = 0;          // highest validation accuracy (the first on a tie)
  double best_validation = 0;
  double test_at_best = 0;
  double seconds = 0;
  size_t parameters = 0;
  std::string error;  // set when nothing was trained
};

// Glorot-uniform weights and zero biases for `layout`, from `seed`.
std::vector<float> InitialParameters(const gnn::ParamLayout& layout, uint64_t seed);

// kErrors as text: no features, no labels, a node with several labels.
CentralResult TrainCentralNodeClassifier(const dataset::Graph& graph, const std::vector<Split>& split,
                                         const CentralOptions& options,
                                         const std::function<void(const EpochMetrics&)>& progress = {});

struct LinkOptions {
  uint64_t edge_seed = 1;       // EdgeSplitOf's seed (the job's lumos_edge_seed)
  uint32_t negatives = 4;       // training matchings of LinkPartners (per node at most)
  uint32_t eval_negatives = 2;  // evaluation matchings
  uint64_t partner_seed = 1;    // LinkPartners' seed (the job draws with its split seed)
};

// The link task over a whole graph: what TrainCentralLinkPredictor trains
// and scores on.
struct LinkGraph {
  uint32_t nodes = 0;
  uint32_t features = 0;
  std::vector<float> h0;  // nodes x features, the raw (binary) features
  // CSR of the training edges: message passing and the positives.
  std::vector<uint32_t> row_begin, neighbours;
  // CSR of each node's training partners that are not neighbours (over any
  // split): the negatives.
  std::vector<uint32_t> negative_begin, negatives;
  // Scored every epoch, each pair once (lower id first).
  std::vector<std::pair<uint32_t, uint32_t>> validation, test, eval_negatives;
  // Loss terms per epoch: every positive and negative from both ends.
  uint64_t terms() const { return neighbours.size() + negatives.size(); }
};

// "" or what is wrong (no features, no training edge).
std::string BuildLinkGraph(const dataset::Graph& graph, const LinkOptions& options, LinkGraph* out);

// The mean link loss at `params` without dropout, its gradient added into
// `grads` (both LayoutOf(shape) with the graph's features and classes 0):
// TrainCentralLinkPredictor's objective, exposed for a finite-difference
// check in double precision. kInvalidArgument for a bad shape or sizes or
// a graph without loss terms.
template <typename S>
[[nodiscard]] Result<S> CentralLinkLoss(const gnn::ModelShape& shape, const LinkGraph& graph, Span<const S> params,
                                        Span<S> grads);

struct LinkEpochMetrics {
  uint32_t epoch = 0;
  double loss = 0;  // the training loss, per term
  uint64_t terms = 0;
  double validation_auc = 0;  // NaN without validation edges or evaluation negatives
  double test_auc = 0;
  double seconds = 0;
};

struct CentralLinkResult {
  std::vector<LinkEpochMetrics> epochs;
  uint32_t best_epoch = 0;  // highest validation AUC (the first on a tie)
  double best_validation = 0;
  double test_at_best = 0;
  uint64_t edges[kSplits] = {0, 0, 0};  // training, validation and test edges
  uint64_t negatives = 0;               // training negatives, counted at both ends
  uint64_t eval_negatives = 0;          // evaluation pairs scored
  double seconds = 0;
  size_t parameters = 0;
  std::string error;  // set when nothing was trained
};

// options.shape.classes is ignored (no classifier).
CentralLinkResult TrainCentralLinkPredictor(const dataset::Graph& graph, const CentralOptions& options,
                                            const LinkOptions& link,
                                            const std::function<void(const LinkEpochMetrics&)>& progress = {});

}  // namespace nodefl::server::lumos
