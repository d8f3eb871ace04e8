//===- compiler/passes/LowerMatching.cpp - Link-matched collectives -------===//
//
// See LowerMatching.h. Ops are collected per rank with the time the
// matching gave them, then listed by a topological order that takes the
// earliest time first (ties in creation order), so dependencies always
// precede their users and each link's transfers keep the matching's order.
//
//===----------------------------------------------------------------------===//

#include "compiler/passes/LowerMatching.h"

#include "support/Diagnostics.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <map>
#include <queue>
#include <set>
#include <tuple>

namespace topocc::passes {

using namespace ir;
using algorithms::BroadcastPlan;
using algorithms::BroadcastProblem;
using algorithms::MatchLink;
using algorithms::MatchTransfer;

namespace {

/// An op waiting to be placed in its rank's list.
struct Timed {
  double time = 0;
  Op op;
  std::vector<int32_t> deps; ///< indices into the rank's Timed list
  /// A send: its link, its place among the link's transfers and its
  /// channel layer.
  int32_t link = -1, seq = -1, layer = 0;
};

/// Builds the schedule's ops, then lists them.
class MatchingEmitter {
public:
  MatchingEmitter(const MatchingOptions &o, Schedule &s)
      : o(o), s(s), n(o.numRanks), K(o.chunks), ops(o.numRanks),
        scratchEnd(o.numRanks, 0) {
    colourLinks();
    linkLoad.assign(o.links.size(), 0);
    linkSeq.assign(o.links.size(), 0);
  }

  int32_t channelsPerLayer() const { return numBase; }
  int32_t layers() const { return numLayers; }
  int64_t transfers() const { return numTransfers; }

  /// Unit c of the whole buffer: the all-gather's gathered units, the
  /// all-reduce's result.
  BufferRef full(int32_t c) const {
    const bool inInput = o.collective == Collective::AllReduce && o.inplace;
    return {inInput ? BufferKind::Input : BufferKind::Output, c, 1};
  }
  /// A rank's contribution to unit c (reduce-scatter, all-reduce).
  BufferRef contribution(int32_t c) const { return {BufferKind::Input, c, 1}; }
  /// Where the owner of unit c reduces it; whether that is its own
  /// contribution's memory (in place).
  BufferRef result(int32_t c) const {
    if (o.collective == Collective::ReduceScatter && !o.inplace)
      return {BufferKind::Output, c % K, 1};
    if (o.collective == Collective::ReduceScatter)
      return contribution(c);
    return full(c);
  }
  bool resultAliasesContribution() const { return o.inplace; }

  /// Reduce phase: the matching `plan` of an all-gather on the reversed
  /// links, run backwards. Returns when each unit is reduced on its owner.
  std::vector<double> reducePhase(const BroadcastPlan &plan) {
    const int32_t C = n * K;
    const double T = plan.finish;
    // The reduction tree of each unit: rank x receives from its children
    // (the ranks it sent the unit to in the all-gather on reversed links)
    // and sends to its parent.
    struct Edge {
      int32_t child = 0, msg = 0;
      Slot slot;
      double start = 0, arrive = 0; ///< reduce-phase times
    };
    // Each rank's send of a unit to its parent, by (rank, unit).
    struct Up {
      int32_t msg = -1, link = -1;
      Slot slot;
      double start = 0;
    };
    std::vector<std::vector<std::vector<Edge>>> children(
        n, std::vector<std::vector<Edge>>(C));
    std::vector<std::vector<Up>> up(n, std::vector<Up>(C));
    // A rank combines the second and later children's partial sums on the
    // threadblock that sends the unit up (which waits for them anyway), so
    // a receiving threadblock never waits for another child: those steps
    // count towards the sending link's layers.
    std::vector<std::vector<int32_t>> kidCount(n, std::vector<int32_t>(C, 0));
    for (const MatchTransfer &tr : plan.transfers)
      ++kidCount[o.links[tr.link].to][tr.chunk];
    // Backwards: the reduce phase's order on every link.
    for (size_t i = plan.transfers.size(); i-- > 0;) {
      const MatchTransfer &tr = plan.transfers[i];
      // A transfer x -> y on the reversed link is y's partial sum going
      // to x on the real link y -> x (the same link index).
      const int32_t x = o.links[tr.link].to, y = o.links[tr.link].from;
      const int32_t msg = nextMsg++;
      const Slot slot =
          slotOf(tr.link, 1 + std::max(0, kidCount[y][tr.chunk] - 1));
      children[x][tr.chunk].push_back(
          {y, msg, slot, T - tr.arrive, T - tr.start});
      up[y][tr.chunk] = {msg, tr.link, slot, T - tr.arrive};
    }
    std::vector<double> done(C, 0);
    for (int32_t r = 0; r < n; ++r)
      scratchEnd[r] = std::max(scratchEnd[r], C); // accumulators first
    readsOwn.assign(n, std::vector<int32_t>(C, -1));
    reduceDone.assign(n, std::vector<int32_t>(C, -1));
    for (int32_t x = 0; x < n; ++x)
      for (int32_t c = 0; c < C; ++c) {
        std::vector<Edge> &kids = children[x][c];
        std::stable_sort(
            kids.begin(), kids.end(),
            [](const Edge &a, const Edge &b) { return a.arrive < b.arrive; });
        const bool owner = c / K == x;
        BufferRef acc;
        // A relay accumulates unit c at scratch c: the same offset as its
        // contribution, as MSCCL's rrc reads its local operand at the
        // destination's offset (the checker's rule 9).
        if (owner)
          acc = result(c);
        else
          acc = {BufferKind::Scratch, c, 1};
        int32_t last = -1;
        double lastTime = 0;
        for (size_t i = 0; i < kids.size(); ++i) {
          const Edge &e = kids[i];
          const int32_t msg = e.msg;
          const ChannelId ch = e.slot.channel;
          if (i == 0 && !(owner && resultAliasesContribution())) {
            int32_t rv = add(x, e.start, makeRecv(acc, e.child, msg), ch, {});
            last =
                add(x, e.arrive,
                    makeLocal(OpKind::Reduce, acc, contribution(c)), ch, {rv});
            readsOwn[x][c] = last;
          } else {
            BufferRef tmp = scratch(x);
            int32_t rv = add(x, e.start, makeRecv(tmp, e.child, msg), ch, {});
            std::vector<int32_t> deps{rv};
            if (last >= 0)
              deps.push_back(last);
            last = add(x, e.arrive, makeLocal(OpKind::Reduce, acc, tmp),
                       owner ? ch : up[x][c].slot.channel, deps);
          }
          lastTime = std::max(lastTime, e.arrive);
        }
        if (owner) {
          if (kids.empty() && !resultAliasesContribution())
            last =
                add(x, 0, makeLocal(OpKind::Copy, acc, contribution(c)), 0, {});
          reduceDone[x][c] = last;
          done[c] = lastTime;
          continue;
        }
        const Up &u = up[x][c];
        const int32_t parent = o.links[u.link].to;
        std::vector<int32_t> deps;
        if (last >= 0)
          deps.push_back(last);
        int32_t snd =
            add(x, u.start,
                makeSend(kids.empty() ? contribution(c) : acc, parent, u.msg),
                u.slot.channel, deps, u.link, u.slot);
        if (kids.empty())
          readsOwn[x][c] = snd;
      }
    return done;
  }

  /// Gather phase: the matching `plan` of an all-gather (after the reduce
  /// phase for an all-reduce).
  void gatherPhase(const BroadcastPlan &plan) {
    const int32_t C = n * K;
    const bool reduced = o.collective == Collective::AllReduce;
    // The op after which rank r holds unit c (-1: from the start).
    std::vector<std::vector<int32_t>> have(n, std::vector<int32_t>(C, -1));
    for (int32_t c = 0; c < C; ++c) {
      const int32_t r = c / K;
      if (reduced)
        have[r][c] = reduceDone[r][c];
    }
    // The unit's source on its owner.
    auto ownerSrc = [&](int32_t c) -> BufferRef {
      if (reduced)
        return result(c);
      if (o.inplace)
        return full(c);
      return {BufferKind::Input, c % K, 1};
    };
    if (!reduced && !o.inplace)
      for (int32_t r = 0; r < n; ++r)
        add(r, 0,
            makeLocal(OpKind::Copy, BufferRef{BufferKind::Output, r * K, K},
                      BufferRef{BufferKind::Input, 0, K}),
            0, {});
    for (const MatchTransfer &tr : plan.transfers) {
      const int32_t u = o.links[tr.link].from, v = o.links[tr.link].to;
      const int32_t c = tr.chunk, msg = nextMsg++;
      const Slot slot = slotOf(tr.link);
      const ChannelId ch = slot.channel;
      std::vector<int32_t> sendDeps;
      if (have[u][c] >= 0)
        sendDeps.push_back(have[u][c]);
      add(u, tr.start, makeSend(c / K == u ? ownerSrc(c) : full(c), v, msg), ch,
          sendDeps, tr.link, slot);
      std::vector<int32_t> recvDeps;
      // In place, the all-reduce's result overwrites the contribution the
      // reduce phase read.
      if (reduced && o.inplace && readsOwn[v][c] >= 0)
        recvDeps.push_back(readsOwn[v][c]);
      have[v][c] = add(v, tr.start, makeRecv(full(c), u, msg), ch, recvDeps);
    }
  }

  /// Lists every rank's ops and sets the buffer sizes.
  void finish() {
    for (RankId r = 0; r < n; ++r) {
      std::vector<Timed> &list = ops[r];
      const int32_t m = static_cast<int32_t>(list.size());
      chainLayers(list);
      std::vector<std::vector<int32_t>> users(m);
      std::vector<int32_t> waitingFor(m, 0);
      for (int32_t i = 0; i < m; ++i)
        for (int32_t d : list[i].deps) {
          users[d].push_back(i);
          ++waitingFor[i];
        }
      using Key = std::tuple<double, int32_t>;
      std::priority_queue<Key, std::vector<Key>, std::greater<Key>> ready;
      for (int32_t i = 0; i < m; ++i)
        if (waitingFor[i] == 0)
          ready.push({list[i].time, i});
      std::vector<OpId> placed(m, kNone);
      std::vector<Op> &out = s.ranks[r].ops;
      out.reserve(m);
      while (!ready.empty()) {
        auto [t, i] = ready.top();
        ready.pop();
        Op op = std::move(list[i].op);
        for (int32_t d : list[i].deps)
          op.deps.push_back(placed[d]);
        placed[i] = static_cast<OpId>(out.size());
        out.push_back(std::move(op));
        for (int32_t u : users[i])
          if (--waitingFor[u] == 0)
            ready.push({list[u].time, u});
      }
      s.ranks[r].scratchChunks = scratchEnd[r];
      setCollectiveBuffers(s.ranks[r], o.collective, s.chunksPerLoop, K,
                           o.inplace);
    }
  }

private:
  /// A transfer's channel and its place among its link's transfers.
  struct Slot {
    ChannelId channel = 0;
    int32_t seq = 0, layer = 0;
  };

  int32_t add(RankId r, double time, Op op, ChannelId ch,
              std::vector<int32_t> deps) {
    return add(r, time, std::move(op), ch, std::move(deps), -1, Slot());
  }
  int32_t add(RankId r, double time, Op op, ChannelId ch,
              std::vector<int32_t> deps, int32_t link, Slot slot) {
    op.channel = ch;
    if (sends(op.kind))
      ++numTransfers;
    ops[r].push_back({time, std::move(op), std::move(deps), link,
                      link >= 0 ? slot.seq : -1, slot.layer});
    return static_cast<int32_t>(ops[r].size() - 1);
  }
  BufferRef scratch(RankId r) {
    return {BufferKind::Scratch, scratchEnd[r]++, 1};
  }

  /// The next transfer on link `e`, whose sending threadblock runs
  /// `steps` steps for it: the link's channel in the layer the steps so far
  /// reach (maxStepsPerChannel per layer).
  Slot slotOf(int32_t e, int32_t steps = 1) {
    const int32_t k = linkLoad[e];
    linkLoad[e] += steps;
    const int32_t layer =
        o.maxStepsPerChannel > 0 ? k / o.maxStepsPerChannel : 0;
    numLayers = std::max(numLayers, layer + 1);
    return {layer * numBase + base[e], linkSeq[e]++, layer};
  }

  /// The first send of each layer after the first waits for the last send
  /// of the layer before on its link, so the link keeps the matching's
  /// order across the threadblocks of its layers.
  void chainLayers(std::vector<Timed> &list) const {
    if (o.maxStepsPerChannel <= 0)
      return;
    std::map<std::pair<int32_t, int32_t>, int32_t> bySeq; // (link, seq)
    for (size_t i = 0; i < list.size(); ++i)
      if (list[i].link >= 0)
        bySeq[{list[i].link, list[i].seq}] = static_cast<int32_t>(i);
    for (size_t i = 0; i < list.size(); ++i) {
      const Timed &t = list[i];
      if (t.link < 0 || t.seq == 0)
        continue;
      auto prev = bySeq.find({t.link, t.seq - 1});
      if (prev != bySeq.end() && list[prev->second].layer != t.layer)
        list[i].deps.push_back(prev->second);
    }
  }

  /// Channels per layer: a proper edge colouring of the link graph (the
  /// smallest colour free at both ends, pairs in order), each colour giving
  /// one channel per direction, so every link of a rank has a channel of
  /// its own and a threadblock sends to one peer or receives from one.
  void colourLinks() {
    std::map<std::pair<int32_t, int32_t>, int32_t> pairColour;
    std::vector<std::set<int32_t>> used(n);
    int32_t colours = 0;
    base.assign(o.links.size(), 0);
    for (size_t e = 0; e < o.links.size(); ++e) {
      const int32_t a = std::min(o.links[e].from, o.links[e].to);
      const int32_t b = std::max(o.links[e].from, o.links[e].to);
      auto [it, fresh] = pairColour.insert({{a, b}, 0});
      if (fresh) {
        int32_t c = 0;
        while (used[a].count(c) || used[b].count(c))
          ++c;
        it->second = c;
        used[a].insert(c);
        used[b].insert(c);
        colours = std::max(colours, c + 1);
      }
      base[e] = 2 * it->second + (o.links[e].from < o.links[e].to ? 0 : 1);
    }
    numBase = std::max(1, 2 * colours);
  }

  const MatchingOptions &o;
  Schedule &s;
  const int32_t n, K;
  std::vector<std::vector<Timed>> ops;
  std::vector<int32_t> scratchEnd;
  std::vector<int32_t> base;              ///< per link: its channel in layer 0
  std::vector<int32_t> linkLoad, linkSeq; ///< per link: steps, transfers
  int32_t numBase = 1, numLayers = 1;
  int64_t numTransfers = 0;
  MsgId nextMsg = 0;
  /// Per (rank, unit): the reduce-phase op that reads the rank's
  /// contribution last, and the owner's op that completes the reduction.
  std::vector<std::vector<int32_t>> readsOwn, reduceDone;
};

} // namespace

llvm::Expected<Schedule> lowerMatching(const MatchingOptions &o,
                                       MatchingInfo *info) {
  std::vector<std::string> problems;
  if (o.collective != Collective::AllGather &&
      o.collective != Collective::ReduceScatter &&
      o.collective != Collective::AllReduce)
    problems.push_back(llvm::formatv(
        "--algorithm matching lowers allgather, reducescatter and allreduce, "
        "not {0}",
        collectiveName(o.collective)));
  if (o.numRanks < 1)
    problems.push_back(llvm::formatv("{0} ranks", o.numRanks));
  if (o.chunks < 1)
    problems.push_back(
        llvm::formatv("--chunks must be at least 1, got {0}", o.chunks));
  else if (int64_t(o.numRanks) * o.chunks > 32767)
    problems.push_back(llvm::formatv(
        "ranks * chunks = {0} units exceeds 32767 (MSCCL stores offsets in "
        "16 bits); use fewer chunks",
        int64_t(o.numRanks) * o.chunks));
  if (o.maxStepsPerChannel < 0)
    problems.push_back("a negative step limit per channel");
  if (!problems.empty())
    return makeUserError(llvm::join(problems, "\n"));

  const int32_t n = o.numRanks, K = o.chunks, C = n * K;
  BroadcastProblem ag;
  ag.numRanks = n;
  ag.links = o.links;
  for (int32_t c = 0; c < C; ++c)
    ag.origin.push_back(c / K);

  Schedule s;
  s.collective = o.collective;
  s.numRanks = n;
  s.chunksPerLoop = C;
  s.inplace = o.inplace;
  s.stage = Stage::Lowered;
  s.name = o.name.empty() ? llvm::formatv("matching_{0}_n{1}_k{2}_{3}",
                                          collectiveName(o.collective), n, K,
                                          o.inplace ? "inplace" : "outofplace")
                                .str()
                          : o.name;
  s.ranks.resize(n);
  MatchingEmitter em(o, s);
  double synthesized = 0;
  if (o.collective != Collective::AllGather) {
    BroadcastProblem reversed = ag;
    for (MatchLink &l : reversed.links)
      std::swap(l.from, l.to);
    auto plan = algorithms::matchBroadcasts(reversed);
    if (!plan)
      return plan.takeError();
    synthesized = plan->finish;
    std::vector<double> done = em.reducePhase(*plan);
    if (o.collective == Collective::AllReduce)
      ag.release = std::move(done);
  }
  if (o.collective != Collective::ReduceScatter) {
    auto plan = algorithms::matchBroadcasts(ag);
    if (!plan)
      return plan.takeError();
    synthesized = std::max(synthesized, plan->finish);
    em.gatherPhase(*plan);
  }
  em.finish();
  if (info) {
    info->synthesizedTime = synthesized;
    info->transfers = em.transfers();
    info->channelsPerLayer = em.channelsPerLayer();
    info->layers = em.layers();
  }
  return s;
}

} // namespace topocc::passes
