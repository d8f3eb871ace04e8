//===- compiler/passes/LegalizeDependencies.cpp - MSCCL dep form ----------===//
//
// Vector clocks over threadblock positions: clock(op)[t] is the last position
// of threadblock t known to complete before op. A dep on (t, p) is redundant
// when the op's threadblock already knows t up to p through program order, or
// when another dep of the op knows it. Positions count the inserted nops, as
// MSCCL's step indices do.
//
//===----------------------------------------------------------------------===//

#include "compiler/passes/LegalizeDependencies.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cassert>

namespace topocc::passes {

using namespace ir;

namespace {

using Clock = std::vector<int32_t>;

void joinInto(Clock &into, const Clock &from) {
  for (size_t i = 0; i < into.size(); ++i)
    into[i] = std::max(into[i], from[i]);
}

} // namespace

void legalizeRank(RankProgram &rp) {
  TbId numTbs = 0;
  for (const Op &op : rp.ops)
    numTbs = std::max(numTbs, op.threadblock + 1);
  // The legalized list is the schedule every later step holds (auto's best,
  // the simulation, the verifier, the file): sized to the ops, and trimmed
  // where nops made it grow, not left with a doubling list's spare half.
  std::vector<Op> out;
  out.reserve(rp.ops.size());
  std::vector<Clock> clock; // per new op
  std::vector<int32_t> pos; // per new op: position in its tb
  std::vector<OpId> newId(rp.ops.size(), kNone);
  std::vector<int32_t> tbLen(numTbs, 0);
  std::vector<OpId> tbLast(numTbs, kNone);

  auto append = [&](Op op, Clock c) {
    TbId tb = op.threadblock;
    pos.push_back(tbLen[tb]++);
    c[tb] = pos.back();
    clock.push_back(std::move(c));
    out.push_back(std::move(op));
    tbLast[tb] = static_cast<OpId>(out.size() - 1);
  };

  for (size_t i = 0; i < rp.ops.size(); ++i) {
    Op op = std::move(rp.ops[i]);
    TbId tb = op.threadblock;
    assert(tb >= 0 && "threadblocks are assigned");
    Clock base = tbLast[tb] == kNone ? Clock(numTbs, -1) : clock[tbLast[tb]];
    // Cross-threadblock deps, the latest per target threadblock.
    std::vector<OpId> latest(numTbs, kNone);
    for (OpId d : op.deps) {
      assert(static_cast<size_t>(d) < i && "deps point backwards");
      OpId nd = newId[d];
      TbId t = out[nd].threadblock;
      if (t == tb)
        continue; // implied by program order
      if (latest[t] == kNone || pos[nd] > pos[latest[t]])
        latest[t] = nd;
    }
    // Keep the maximal ones not already known to the threadblock.
    std::vector<OpId> kept;
    for (TbId t = 0; t < numTbs; ++t) {
      OpId d = latest[t];
      if (d == kNone || base[t] >= pos[d])
        continue;
      bool implied = false;
      for (TbId u = 0; u < numTbs && !implied; ++u)
        implied = u != t && latest[u] != kNone && clock[latest[u]][t] >= pos[d];
      if (!implied)
        kept.push_back(d);
    }
    // The first dep stays on the op; the others go on preceding nops.
    for (size_t k = 1; k < kept.size(); ++k) {
      Op nop;
      nop.kind = OpKind::Nop;
      nop.channel = op.channel;
      nop.threadblock = tb;
      nop.deps = {kept[k]};
      Clock c = base;
      joinInto(c, clock[kept[k]]);
      append(std::move(nop), c);
      base = clock.back();
    }
    op.deps.clear();
    if (!kept.empty()) {
      op.deps = {kept[0]};
      joinInto(base, clock[kept[0]]);
    }
    append(std::move(op), std::move(base));
    newId[i] = static_cast<OpId>(out.size() - 1);
  }
  if (out.capacity() > out.size())
    out.shrink_to_fit();
  rp.ops = std::move(out);
}

void legalizeDependencies(Schedule &s) {
  assert(s.stage == Stage::ThreadblocksAssigned &&
         "legalization runs after threadblock assignment");
  for (RankProgram &rp : s.ranks)
    legalizeRank(rp);
  s.stage = Stage::Legalized;
}

} // namespace topocc::passes
