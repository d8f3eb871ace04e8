//===- compiler/analysis/Bound.cpp - Exact cut bound (ForestColl) ---------===//
//
// Dinkelbach iteration over integer max-flows (docs/Algorithms-trees.md, "The
// bound"). For lambda = p/q the network H has capacity p b(e) on every arc and
// q on an arc from a super-source s to every GPU; the min s-v cut with source
// side {s} u S has capacity q |GPUs \ S| + p B+(S), so q N - flow(s, v) is the
// best score q n(S) - p d(S) over sets S that miss v. The iteration adopts the
// best set's ratio until no set scores above 0 (at most N rounds).
//
//===----------------------------------------------------------------------===//

#include "compiler/analysis/Bound.h"

#include "support/Diagnostics.h"
#include "support/Progress.h"

#include "llvm/Support/FormatVariadic.h"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/boykov_kolmogorov_max_flow.hpp>
#include <boost/property_map/property_map.hpp>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cmath>
#include <limits>
#include <numeric>
#include <thread>

namespace topocc::analysis {

using Wide = __int128;

namespace {

Wide wideGcd(Wide a, Wide b) {
  if (a < 0)
    a = -a;
  if (b < 0)
    b = -b;
  while (b != 0) {
    Wide t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/// num/den reduced, or an error when it does not fit int64.
llvm::Expected<Fraction> wideFraction(Wide num, Wide den) {
  if (den <= 0 || num < 0)
    return makeInternalError("bound: invalid fraction");
  Wide g = wideGcd(num, den);
  if (g > 1) {
    num /= g;
    den /= g;
  }
  constexpr Wide kMax = std::numeric_limits<int64_t>::max();
  if (num > kMax || den > kMax)
    return makeUserError("the bound's exact fraction does not fit in 64 "
                         "bits; the link bandwidths have too little in "
                         "common");
  return Fraction{static_cast<int64_t>(num), static_cast<int64_t>(den)};
}

//===--- Max-flow network (Boost.Graph Boykov-Kolmogorov) -----------------===//

using Traits = boost::adjacency_list_traits<boost::vecS, boost::vecS,
                                            boost::directedS>;
using FlowEdge = Traits::edge_descriptor;
struct FlowEdgeProps {
  int64_t cap = 0;
  int64_t res = 0;
  FlowEdge rev;
};
using FlowGraph = boost::adjacency_list<boost::vecS, boost::vecS,
                                        boost::directedS, boost::no_property,
                                        FlowEdgeProps>;

/// Arc endpoints in the orientation of the bound (reversed for RS).
std::pair<int, int> ends(const BoundGraph::Arc &a, bool reversed) {
  return reversed ? std::make_pair(a.to, a.from)
                  : std::make_pair(a.from, a.to);
}

BoundCut makeCut(const BoundGraph &g, bool reversed,
                 const std::vector<char> &inS) {
  BoundCut cut;
  for (int v = 0; v < g.numVertices; ++v)
    if (inS[v])
      cut.vertices.push_back(v);
  for (size_t r = 0; r < g.compute.size(); ++r)
    if (inS[g.compute[r]])
      cut.ranks.push_back(static_cast<int>(r));
  for (size_t i = 0; i < g.arcs.size(); ++i) {
    auto [u, w] = ends(g.arcs[i], reversed);
    if (inS[u] && !inS[w]) {
      cut.capacity += g.arcs[i].cap;
      cut.arcs.push_back(static_cast<int>(i));
    }
  }
  return cut;
}

/// Fills lambda, k and u from lambdaInt.
llvm::Error finish(const BoundGraph &g, DirectionalBound &b) {
  auto lambda = wideFraction(static_cast<Wide>(b.lambdaInt.num) * 1000000000,
                             static_cast<Wide>(b.lambdaInt.den) *
                                 g.quantumBytesPerSec);
  if (!lambda)
    return lambda.takeError();
  b.lambda = *lambda;
  int64_t capGcd = 0;
  for (const BoundGraph::Arc &a : g.arcs)
    capGcd = std::gcd(capGcd, a.cap);
  int64_t gg = std::gcd(b.lambdaInt.den, capGcd);
  b.k = b.lambdaInt.den / gg;
  b.unitDivisor = gg;
  auto u = wideFraction(static_cast<Wide>(b.k) * b.lambda.num, b.lambda.den);
  if (!u)
    return u.takeError();
  b.u = *u;
  return llvm::Error::success();
}

} // namespace

//===--- MaxFlowNetwork ---------------------------------------------------===//

struct MaxFlowNetwork::Impl {
  explicit Impl(int n) : g(n), color(n), dist(n), pred(n), reach(n, 0) {}
  FlowGraph g;
  std::vector<FlowEdge> arcs;
  std::vector<boost::default_color_type> color;
  std::vector<long> dist;
  std::vector<FlowEdge> pred;
  std::vector<char> reach;
};

MaxFlowNetwork::MaxFlowNetwork(int numVertices)
    : impl(std::make_unique<Impl>(numVertices)) {}
MaxFlowNetwork::~MaxFlowNetwork() = default;
MaxFlowNetwork::MaxFlowNetwork(MaxFlowNetwork &&) noexcept = default;
MaxFlowNetwork &MaxFlowNetwork::operator=(MaxFlowNetwork &&) noexcept = default;

int MaxFlowNetwork::numVertices() const {
  return static_cast<int>(boost::num_vertices(impl->g));
}

int MaxFlowNetwork::addVertex() {
  int v = static_cast<int>(boost::add_vertex(impl->g));
  impl->color.emplace_back();
  impl->dist.push_back(0);
  impl->pred.emplace_back();
  impl->reach.push_back(0);
  return v;
}

int MaxFlowNetwork::addArc(int from, int to, int64_t cap) {
  FlowGraph &g = impl->g;
  FlowEdge e = boost::add_edge(from, to, g).first;
  FlowEdge r = boost::add_edge(to, from, g).first;
  g[e].rev = r;
  g[r].rev = e;
  g[e].cap = cap;
  impl->arcs.push_back(e);
  return static_cast<int>(impl->arcs.size()) - 1;
}

void MaxFlowNetwork::setCapacity(int arc, int64_t cap) {
  impl->g[impl->arcs[arc]].cap = cap;
}

int64_t MaxFlowNetwork::capacity(int arc) const {
  return impl->g[impl->arcs[arc]].cap;
}

// The min-cut side is a BFS over residual arcs, not BK's colour map: on
// random graphs BK's source tree (black) was observed to differ from the
// residual-reachable set, giving a cut whose capacity is not the flow value.
int64_t MaxFlowNetwork::maxFlowValue(int s, int t) {
  FlowGraph &g = impl->g;
  auto index = boost::get(boost::vertex_index, g);
  return boost::boykov_kolmogorov_max_flow(
      g, boost::get(&FlowEdgeProps::cap, g),
      boost::get(&FlowEdgeProps::res, g), boost::get(&FlowEdgeProps::rev, g),
      boost::make_iterator_property_map(impl->pred.begin(), index),
      boost::make_iterator_property_map(impl->color.begin(), index),
      boost::make_iterator_property_map(impl->dist.begin(), index), index, s,
      t);
}

int64_t MaxFlowNetwork::maxFlow(int s, int t) {
  FlowGraph &g = impl->g;
  int64_t f = maxFlowValue(s, t);
  std::vector<char> &reach = impl->reach;
  reach.assign(boost::num_vertices(g), 0);
  std::vector<int> stack{s};
  reach[s] = 1;
  while (!stack.empty()) {
    int u = stack.back();
    stack.pop_back();
    for (auto [e, end] = boost::out_edges(u, g); e != end; ++e) {
      int w = static_cast<int>(boost::target(*e, g));
      if (!reach[w] && g[*e].res > 0) {
        reach[w] = 1;
        stack.push_back(w);
      }
    }
  }
  return f;
}

int64_t MaxFlowNetwork::flow(int arc) const {
  const FlowEdgeProps &e = impl->g[impl->arcs[arc]];
  return e.cap - e.res;
}

bool MaxFlowNetwork::sourceSide(int v) const { return impl->reach[v] != 0; }

Fraction Fraction::make(int64_t num, int64_t den) {
  assert(den > 0 && "Fraction::make: den must be positive");
  int64_t g = std::gcd(num, den);
  if (g == 0)
    g = 1;
  return Fraction{num / g, den / g};
}

std::string Fraction::str() const {
  if (den == 1)
    return std::to_string(num);
  return std::to_string(num) + "/" + std::to_string(den);
}

std::optional<int64_t> integralCapacity(double bytesPerSec) {
  double rounded = std::round(bytesPerSec);
  if (!(bytesPerSec >= 1) || !(rounded < 9.0e18) ||
      std::fabs(bytesPerSec - rounded) > 1e-9 * bytesPerSec)
    return std::nullopt;
  return static_cast<int64_t>(rounded);
}

std::vector<char> reachedFromFirstRank(const BoundGraph &g, bool reversed) {
  std::vector<char> seen(g.numVertices, 0);
  std::vector<std::vector<int>> adj(g.numVertices);
  for (const BoundGraph::Arc &a : g.arcs) {
    auto [u, w] = ends(a, reversed);
    adj[u].push_back(w);
  }
  std::vector<int> stack{g.compute[0]};
  seen[g.compute[0]] = 1;
  while (!stack.empty()) {
    int u = stack.back();
    stack.pop_back();
    for (int w : adj[u])
      if (!seen[w]) {
        seen[w] = 1;
        stack.push_back(w);
      }
  }
  return seen;
}

llvm::Error finishBoundGraph(BoundGraph &g, const topo::Topology &t) {
  int64_t quantum = 0;
  for (const BoundGraph::Arc &a : g.arcs)
    quantum = std::gcd(quantum, a.cap);
  if (quantum == 0)
    return makeUserError("the bound needs links between the GPUs; the "
                         "topology has none");
  Wide total = 0;
  for (BoundGraph::Arc &a : g.arcs) {
    a.cap /= quantum;
    total += a.cap;
  }
  g.quantumBytesPerSec = quantum;
  if (total * static_cast<Wide>(g.compute.size() + 1) >
      (static_cast<Wide>(1) << 62))
    return makeUserError(
        llvm::formatv("the link capacities span too wide a range for the "
                      "exact bound (sum {0} units of {1} bytes/s)",
                      static_cast<int64_t>(total), quantum));

  // Every GPU must reach every other (GPUs relay here).
  auto reach = [&](bool reversed) {
    std::vector<char> seen = reachedFromFirstRank(g, reversed);
    for (size_t r = 0; r < g.compute.size(); ++r)
      if (!seen[g.compute[r]])
        return static_cast<int>(r);
    return -1;
  };
  // Compute vertex r's name: the graph's own (a graph over some of the
  // ranks names them), else the topology's rank r.
  auto name = [&](int r) -> std::string {
    const size_t v = static_cast<size_t>(g.compute[r]);
    return v < g.names.size() ? g.names[v] : t.rankName(r);
  };
  for (bool rev : {false, true}) {
    int r = reach(rev);
    if (r >= 0)
      return makeUserError(llvm::formatv(
          "the bound needs every GPU to reach every other: no path from {0} "
          "to {1}",
          rev ? name(r) : name(0), rev ? name(0) : name(r)));
  }
  return llvm::Error::success();
}

llvm::Expected<BoundGraph> buildBoundGraph(const topo::Topology &t,
                                           CapacityKind kind) {
  BoundGraph g;
  g.numVertices = static_cast<int>(t.devices().size());
  for (int r = 0; r < t.numRanks(); ++r)
    g.compute.push_back(t.rankDevice(r));
  for (const topo::Device &d : t.devices())
    g.names.push_back(d.name);
  if (g.compute.size() < 2)
    return makeUserError(llvm::formatv("the bound needs at least 2 GPUs; "
                                       "the topology has {0}",
                                       g.compute.size()));
  DiagnosticList diags;
  std::vector<int64_t> caps;
  for (size_t li = 0; li < t.links().size(); ++li) {
    const topo::Link &l = t.link(static_cast<int>(li));
    std::string name = t.device(l.from).name + " -- " + t.device(l.to).name;
    if (l.duplex == topo::Duplex::Half) {
      diags.add(t.diag(l.loc, "link " + name +
                                  " is half duplex; the cut bound needs "
                                  "independent bandwidth per direction"));
      continue;
    }
    if (l.from == l.to)
      continue;
    for (int dir = 0; dir < 2; ++dir) {
      double c = kind == CapacityKind::Raw ? l.capacity(dir)
                                           : l.effectiveCapacity(dir);
      std::optional<int64_t> whole = integralCapacity(c);
      if (!whole) {
        diags.add(t.diag(
            l.loc, llvm::formatv("link {0}: capacity {1} bytes/s is not a "
                                 "whole number of bytes/s; the exact bound "
                                 "needs integral capacities",
                                 name, c)
                       .str()));
        continue;
      }
      BoundGraph::Arc a;
      a.from = dir == 0 ? l.from : l.to;
      a.to = dir == 0 ? l.to : l.from;
      a.cap = *whole;
      a.link = static_cast<int>(li);
      a.dir = dir;
      g.arcs.push_back(a);
    }
  }
  if (auto err = diags.takeError())
    return err;
  if (auto err = finishBoundGraph(g, t))
    return err;
  return g;
}

namespace {
/// Threads for a round of max flows: the machine's cores, at most 8, and
/// at least 64 ranks each (a thread per few small flows costs more than it
/// saves).
int boundWorkers(int ranks) {
  int cores = static_cast<int>(std::thread::hardware_concurrency());
  return std::clamp(std::min(cores, ranks / 64), 1, 8);
}
} // namespace

llvm::Expected<DirectionalBound>
dinkelbachBound(const BoundGraph &g, bool reversed, int workers, bool orbits) {
  const int n = static_cast<int>(g.compute.size());
  const int s = g.numVertices; // super-source
  if (n < 2)
    return makeInternalError("dinkelbachBound: fewer than 2 compute vertices");
  std::vector<char> isCompute(g.numVertices, 0);
  for (int v : g.compute)
    isCompute[v] = 1;

  // The ranks whose flows a round computes: one per orbit (the smallest,
  // so the first best rank of a serial loop over all ranks is among them),
  // or all.
  std::vector<int> todo;
  {
    std::vector<int> rep;
    if (orbits && n >= kOrbitMinRanks)
      rep = rankOrbits(g);
    for (int r = 0; r < n; ++r)
      if (rep.empty() || rep[r] == r)
        todo.push_back(r);
  }
  const int flows = static_cast<int>(todo.size());
  // One network per worker: each round's max flows are independent; the
  // workers take contiguous ranges of them and the first best rank wins as
  // in a serial loop, so the result does not depend on the number of
  // workers.
  if (workers <= 0)
    workers = boundWorkers(flows);
  workers = std::max(1, std::min(workers, flows));
  std::vector<MaxFlowNetwork> nets;
  for (int k = 0; k < workers; ++k) {
    MaxFlowNetwork &net = nets.emplace_back(g.numVertices + 1);
    for (const BoundGraph::Arc &a : g.arcs) {
      auto [u, w] = ends(a, reversed);
      net.addArc(u, w);
    }
    for (int v : g.compute)
      net.addArc(s, v);
  }
  const int firstSource = static_cast<int>(g.arcs.size());

  // Start: S = V \ {v} for the GPU v with the least entering capacity.
  std::vector<int64_t> in(g.numVertices, 0);
  for (const BoundGraph::Arc &a : g.arcs)
    in[ends(a, reversed).second] += a.cap;
  int start = 0;
  for (int r = 1; r < n; ++r)
    if (in[g.compute[r]] < in[g.compute[start]])
      start = r;
  if (in[g.compute[start]] == 0)
    return makeInternalError("dinkelbachBound: a GPU has no entering arc");
  std::vector<char> adopted(g.numVertices, 1);
  adopted[g.compute[start]] = 0;

  DirectionalBound b;
  Fraction lambda = Fraction::make(n - 1, in[g.compute[start]]);
  for (;;) {
    if (progressStopRequested())
      return makeUserError("the bound was stopped before its end");
    if (++b.iterations > n + 1)
      return makeInternalError("dinkelbachBound: no convergence after N "
                               "rounds");
    const int64_t p = lambda.num, q = lambda.den;
    for (size_t i = 0; i < g.arcs.size(); ++i) {
      int64_t c;
      if (__builtin_mul_overflow(p, g.arcs[i].cap, &c))
        return makeUserError("the bound's max-flow capacities overflow 64 "
                             "bits");
      for (MaxFlowNetwork &net : nets)
        net.setCapacity(static_cast<int>(i), c);
    }
    for (MaxFlowNetwork &net : nets)
      for (int r = 0; r < n; ++r)
        net.setCapacity(firstSource + r, q);
    ProgressTask progress(
        llvm::formatv("{0}: cut round {1}",
                      reversed ? "reducescatter" : "allgather", b.iterations)
            .str(),
        flows, "max flows");
    // Worker k: todo[flows k / workers, flows (k + 1) / workers); its best
    // score (the first rank reaching it) and that flow's source side.
    struct Best {
      Wide score = 0;
      std::vector<char> side;
    };
    std::vector<Best> bests(workers);
    std::atomic<int> done{0};
    auto work = [&](int k) {
      MaxFlowNetwork &net = nets[k];
      for (int i = flows * k / workers; i < flows * (k + 1) / workers; ++i) {
        int64_t f = net.maxFlow(s, g.compute[todo[i]]);
        ++done;
        if (k == 0) // the sink is called from this thread only
          progress.set(done);
        Wide score = static_cast<Wide>(q) * n - f;
        if (score > bests[k].score) {
          bests[k].score = score;
          bests[k].side.assign(g.numVertices, 0);
          for (int x = 0; x < g.numVertices; ++x)
            bests[k].side[x] = net.sourceSide(x) ? 1 : 0;
        }
      }
    };
    {
      std::vector<std::thread> threads;
      for (int k = 1; k < workers; ++k)
        threads.emplace_back(work, k);
      work(0);
      for (std::thread &th : threads)
        th.join();
      progress.set(done);
    }
    b.maxFlows += flows;
    Wide best = 0;
    std::vector<char> bestS;
    for (Best &w : bests)
      if (w.score > best) {
        best = w.score;
        bestS = std::move(w.side);
      }
    if (best == 0)
      break;
    // Adopt the best set's ratio (strictly larger than lambda).
    int nS = 0;
    for (int v : g.compute)
      nS += bestS[v];
    BoundCut cut = makeCut(g, reversed, bestS);
    if (static_cast<Wide>(q) * nS - static_cast<Wide>(p) * cut.capacity !=
            best ||
        cut.capacity == 0)
      return makeInternalError(
          "dinkelbachBound: the min-cut side does not match the flow value");
    adopted = std::move(bestS);
    lambda = Fraction::make(nS, cut.capacity);
  }
  b.lambdaInt = lambda;
  b.cut = makeCut(g, reversed, adopted);
  if (auto err = finish(g, b))
    return err;
  return b;
}

DirectionalBound bruteForceBound(const BoundGraph &g, bool reversed) {
  assert(g.numVertices <= 24 && "bruteForceBound: too many vertices");
  uint32_t computeMask = 0;
  for (int v : g.compute)
    computeMask |= 1u << v;
  int64_t bestN = 0, bestD = 1;
  uint32_t bestMask = 0;
  const uint32_t end = 1u << g.numVertices;
  for (uint32_t mask = 1; mask < end; ++mask) {
    if ((mask & computeMask) == 0 || (mask & computeMask) == computeMask)
      continue;
    int64_t nS = __builtin_popcount(mask & computeMask);
    int64_t d = 0;
    for (const BoundGraph::Arc &a : g.arcs) {
      auto [u, w] = ends(a, reversed);
      if ((mask >> u & 1) && !(mask >> w & 1))
        d += a.cap;
    }
    assert(d > 0 && "bruteForceBound: disconnected graph");
    if (static_cast<Wide>(nS) * bestD > static_cast<Wide>(bestN) * d) {
      bestN = nS;
      bestD = d;
      bestMask = mask;
    }
  }
  DirectionalBound b;
  b.lambdaInt = Fraction::make(bestN, bestD);
  std::vector<char> inS(g.numVertices, 0);
  for (int v = 0; v < g.numVertices; ++v)
    inS[v] = (bestMask >> v & 1) ? 1 : 0;
  b.cut = makeCut(g, reversed, inS);
  llvm::cantFail(finish(g, b));
  return b;
}

llvm::Expected<BoundResult> computeBound(const topo::Topology &t,
                                         CapacityKind kind) {
  ProgressTask progress("physical bound");
  auto g = buildBoundGraph(t, kind);
  if (!g)
    return g.takeError();
  return computeBoundOn(std::move(*g));
}

llvm::Expected<BoundResult> computeBoundOn(BoundGraph g) {
  BoundResult res;
  res.graph = std::move(g);
  auto ag = dinkelbachBound(res.graph, /*reversed=*/false);
  if (!ag)
    return ag.takeError();
  res.allgather = std::move(*ag);
  auto rs = dinkelbachBound(res.graph, /*reversed=*/true);
  if (!rs)
    return rs.takeError();
  res.reduceScatter = std::move(*rs);
  const Fraction &a = res.allgather.lambda, &r = res.reduceScatter.lambda;
  auto ar = wideFraction(static_cast<Wide>(a.num) * r.den +
                             static_cast<Wide>(r.num) * a.den,
                         static_cast<Wide>(a.den) * r.den);
  if (!ar)
    return ar.takeError();
  res.allreduceLambda = *ar;
  return res;
}

BoundNumbers boundNumbers(const BoundResult &b, ir::Collective c,
                          double bytes) {
  const double n = b.numRanks();
  double lambdaSecPerGB;
  double busFactor = (n - 1) / n;
  switch (c) {
  case ir::Collective::AllGather:
    lambdaSecPerGB = b.allgather.lambda.value();
    break;
  case ir::Collective::ReduceScatter:
    lambdaSecPerGB = b.reduceScatter.lambda.value();
    break;
  default:
    lambdaSecPerGB = b.allreduceLambda.value();
    busFactor = 2 * (n - 1) / n;
    break;
  }
  BoundNumbers r;
  r.time = bytes / n * lambdaSecPerGB * 1e-9;
  r.algbw = r.time > 0 ? bytes / r.time : 0;
  r.busbw = r.algbw * busFactor;
  return r;
}

llvm::Expected<CapacityKind> parseCapacityKind(llvm::StringRef text) {
  if (text == "raw")
    return CapacityKind::Raw;
  if (text == "effective")
    return CapacityKind::Effective;
  return makeUserError("unknown --capacity '" + text +
                       "' (expected raw or effective)");
}

} // namespace topocc::analysis
