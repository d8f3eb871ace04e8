//===- compiler/analysis/Simulator.cpp - Discrete-event schedule simulator ===//
//
// Layout for speed: ops get dense global ids (rank base + op index), their
// successors are one CSR array, routes are precomputed once per (src, dst)
// pair as stages of (resource, fraction, latency), and the event queue is a
// binary heap of 24-byte records reserved up front. Ops whose inputs are all
// there and that cost no time complete inline through a work list, so a
// message costs one heap event per hop.
//
//===----------------------------------------------------------------------===//

#include "compiler/analysis/Simulator.h"

#include "support/Diagnostics.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cassert>
#include <queue>

namespace topocc::analysis {

double defaultReduceBandwidth(llvm::StringRef model) {
  struct Entry {
    const char *key;
    double memGBs;
  };
  // Most specific keys first; matched as substrings of the lower-case model.
  static const Entry kTable[] = {
      {"h200", 4800},      {"h100-pcie", 2000}, {"h100", 3350},
      {"a100-pcie", 1935}, {"a100", 2039},      {"v100", 900},
      {"mi250", 1638},
  };
  std::string lower = model.lower();
  for (const Entry &e : kTable)
    if (llvm::StringRef(lower).contains(e.key))
      return e.memGBs * 1e9 / 3;
  return 0;
}

namespace {

enum class EvKind : uint8_t { HopArrive, Deliver, OpDone };

struct Event {
  double time;
  uint64_t seq;
  uint32_t id;
  EvKind kind;
};

struct EventLater {
  bool operator()(const Event &a, const Event &b) const {
    if (a.time != b.time)
      return a.time > b.time;
    return a.seq > b.seq;
  }
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

struct Message {
  uint32_t senderOp = 0, receiverOp = 0; ///< global op ids
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
    queue.push(Event{time, seq++, id, k});
  }
  void drain();

  const ir::Schedule &s;
  LinkModel &m;
  const topo::Topology &t;
  const SimOptions &o;

  // Ops.
  std::vector<uint32_t> base;      ///< per rank, first global op id
  std::vector<uint32_t> opRank;    ///< per global op
  std::vector<uint32_t> succBegin; ///< CSR of successors
  std::vector<uint32_t> succ;
  std::vector<int32_t> pending;
  std::vector<int32_t> sendMsg, recvMsg; ///< per global op, -1 when none
  std::vector<double> cost;              ///< local work, seconds
  std::vector<double> start, end;
  std::vector<int32_t> critPred, critMsg;
  std::vector<uint8_t> done;

  // Network.
  std::vector<Message> msgs;
  std::vector<Route> routes;
  std::vector<uint32_t> stageBegin; ///< stage i: entries [stageBegin[i], [i+1])
  std::vector<RouteEntry> entries;
  llvm::DenseMap<uint64_t, int> routeIndex;
  std::vector<double> freeAt, busy, bytesOn;

  std::priority_queue<Event, std::vector<Event>, EventLater> queue;
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
  const PathFlow &f = m.rankFlow(a, b);
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
  opRank.resize(total);
  pending.assign(total, 0);
  sendMsg.assign(total, -1);
  recvMsg.assign(total, -1);
  cost.assign(total, 0);
  start.assign(total, 0);
  end.assign(total, 0);
  critPred.assign(total, -1);
  critMsg.assign(total, -1);
  done.assign(total, 0);
  std::vector<uint32_t> outDeg(total + 1, 0);
  bool programOrder = s.stage >= ir::Stage::ThreadblocksAssigned;
  // Two passes over the edges: count, then fill the CSR.
  auto forEachEdge = [&](auto &&fn) {
    std::vector<std::pair<int, uint32_t>> lastInTb;
    for (size_t r = 0; r < n; ++r) {
      const auto &ops = s.ranks[r].ops;
      lastInTb.clear();
      for (size_t i = 0; i < ops.size(); ++i) {
        uint32_t g = base[r] + static_cast<uint32_t>(i);
        for (ir::OpId d : ops[i].deps)
          if (d >= 0 && static_cast<size_t>(d) < ops.size() &&
              static_cast<size_t>(d) != i)
            fn(base[r] + static_cast<uint32_t>(d), g);
        if (programOrder && ops[i].threadblock >= 0) {
          auto it = llvm::find_if(lastInTb, [&](const auto &p) {
            return p.first == ops[i].threadblock;
          });
          if (it != lastInTb.end()) {
            fn(it->second, g);
            it->second = g;
          } else {
            lastInTb.push_back({ops[i].threadblock, g});
          }
        }
      }
    }
  };
  forEachEdge([&](uint32_t a, uint32_t b) {
    ++outDeg[a];
    ++pending[b];
  });
  succBegin.assign(total + 1, 0);
  for (uint32_t g = 0; g < total; ++g)
    succBegin[g + 1] = succBegin[g] + outDeg[g];
  succ.resize(succBegin[total]);
  std::vector<uint32_t> fill(succBegin.begin(), succBegin.end() - 1);
  forEachEdge([&](uint32_t a, uint32_t b) { succ[fill[a]++] = b; });

  // Local work and message ends.
  for (size_t r = 0; r < n; ++r) {
    double gamma = 0;
    if (o.reduceBandwidth)
      gamma = *o.reduceBandwidth > 0 ? 1 / *o.reduceBandwidth : 0;
    else {
      double bw = defaultReduceBandwidth(
          t.device(t.rankDevice(static_cast<int>(r))).model);
      gamma = bw > 0 ? 1 / bw : 0;
    }
    const auto &ops = s.ranks[r].ops;
    for (size_t i = 0; i < ops.size(); ++i) {
      uint32_t g = base[r] + static_cast<uint32_t>(i);
      opRank[g] = static_cast<uint32_t>(r);
      const ir::Op &op = ops[i];
      unsigned f = ir::opFlags(op.kind);
      double reduced = 0;
      if (f & ir::OF_RE)
        reduced = op.wireCount() * unit;
      else if (op.kind == ir::OpKind::Reduce)
        reduced = op.src.count * unit;
      else if (op.kind == ir::OpKind::LinComb)
        reduced = std::max<size_t>(1, op.terms.size() - 1) * op.dst.count *
                  unit;
      cost[g] = reduced * gamma;
    }
  }
  std::vector<ir::MsgEnds> ends = ir::indexMessages(s);
  stageBegin.assign(1, 0);
  msgs.resize(ends.size());
  for (size_t id = 0; id < ends.size(); ++id) {
    const ir::MsgEnds &e = ends[id];
    if ((e.sender < 0) != (e.receiver < 0))
      return makeUserError(llvm::formatv(
          "message {0} has no {1}; run the verifier", id,
          e.sender < 0 ? "sender" : "receiver"));
    if (e.sender < 0)
      continue;
    Message &msg = msgs[id];
    msg.senderOp = base[e.sender] + e.sendOp;
    msg.receiverOp = base[e.receiver] + e.recvOp;
    msg.bytes = s.ranks[e.sender].ops[e.sendOp].wireCount() * unit;
    sendMsg[msg.senderOp] = static_cast<int32_t>(id);
    recvMsg[msg.receiverOp] = static_cast<int32_t>(id);
    ++pending[msg.receiverOp];
    if (e.sender == e.receiver)
      continue;
    int route = routeFor(e.sender, e.receiver);
    if (route == -2)
      return makeUserError(llvm::formatv(
          "no route from rank {0} ({1}) to rank {2} ({3})", e.sender,
          t.rankName(e.sender), e.receiver, t.rankName(e.receiver)));
    msg.route = route;
  }
  int nres = m.numResources();
  freeAt.assign(nres, 0);
  busy.assign(nres, 0);
  bytesOn.assign(nres, 0);
  std::vector<Event> storage;
  storage.reserve(std::min<size_t>(msgs.size() + 16, 1u << 22));
  queue = decltype(queue)(EventLater(), std::move(storage));
  return llvm::Error::success();
}

void Sim::startOp(uint32_t g, double now) {
  start[g] = now;
  if (cost[g] > 0) {
    push(now + cost[g], EvKind::OpDone, g);
    return;
  }
  completeOp(g, now);
}

void Sim::completeOp(uint32_t g, double now) {
  end[g] = now;
  done[g] = 1;
  if (sendMsg[g] >= 0)
    inject(static_cast<uint32_t>(sendMsg[g]), now);
  for (uint32_t k = succBegin[g]; k < succBegin[g + 1]; ++k)
    release(succ[k], now, g, -1);
}

void Sim::release(uint32_t g, double now, uint32_t pred, int msg) {
  if (--pending[g] != 0)
    return;
  critPred[g] = static_cast<int32_t>(pred);
  critMsg[g] = msg;
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
    double b = msg.bytes * e.frac;
    double capacity = m.capacity(e.res);
    double serve = capacity > 0 ? b / capacity : 0;
    double s0 = std::max(now, freeAt[e.res]);
    double s1 = s0 + serve;
    if (cut)
      s1 = std::max(s1, msg.tail);
    freeAt[e.res] = s1;
    busy[e.res] += serve;
    bytesOn[e.res] += b;
    if (o.recordTransfers)
      transfers.push_back({e.res, static_cast<int>(id),
                           static_cast<int>(opRank[msg.senderOp]),
                           static_cast<int>(opRank[msg.receiverOp]), s0, s1,
                           b});
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
  // Ops with nothing to wait for start at time 0, in (rank, op) order.
  for (uint32_t g = total; g-- > 0;)
    if (pending[g] == 0)
      work.push_back({g, 0.0});
  drain();
  while (!queue.empty()) {
    Event e = queue.top();
    queue.pop();
    ++events;
    switch (e.kind) {
    case EvKind::HopArrive:
      hop(e.id, e.time);
      break;
    case EvKind::Deliver:
      release(msgs[e.id].receiverOp, e.time, msgs[e.id].senderOp,
              static_cast<int>(e.id));
      break;
    case EvKind::OpDone:
      completeOp(e.id, e.time);
      break;
    }
    drain();
  }
  std::vector<std::string> stuck;
  size_t numStuck = 0;
  for (uint32_t g = 0; g < total; ++g)
    if (!done[g]) {
      if (stuck.size() < 5)
        stuck.push_back(llvm::formatv("rank {0} %{1}", opRank[g],
                                      g - base[opRank[g]]));
      ++numStuck;
    }
  if (numStuck)
    return makeUserError(llvm::formatv(
        "schedule cannot run to the end: {0} op{1} never start ({2}{3}); a "
        "dependency cycle or a receive before its send in one threadblock; "
        "run the verifier",
        numStuck, numStuck == 1 ? "" : "s", llvm::join(stuck, ", "),
        numStuck > stuck.size() ? ", ..." : ""));

  SimResult res;
  res.bytes = o.bytes;
  res.events = events;
  res.rankFinish.assign(s.ranks.size(), 0);
  uint32_t last = 0;
  for (uint32_t g = 0; g < total; ++g) {
    double &f = res.rankFinish[opRank[g]];
    f = std::max(f, end[g]);
    if (end[g] > end[last])
      last = g;
  }
  for (double f : res.rankFinish)
    res.time = std::max(res.time, f);
  if (total > 0) {
    for (int32_t g = static_cast<int32_t>(last); g >= 0; g = critPred[g]) {
      uint32_t r = opRank[g];
      res.criticalPath.push_back({static_cast<int>(r),
                                  static_cast<int>(g - base[r]), start[g],
                                  end[g], critMsg[g]});
    }
    std::reverse(res.criticalPath.begin(), res.criticalPath.end());
  }
  for (int r = 0; r < m.numResources(); ++r)
    if (bytesOn[r] > 0)
      res.links.push_back({r, busy[r], bytesOn[r]});
  res.algbw = res.time > 0 ? o.bytes / res.time : 0;
  res.busbw = res.algbw * busFactor(s.collective, s.numRanks);
  if (o.recordTransfers) {
    std::stable_sort(transfers.begin(), transfers.end(),
                     [](const SimTransfer &a, const SimTransfer &b) {
                       return a.start < b.start;
                     });
    res.transfers = std::move(transfers);
  }
  return res;
}

} // namespace

llvm::Expected<SimResult> simulate(const ir::Schedule &s, LinkModel &m,
                                   const SimOptions &o) {
  Sim sim(s, m, o);
  return sim.run();
}

} // namespace topocc::analysis
