// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// nodefl-lumos-train-bench: what one Lumos training epoch costs a device
// (docs/benchmarks.md): for trees of several workloads and feature widths,
// the job memory the training role needs (TrainRoleMemory: tree, features,
// workspace, parameters and gradients) and the CPU time of one forward and
// backward pass of its tree (TreeTrainer, float, dropout on), GCN and GAT
// with Lumos's widths. Features are dense here (as the recovered one-bit
// features are); binary features on the own leaves would be cheaper.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "nodefl/lumos/train_role.h"
#include "nodefl/lumos/tree_trainer.h"
#include "nodefl/random/drbg.h"

namespace {

using nodefl::Span;

double PassMicros(const nodefl::gnn::ModelShape& shape, uint32_t workload, int repeats) {
  const nodefl::lumos::TrainerSizing size =
      nodefl::lumos::SizeTrainer(shape, nodefl::gnn::TreeKind::kLumosTree, workload);
  std::vector<uint32_t> rows(size.row_begin), csr(size.csr);
  std::vector<float> scalars(size.scalars);
  nodefl::lumos::TreeTrainer<float> t;
  if (!t.Bind(shape, nodefl::gnn::TreeKind::kLumosTree, workload, Span<uint32_t>(rows), Span<uint32_t>(csr),
              Span<float>(scalars))
           .ok()) {
    return -1;
  }
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  auto h0 = t.features();
  for (Eigen::Index i = 0; i < h0.rows(); ++i) {
    if (t.nodes().IsVirtual(static_cast<uint32_t>(i))) continue;
    for (Eigen::Index f = 0; f < h0.cols(); ++f) h0(i, f) = u(rng);
  }
  std::vector<float> params(t.layout().total), grads(t.layout().total), g(shape.out, 0.01f);
  for (float& p : params) p = 0.1f * u(rng);
  nodefl::Drbg drbg;
  (void)drbg.SeedDeterministic(3);
  const auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < repeats; ++r) {
    (void)t.Forward(Span<const float>(params), true, &nodefl::crypto::DrbgRandom, &drbg);
    t.ClearGradients();
    (void)t.SetOwnLeafGradient(Span<const float>(g));
    for (uint32_t k = 0; k < workload; ++k) (void)t.SetNeighbourLeafGradient(k, Span<const float>(g));
    (void)t.Backward(Span<const float>(params), Span<float>(grads));
  }
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / repeats;
}

// --pass MODEL --features D --workload W --repeats R: only R passes of one
// tree (no table), for instruction counts under an emulator
// (tests/bench/lumos-train-insn-count.sh runs it twice and takes the
// difference, so set-up costs cancel).
int OnePass(int argc, char** argv) {
  int layer = 1;
  uint32_t d = 0, wl = 0;
  int repeats = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const long v = std::strtol(argv[i + 1], nullptr, 10);
    if (flag == "--pass") {
      const std::string m = argv[i + 1];
      if (m != "gcn" && m != "gat") return 2;
      layer = m == "gat" ? 2 : 1;
    } else if (flag == "--features" && v > 0) {
      d = static_cast<uint32_t>(v);
    } else if (flag == "--workload" && v > 0) {
      wl = static_cast<uint32_t>(v);
    } else if (flag == "--repeats" && v > 0) {
      repeats = static_cast<int>(v);
    } else {
      std::fprintf(stderr, "nodefl-lumos-train-bench: bad argument '%s %s' (see --help)\n", argv[i], argv[i + 1]);
      return 2;
    }
  }
  if (d == 0 || wl == 0 || argc % 2 == 0) {
    std::fprintf(stderr, "nodefl-lumos-train-bench: --pass needs --features D and --workload W (see --help)\n");
    return 2;
  }
  nodefl::gnn::ModelShape shape;
  shape.layer = layer == 2 ? nodefl::gnn::LayerKind::kGat : nodefl::gnn::LayerKind::kGcn;
  shape.features = d;
  shape.classes = 7;
  const double us = PassMicros(shape, wl, repeats);
  if (us < 0) return 1;
  std::printf("passes %d model %s features %u workload %u\n", repeats, layer == 2 ? "gat" : "gcn", d, wl);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--pass") == 0) return OnePass(argc, argv);
  if (argc > 1) {
    std::printf("usage: nodefl-lumos-train-bench\n"
                "       nodefl-lumos-train-bench --pass gcn|gat --features D --workload W [--repeats R]\n"
                "Prints, per model, feature width and workload, the training role's job memory and\n"
                "the CPU time of one forward and backward pass of the device's tree. With --pass it\n"
                "only runs R passes of one tree (for instruction counts under an emulator).\n");
    return std::strcmp(argv[1], "--help") == 0 ? 0 : 2;
  }
  std::printf("%-5s %9s %9s %11s %14s %16s\n", "model", "features", "workload", "tree nodes", "job memory KiB",
              "fwd+bwd us/epoch");
  for (int layer : {1, 2}) {
    for (uint32_t d : {1433u, 4714u}) {
      for (uint32_t wl : {1u, 4u, 16u, 37u, 64u}) {
        nodefl::lumos::TrainParameters p;
        p.layer = static_cast<uint8_t>(layer);
        p.features = d;
        p.classes = 7;
        nodefl::gnn::ModelShape shape;
        shape.layer = layer == 2 ? nodefl::gnn::LayerKind::kGat : nodefl::gnn::LayerKind::kGcn;
        shape.features = d;
        shape.classes = 7;
        const size_t memory = nodefl::lumos::TrainRoleMemory(p, wl, wl);
        const int repeats = wl >= 37 ? 3 : 10;
        std::printf("%-5s %9u %9u %11u %14.1f %16.0f\n", layer == 2 ? "gat" : "gcn", d, wl, 3 * wl + 1,
                    static_cast<double>(memory) / 1024.0, PassMicros(shape, wl, repeats));
      }
    }
  }
  return 0;
}
