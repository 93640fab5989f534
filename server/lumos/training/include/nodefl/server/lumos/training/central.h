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
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "nodefl/gnn/model.h"
#include "nodefl/host/dataset/graph_dataset.h"
#include "nodefl/server/lumos/training/adam.h"
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

}  // namespace nodefl::server::lumos
