//===- compiler/passes/LowerHierRing.cpp - Two-level ring ---------===//
//
// Three ring phases over groups of ranks, emitted chunk-major (for sub-chunk
// j, for step t, for group, for ring position) so that every chain sees its
// steps in order and every connection carries its messages in the same order
// on both ends, with one dependency chain per (rank, sub-chunk): sub-chunk
// j's inter-node ring starts as soon as its reduce-scatter is done on the
// rank, while the intra-node ring works on sub-chunk j + 1.
//   phase 1, groups = nodes (intra ring):   reduce-scatter of the G shards,
//            reading `in`, result of shard l in the work buffer of local l;
//   phase 2, groups = rails (node order):   in-place ring all-reduce of the
//            N blocks of shard l in the work buffer;
//   phase 3, groups = nodes (intra ring):   in-place all-gather of the shards.
// The work buffer is `out` (out of place) or `in` (in place). Partial sums
// that are only forwarded live in fresh scratch slots.
//
//===----------------------------------------------------------------------===//

#include "compiler/passes/LowerHierRing.h"

#include "ir/Target.h"
#include "support/Diagnostics.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

namespace topocc::passes {

using namespace ir;

void nodeAndRailRings(const std::vector<std::vector<RankId>> &nodes,
                      llvm::ArrayRef<int32_t> localOrder,
                      std::vector<std::vector<RankId>> &intra,
                      std::vector<std::vector<RankId>> &rails) {
  intra.clear();
  rails.assign(nodes[0].size(), {});
  for (const std::vector<RankId> &node : nodes) {
    std::vector<RankId> ring;
    for (int32_t l : localOrder)
      ring.push_back(node[l]);
    intra.push_back(std::move(ring));
    for (size_t l = 0; l < node.size(); ++l)
      rails[l].push_back(node[l]);
  }
}

void checkNodeLayout(const std::vector<std::vector<RankId>> &nodes,
                     int32_t numRanks, llvm::ArrayRef<int32_t> localOrder,
                     llvm::StringRef what, std::vector<std::string> &problems) {
  const size_t g = nodes[0].size();
  std::vector<int> seen(std::max(numRanks, 0), 0);
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].size() != g || g == 0)
      problems.push_back(llvm::formatv(
          "{0} needs the same number of GPUs on every node: node {1} has {2}, "
          "node 0 has {3}",
          what, i, nodes[i].size(), g));
    for (RankId r : nodes[i])
      if (r < 0 || r >= numRanks)
        problems.push_back(
            llvm::formatv("rank {0} is out of range 0..{1}", r, numRanks - 1));
      else if (seen[r]++ == 1)
        problems.push_back(
            llvm::formatv("rank {0} is on more than one node", r));
  }
  for (int32_t r = 0; r < numRanks; ++r)
    if (!seen[r])
      problems.push_back(llvm::formatv("rank {0} is on no node", r));
  if (!localOrder.empty()) {
    std::vector<int> used(g, 0);
    bool ok = localOrder.size() == g;
    for (int32_t l : localOrder)
      ok = ok && l >= 0 && static_cast<size_t>(l) < g && used[l]++ == 0;
    if (!ok)
      problems.push_back(llvm::formatv(
          "the intra-node order must be a permutation of 0..{0}", g - 1));
  }
}

void finishChainedRanks(Schedule &s, const ChainState &st, Collective c,
                        int32_t local, bool inplace) {
  for (RankId r = 0; r < s.numRanks; ++r) {
    s.ranks[r].scratchChunks = st.scratchEnd[r];
    setCollectiveBuffers(s.ranks[r], c, s.chunksPerLoop, local, inplace);
  }
}

void emitRingPhase(Schedule &s, const RingPhaseSpec &p, ChainState &st) {
  const std::vector<std::vector<RankId>> &groups = p.groups;
  const RingPhaseKind kind = p.kind;
  const BufferKind work = p.work, src = p.src;
  const int32_t K = p.chunks;
  // The sub-chunk being emitted (chunkChains: the chain it extends).
  int32_t curChunk = 0;
  if (p.chunkChains)
    for (std::vector<OpId> &l : st.lastOfChunk)
      l.resize(std::max<size_t>(l.size(), p.chainOffset + K), kNone);
  auto emit = [&](RankId r, Op op) {
    OpId &last = p.chunkChains ? st.lastOfChunk[r][p.chainOffset + curChunk]
                               : st.last[r];
    if (last != kNone)
      op.deps = {last};
    auto &ops = s.ranks[r].ops;
    ops.push_back(std::move(op));
    last = st.last[r] = static_cast<OpId>(ops.size() - 1);
  };
  auto newScratch = [&](RankId r, int32_t count) {
    BufferRef b{BufferKind::Scratch, st.scratchEnd[r], count};
    st.scratchEnd[r] += count;
    return b;
  };
  auto emitSend = [&](RankId r, BufferRef from, RankId to, MsgId m) {
    emit(r, makeSend(from, to, m));
  };
  auto emitRecv = [&](RankId r, BufferRef dst, RankId from, MsgId m) {
    emit(r, makeRecv(dst, from, m));
  };
  auto emitBinary = [&](OpKind k, RankId r, BufferRef dst, BufferRef from) {
    emit(r, makeLocal(k, dst, from));
  };
  const int32_t m = static_cast<int32_t>(groups[0].size());
  const int32_t ng = static_cast<int32_t>(groups.size());
  auto wrap = [m](int32_t q) { return ((q % m) + m) % m; };
  if (m == 1) {
    // A group of one: reduce-scatter is a copy out of place, the rest nothing.
    if (kind == RingPhaseKind::ReduceScatter && src != work)
      for (int32_t g = 0; g < ng; ++g)
        for (int32_t j = 0; j < K; ++j) {
          curChunk = j;
          emitBinary(OpKind::Copy, groups[g][0], p.block(g, 0, j, work),
                     p.block(g, 0, j, src));
        }
    return;
  }
  const int32_t steps = kind == RingPhaseKind::AllReduce ? 2 * m - 1 : m;
  const MsgId msgBase = st.nextMsg;
  auto msg = [&](int32_t t, int32_t j, int32_t g, int32_t q) -> MsgId {
    return msgBase + ((t * K + j) * ng + g) * m + wrap(q);
  };
  // Step-major, or chunk-major with chunkChains: (t, j) in emission order.
  for (int32_t i = 0; i < steps * K; ++i) {
    const int32_t t = p.chunkChains ? i % steps : i / K;
    const int32_t j = p.chunkChains ? i / steps : i % K;
    curChunk = j;
    for (int32_t g = 0; g < ng; ++g)
        for (int32_t q = 0; q < m; ++q) {
          const RankId r = groups[g][q], next = groups[g][wrap(q + 1)],
                       prev = groups[g][wrap(q - 1)];
          const MsgId sendMsg = t + 1 < steps ? msg(t, j, g, q) : kNone;
          const MsgId recvMsg = t > 0 ? msg(t - 1, j, g, q - 1) : kNone;
          auto at = [&](int32_t b, BufferKind k) {
            return p.block(g, wrap(b), j, k);
          };
          if (kind == RingPhaseKind::AllGather) {
            if (t == 0) {
              emitSend(r, at(q, work), next, sendMsg);
            } else {
              emitRecv(r, at(q - t, work), prev, recvMsg);
              if (sendMsg != kNone)
                emitSend(r, at(q - t, work), next, sendMsg);
            }
            continue;
          }
          // Reduce-scatter part: step t handles the block at q - shift - t.
          const int32_t shift = kind == RingPhaseKind::ReduceScatter ? 1 : 0;
          const BufferKind from =
              kind == RingPhaseKind::ReduceScatter ? src : work;
          if (t == 0) {
            emitSend(r, at(q - shift, from), next, sendMsg);
          } else if (t < m - 1) {
            BufferRef own = at(q - shift - t, from);
            BufferRef sc = newScratch(r, own.count);
            emitRecv(r, sc, prev, recvMsg);
            emitBinary(OpKind::Reduce, r, sc, own);
            emitSend(r, sc, next, sendMsg);
          } else if (t == m - 1) {
            const int32_t b = q - shift - t;
            BufferRef own = at(b, from), result = at(b, work);
            if (from == work) {
              BufferRef sc = newScratch(r, own.count);
              emitRecv(r, sc, prev, recvMsg);
              emitBinary(OpKind::Reduce, r, result, sc);
            } else {
              emitRecv(r, result, prev, recvMsg);
              emitBinary(OpKind::Reduce, r, result, own);
            }
            if (sendMsg != kNone) // all-reduce: all-gather step 0
              emitSend(r, result, next, sendMsg);
          } else {
            // All-gather step u of the all-reduce: block q + 1 - u.
            const int32_t u = t - (m - 1);
            BufferRef dst = at(q + 1 - u, work);
            emitRecv(r, dst, prev, recvMsg);
            if (sendMsg != kNone)
              emitSend(r, dst, next, sendMsg);
          }
        }
  }
  st.nextMsg = msgBase + steps * K * ng * m;
}

namespace {

class HierLowering {
public:
  explicit HierLowering(const HierRingOptions &o)
      : o(o), G(static_cast<int32_t>(o.nodes[0].size())),
        N(static_cast<int32_t>(o.nodes.size())), K(o.chunks),
        work(o.inplace ? BufferKind::Input : BufferKind::Output) {
    lorder = o.localOrder;
    if (lorder.empty())
      for (int32_t l = 0; l < G; ++l)
        lorder.push_back(l);
  }

  Schedule run();

private:
  Schedule runGatherScatter();
  /// Channel c's intra-node order into lorder, and its rings into intra.
  void useChannel(int32_t c, std::vector<std::vector<RankId>> &intra,
                  std::vector<std::vector<RankId>> &rails) {
    if (!o.channelOrders.empty())
      lorder = o.channelOrders[c % o.channelOrders.size()];
    nodeAndRailRings(o.nodes, lorder, intra, rails);
  }

  const HierRingOptions &o;
  int32_t G, N, K;
  BufferKind work;
  std::vector<int32_t> lorder;
  Schedule s;
  int32_t base = 0; ///< first unit of the channel being lowered

  int32_t unit(int32_t l, int32_t j, int32_t b) const {
    return base + l * N * K + j * N + b;
  }
};

Schedule HierLowering::run() {
  if (o.collective != Collective::AllReduce)
    return runGatherScatter();
  const int32_t n = o.numRanks, perChannel = G * N * K;
  s.collective = Collective::AllReduce;
  s.numRanks = n;
  s.chunksPerLoop = o.channels * perChannel;
  s.inplace = o.inplace;
  s.stage = Stage::Lowered;
  s.name = o.name.empty()
               ? llvm::formatv("hierring{0}x{1}_allreduce_c{2}_k{3}_{4}", N, G,
                               o.channels, K,
                               o.inplace ? "inplace" : "outofplace")
                     .str()
               : o.name;
  s.ranks.resize(n);
  ChainState st(n);

  // Intra-node rings (positions in lorder) and rails (node order).
  std::vector<std::vector<RankId>> intra, rails;
  nodeAndRailRings(o.nodes, lorder, intra, rails);
  // Shard of intra position q: the shard of local index lorder[q], N blocks.
  RingBlockFn shard = [&](int32_t, int32_t q, int32_t j, BufferKind k) {
    return BufferRef{k, unit(lorder[q], j, 0), N};
  };
  // Block q (node position) of shard l on rail l.
  RingBlockFn block = [&](int32_t l, int32_t q, int32_t j, BufferKind k) {
    return BufferRef{k, unit(l, j, q), 1};
  };
  auto spec = [&](RingPhaseKind kind,
                  const std::vector<std::vector<RankId>> &groups,
                  const RingBlockFn &blk, BufferKind src) {
    RingPhaseSpec p;
    p.kind = kind;
    p.groups = groups;
    p.block = blk;
    p.src = src;
    p.work = work;
    p.chunks = K;
    // Sub-chunk j's inter-node ring starts when its reduce-scatter is done
    // on the rank, so the phases overlap.
    p.chunkChains = true;
    return p;
  };
  for (int32_t c = 0; c < o.channels; ++c) {
    base = c * perChannel;
    useChannel(c, intra, rails);
    st.last.assign(n, kNone);
    for (std::vector<OpId> &l : st.lastOfChunk)
      l.assign(K, kNone);
    std::vector<size_t> firstOp(n);
    for (RankId r = 0; r < n; ++r)
      firstOp[r] = s.ranks[r].ops.size();
    emitRingPhase(
        s, spec(RingPhaseKind::ReduceScatter, intra, shard, BufferKind::Input),
        st);
    emitRingPhase(s, spec(RingPhaseKind::AllReduce, rails, block, work), st);
    emitRingPhase(s, spec(RingPhaseKind::AllGather, intra, shard, work), st);
    // The sub-chunks' chains are independent; keep them on one channel so
    // that each phase's sub-chunks run one after another in one
    // threadblock (assign-channels would give each chain its own channel,
    // and the sub-chunks would all run each phase at once).
    for (RankId r = 0; r < n; ++r)
      for (size_t i = firstOp[r]; i < s.ranks[r].ops.size(); ++i)
        s.ranks[r].ops[i].channel = c;
  }
  finishChainedRanks(s, st, Collective::AllReduce, s.chunksPerLoop, o.inplace);
  return std::move(s);
}

Schedule HierLowering::runGatherScatter() {
  const bool gather = o.collective == Collective::AllGather;
  const int32_t n = o.numRanks, L = o.channels * K;
  s.collective = o.collective;
  s.numRanks = n;
  s.chunksPerLoop = n * L;
  s.inplace = o.inplace;
  s.stage = Stage::Lowered;
  s.name = o.name.empty()
               ? llvm::formatv("hierring{0}x{1}_{2}_c{3}_k{4}_{5}", N, G,
                               collectiveName(o.collective), o.channels, K,
                               o.inplace ? "inplace" : "outofplace")
                     .str()
               : o.name;
  s.ranks.resize(n);
  ChainState st(n);
  std::vector<std::vector<RankId>> intra, rails;
  nodeAndRailRings(o.nodes, lorder, intra, rails);
  // Where rank r's sub-chunk j of channel c lives in the full buffer; the
  // full buffer is the output (all-gather) or the input (reduce-scatter),
  // and in place the rank's own block is the same slice of it.
  auto fullUnit = [&](RankId r, int32_t c, int32_t j) {
    return r * L + c * K + j;
  };
  const BufferKind full = gather ? BufferKind::Output : BufferKind::Input;
  // Reduce-scatter: rank (b, l) keeps node b's partial sum of block
  // (b', l) in the scratch slot at that block's offset in the input, so
  // every reduction's local operand sits at its destination's offset (the
  // form the MSCCL executor expects, docs/MscclXml.md rule 9); the phases'
  // forwarded partial sums live above those ranks * L slots.
  if (!gather)
    st.scratchEnd.assign(n, n * L);
  for (int32_t c = 0; c < o.channels; ++c) {
    useChannel(c, intra, rails);
    st.last.assign(n, kNone);
    for (std::vector<OpId> &l : st.lastOfChunk)
      l.assign(K, kNone);
    std::vector<size_t> firstOp(n);
    for (RankId r = 0; r < n; ++r)
      firstOp[r] = s.ranks[r].ops.size();
    // Appends a local op to sub-chunk j's chain on rank r.
    auto chainOp = [&](RankId r, int32_t j, Op op) {
      OpId &last = st.lastOfChunk[r][j];
      if (last != kNone)
        op.deps = {last};
      auto &ops = s.ranks[r].ops;
      ops.push_back(std::move(op));
      last = st.last[r] = static_cast<OpId>(ops.size() - 1);
    };
    // Intra-node ring over node-b' blocks for sub-chunk j: position q of
    // every node handles block (b', lorder[q]).
    auto intraSlice = [&](int32_t bSrc, int32_t j) {
      RingPhaseSpec p;
      p.kind = gather ? RingPhaseKind::AllGather : RingPhaseKind::ReduceScatter;
      p.groups = intra;
      p.chunks = 1;
      p.chunkChains = true;
      p.chainOffset = j;
      p.src = full;
      p.work = gather ? full : BufferKind::Scratch;
      p.block = [&, bSrc, j](int32_t, int32_t q, int32_t, BufferKind k) {
        return BufferRef{k, fullUnit(o.nodes[bSrc][lorder[q]], c, j), 1};
      };
      emitRingPhase(s, p, st);
    };
    // Ring over rail l (node order) for all sub-chunks, chunk-major.
    auto railPhase = [&]() {
      RingPhaseSpec p;
      p.kind = gather ? RingPhaseKind::AllGather : RingPhaseKind::ReduceScatter;
      p.groups = rails;
      p.chunks = K;
      p.chunkChains = true;
      p.src = gather ? full : BufferKind::Scratch;
      // Out-of-place reduce-scatter finishes in scratch (the reduction
      // into the rank's own slot then reads its destination) and copies
      // the result out.
      p.work = gather ? full
                      : (o.inplace ? BufferKind::Input : BufferKind::Scratch);
      p.block = [&](int32_t l, int32_t b, int32_t j, BufferKind k) {
        return BufferRef{k, fullUnit(o.nodes[b][l], c, j), 1};
      };
      emitRingPhase(s, p, st);
      if (!gather && !o.inplace)
        for (int32_t j = 0; j < K; ++j)
          for (RankId r = 0; r < n; ++r)
            chainOp(r, j,
                    makeLocal(OpKind::Copy,
                              BufferRef{BufferKind::Output, c * K + j, 1},
                              BufferRef{BufferKind::Scratch, fullUnit(r, c, j),
                                        1}));
    };
    // The intra-node rings run on channel c and the rails on channel
    // channels + c: each phase's sub-chunks stay in order in one
    // threadblock, and fuse never merges a rail's receive with the
    // intra-node send of the same block (that op would need a threadblock
    // whose send and receive peers the two rings' threadblocks already use).
    auto onChannel = [&](ChannelId ch, const std::function<void()> &emitFn) {
      std::vector<size_t> from(n);
      for (RankId r = 0; r < n; ++r)
        from[r] = s.ranks[r].ops.size();
      emitFn();
      for (RankId r = 0; r < n; ++r)
        for (size_t i = from[r]; i < s.ranks[r].ops.size(); ++i)
          s.ranks[r].ops[i].channel = ch;
    };
    const ChannelId intraChannel = c, railChannel = o.channels + c;
    auto intraPhases = [&]() {
      for (int32_t j = 0; j < K; ++j)
        for (int32_t b = 0; b < N; ++b)
          intraSlice(b, j);
    };
    if (gather) {
      // Out of place the rank's own block is copied into its output slot
      // first, at the head of each sub-chunk's chain.
      if (!o.inplace)
        for (int32_t j = 0; j < K; ++j)
          for (RankId r = 0; r < n; ++r)
            chainOp(r, j,
                    makeLocal(OpKind::Copy,
                              BufferRef{BufferKind::Output, fullUnit(r, c, j), 1},
                              BufferRef{BufferKind::Input, c * K + j, 1}));
      onChannel(railChannel, railPhase);
      onChannel(intraChannel, intraPhases);
    } else {
      onChannel(intraChannel, intraPhases);
      onChannel(railChannel, railPhase);
    }
    // The copies of all-gather's own blocks go with the rails.
    for (RankId r = 0; r < n; ++r)
      for (size_t i = firstOp[r]; i < s.ranks[r].ops.size(); ++i)
        if (s.ranks[r].ops[i].channel == kNone)
          s.ranks[r].ops[i].channel = railChannel;
  }
  finishChainedRanks(s, st, o.collective, L, o.inplace);
  return std::move(s);
}

} // namespace

llvm::Expected<Schedule> lowerHierRing(const HierRingOptions &o) {
  std::vector<std::string> problems;
  if (o.nodes.size() < 2)
    problems.push_back(llvm::formatv("the hierarchical ring needs at least 2 "
                                     "nodes with GPUs, the topology has {0}",
                                     o.nodes.size()));
  if (o.channels < 1 || o.channels > kMaxRingChannels)
    problems.push_back(llvm::formatv(
        "--channels must be between 1 and {0}, got {1}", kMaxRingChannels,
        o.channels));
  if (o.chunks < 1)
    problems.push_back(
        llvm::formatv("--chunks must be at least 1, got {0}", o.chunks));
  if (!problems.empty())
    return makeUserError(llvm::join(problems, "\n"));
  const size_t g = o.nodes[0].size();
  checkNodeLayout(o.nodes, o.numRanks, o.localOrder, "the hierarchical ring",
                  problems);
  for (const std::vector<int32_t> &order : o.channelOrders)
    checkNodeLayout(o.nodes, o.numRanks, order, "the hierarchical ring",
                    problems);
  // The all-reduce's units and the gather/scatter's (ranks * channels *
  // chunks) are the same count.
  const int64_t units =
      int64_t(o.channels) * int64_t(g) * int64_t(o.nodes.size()) * o.chunks;
  if (std::string why =
          tooManyUnits(units, "channels * GPUs per node * nodes * chunks",
                       "use fewer channels or chunks");
      !why.empty())
    problems.push_back(why);
  if (!problems.empty())
    return makeUserError(llvm::join(problems, "\n"));
  return HierLowering(o).run();
}

} // namespace topocc::passes
