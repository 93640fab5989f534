// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// nodefl_gnn never allocates: a full forward and backward pass of both
// models on a Lumos tree (workload 50, dropout on, float as on a device)
// under the heap counter, which sees every malloc and operator new of the
// process, Eigen's included. Built a second time against a copy of the
// library compiled with EIGEN_RUNTIME_NO_MALLOC and assertions on
// (nodefl_gnn_eigen_checked_test): there Eigen itself aborts on any
// allocation it would make.
#include <gtest/gtest.h>

#include <vector>

#include "heap_counter.h"
#include "nodefl/gnn/model.h"
#include "nodefl/random/drbg.h"

#ifdef EIGEN_RUNTIME_NO_MALLOC
#define NODEFL_EIGEN_MALLOC_FORBIDDEN() Eigen::internal::set_is_malloc_allowed(false)
#define NODEFL_EIGEN_MALLOC_ALLOWED() Eigen::internal::set_is_malloc_allowed(true)
#else
#define NODEFL_EIGEN_MALLOC_FORBIDDEN() (void)0
#define NODEFL_EIGEN_MALLOC_ALLOWED() (void)0
#endif

namespace nodefl::gnn {
namespace {

void RunWithoutHeap(LayerKind kind) {
  ModelShape shape;
  shape.layer = kind;
  shape.features = 64;
  shape.classes = 4;
  constexpr uint32_t kWorkload = 50;
  const TreeSize size = SizeOfTree(TreeKind::kLumosTree, kWorkload);
  std::vector<uint32_t> rows(size.nodes + 1), cols(size.csr_entries);
  Result<ParamLayout> layout = LayoutOf(shape);
  ASSERT_TRUE(layout.ok());
  std::vector<float> params(layout->total, 0.05f), grads(layout->total, 0.0f);
  std::vector<float> h0(size_t{size.nodes} * shape.features, 0.5f), d_out(size_t{size.nodes} * shape.out, 0.01f);
  std::vector<float> workspace(WorkspaceScalars(shape, size.nodes, size.csr_entries));
  for (size_t i = 0; i < params.size(); ++i) params[i] = 0.01f * static_cast<float>(i % 17) - 0.08f;
  Drbg drbg;
  ASSERT_TRUE(drbg.SeedDeterministic(5).ok());
  GnnModel<float> model;
  Status built, bound, forward, backward;
  NODEFL_EIGEN_MALLOC_FORBIDDEN();
  NODEFL_EXPECT_NO_HEAP({
    Result<GraphView> g = BuildTree(TreeKind::kLumosTree, kWorkload, Span<uint32_t>(rows), Span<uint32_t>(cols));
    built = g.status();
    if (g.ok()) {
      bound = model.Bind(shape, *g, Span<float>(workspace));
      forward = model.Forward(Span<const float>(params),
                              ConstMatrixMap<float>(h0.data(), size.nodes, shape.features), true,
                              &crypto::DrbgRandom, &drbg);
      backward = model.Backward(Span<const float>(params),
                                ConstMatrixMap<float>(h0.data(), size.nodes, shape.features),
                                ConstMatrixMap<float>(d_out.data(), size.nodes, shape.out), Span<float>(grads));
    }
  });
  NODEFL_EIGEN_MALLOC_ALLOWED();
  EXPECT_TRUE(built.ok());
  EXPECT_TRUE(bound.ok());
  EXPECT_TRUE(forward.ok());
  EXPECT_TRUE(backward.ok());
  // The pass did real work: some gradient is non-zero.
  bool any = false;
  for (float g : grads) any = any || g != 0.0f;
  EXPECT_TRUE(any);
}

TEST(GnnNoHeapTest, GcnForwardAndBackwardAllocateNothing) { RunWithoutHeap(LayerKind::kGcn); }
TEST(GnnNoHeapTest, GatForwardAndBackwardAllocateNothing) { RunWithoutHeap(LayerKind::kGat); }

}  // namespace
}  // namespace nodefl::gnn
