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
#include "compiler/analysis/NetRoutes.h"
#include "compiler/analysis/SimFold.h"

#include "support/Diagnostics.h"
#include "support/Progress.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <tuple>

namespace topocc::analysis {

double defaultReduceBandwidth(llvm::StringRef model) {
  return memoryBandwidth(model) / 3;
}

double leastMessageLatency(const topo::Topology &t) {
  double direct = std::numeric_limits<double>::infinity();
  double atRank = direct;
  for (const topo::Link &l : t.links()) {
    const bool from = t.device(l.from).rank >= 0;
    const bool to = t.device(l.to).rank >= 0;
    if (from && to)
      direct = std::min(direct, l.latency);
    if (from || to)
      atRank = std::min(atRank, l.latency);
  }
  const double least = std::min(direct, 2 * atRank);
  return std::isfinite(least) ? least : 0;
}

double leastChainTime(const topo::Topology &t, int64_t messages, SimMode mode,
                      const RuntimeParams &params) {
  return (mode == SimMode::Runtime ? params.kernelLatency : 0) +
         double(std::max<int64_t>(0, messages)) * leastMessageLatency(t);
}

llvm::StringRef simModeName(SimMode m) {
  switch (m) {
  case SimMode::StoreAndForward:
    return "store-and-forward";
  case SimMode::CutThrough:
    return "cut-through";
  case SimMode::Runtime:
    return "runtime";
  }
  return "runtime";
}

llvm::Expected<SimMode> parseSimMode(llvm::StringRef name) {
  for (SimMode m :
       {SimMode::Runtime, SimMode::CutThrough, SimMode::StoreAndForward})
    if (name == simModeName(m))
      return m;
  return makeUserError("invalid mode '" + name +
                       "' (expected runtime, cut-through or "
                       "store-and-forward)");
}

int runtimeIterations(const ir::Schedule &s, double bytes,
                      const RuntimeParams &p) {
  if (s.chunksPerLoop <= 0 || bytes <= 0 || p.loopChunkBytes <= 0)
    return 1;
  double perChunk = bytes / s.chunksPerLoop;
  double wanted = std::ceil(perChunk / p.loopChunkBytes);
  size_t numOps = 0;
  for (const ir::RankProgram &rp : s.ranks)
    numOps += rp.ops.size();
  double cap = numOps ? std::max<double>(1.0, std::floor(double(
                                                   p.maxOpInstances) /
                                               double(numOps)))
                      : 1.0;
  return static_cast<int>(std::clamp(wanted, 1.0, cap));
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
  int32_t channel = -1;                  ///< the sender's channel
  int32_t from = -1, to = -1;            ///< ranks; -1: no such end
  int32_t route = -1;                    ///< -1: local, delivered at once
  uint32_t stage = 0;
  double bytes = 0;
  /// Cut-through: when the tail reached the current stage. Runtime: when
  /// the tail may leave the sender (its input's tail), then when it
  /// reached the receiver.
  double tail = 0;
};

class Sim {
public:
  /// With `fold`, `s` is its quotient (SimFold.h).
  Sim(const ir::Schedule &s, LinkModel &m, const SimOptions &o,
      const SimFold *fold = nullptr)
      : s(s), m(m), t(m.topology()), o(o), fold(fold) {}

  llvm::Expected<SimResult> run();
  /// The fold's routes did not map onto each other: run() stopped after
  /// build() and the schedule must be simulated unfolded.
  bool foldRefused() const { return refused; }

private:
  llvm::Error build();
  int routeFor(int a, int b, int channel);
  int routeThrough(int a, int b, const PathFlow &f);
  /// With a fold: whether the routes of every used (from, to, channel)
  /// map onto the routes of their images (then each resource is replaced
  /// by its orbit's representative), so that folding keeps every link's
  /// traffic.
  bool foldRoutes(llvm::ArrayRef<std::tuple<int, int, int, int>> used);
  void startOp(uint32_t g, double now);
  void startRuntimeOp(uint32_t g, double now);
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
  void prefetchMessages(const ir::Op &op, int32_t offset) const {
    for (int32_t id : {op.sendMsg, op.recvMsg})
      if (id >= 0 && static_cast<size_t>(id + offset) < msgs.capacity())
        __builtin_prefetch(msgs.data() + id + offset, 1);
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
  const SimFold *fold;
  bool refused = false; ///< see foldRefused()
  bool runtime = false; ///< SimMode::Runtime
  int iterations = 1;
  int32_t msgStride = 0;

  /// (rank, op index in the schedule, iteration) of global op `g`.
  SimStep stepOf(uint32_t g) const {
    SimStep st;
    st.rank = static_cast<int>(ops[g].rank);
    uint32_t local = g - base[ops[g].rank];
    uint32_t perIter =
        static_cast<uint32_t>(s.ranks[ops[g].rank].ops.size());
    st.op = static_cast<int>(perIter ? local % perIter : local);
    st.iteration = static_cast<int>(perIter ? local / perIter : 0);
    return st;
  }

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
  /// Routes through given NICs, by (from, to, out NIC, in NIC).
  std::map<std::tuple<int, int, int, int>, int> viaIndex;
  std::optional<NcclNetRoutes> netRoutes; ///< Runtime with ncclNetRule
  std::map<uint64_t, NicPair> hints; ///< SimOptions::routeHints by pair
  std::vector<ResState> res;

  EventQueue queue;
  std::vector<std::pair<uint32_t, double>> work; ///< ops ready to start
  uint64_t seq = 0;
  size_t events = 0;
  std::vector<SimTransfer> transfers;
  size_t transferCount = 0; ///< recorded or not (SimOptions::maxTransfers)
};

int Sim::routeFor(int a, int b, int channel) {
  uint64_t key = static_cast<uint64_t>(a) << 32 | static_cast<uint32_t>(b);
  auto it = routeIndex.find(key);
  if (it != routeIndex.end())
    return it->second;
  auto hint = hints.find(key);
  if (hint == hints.end() && netRoutes && t.nodeOfRank(a) != t.nodeOfRank(b)) {
    // Across nodes the runtime's connection of this channel goes through
    // the NICs NCCL gives each end (NetRoutes.h).
    int out = netRoutes->nicFor(a, channel), in = netRoutes->nicFor(b, channel);
    if (out >= 0 && in >= 0) {
      auto key4 = std::make_tuple(a, b, out, in);
      auto v = viaIndex.find(key4);
      if (v != viaIndex.end())
        return v->second;
      const PathFlow &f = m.viaFlow(a, out, in, b);
      int id = f.found ? routeThrough(a, b, f) : -1;
      if (id == -1) // no route through those NICs: route freely
        id = routeThrough(a, b, m.rankFlow(a, b));
      viaIndex[key4] = id;
      return id;
    }
  }
  const PathFlow &f = hint != hints.end()
                          ? m.viaFlow(a, hint->second.out, hint->second.in, b)
                          : m.rankFlow(a, b);
  int id = routeThrough(a, b, f);
  routeIndex[key] = id;
  return id;
}

/// The route of flow `f` from rank a to b as stages (-2: no route).
int Sim::routeThrough(int a, int b, const PathFlow &f) {
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
  return static_cast<int>(routes.size()) - 1;
}

bool Sim::foldRoutes(llvm::ArrayRef<std::tuple<int, int, int, int>> usedIn) {
  std::vector<std::tuple<int, int, int, int>> used(usedIn.begin(),
                                                   usedIn.end());
  llvm::sort(used);
  used.erase(std::unique(used.begin(), used.end(),
                         [](const auto &x, const auto &y) {
                           return std::get<0>(x) == std::get<0>(y) &&
                                  std::get<1>(x) == std::get<1>(y) &&
                                  std::get<2>(x) == std::get<2>(y);
                         }),
             used.end());
  // Stage i of a route as sorted (resource, fraction, latency), the
  // resources moved by σ^j.
  using Entry = std::tuple<int, double, double>;
  auto stage = [&](int route, uint32_t i, int j) {
    std::vector<Entry> out;
    uint32_t st = routes[route].firstStage + i;
    for (uint32_t k = stageBegin[st]; k < stageBegin[st + 1]; ++k)
      out.emplace_back(fold->resources.image(entries[k].res, j),
                       entries[k].frac, entries[k].latency);
    llvm::sort(out);
    return out;
  };
  auto same = [](const std::vector<Entry> &x, const std::vector<Entry> &y) {
    if (x.size() != y.size())
      return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (std::get<0>(x[i]) != std::get<0>(y[i]) ||
          std::abs(std::get<1>(x[i]) - std::get<1>(y[i])) > 1e-9 ||
          std::abs(std::get<2>(x[i]) - std::get<2>(y[i])) >
              1e-9 * std::max(1e-9, std::abs(std::get<2>(x[i]))))
        return false;
    return true;
  };
  const int k = fold->order();
  for (auto [a, b, ch, route] : used) {
    for (int j = 1; j < k; ++j) {
      int image =
          routeFor(fold->ranks.image(a, j), fold->ranks.image(b, j), ch);
      if (image < 0 || routes[image].numStages != routes[route].numStages)
        return false;
      for (uint32_t i = 0; i < routes[route].numStages; ++i)
        if (!same(stage(route, i, j), stage(image, i, 0)))
          return false;
    }
    // A stage that crosses two resources of one orbit would queue both
    // shares on its representative.
    for (uint32_t i = 0; i < routes[route].numStages; ++i) {
      std::vector<int> reps;
      uint32_t st = routes[route].firstStage + i;
      for (uint32_t e = stageBegin[st]; e < stageBegin[st + 1]; ++e)
        reps.push_back(fold->resources.rep(entries[e].res));
      llvm::sort(reps);
      if (std::adjacent_find(reps.begin(), reps.end()) != reps.end())
        return false;
    }
  }
  for (RouteEntry &e : entries)
    e.res = fold->resources.rep(e.res);
  return true;
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
  runtime = o.mode == SimMode::Runtime;
  iterations = runtime ? runtimeIterations(s, o.bytes, o.runtime) : 1;
  double unit = o.bytes / s.chunksPerLoop / iterations;
  size_t n = s.ranks.size();
  base.assign(n + 1, 0);
  for (size_t r = 0; r < n; ++r)
    base[r + 1] = base[r] + static_cast<uint32_t>(s.ranks[r].ops.size()) *
                                static_cast<uint32_t>(iterations);
  uint32_t total = base[n];
  // Iteration k's message m is message k * msgStride + m.
  msgStride = 0;
  if (iterations > 1)
    for (const ir::RankProgram &rp : s.ranks)
      for (const ir::Op &op : rp.ops)
        msgStride = std::max<int32_t>(
            msgStride, std::max(op.sendMsg, op.recvMsg) + 1);
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
    uint32_t perIter = static_cast<uint32_t>(rops.size());
    lastInTb.clear();
    // Iterations one after another: a threadblock's program order runs on
    // from its last op of iteration k to its first of k + 1.
    for (int k = 0; k < iterations; ++k)
    for (size_t i = 0; i < rops.size(); ++i) {
      uint32_t first = base[r] + static_cast<uint32_t>(k) * perIter;
      uint32_t g = first + static_cast<uint32_t>(i);
      const ir::Op &op = rops[i];
      int32_t msgOffset = k * msgStride;
      // Message ids follow the lowering's step order, not rank order: the
      // message records this loop touches are cache misses. Ask for them a
      // few ops ahead (this was 60% of build() in perf).
      if (i + kPrefetchAhead < rops.size())
        prefetchMessages(rops[i + kPrefetchAhead], msgOffset);
      OpState &st = ops[g];
      st.rank = static_cast<uint32_t>(r);
      for (ir::OpId d : op.deps)
        if (d >= 0 && static_cast<size_t>(d) < rops.size() &&
            static_cast<size_t>(d) != i)
          edges.push_back({first + static_cast<uint32_t>(d), g});
      // Without threadblocks an op's next iteration follows it.
      if (k > 0 && !(programOrder && op.threadblock >= 0))
        edges.push_back({g - perIter, g});
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
        Message &msg = message(op.sendMsg + msgOffset);
        if (msg.from < 0) {
          msg.from = static_cast<int32_t>(r);
          msg.senderOp = g;
          msg.bytes = op.wireCount() * unit;
          msg.channel = op.channel;
          st.sendMsg = op.sendMsg + msgOffset;
        }
      }
      if (op.recvMsg >= 0) {
        Message &msg = message(op.recvMsg + msgOffset);
        if (msg.to < 0) {
          msg.to = static_cast<int32_t>(r);
          msg.receiverOp = g;
          st.recvMsg = op.recvMsg + msgOffset;
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
  if (runtime && o.runtime.ncclNetRule && t.numNodes() > 1)
    netRoutes.emplace(t);
  // Routes; consecutive messages mostly join the same pair. Folded, a
  // message goes to its sender's real peer, not to the representative
  // that receives it.
  int lastFrom = -1, lastTo = -1, lastChannel = -1, lastRoute = -1;
  std::vector<std::tuple<int, int, int, int>> used; ///< (from, to, ch, route)
  for (size_t id = 0; id < msgs.size(); ++id) {
    Message &msg = msgs[id];
    if ((msg.from < 0) != (msg.to < 0))
      return makeUserError(llvm::formatv(
          "message {0} has no {1}; run the verifier", id,
          msg.from < 0 ? "sender" : "receiver"));
    int to = msg.to;
    if (fold && msg.from >= 0) {
      SimStep st = stepOf(msg.senderOp);
      to = s.ranks[st.rank].ops[st.op].sendPeer;
    }
    if (msg.from < 0 || msg.from == to)
      continue;
    if (msg.from != lastFrom || to != lastTo ||
        (netRoutes && msg.channel != lastChannel)) {
      lastFrom = msg.from;
      lastTo = to;
      lastChannel = msg.channel;
      lastRoute = routeFor(msg.from, to, msg.channel);
      if (fold && lastRoute >= 0)
        used.emplace_back(msg.from, to, netRoutes ? msg.channel : -1,
                          lastRoute);
    }
    if (lastRoute == -2)
      return makeUserError(
          llvm::formatv("no route from rank {0} ({1}) to rank {2} ({3})",
                        msg.from, t.rankName(msg.from), to, t.rankName(to)));
    msg.route = lastRoute;
  }
  if (fold && !foldRoutes(used)) {
    refused = true;
    return llvm::Error::success();
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
  if (runtime) {
    startRuntimeOp(g, now);
    return;
  }
  if (st.cost > 0) {
    push(now + st.cost, EvKind::OpDone, g);
    return;
  }
  completeOp(g, now);
}

void Sim::startRuntimeOp(uint32_t g, double now) {
  OpState &st = ops[g];
  // The step works slice by slice: it starts on its input's first slice,
  // and its last slice is done after the input's tail and its own work.
  double slices = std::max(1, o.runtime.slicesPerStep);
  double inTail = st.recvMsg >= 0 ? msgs[st.recvMsg].tail : now;
  double endIn = std::max(now + st.cost, inTail + st.cost / slices);
  if (st.sendMsg < 0) {
    if (endIn > now)
      push(endIn, EvKind::OpDone, g);
    else
      completeOp(g, now);
    return;
  }
  Message &msg = msgs[st.sendMsg];
  if (msg.route < 0) {
    // A copy within the rank: the receiver starts on its first slice.
    msg.tail = endIn;
    push(now + (endIn - now) / slices, EvKind::Deliver,
         static_cast<uint32_t>(st.sendMsg));
    if (endIn > now)
      push(endIn, EvKind::OpDone, g);
    else
      completeOp(g, now);
    return;
  }
  // The send starts now; its tail cannot leave before endIn, and the step
  // (its threadblock) is done when the last byte is out (hop(), stage 0).
  msg.stage = 0;
  msg.tail = endIn;
  hop(static_cast<uint32_t>(st.sendMsg), now);
}

void Sim::completeOp(uint32_t g, double now) {
  OpState &st = ops[g];
  st.end = now;
  st.done = 1;
  if (st.sendMsg >= 0 && !runtime)
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
  bool cut = o.mode != SimMode::StoreAndForward;
  double headOut = now, tailOut = now, lastOut = now;
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
    if (o.recordTransfers && ++transferCount <= o.maxTransfers)
      transfers.push_back({e.res, static_cast<int>(id),
                           static_cast<int>(ops[msg.senderOp].rank),
                           static_cast<int>(ops[msg.receiverOp].rank), s0, s1,
                           b, static_cast<int>(msg.stage)});
    double h = s0 + e.latency, tl = s1 + e.latency;
    headOut = first ? h : std::max(headOut, h);
    tailOut = first ? tl : std::max(tailOut, tl);
    lastOut = first ? s1 : std::max(lastOut, s1);
    first = false;
  }
  // Runtime: the sending step holds its threadblock until its last byte
  // has left (and its input's tail is in).
  if (runtime && msg.stage == 0)
    push(std::max(lastOut, msg.tail), EvKind::OpDone, msg.senderOp);
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
  if (runtime) {
    // The receiving step starts on the first slice.
    double slices = std::max(1, o.runtime.slicesPerStep);
    msg.tail = tailOut;
    push(headOut + (tailOut - headOut) / slices, EvKind::Deliver, id);
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
  if (refused)
    return SimResult();
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
                                      stepOf(g).op));
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
  out.iterations = iterations;
  if (runtime) {
    out.launchLatency = o.runtime.kernelLatency;
    out.time += out.launchLatency;
  }
  if (total > 0) {
    for (int32_t g = static_cast<int32_t>(last); g >= 0;
         g = ops[g].critPred) {
      const OpState &st = ops[g];
      SimStep step = stepOf(static_cast<uint32_t>(g));
      step.start = st.start;
      step.end = st.end;
      step.viaMessage = st.critMsg >= 0 && msgStride > 0
                            ? st.critMsg % msgStride
                            : st.critMsg;
      out.criticalPath.push_back(step);
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
    out.transferCount = transferCount;
    if (transfers.size() == transferCount)
      out.flows = flowsOf(transfers);
    // Messages by their schedule ids, with the iteration beside.
    if (msgStride > 0)
      for (SimTransfer &x : transfers) {
        x.iteration = x.message / msgStride;
        x.message %= msgStride;
      }
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

namespace {

/// `r`, the result of simulating `fold`'s quotient, for every rank: each
/// rank finishes with its representative, each resource of an orbit
/// carries what its representative did, and the critical path follows
/// its messages' real receivers back from the last op.
SimResult unfold(SimResult r, const SimFold &fold) {
  const int n = static_cast<int>(r.rankFinish.size());
  for (int x = 0; x < n; ++x)
    r.rankFinish[x] = r.rankFinish[fold.ranks.rep(x)];
  std::vector<SimLinkStats> links;
  links.reserve(r.links.size() * fold.order());
  for (const SimLinkStats &l : r.links) {
    links.push_back(l);
    for (int j = 1; j < fold.order(); ++j) {
      int image = fold.resources.image(l.resource, j);
      if (image != l.resource)
        links.push_back({image, l.busy, l.bytes});
    }
  }
  llvm::sort(links, [](const SimLinkStats &a, const SimLinkStats &b) {
    return a.resource < b.resource;
  });
  r.links = std::move(links);
  // Step i runs on σ^frame(its representative); a message into it came
  // from the previous step, whose frame moves back by its peer's shift.
  int frame = 0;
  for (size_t i = r.criticalPath.size(); i-- > 0;) {
    SimStep &step = r.criticalPath[i];
    const int rep = step.rank;
    step.rank = fold.ranks.image(rep, frame);
    if (step.viaMessage >= 0 && i > 0) {
      const SimStep &prev = r.criticalPath[i - 1];
      const ir::Op &send = fold.quotient.ranks[prev.rank].ops[prev.op];
      if (send.sendPeer >= 0)
        frame -= fold.ranks.shift(send.sendPeer);
    }
  }
  r.foldOrder = fold.order();
  return r;
}

} // namespace

llvm::Expected<SimResult> simulate(const ir::Schedule &s, LinkModel &m,
                                   const SimOptions &o) {
  ProgressTask progress("simulate");
  if (o.fold && !o.recordTransfers) {
    std::vector<double> memBw = memoryBandwidthsFor(
        m.topology(), o.reduceBandwidth
                          ? std::optional<double>(3 * *o.reduceBandwidth)
                          : std::nullopt);
    if (std::optional<SimFold> fold = findSimFold(s, m, memBw)) {
      Sim sim(fold->quotient, m, o, &*fold);
      auto r = sim.run();
      // An error is reported by the unfolded run, with every rank's names.
      if (r && !sim.foldRefused())
        return unfold(std::move(*r), *fold);
      llvm::consumeError(r.takeError());
    }
  }
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
