//===- runtime/PlanAnalysis.cpp - What the executor derives from a plan ---===//
//
// The analyses of a verified schedule that the rank executor
// (Interpreter.cpp) relies on: the round of every op (planRounds, for
// stream-ordered transports), the buffer layout for a count (layoutFor), and
// the dataflow predecessors of every op (Plan::buildDataflow, computed once
// when a plan is loaded).
//
//===----------------------------------------------------------------------===//

#include "runtime/PlanAnalysis.h"
#include "runtime/Interpreter.h"

#include "ir/CombinedGraph.h"
#include "support/Diagnostics.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <map>
#include <optional>

namespace topocc::runtime {

void forEachProgramOrderPreds(
    const ir::RankProgram &rp,
    llvm::function_ref<void(ir::OpId, llvm::ArrayRef<ir::OpId>)> fn) {
  std::map<ir::TbId, ir::OpId> lastOfTb;
  std::vector<ir::OpId> preds;
  for (size_t i = 0; i < rp.ops.size(); ++i) {
    const ir::Op &op = rp.ops[i];
    auto id = static_cast<ir::OpId>(i);
    preds.assign(op.deps.begin(), op.deps.end());
    if (op.threadblock != ir::kNone) {
      auto it = lastOfTb.find(op.threadblock);
      if (it != lastOfTb.end())
        preds.push_back(it->second);
      lastOfTb[op.threadblock] = id;
    }
    llvm::sort(preds);
    preds.erase(std::unique(preds.begin(), preds.end()), preds.end());
    fn(id, preds);
  }
}

std::vector<std::vector<int32_t>> planRounds(const ir::Schedule &s) {
  // Nodes are (rank, op), flattened; edges carry weight 0 or 1.
  std::vector<size_t> first(s.numRanks + 1, 0);
  for (ir::RankId r = 0; r < s.numRanks; ++r)
    first[r + 1] = first[r] + s.ranks[r].ops.size();
  size_t total = first[s.numRanks];
  std::vector<std::vector<std::pair<size_t, int32_t>>> out(total);
  std::vector<int32_t> indeg(total, 0);
  auto edge = [&](size_t from, size_t to, int32_t w) {
    out[from].push_back({to, w});
    ++indeg[to];
  };
  for (ir::RankId r = 0; r < s.numRanks; ++r) {
    const ir::RankProgram &rp = s.ranks[r];
    forEachProgramOrderPreds(
        rp, [&](ir::OpId i, llvm::ArrayRef<ir::OpId> preds) {
          for (ir::OpId p : preds)
            edge(first[r] + p, first[r] + i, ir::sends(rp.ops[p].kind) ? 1 : 0);
        });
  }
  for (const ir::MsgEnds &e : ir::indexMessages(s))
    if (e.sender != ir::kNone && e.receiver != ir::kNone)
      edge(first[e.sender] + e.sendOp, first[e.receiver] + e.recvOp, 1);
  std::vector<int32_t> level(total, 0);
  std::vector<size_t> queue;
  for (size_t v = 0; v < total; ++v)
    if (indeg[v] == 0)
      queue.push_back(v);
  for (size_t q = 0; q < queue.size(); ++q)
    for (auto [to, w] : out[queue[q]]) {
      level[to] = std::max(level[to], level[queue[q]] + w);
      if (--indeg[to] == 0)
        queue.push_back(to);
    }
  std::vector<std::vector<int32_t>> rounds(s.numRanks);
  for (ir::RankId r = 0; r < s.numRanks; ++r)
    rounds[r].assign(level.begin() + first[r], level.begin() + first[r + 1]);
  return rounds;
}

llvm::Expected<BufferLayout> layoutFor(const ir::Schedule &s, size_t count) {
  BufferLayout l;
  l.count = count;
  switch (s.collective) {
  case ir::Collective::AllGather:
    l.outputBlocks = s.numRanks;
    break;
  case ir::Collective::ReduceScatter:
    l.inputBlocks = s.numRanks;
    break;
  case ir::Collective::AllToAll:
    l.inputBlocks = l.outputBlocks = s.numRanks;
    break;
  default:
    break;
  }
  int32_t blocks = std::max(l.inputBlocks, l.outputBlocks);
  if (blocks <= 0 || s.chunksPerLoop <= 0 || s.chunksPerLoop % blocks != 0)
    return makeUserError(llvm::formatv(
        "plan '{0}': a {1} over {2} ranks needs chunksPerLoop to be a "
        "multiple of {2}, got {3}",
        s.name, ir::collectiveName(s.collective), blocks, s.chunksPerLoop));
  l.chunksPerBlock = s.chunksPerLoop / blocks;
  return l;
}

void Plan::buildDataflow() {
  const ir::Schedule &s = plan.schedule;
  ir::CombinedGraph g = ir::buildCombinedGraph(s);
  std::vector<uint32_t> order;
  if (!ir::topologicalOrder(g, order))
    return; // cannot happen for a verified plan; keep threadblock order
  auto preds = std::make_shared<std::vector<std::vector<std::vector<ir::OpId>>>>(
      size_t(s.numRanks));
  struct SlotState {
    std::optional<ir::OpId> writer;
    std::vector<ir::OpId> readers; ///< since the writer
  };
  std::vector<llvm::DenseMap<uint64_t, SlotState>> slots(size_t(s.numRanks));
  for (ir::RankId r = 0; r < s.numRanks; ++r)
    (*preds)[size_t(r)].resize(s.ranks[r].ops.size());
  for (uint32_t node : order) {
    ir::RankId r = g.rankOf(node);
    ir::OpId id = g.opOf(node);
    const ir::Op &op = s.ranks[r].ops[size_t(id)];
    std::vector<ir::OpId> &mine = (*preds)[size_t(r)][size_t(id)];
    mine.assign(op.deps.begin(), op.deps.end());
    auto forSlots = [&](const ir::BufferRef &ref, auto &&fn) {
      for (int64_t c = ref.chunk; c < int64_t(ref.chunk) + ref.count; ++c)
        fn(slots[size_t(r)][ir::slotKey(r, ir::canonicalSlot(s, r, ref.buffer,
                                                              c))]);
    };
    auto read = [&](const ir::BufferRef &ref) {
      forSlots(ref, [&](SlotState &st) {
        if (st.writer && *st.writer != id)
          mine.push_back(*st.writer);
        st.readers.push_back(id);
      });
    };
    unsigned f = ir::opFlags(op.kind);
    if (f & ir::OF_RS)
      read(op.src);
    if (f & ir::OF_LC)
      for (const ir::LinTerm &term : op.terms)
        read(term.src);
    if (f & ir::OF_RD)
      read(op.dst);
    if (f & ir::OF_WD)
      forSlots(op.dst, [&](SlotState &st) {
        if (st.writer && *st.writer != id)
          mine.push_back(*st.writer);
        for (ir::OpId rd : st.readers)
          if (rd != id)
            mine.push_back(rd);
        st.writer = id;
        st.readers.clear();
      });
    llvm::sort(mine);
    mine.erase(std::unique(mine.begin(), mine.end()), mine.end());
  }
  dataPreds = std::move(preds);
}

} // namespace topocc::runtime
