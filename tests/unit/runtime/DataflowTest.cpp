//===- tests/unit/runtime/DataflowTest.cpp --------------------------------===//
//
// The interpreter's dataflow order on host transports (Plan::dataflowPreds):
// an op waits for its deps and the earlier conflicting accesses of its
// rank, not for every earlier op of its threadblock. Checked on the CERAR
// plan of benchmark 2 (a100-pcie-8gpu, c = 24, 4 threadblocks per rank
// chained by deps, in-place decode updates): the first send waits only for
// the encode of its own chunk, and the outputs of dataflow runs (with
// shuffled completion orders) equal, bit for bit, those of a run in
// threadblock order (RunOptions::rounds), for a count that is a multiple
// of c and one that is not (head on the caller's buffers, padded tail).
//
//===----------------------------------------------------------------------===//

#include "RuntimeTestUtil.h"

#include "compiler/topology/TopologyParser.h"

#include "gtest/gtest.h"

using namespace topocc;
using namespace topocc::runtime;
using namespace topocc::runtime::test;

namespace {

Plan cerarPlan() {
  auto topo = topo::loadTopologyFile(std::string(TOPOCC_SOURCE_DIR) +
                                     "/topologies/a100-pcie-8gpu.yaml");
  EXPECT_TRUE(bool(topo)) << llvm::toString(topo.takeError());
  CompileRequest req;
  req.collective = ir::Collective::AllReduce;
  req.algorithm = Algorithm::Cerar;
  req.components = 24; // q = 3: c = 24 on 8 ranks (contract 0.106)
  req.tolerance = 0.2;
  req.bytes = 256.0 * 1024 * 1024;
  PassLogger log;
  auto compiled = compile(*topo, req, log);
  EXPECT_TRUE(bool(compiled)) << llvm::toString(compiled.takeError());
  backends::PlanMeta meta;
  meta.algorithm = algorithmName(compiled->algorithm).str();
  compiled->setCodedMeta(meta);
  auto p = Plan::fromSchedule(std::move(compiled->schedule), meta);
  EXPECT_TRUE(bool(p)) << llvm::toString(p.takeError());
  return std::move(*p);
}

} // namespace

TEST(Dataflow, ASendWaitsOnlyForTheOpThatWroteItsChunk) {
  Plan plan = cerarPlan();
  const ir::Schedule &s = plan.schedule();
  ASSERT_EQ(s.chunksPerLoop, 24);
  const ir::RankProgram &p = s.ranks[0];
  // The first send of rank 0 and the last op before it that wrote its chunk.
  size_t send = 0;
  while (send < p.ops.size() && p.ops[send].kind != ir::OpKind::Send)
    ++send;
  ASSERT_LT(send, p.ops.size());
  const ir::BufferRef &src = p.ops[send].src;
  std::optional<ir::OpId> writer;
  size_t earlierInTb = 0;
  for (size_t i = 0; i < send; ++i) {
    const ir::Op &op = p.ops[i];
    earlierInTb += op.threadblock == p.ops[send].threadblock;
    if (ir::writesDst(op.kind) && op.dst.buffer == src.buffer &&
        op.dst.chunk == src.chunk)
      writer = ir::OpId(i);
  }
  ASSERT_TRUE(writer.has_value());
  EXPECT_GE(earlierInTb, 20u); // the encodes of the other chunks come first
  llvm::ArrayRef<ir::OpId> preds = plan.dataflowPreds(0, ir::OpId(send));
  ASSERT_EQ(preds.size(), 1u);
  EXPECT_EQ(preds[0], *writer);
}

TEST(Dataflow, SameBitsAsThreadblockOrder) {
  Plan plan = cerarPlan();
  RunOptions strict;
  strict.rounds = true; // every threadblock in program order
  for (size_t count : {size_t(24 * 40), size_t(24 * 40 + 17)}) {
    std::vector<std::vector<float>> want, got;
    std::vector<std::string> errs =
        runAll(plan, count, DType::F32, want, 0, strict);
    for (const std::string &e : errs)
      ASSERT_EQ(e, "");
    // The code is approximate: the result is near the exact sum.
    std::vector<float> exact = reference(ir::Collective::AllReduce, 8, 0, count);
    double maxDiff = 0;
    for (size_t i = 0; i < count; ++i)
      maxDiff = std::max(maxDiff, std::fabs(double(want[0][i]) - exact[i]));
    EXPECT_LT(maxDiff, 1.0) << count;
    for (uint64_t seed : {0u, 1u, 7u}) {
      errs = runAll(plan, count, DType::F32, got, seed);
      for (const std::string &e : errs)
        ASSERT_EQ(e, "");
      for (int r = 0; r < 8; ++r)
        for (size_t i = 0; i < count; ++i)
          ASSERT_EQ(got[r][i], want[r][i])
              << "count " << count << " seed " << seed << " rank " << r
              << " element " << i;
    }
  }
}
