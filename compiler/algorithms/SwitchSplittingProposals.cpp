//===- compiler/algorithms/SwitchSplittingProposals.cpp - Proposals -------===//
//
// SplitPolicy::Proposal (docs/Algorithms-trees.md, "Switch removal": the
// fast path, with the exact loop as its fallback): a complete splitting of every remaining switch is
// proposed in bulk and invariant I checked once for the batch; on failure
// the batch is undone and bisected, down to one switch, which then takes
// the exact loop (SwitchSplittingExact.cpp). The sink sides of the cuts a
// failed check found are learned: later proposals keep the splits that
// short-circuit them within their slack. A switch's plan is exact (paths
// with one way on), else a box-shift plan (SwitchSplittingSymmetry.cpp),
// else a transport in tiers.
//
//===----------------------------------------------------------------------===//

#include "compiler/algorithms/SwitchSplittingImpl.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <optional>
#include <set>
#include <tuple>

namespace topocc::algorithms::detail {

/// Proposes batches from switches[i] on; true when one was kept (i then
/// points after it), false when switches[i] alone was rejected (it then
/// takes the exact loop). `verified`: whether the state is known to
/// satisfy I.
bool Splitter::proposeFrom(llvm::ArrayRef<int> switches, size_t &i,
                           bool &verified) {
  // Bulk: propose every remaining switch, check I once; on failure
  // undo and retry with the first half, down to one switch, which
  // then takes the exact loop (splitExactly).
  size_t len = switches.size() - i;
  bool done = false;
  int rounds = 0;
  while (!done) {
    auto batch = switches.slice(i, len);
    auto kept = tryProposals(batch);
    if (kept) {
      res.proposalsKept += static_cast<int>(len);
      // Measured now, or every split kept all flows of a state
      // that was measured.
      verified = *kept || verified;
#ifndef NDEBUG
      assert(minSlack(false) >= 0 && "switch splitting broke I");
#endif
      i += len;
      done = true;
    } else if (learnedNow > 0 && ++rounds <= kMaxLearnRounds) {
      // The check found cuts the proposal short-circuited: propose
      // the same batch again around them.
    } else if (len == 1) {
      ++res.proposalsRejected;
      res.rejected.push_back(switches[i]);
      break;
    } else {
      len /= 2;
    }
  }
  return done;
}

/// Proposes a complete splitting of every switch of `batch` in order
/// (proposeSwitch) and keeps them all when invariant I holds afterwards:
/// splitting only lowers cut capacities, so I then held after every
/// switch of the batch too. Otherwise every capacity is restored and
/// nothing is recorded. Returns nothing on failure, else whether the
/// state was measured (false: every split of the batch preserved all
/// flows exactly, so no max-flow was needed).
std::optional<bool> Splitter::tryProposals(llvm::ArrayRef<int> batch) {
  journal.clear();
  journaling = true;
  const int symmetricBefore = symmetricProposals;
  const int mirroredBefore = mirroredPlans;
  std::vector<std::pair<Key, int64_t>> loops;
  std::vector<std::pair<Key, SplitContribution>> contribs;
  std::vector<std::pair<Key, int64_t>> inAt;
  bool needCheck = false, ok = true;
  learnedNow = 0;
  budget.assign(cuts.size(), 0);
  for (size_t c = 0; c < cuts.size(); ++c)
    budget[c] = cutSlack(cuts[c]);
  for (int w : batch) {
    for (int u : in[w])
      inAt.push_back({{u, w}, cap(u, w)});
    std::map<Key, int64_t> plan;
    bool exact = false;
    if (!proposeSwitch(w, plan, exact)) {
      ok = false;
      break;
    }
    needCheck |= !exact;
    for (auto &[key, x] : plan) {
      setCap(arcId.at({key.first, w}), cap(key.first, w) - x);
      setCap(arcId.at({w, key.second}), cap(w, key.second) - x);
      if (key.first == key.second) {
        loops.push_back({{key.first, w}, x});
      } else {
        add(key.first, key.second, x);
        contribs.push_back({key, {w, x}});
      }
    }
  }
  journaling = false;
  if (ok && needCheck && checkAndLearn() < 0)
    ok = false;
  if (!ok) {
    for (auto it = journal.rbegin(); it != journal.rend(); ++it)
      net.setCapacity(it->first, it->second);
    journal.clear();
    learnPending(batch);
    symmetricProposals = symmetricBefore;
    mirroredPlans = mirroredBefore;
    return std::nullopt;
  }
  journal.clear();
  for (auto &[key, c] : inAt)
    res.inAtProcessing[key] = c;
  for (auto &[key, x] : loops)
    res.loopDiscarded[key] += x;
  for (auto &[key, c] : contribs)
    res.viaSwitch[key].push_back(c);
  return needCheck;
}

/// A complete splitting of w (every unit of every in-arc paired with an
/// out-arc), or false when w's in- and out-capacity differ. `exact` is
/// set when the splitting keeps every max-flow between other vertices:
/// w has one in-neighbour, or one out-neighbour, or its only neighbours
/// are a and b with c(a,w) = c(w,b) and c(b,w) = c(w,a) (a NIC between a
/// GPU and a switch, a PCIe hop): every flow path through w then has
/// exactly one way to continue. Otherwise the transport plan spreads u's
/// units first over the out-neighbours in other components of the GPU
/// graph built so far (the other boxes, for an IB switch), in proportion
/// to c(w,t), the rounding remainder one unit each in cyclic order
/// starting after u; then over any t != u; loops last.
bool Splitter::proposeSwitch(int w, std::map<Key, int64_t> &plan, bool &exact) {
  if (mirrorPlan(w, plan)) {
    exact = false;
    return true;
  }
  bool ok = proposeOwnPlan(w, plan, exact);
  if (ok && !exact && !shift.empty() && boxOf[w] == 0)
    repPlans[w] = plan;
  return ok;
}

bool Splitter::proposeOwnPlan(int w, std::map<Key, int64_t> &plan,
                              bool &exact) {
  std::vector<int> ins, outs;
  for (int u : in[w])
    if (cap(u, w) > 0)
      ins.push_back(u);
  for (int t : out[w])
    if (cap(w, t) > 0)
      outs.push_back(t);
  std::map<int, int64_t> rowRem, colRem;
  int64_t total = 0;
  for (int u : ins)
    total += rowRem[u] = cap(u, w);
  for (int t : outs)
    total -= colRem[t] = cap(w, t);
  if (total != 0)
    return false;
  auto give = [&](int u, int t, int64_t x) {
    x = std::min({x, rowRem[u], colRem[t]});
    if (x > 0) {
      plan[{u, t}] += x;
      rowRem[u] -= x;
      colRem[t] -= x;
    }
  };
  std::set<int> nbrs(ins.begin(), ins.end());
  nbrs.insert(outs.begin(), outs.end());
  bool pair = nbrs.size() == 2 &&
              cap(*nbrs.begin(), w) == cap(w, *nbrs.rbegin()) &&
              cap(*nbrs.rbegin(), w) == cap(w, *nbrs.begin());
  exact = ins.size() <= 1 || outs.size() <= 1 || pair;
  if (exact) {
    for (bool loops : {false, true})
      for (int u : ins)
        for (int t : outs)
          if ((t == u) == loops)
            give(u, t, std::numeric_limits<int64_t>::max());
    // Every max-flow is kept, so the learned cuts stay satisfied; their
    // budgets still shrink by what the splits took from them.
    charge(w, plan);
    for (int u : ins)
      if (rowRem[u] != 0)
        return false;
    return true;
  }
  {
    std::map<Key, int64_t> sym;
    std::map<int, int64_t> rows = rowRem, cols = colRem;
    if (symmetricPlan(w, ins, outs, rows, cols, sym) && fits(w, sym)) {
      charge(w, sym);
      plan = std::move(sym);
      ++symmetricProposals;
      return true;
    }
  }
  // Pairs that short-circuit a learned cut (cutBlocks) are left out of
  // the tiers and get at most the cuts' budgets at the end.
  std::map<Key, bool> blocked;
  for (int u : ins)
    for (int t : outs)
      if (cutBlocks(u, w, t))
        blocked[{u, t}] = true;
  auto isBlocked = [&](int u, int t) { return blocked.count({u, t}) != 0; };
  // Tiers of a transport plan, each a max-flow on what is left:
  // (1) other components only, u sending to each component at most its
  // share of u's units (in proportion to c(w, component), rounded up),
  // so that every set of components keeps receiving from outside;
  // (2) any t != u, at most u's proportional share of c(w,t) per pair
  // (rounded up): spread over every partner; (3) any t != u.
  std::vector<int> comp = components(w);
  std::map<int, int64_t> compCap;
  for (int t : outs)
    compCap[comp[t]] += cap(w, t);
  for (int tier = 1; tier <= 3; ++tier) {
    std::vector<TransportPair> pairs;
    for (int u : ins) {
      if (rowRem[u] == 0)
        continue;
      __int128 denom = 0;
      for (int t : outs)
        if (t != u && (tier > 1 || comp[t] != comp[u]) && !isBlocked(u, t))
          denom += cap(w, t);
      for (int t : outs) {
        if (t == u || (tier == 1 && comp[t] == comp[u]) || colRem[t] == 0 ||
            isBlocked(u, t))
          continue;
        TransportPair p{u, t, -1, 0};
        auto share = [&](int64_t c) {
          return static_cast<int64_t>(
              (static_cast<__int128>(cap(u, w)) * c + denom - 1) / denom);
        };
        if (tier == 1) {
          p.group = comp[t];
          p.groupCap = share(compCap[comp[t]]);
        } else if (tier == 2) {
          p.group = t;
          p.groupCap = share(cap(w, t));
        }
        pairs.push_back(p);
      }
    }
    for (auto &[u, t, x] : transport(pairs, rowRem, colRem))
      give(u, t, x);
  }
  // What is left, loops last, within the budgets of the cuts it crosses.
  for (bool loops : {false, true})
    for (int u : ins)
      for (int t : outs) {
        if ((t == u) != loops)
          continue;
        int64_t x = std::min(rowRem[u], colRem[t]);
        for (size_t c = 0; c < cuts.size() && x > 0; ++c)
          if (shortCircuits(cuts[c], u, w, t))
            x = std::min(x, budget[c]);
        if (x <= 0)
          continue;
        std::map<Key, int64_t> one{{{u, t}, x}};
        charge(w, one);
        give(u, t, x);
      }
  bool complete = true;
  for (int u : ins)
    complete &= rowRem[u] == 0;
  if (!complete && !cuts.empty()) {
    // The tiers left units that only blocked pairs could take: one
    // transport over every pair instead, loops included, each blocked
    // pair through the node of the one cut it crosses (capacity: the
    // budget; pairs crossing two or more left out).
    for (auto &[key, x] : plan) {
      std::map<Key, int64_t> one{{key, -x}};
      charge(w, one);
    }
    plan.clear();
    for (int u : ins)
      rowRem[u] = cap(u, w);
    for (int t : outs)
      colRem[t] = cap(w, t);
    std::map<Key, int64_t> flowPlan;
    if (budgetTransport(w, ins, outs, rowRem, colRem, flowPlan) &&
        fits(w, flowPlan)) {
      charge(w, flowPlan);
      for (auto &[key, x] : flowPlan)
        give(key.first, key.second, x);
    }
  }
  for (int u : ins)
    if (rowRem[u] != 0)
      return false;
  return true;
}

/// Splitting (u,w),(w,t) lowers the in-capacity of the sink side X by
/// the amount split when w is in X and u, t are not, or u, t are in X
/// and w is not (the two cases of the gadgets; t = u included).
bool Splitter::shortCircuits(const std::vector<char> &x, int u, int w, int t) {
  return x[w] ? !x[u] && !x[t] : x[u] && x[t];
}

bool Splitter::cutBlocks(int u, int w, int t) const {
  for (const std::vector<char> &x : cuts)
    if (shortCircuits(x, u, w, t))
      return true;
  return false;
}

/// c_in(X) + k |X cap GPUs| - N k on the current capacities: how many
/// more units splits may take from the sink side X before some GPU of X
/// (behind that cut) loses max-flow below N k.
int64_t Splitter::cutSlack(const std::vector<char> &x) {
  int64_t c = -n * k;
  for (int v : g.compute)
    c += x[v] ? k : 0;
  for (auto &[key, id] : arcId)
    if (!x[key.first] && x[key.second])
      c += net.capacity(id);
  return c;
}

/// Whether `plan` (splits at w) keeps every learned cut within budget.
bool Splitter::fits(int w, const std::map<Key, int64_t> &plan) const {
  for (size_t c = 0; c < cuts.size(); ++c) {
    int64_t used = 0;
    for (auto &[key, x] : plan)
      if (shortCircuits(cuts[c], key.first, w, key.second))
        used += x;
    if (used > budget[c])
      return false;
  }
  return true;
}

void Splitter::charge(int w, const std::map<Key, int64_t> &plan) {
  for (size_t c = 0; c < cuts.size(); ++c)
    for (auto &[key, x] : plan)
      if (shortCircuits(cuts[c], key.first, w, key.second))
        budget[c] -= x;
}

/// minSlack, and for every GPU v short of N k the sink side of its
/// minimum cut closest to v (the vertices that reach v in the residual
/// network) joins the learned cuts when new: the set the proposal
/// short-circuited, which later proposals keep within its slack.
int64_t Splitter::checkAndLearn() {
  int64_t m = std::numeric_limits<int64_t>::max();
  std::vector<std::vector<std::pair<int, int>>> inArcs, outArcs;
  for (int v : g.compute) {
    ++res.maxFlows;
    int64_t slack = net.maxFlow(s, v) - n * k;
    m = std::min(m, slack);
    if (slack >= 0)
      continue;
    if (inArcs.empty()) {
      inArcs.resize(g.numVertices);
      outArcs.resize(g.numVertices);
      for (auto &[key, id] : arcId) {
        inArcs[key.second].push_back({key.first, id});
        outArcs[key.first].push_back({key.second, id});
      }
    }
    std::vector<char> x(g.numVertices, 0);
    std::vector<int> stack{v};
    x[v] = 1;
    while (!stack.empty()) {
      int y = stack.back();
      stack.pop_back();
      for (auto &[z, id] : inArcs[y]) // z -> y with residual capacity
        if (!x[z] && net.flow(id) < net.capacity(id)) {
          x[z] = 1;
          stack.push_back(z);
        }
      for (auto &[z, id] : outArcs[y]) // y -> z carries flow: z -> y
        if (!x[z] && net.flow(id) > 0) {
          x[z] = 1;
          stack.push_back(z);
        }
    }
    pending.push_back(std::move(x));
  }
  return m;
}

/// Learns the cuts of the last failed check, back on the capacities
/// before the proposal: the switches the batch isolated belong to either
/// side there, so each joins or leaves X as makes c_in(X) smaller (the
/// side of most of its arcs), which is the set the proposal harmed.
void Splitter::learnPending(llvm::ArrayRef<int> batch) {
  for (std::vector<char> &x : pending) {
    for (int pass = 0; pass < 4; ++pass) {
      bool changed = false;
      for (int w : batch) {
        // c_in(X) with w inside minus with w outside.
        int64_t delta = 0;
        for (int u : in[w])
          if (u != w && !x[u])
            delta += cap(u, w);
        for (int t : out[w])
          if (t != w && x[t])
            delta -= cap(w, t);
        bool inside = delta < 0 || (delta == 0 && x[w]);
        if (inside != static_cast<bool>(x[w])) {
          x[w] = inside;
          changed = true;
        }
      }
      if (!changed)
        break;
    }
    if (cutKeys.insert(x).second) {
      cuts.push_back(std::move(x));
      ++learnedNow;
      ++res.cutsLearned;
    }
  }
  pending.clear();
}

/// A maximum transport at w over every pair (u,t), loops included,
/// within the learned cuts' budgets. The pairs that cross one cut X are
/// a product (u, t both outside X when w is in it, both inside when it
/// is not), so they share one node whose capacity is X's budget: any u
/// and t that reach it form such a pair. Loops and pairs crossing two or
/// more cuts get at most the smallest of their budgets each; pairs that
/// cross none are unbounded. True when complete; the caller checks the
/// whole plan against the budgets (fits), since a pair through one cut's
/// node may cross another.
bool Splitter::budgetTransport(int w, const std::vector<int> &ins,
                               const std::vector<int> &outs,
                               const std::map<int, int64_t> &rows,
                               const std::map<int, int64_t> &cols,
                               std::map<Key, int64_t> &plan) {
  analysis::MaxFlowNetwork fnet(2);
  constexpr int64_t kInf = std::numeric_limits<int64_t>::max() / 4;
  std::map<int, int> rowId, colId;
  int64_t total = 0;
  for (int u : ins) {
    rowId[u] = fnet.addVertex();
    fnet.addArc(0, rowId[u], rows.at(u));
    total += rows.at(u);
  }
  for (int t : outs) {
    colId[t] = fnet.addVertex();
    fnet.addArc(colId[t], 1, cols.at(t));
  }
  // Direct pair arcs; per cut, the arcs into and out of its node.
  std::vector<std::pair<Key, int>> direct;
  std::map<int, std::pair<int, int>> cutNodes;     // cut -> (in node, out node)
  std::map<int, std::map<int, int>> cutIn, cutOut; // cut -> u/t -> arc
  for (int u : ins)
    for (int t : outs) {
      int64_t c = kInf;
      int crossed = -1, count = 0;
      for (size_t i = 0; i < cuts.size(); ++i)
        if (shortCircuits(cuts[i], u, w, t)) {
          c = std::min(c, budget[i]);
          crossed = static_cast<int>(i);
          ++count;
        }
      if (c <= 0)
        continue;
      if (count != 1 || t == u) {
        if (count <= 1 || t == u)
          direct.push_back({{u, t}, fnet.addArc(rowId[u], colId[t], c)});
        continue;
      }
      auto [it, fresh] = cutNodes.try_emplace(crossed, std::pair{-1, -1});
      if (fresh) {
        it->second.first = fnet.addVertex();
        it->second.second = fnet.addVertex();
        fnet.addArc(it->second.first, it->second.second, c);
      }
      if (!cutIn[crossed].count(u))
        cutIn[crossed][u] = fnet.addArc(rowId[u], it->second.first, kInf);
      if (!cutOut[crossed].count(t))
        cutOut[crossed][t] = fnet.addArc(it->second.second, colId[t], kInf);
    }
  if (fnet.maxFlow(0, 1) != total)
    return false;
  for (auto &[key, id] : direct)
    if (int64_t f = fnet.flow(id); f > 0)
      plan[key] += f;
  // Each cut node's flow, paired off in vertex order (any pairing of its
  // rows and columns crosses that cut).
  for (auto &[c, ins2] : cutIn) {
    std::vector<std::pair<int, int64_t>> from, to;
    for (auto &[u, id] : ins2)
      if (int64_t f = fnet.flow(id); f > 0)
        from.push_back({u, f});
    for (auto &[t, id] : cutOut[c])
      if (int64_t f = fnet.flow(id); f > 0)
        to.push_back({t, f});
    size_t j = 0;
    for (auto &[u, f] : from)
      while (f > 0 && j < to.size()) {
        int64_t x = std::min(f, to[j].second);
        if (to[j].first == u) { // a loop: try the next column first
          size_t j2 = j + 1;
          while (j2 < to.size() && to[j2].first == u)
            ++j2;
          if (j2 < to.size()) {
            x = std::min(f, to[j2].second);
            plan[{u, to[j2].first}] += x;
            f -= x;
            to[j2].second -= x;
            if (to[j2].second == 0)
              to.erase(to.begin() + static_cast<long>(j2));
            continue;
          }
        }
        plan[{u, to[j].first}] += x;
        f -= x;
        to[j].second -= x;
        if (to[j].second == 0)
          ++j;
      }
  }
  return true;
}

/// A maximum transport over `pairs` within the row and column budgets:
/// one max-flow (src -> u -> [(u, group) ->] t -> snk). Deterministic.
std::vector<std::tuple<int, int, int64_t>>
Splitter::transport(const std::vector<TransportPair> &pairs,
                    const std::map<int, int64_t> &rows,
                    const std::map<int, int64_t> &cols) {
  std::vector<std::tuple<int, int, int64_t>> out;
  if (pairs.empty())
    return out;
  std::map<int, int> rowId, colId;
  for (const TransportPair &p : pairs) {
    rowId.try_emplace(p.u, 0);
    colId.try_emplace(p.t, 0);
  }
  analysis::MaxFlowNetwork net(2);
  for (auto &[u, id] : rowId)
    id = net.addVertex();
  for (auto &[t, id] : colId)
    id = net.addVertex();
  for (auto &[u, id] : rowId)
    net.addArc(0, id, rows.at(u));
  for (auto &[t, id] : colId)
    net.addArc(id, 1, cols.at(t));
  constexpr int64_t kInf = std::numeric_limits<int64_t>::max() / 4;
  std::map<Key, int> groupNode;
  std::vector<int> arcs;
  for (const TransportPair &p : pairs) {
    int from = rowId[p.u];
    if (p.group >= 0) {
      auto [it, fresh] = groupNode.try_emplace({p.u, p.group}, -1);
      if (fresh) {
        it->second = net.addVertex();
        net.addArc(from, it->second, p.groupCap);
      }
      from = it->second;
    }
    arcs.push_back(net.addArc(from, colId[p.t], kInf));
  }
  net.maxFlow(0, 1);
  for (size_t i = 0; i < pairs.size(); ++i)
    if (int64_t f = net.flow(arcs[i]); f > 0)
      out.push_back({pairs[i].u, pairs[i].t, f});
  return out;
}

/// Component id of every vertex in the input graph without the switches
/// at least as wide as w (as many distinct neighbours or more, w
/// included): for an IB switch, the boxes behind it; for an NVSwitch,
/// single GPUs. Pairs inside one component are what a switch must not
/// short-circuit when the box's cut is tight.
std::vector<int> Splitter::components(int w) {
  std::vector<int> parent(g.numVertices);
  for (int v = 0; v < g.numVertices; ++v)
    parent[v] = v;
  auto find = [&](int v) {
    while (parent[v] != v)
      v = parent[v] = parent[parent[v]];
    return v;
  };
  auto kept = [&](int v) { return isCompute[v] || degree[v] < degree[w]; };
  for (const analysis::BoundGraph::Arc &a : g.arcs)
    if (kept(a.from) && kept(a.to))
      parent[find(a.from)] = find(a.to);
  for (int v = 0; v < g.numVertices; ++v)
    parent[v] = find(v);
  return parent;
}

} // namespace topocc::algorithms::detail
