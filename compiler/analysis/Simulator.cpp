//===- compiler/analysis/Simulator.cpp - Discrete-event schedule simulator ===//
//
// Layout for speed: ops get dense global ids (rank base + op index) and all
// their run-time state in one 64-byte record (one cache line: events jump
// between ranks, so separate arrays per field cost a miss each); their
// successors are one CSR array built from a single pass over the schedule;
// routes are precomputed once per (src, dst) pair as stages of (resource,
// fraction, latency); per-resource state is one record; the event queue is
// a binary heap of 24-byte records reserved up front. Ops whose inputs are
// all there and that cost no time complete inline through a work list, so a
// message costs one heap event per hop.
//
//===----------------------------------------------------------------------===//

#include "compiler/analysis/Simulator.h"

#include "compiler/analysis/ComputeModel.h"

#include "support/Diagnostics.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <map>
#include <numeric>

namespace topocc::analysis {

double defaultReduceBandwidth(llvm::StringRef model) {
  return memoryBandwidth(model) / 3;
}

namespace {

enum class EvKind : uint8_t { HopArrive, Deliver, OpDone };

struct Event {
  unsigned __int128 key; ///< time's bits (monotone for times >= 0), seq
  uint32_t id;
  EvKind kind;
  double time() const {
    uint64_t bits = static_cast<uint64_t>(key >> 64);
    double t;
    std::memcpy(&t, &bits, sizeof t);
    return t;
  }
};

/// A 4-ary min-heap of events by (time, creation order): half the levels of
/// a binary heap and branch-free 128-bit key comparisons. Pops in exactly
/// the order of any priority queue on that total order.
class EventQueue {
public:
  void reserve(size_t n) { heap.reserve(n); }
  bool empty() const { return heap.empty(); }
  void push(double time, uint64_t seq, uint32_t id, EvKind kind) {
    uint64_t bits = 0;
    if (time > 0)
      std::memcpy(&bits, &time, sizeof bits);
    Event e{static_cast<unsigned __int128>(bits) << 64 | seq, id, kind};
    size_t i = heap.size();
    heap.push_back(e);
    while (i > 0) {
      size_t p = (i - 1) / 4;
      if (!(e.key < heap[p].key))
        break;
      heap[i] = heap[p];
      i = p;
    }
    heap[i] = e;
  }
  Event pop() {
    Event top = heap.front();
    Event last = heap.back();
    heap.pop_back();
    size_t n = heap.size();
    if (n == 0)
      return top;
    size_t i = 0;
    while (true) {
      size_t c = 4 * i + 1;
      if (c >= n)
        break;
      size_t best = c;
      size_t end = std::min(c + 4, n);
      for (size_t k = c + 1; k < end; ++k)
        best = heap[k].key < heap[best].key ? k : best;
      if (!(heap[best].key < last.key))
        break;
      heap[i] = heap[best];
      i = best;
    }
    heap[i] = last;
    return top;
  }

private:
  std::vector<Event> heap;
};

/// One (resource, fraction) of one hop of a route.
struct RouteEntry {
  int res;
  double frac;
  double latency;
};

struct Route {
  uint32_t firstStage = 0, numStages = 0; ///< into stageBegin
};

/// Everything the event loop touches for one op.
struct alignas(64) OpState {
  double start = 0, end = 0;
  double cost = 0;          ///< local work, seconds
  uint32_t succBegin = 0;   ///< successors: succ[succBegin, succEnd)
  uint32_t succEnd = 0;
  uint32_t rank = 0;
  int32_t pending = 0;      ///< inputs still missing
  int32_t sendMsg = -1, recvMsg = -1;
  int32_t critPred = -1, critMsg = -1; ///< what released the op
  uint8_t done = 0;
};

/// One resource: its FIFO server and totals.
struct ResState {
  double freeAt = 0, busy = 0, bytes = 0;
  double secondsPerByte = 0; ///< 1 / capacity; 0 when unused
};

struct Message {
  uint32_t senderOp = 0, receiverOp = 0; ///< global op ids
  int32_t from = -1, to = -1;            ///< ranks; -1: no such end
  int32_t route = -1;                    ///< -1: local, delivered at once
  uint32_t stage = 0;
  double bytes = 0;
  double tail = 0; ///< cut-through: when the tail reached the current stage
};

class Sim {
public:
  Sim(const ir::Schedule &s, LinkModel &m, const SimOptions &o)
      : s(s), m(m), t(m.topology()), o(o) {}

  llvm::Expected<SimResult> run();

private:
  llvm::Error build();
  int routeFor(int a, int b);
  void startOp(uint32_t g, double now);
  void completeOp(uint32_t g, double now);
  void release(uint32_t g, double now, uint32_t pred, int msg);
  void inject(uint32_t msg, double now);
  void hop(uint32_t msg, double now);
  void push(double time, EvKind k, uint32_t id) {
    queue.push(time, seq++, id, k);
  }
  void drain();
  std::vector<SimFlow> flowsOf(const std::vector<SimTransfer> &xs);
  /// Starts loading the records of `op`'s messages (see build()).
  void prefetchMessages(const ir::Op &op) const {
    for (int32_t id : {op.sendMsg, op.recvMsg})
      if (id >= 0 && static_cast<size_t>(id) < msgs.capacity())
        __builtin_prefetch(msgs.data() + id, 1);
  }
  static constexpr size_t kPrefetchAhead = 8;
  /// Message `id`, growing the table (ids are dense in verified schedules).
  Message &message(int32_t id) {
    size_t i = static_cast<size_t>(id);
    if (i >= msgs.size())
      msgs.resize(std::max(i + 1, 2 * msgs.size()));
    numMsgs = std::max(numMsgs, i + 1);
    return msgs[i];
  }

  const ir::Schedule &s;
  LinkModel &m;
  const topo::Topology &t;
  const SimOptions &o;

  // Ops.
  std::vector<uint32_t> base; ///< per rank, first global op id
  std::vector<OpState> ops;   ///< per global op
  std::vector<uint32_t> succ; ///< CSR of successors

  // Network.
  std::vector<Message> msgs;
  size_t numMsgs = 0;
  std::vector<Route> routes;
  std::vector<uint32_t> stageBegin; ///< stage i: entries [stageBegin[i], [i+1])
  std::vector<RouteEntry> entries;
  llvm::DenseMap<uint64_t, int> routeIndex;
  std::map<uint64_t, NicPair> hints; ///< SimOptions::routeHints by pair
  std::vector<ResState> res;

  EventQueue queue;
  std::vector<std::pair<uint32_t, double>> work; ///< ops ready to start
  uint64_t seq = 0;
  size_t events = 0;
  std::vector<SimTransfer> transfers;
};

int Sim::routeFor(int a, int b) {
  uint64_t key = static_cast<uint64_t>(a) << 32 | static_cast<uint32_t>(b);
  auto it = routeIndex.find(key);
  if (it != routeIndex.end())
    return it->second;
  auto hint = hints.find(key);
  const PathFlow &f = hint != hints.end()
                          ? m.viaFlow(a, hint->second.out, hint->second.in, b)
                          : m.rankFlow(a, b);
  if (!f.found)
    return -2;
  Route r;
  r.firstStage = static_cast<uint32_t>(stageBegin.size() - 1);
  // Order the flow's resources into hops: a hop's resources leave a device
  // the previous hop reached (all paths are shortest, so levels are exact).
  std::vector<std::pair<int, double>> left(f.res.begin(), f.res.end());
  std::vector<int> frontier{t.rankDevice(a)};
  while (!left.empty()) {
    std::vector<int> next;
    std::vector<std::pair<int, double>> rest;
    size_t before = entries.size();
    for (auto [res, x] : left) {
      auto [u, v] = m.resourceEnds(res);
      bool half = t.link(res / 2).duplex == topo::Duplex::Half;
      bool fromU = llvm::is_contained(frontier, u);
      bool fromV = half && llvm::is_contained(frontier, v);
      if (!fromU && !fromV) {
        rest.push_back({res, x});
        continue;
      }
      entries.push_back({res, x, t.link(res / 2).latency});
      next.push_back(fromU ? v : u);
    }
    if (entries.size() == before) {
      // Not layered (cannot happen for shortest paths): one last stage.
      for (auto [res, x] : rest)
        entries.push_back({res, x, t.link(res / 2).latency});
      rest.clear();
    }
    stageBegin.push_back(static_cast<uint32_t>(entries.size()));
    ++r.numStages;
    llvm::sort(next);
    next.erase(std::unique(next.begin(), next.end()), next.end());
    frontier = std::move(next);
    left = std::move(rest);
  }
  routes.push_back(r);
  int id = static_cast<int>(routes.size()) - 1;
  routeIndex[key] = id;
  return id;
}

llvm::Error Sim::build() {
  if (s.numRanks != t.numRanks())
    return makeUserError(llvm::formatv(
        "schedule has {0} ranks but topology '{1}' has {2}", s.numRanks,
        t.name(), t.numRanks()));
  if (s.chunksPerLoop <= 0)
    return makeUserError("schedule has no chunks (chunksPerLoop = 0)");
  if (static_cast<int>(s.ranks.size()) != s.numRanks)
    return makeUserError(llvm::formatv(
        "schedule declares {0} ranks but has {1} rank programs", s.numRanks,
        s.ranks.size()));
  double unit = o.bytes / s.chunksPerLoop;
  size_t n = s.ranks.size();
  base.assign(n + 1, 0);
  for (size_t r = 0; r < n; ++r)
    base[r + 1] = base[r] + static_cast<uint32_t>(s.ranks[r].ops.size());
  uint32_t total = base[n];
  ops.assign(total, OpState());
  bool programOrder = s.stage >= ir::Stage::ThreadblocksAssigned;
  // One pass over the schedule: edges (a before b) and local work; then a
  // counting sort of the edges by source gives the CSR.
  std::vector<std::pair<uint32_t, uint32_t>> edges;
  edges.reserve(total);
  msgs.reserve(total);
  std::vector<std::pair<int, uint32_t>> lastInTb;
  // A reduction at reduceBandwidth moves 3 bytes of memory per byte.
  std::vector<double> memBw = memoryBandwidthsFor(
      t, o.reduceBandwidth ? std::optional<double>(3 * *o.reduceBandwidth)
                           : std::nullopt);
  for (size_t r = 0; r < n; ++r) {
    const auto &rops = s.ranks[r].ops;
    lastInTb.clear();
    for (size_t i = 0; i < rops.size(); ++i) {
      uint32_t g = base[r] + static_cast<uint32_t>(i);
      const ir::Op &op = rops[i];
      // Message ids follow the lowering's step order, not rank order: the
      // message records this loop touches are cache misses. Ask for them a
      // few ops ahead (this was 60% of build() in perf).
      if (i + kPrefetchAhead < rops.size())
        prefetchMessages(rops[i + kPrefetchAhead]);
      OpState &st = ops[g];
      st.rank = static_cast<uint32_t>(r);
      for (ir::OpId d : op.deps)
        if (d >= 0 && static_cast<size_t>(d) < rops.size() &&
            static_cast<size_t>(d) != i)
          edges.push_back({base[r] + static_cast<uint32_t>(d), g});
      if (programOrder && op.threadblock >= 0) {
        auto it = llvm::find_if(lastInTb, [&](const auto &p) {
          return p.first == op.threadblock;
        });
        if (it != lastInTb.end()) {
          edges.push_back({it->second, g});
          it->second = g;
        } else {
          lastInTb.push_back({op.threadblock, g});
        }
      }
      st.cost = computeTime(op, unit, memBw[r]);
      // Message ends; the first one wins (the verifier reports duplicates).
      if (op.sendMsg >= 0) {
        Message &msg = message(op.sendMsg);
        if (msg.from < 0) {
          msg.from = static_cast<int32_t>(r);
          msg.senderOp = g;
          msg.bytes = op.wireCount() * unit;
          st.sendMsg = op.sendMsg;
        }
      }
      if (op.recvMsg >= 0) {
        Message &msg = message(op.recvMsg);
        if (msg.to < 0) {
          msg.to = static_cast<int32_t>(r);
          msg.receiverOp = g;
          st.recvMsg = op.recvMsg;
          ++st.pending;
        }
      }
    }
  }
  msgs.resize(numMsgs);
  std::vector<uint32_t> fill(total + 1, 0);
  for (auto [a, b] : edges) {
    ++fill[a + 1];
    ++ops[b].pending;
  }
  for (uint32_t g = 0; g < total; ++g) {
    fill[g + 1] += fill[g];
    ops[g].succBegin = fill[g];
    ops[g].succEnd = fill[g + 1];
    if (ops[g].pending == 0)
      work.push_back({g, 0.0});
  }
  succ.resize(edges.size());
  for (auto [a, b] : edges)
    succ[fill[a]++] = b;
  edges = {};

  stageBegin.assign(1, 0);
  for (const SimRouteHint &h : o.routeHints)
    hints.emplace(static_cast<uint64_t>(h.from) << 32 |
                      static_cast<uint32_t>(h.to),
                  h.nics);
  // Routes; consecutive messages mostly join the same pair.
  int lastFrom = -1, lastTo = -1, lastRoute = -1;
  for (size_t id = 0; id < msgs.size(); ++id) {
    Message &msg = msgs[id];
    if ((msg.from < 0) != (msg.to < 0))
      return makeUserError(llvm::formatv(
          "message {0} has no {1}; run the verifier", id,
          msg.from < 0 ? "sender" : "receiver"));
    if (msg.from < 0 || msg.from == msg.to)
      continue;
    if (msg.from != lastFrom || msg.to != lastTo) {
      lastFrom = msg.from;
      lastTo = msg.to;
      lastRoute = routeFor(msg.from, msg.to);
    }
    if (lastRoute == -2)
      return makeUserError(llvm::formatv(
          "no route from rank {0} ({1}) to rank {2} ({3})", msg.from,
          t.rankName(msg.from), msg.to, t.rankName(msg.to)));
    msg.route = lastRoute;
  }
  res.assign(m.numResources(), ResState());
  for (int k = 0; k < m.numResources(); ++k)
    res[k].secondsPerByte = m.capacity(k) > 0 ? 1 / m.capacity(k) : 0;
  queue.reserve(std::min<size_t>(msgs.size() + 16, 1u << 16));
  return llvm::Error::success();
}

void Sim::startOp(uint32_t g, double now) {
  OpState &st = ops[g];
  st.start = now;
  if (st.cost > 0) {
    push(now + st.cost, EvKind::OpDone, g);
    return;
  }
  completeOp(g, now);
}

void Sim::completeOp(uint32_t g, double now) {
  OpState &st = ops[g];
  st.end = now;
  st.done = 1;
  if (st.sendMsg >= 0)
    inject(static_cast<uint32_t>(st.sendMsg), now);
  for (uint32_t k = st.succBegin; k < st.succEnd; ++k)
    release(succ[k], now, g, -1);
}

void Sim::release(uint32_t g, double now, uint32_t pred, int msg) {
  OpState &st = ops[g];
  if (--st.pending != 0)
    return;
  st.critPred = static_cast<int32_t>(pred);
  st.critMsg = msg;
  work.push_back({g, now});
}

void Sim::inject(uint32_t id, double now) {
  Message &msg = msgs[id];
  if (msg.route < 0) {
    release(msg.receiverOp, now, msg.senderOp, static_cast<int>(id));
    return;
  }
  msg.stage = 0;
  msg.tail = now;
  hop(id, now);
}

void Sim::hop(uint32_t id, double now) {
  Message &msg = msgs[id];
  const Route &r = routes[msg.route];
  uint32_t st = r.firstStage + msg.stage;
  bool cut = o.mode == SimMode::CutThrough;
  double headOut = now, tailOut = now;
  bool first = true;
  for (uint32_t k = stageBegin[st]; k < stageBegin[st + 1]; ++k) {
    const RouteEntry &e = entries[k];
    ResState &rs = res[e.res];
    double b = msg.bytes * e.frac;
    double serve = b * rs.secondsPerByte;
    double s0 = std::max(now, rs.freeAt);
    double s1 = s0 + serve;
    if (cut)
      s1 = std::max(s1, msg.tail);
    rs.freeAt = s1;
    rs.busy += serve;
    rs.bytes += b;
    if (o.recordTransfers)
      transfers.push_back({e.res, static_cast<int>(id),
                           static_cast<int>(ops[msg.senderOp].rank),
                           static_cast<int>(ops[msg.receiverOp].rank), s0, s1,
                           b, static_cast<int>(msg.stage)});
    double h = s0 + e.latency, tl = s1 + e.latency;
    headOut = first ? h : std::max(headOut, h);
    tailOut = first ? tl : std::max(tailOut, tl);
    first = false;
  }
  ++msg.stage;
  if (msg.stage < r.numStages) {
    if (cut) {
      msg.tail = tailOut;
      push(headOut, EvKind::HopArrive, id);
    } else {
      push(tailOut, EvKind::HopArrive, id);
    }
    return;
  }
  push(tailOut, EvKind::Deliver, id);
}

void Sim::drain() {
  while (!work.empty()) {
    auto [g, now] = work.back();
    work.pop_back();
    startOp(g, now);
  }
}

llvm::Expected<SimResult> Sim::run() {
  if (auto err = build())
    return err;
  uint32_t total = base.back();
  // Ops with nothing to wait for start at time 0, in (rank, op) order
  // (build() listed them in `work` in that order; the work list is a stack).
  std::reverse(work.begin(), work.end());
  drain();
  while (!queue.empty()) {
    Event e = queue.pop();
    double now = e.time();
    ++events;
    switch (e.kind) {
    case EvKind::HopArrive:
      hop(e.id, now);
      break;
    case EvKind::Deliver:
      release(msgs[e.id].receiverOp, now, msgs[e.id].senderOp,
              static_cast<int>(e.id));
      break;
    case EvKind::OpDone:
      completeOp(e.id, now);
      break;
    }
    drain();
  }
  // One pass: ops that never ran, finish times, the last op.
  SimResult out;
  out.bytes = o.bytes;
  out.events = events;
  out.rankFinish.assign(s.ranks.size(), 0);
  uint32_t last = 0;
  std::vector<std::string> stuck;
  size_t numStuck = 0;
  for (uint32_t g = 0; g < total; ++g) {
    const OpState &st = ops[g];
    if (!st.done) {
      if (stuck.size() < 5)
        stuck.push_back(llvm::formatv("rank {0} %{1}", st.rank,
                                      g - base[st.rank]));
      ++numStuck;
      continue;
    }
    double &f = out.rankFinish[st.rank];
    f = std::max(f, st.end);
    if (st.end > ops[last].end)
      last = g;
  }
  if (numStuck)
    return makeUserError(llvm::formatv(
        "schedule cannot run to the end: {0} op{1} never start ({2}{3}); a "
        "dependency cycle or a receive before its send in one threadblock; "
        "run the verifier",
        numStuck, numStuck == 1 ? "" : "s", llvm::join(stuck, ", "),
        numStuck > stuck.size() ? ", ..." : ""));

  for (double f : out.rankFinish)
    out.time = std::max(out.time, f);
  if (total > 0) {
    for (int32_t g = static_cast<int32_t>(last); g >= 0;
         g = ops[g].critPred) {
      const OpState &st = ops[g];
      out.criticalPath.push_back({static_cast<int>(st.rank),
                                  static_cast<int>(g - base[st.rank]),
                                  st.start, st.end, st.critMsg});
    }
    std::reverse(out.criticalPath.begin(), out.criticalPath.end());
  }
  for (int r = 0; r < m.numResources(); ++r)
    if (res[r].bytes > 0)
      out.links.push_back({r, res[r].busy, res[r].bytes});
  out.algbw = out.time > 0 ? o.bytes / out.time : 0;
  out.busbw = out.algbw * busFactor(s.collective, s.numRanks);
  if (o.recordTransfers) {
    std::stable_sort(transfers.begin(), transfers.end(),
                     [](const SimTransfer &a, const SimTransfer &b) {
                       return a.start < b.start;
                     });
    out.flows = flowsOf(transfers);
    out.transfers = std::move(transfers);
  }
  return out;
}

std::vector<SimFlow> Sim::flowsOf(const std::vector<SimTransfer> &xs) {
  // Transfers grouped by (message, stage), in trace order within a group.
  std::vector<int> byMsg(xs.size());
  for (size_t i = 0; i < xs.size(); ++i)
    byMsg[i] = static_cast<int>(i);
  std::stable_sort(byMsg.begin(), byMsg.end(), [&](int a, int b) {
    return std::pair(xs[a].message, xs[a].stage) <
           std::pair(xs[b].message, xs[b].stage);
  });
  auto later = [&](int a, int b) { return xs[b].end > xs[a].end ? b : a; };
  std::vector<int> firstOfMsg(msgs.size(), -1); ///< into byMsg
  std::vector<int> lastHop(msgs.size(), -1);    ///< transfer ending last
  std::vector<SimFlow> out;
  for (size_t i = 0; i < byMsg.size();) {
    int m = xs[byMsg[i]].message;
    firstOfMsg[m] = static_cast<int>(i);
    int prevLast = -1;
    while (i < byMsg.size() && xs[byMsg[i]].message == m) {
      int stage = xs[byMsg[i]].stage, last = byMsg[i];
      for (; i < byMsg.size() && xs[byMsg[i]].message == m &&
             xs[byMsg[i]].stage == stage;
           ++i) {
        last = later(last, byMsg[i]);
        if (prevLast >= 0)
          out.push_back({prevLast, byMsg[i], true});
      }
      prevLast = last;
    }
    lastHop[m] = prevLast;
  }
  // The message whose arrival released an op, through same-rank chains.
  std::vector<int32_t> released(ops.size(), -2);
  auto releasedBy = [&](uint32_t g) {
    std::vector<uint32_t> chain;
    int32_t m = -1;
    for (int32_t x = static_cast<int32_t>(g); x >= 0; x = ops[x].critPred) {
      if (released[x] != -2) {
        m = released[x];
        break;
      }
      chain.push_back(static_cast<uint32_t>(x));
      if (ops[x].critMsg >= 0) {
        m = ops[x].critMsg;
        break;
      }
    }
    for (uint32_t x : chain)
      released[x] = m;
    return m;
  };
  for (size_t m2 = 0; m2 < msgs.size(); ++m2) {
    if (firstOfMsg[m2] < 0)
      continue;
    int32_t m1 = releasedBy(msgs[m2].senderOp);
    if (m1 < 0 || lastHop[m1] < 0)
      continue;
    for (size_t i = firstOfMsg[m2];
         i < byMsg.size() && xs[byMsg[i]].message == static_cast<int>(m2) &&
         xs[byMsg[i]].stage == 0;
         ++i)
      out.push_back({lastHop[m1], byMsg[i], false});
  }
  llvm::sort(out, [](const SimFlow &a, const SimFlow &b) {
    return std::pair(a.to, a.from) < std::pair(b.to, b.from);
  });
  return out;
}

} // namespace

llvm::Expected<SimResult> simulate(const ir::Schedule &s, LinkModel &m,
                                   const SimOptions &o) {
  Sim sim(s, m, o);
  return sim.run();
}

std::vector<SimRouteHint> ringRouteHints(llvm::ArrayRef<RingChannel> rings) {
  std::vector<SimRouteHint> hints;
  for (const RingChannel &rc : rings)
    for (size_t i = 0; i < rc.nics.size() && i < rc.order.size(); ++i)
      if (rc.nics[i].isSet())
        hints.push_back(
            {rc.order[i], rc.order[(i + 1) % rc.order.size()], rc.nics[i]});
  return hints;
}

} // namespace topocc::analysis
