//===- ir/CombinedGraph.cpp - The happens-before graph of a schedule -------===//
//
// Built once per verification in CSR form; everything here is iterative so
// that schedules with hundreds of thousands of ops cannot overflow the stack.
//
//===----------------------------------------------------------------------===//

#include "ir/CombinedGraph.h"

#include "support/UnionFind.h"

#include "llvm/ADT/DenseMap.h"

#include <algorithm>

namespace topocc::ir {

RankId CombinedGraph::rankOf(uint32_t n) const {
  auto it = std::upper_bound(rankBase.begin(), rankBase.end(), n);
  return static_cast<RankId>(it - rankBase.begin()) - 1;
}

CombinedGraph buildCombinedGraph(const Schedule &s) {
  CombinedGraph g;
  g.rankBase.push_back(0);
  for (const RankProgram &rp : s.ranks)
    g.rankBase.push_back(g.rankBase.back() +
                         static_cast<uint32_t>(rp.ops.size()));
  uint32_t n = g.numNodes();

  std::vector<std::pair<uint32_t, uint32_t>> edges;
  bool programOrder = s.stage >= Stage::ThreadblocksAssigned;
  llvm::DenseMap<MsgId, uint32_t> receiverOf;
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    const std::vector<Op> &ops = s.ranks[r].ops;
    llvm::DenseMap<TbId, uint32_t> lastOfTb;
    for (size_t i = 0; i < ops.size(); ++i) {
      const Op &op = ops[i];
      uint32_t v = g.rankBase[r] + static_cast<uint32_t>(i);
      for (OpId d : op.deps)
        if (d >= 0 && static_cast<size_t>(d) < ops.size() &&
            static_cast<size_t>(d) != i)
          edges.push_back({g.rankBase[r] + static_cast<uint32_t>(d), v});
      if (programOrder && op.threadblock != kNone) {
        auto [it, inserted] = lastOfTb.try_emplace(op.threadblock, v);
        if (!inserted) {
          edges.push_back({it->second, v});
          it->second = v;
        }
      }
      if (op.recvMsg >= 0 && (opFlags(op.kind) & OF_RV))
        receiverOf.try_emplace(op.recvMsg, v);
    }
  }
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    const std::vector<Op> &ops = s.ranks[r].ops;
    for (size_t i = 0; i < ops.size(); ++i) {
      const Op &op = ops[i];
      if (op.sendMsg < 0 || !(opFlags(op.kind) & OF_SN))
        continue;
      auto it = receiverOf.find(op.sendMsg);
      uint32_t u = g.rankBase[r] + static_cast<uint32_t>(i);
      if (it != receiverOf.end() && it->second != u)
        edges.push_back({u, it->second});
    }
  }

  g.succStart.assign(n + 1, 0);
  g.predStart.assign(n + 1, 0);
  for (auto [u, v] : edges) {
    ++g.succStart[u + 1];
    ++g.predStart[v + 1];
  }
  for (uint32_t i = 0; i < n; ++i) {
    g.succStart[i + 1] += g.succStart[i];
    g.predStart[i + 1] += g.predStart[i];
  }
  g.succ.resize(edges.size());
  g.pred.resize(edges.size());
  std::vector<uint32_t> sFill(g.succStart.begin(), g.succStart.end() - 1);
  std::vector<uint32_t> pFill(g.predStart.begin(), g.predStart.end() - 1);
  for (auto [u, v] : edges) {
    g.succ[sFill[u]++] = v;
    g.pred[pFill[v]++] = u;
  }
  return g;
}

bool topologicalOrder(const CombinedGraph &g, std::vector<uint32_t> &order) {
  uint32_t n = g.numNodes();
  std::vector<uint32_t> indeg(n);
  for (uint32_t v = 0; v < n; ++v)
    indeg[v] = g.predStart[v + 1] - g.predStart[v];
  order.clear();
  order.reserve(n);
  for (uint32_t v = 0; v < n; ++v)
    if (indeg[v] == 0)
      order.push_back(v);
  for (size_t head = 0; head < order.size(); ++head) {
    uint32_t u = order[head];
    for (uint32_t e = g.succStart[u]; e < g.succStart[u + 1]; ++e)
      if (--indeg[g.succ[e]] == 0)
        order.push_back(g.succ[e]);
  }
  return order.size() == n;
}

std::vector<uint32_t> findCycle(const CombinedGraph &g,
                                const std::vector<uint32_t> &order) {
  uint32_t n = g.numNodes();
  std::vector<char> done(n, 0);
  for (uint32_t v : order)
    done[v] = 1;
  // Every node left over has a predecessor that is left over too: walk
  // predecessors until a node repeats.
  uint32_t start = n;
  for (uint32_t v = 0; v < n; ++v)
    if (!done[v]) {
      start = v;
      break;
    }
  if (start == n)
    return {};
  std::vector<int64_t> seenAt(n, -1);
  std::vector<uint32_t> walk;
  uint32_t v = start;
  while (seenAt[v] < 0) {
    seenAt[v] = static_cast<int64_t>(walk.size());
    walk.push_back(v);
    uint32_t next = n;
    for (uint32_t e = g.predStart[v]; e < g.predStart[v + 1]; ++e)
      if (!done[g.pred[e]]) {
        next = g.pred[e];
        break;
      }
    if (next == n)
      return {}; // cannot happen for a partial Kahn order
    v = next;
  }
  std::vector<uint32_t> cycle(walk.begin() + seenAt[v], walk.end());
  std::reverse(cycle.begin(), cycle.end());
  // Start the report at the smallest node for a deterministic text.
  auto minIt = std::min_element(cycle.begin(), cycle.end());
  std::rotate(cycle.begin(), minIt, cycle.end());
  return cycle;
}

CanonicalSlot canonicalSlot(const Schedule &s, RankId r, BufferKind b,
                            int64_t chunk) {
  if (!s.inplace)
    return {b, chunk};
  int64_t per = s.numRanks > 0 ? s.chunksPerLoop / s.numRanks : 0;
  switch (s.collective) {
  case Collective::AllReduce:
  case Collective::AllToAll:
  case Collective::Broadcast:
  case Collective::Reduce:
    // sendbuff == recvbuff: unit k of `in` is unit k of `out`.
    if (b == BufferKind::Output)
      return {BufferKind::Input, chunk};
    return {b, chunk};
  case Collective::AllGather:
    // unit j of `in` is unit rank*N/g + j of `out`.
    if (b == BufferKind::Input)
      return {BufferKind::Output, static_cast<int64_t>(r) * per + chunk};
    return {b, chunk};
  case Collective::ReduceScatter:
    // unit j of `out` is unit rank*N/g + j of `in`.
    if (b == BufferKind::Output)
      return {BufferKind::Input, static_cast<int64_t>(r) * per + chunk};
    return {b, chunk};
  }
  return {b, chunk};
}

SlotIndex::SlotIndex(const Schedule &s) : numRanks(s.numRanks) {
  if (numRanks < 0 || static_cast<size_t>(numRanks) != s.ranks.size()) {
    numRanks = 0;
    return;
  }
  int64_t nominal =
      std::max<int64_t>(s.nominalInputChunks(), s.nominalOutputChunks());
  for (RankId r = 0; r < numRanks; ++r) {
    const RankProgram &rp = s.ranks[r];
    // Input and output at least nominal (inputs are seeded, outputs read
    // at their nominal size); scratch as declared.
    for (int64_t n : {std::max<int64_t>(rp.inputChunks, nominal),
                      std::max<int64_t>(rp.outputChunks, nominal),
                      std::max<int64_t>(rp.scratchChunks, 0)}) {
      base.push_back(total);
      size.push_back(n);
      total += n;
    }
  }
}

std::vector<std::vector<size_t>> subSchedules(const Schedule &s) {
  std::vector<size_t> base(s.ranks.size() + 1, 0);
  for (size_t r = 0; r < s.ranks.size(); ++r)
    base[r + 1] = base[r] + s.ranks[r].ops.size();
  UnionFind uf(base.back());
  for (size_t r = 0; r < s.ranks.size(); ++r)
    for (size_t i = 0; i < s.ranks[r].ops.size(); ++i)
      for (OpId d : s.ranks[r].ops[i].deps)
        if (d >= 0 && static_cast<size_t>(d) < s.ranks[r].ops.size())
          uf.join(base[r] + i, base[r] + d);
  for (const MsgEnds &m : indexMessages(s))
    if (m.sender != kNone && m.receiver != kNone)
      uf.join(base[m.sender] + m.sendOp, base[m.receiver] + m.recvOp);
  std::vector<std::vector<size_t>> out(s.ranks.size());
  for (size_t r = 0; r < s.ranks.size(); ++r)
    for (size_t i = 0; i < s.ranks[r].ops.size(); ++i)
      out[r].push_back(uf.find(base[r] + i));
  return out;
}

} // namespace topocc::ir
