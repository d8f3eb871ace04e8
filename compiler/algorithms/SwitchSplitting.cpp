//===- compiler/algorithms/SwitchSplitting.cpp - Switch removal -----------===//
//
// Directed splitting-off with max-flow admissibility (FORESTCOLL.md 4).
// Network vertices: the graph's vertices, then s (super-source, k units to
// every GPU), SRC* and SNK* (terminal forcing: arcs SRC* -> x and x -> SNK*
// for every x, raised to BIG to force x to one side of the cut).
//
// Splitting (u,w),(w,t) by gamma lowers the capacity of an s-v cut with
// source side Z by gamma exactly when u,t in Z and w not (gadget A), or w in
// Z and u,t not (gadget B); every other cut keeps its capacity. So the
// largest admissible gamma is the smallest slack (flow - N k) over those
// cuts, for every GPU v on the sink side.
//
//===----------------------------------------------------------------------===//

#include "compiler/algorithms/SwitchSplitting.h"

#include "support/Diagnostics.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <tuple>

namespace topocc::algorithms {

namespace {

using Key = std::pair<int, int>;

class Splitter {
public:
  Splitter(const analysis::BoundGraph &g, bool reversed,
           llvm::ArrayRef<int64_t> units, int64_t k, bool boxShift)
      : g(g), n(static_cast<int>(g.compute.size())), k(k),
        s(g.numVertices), src(g.numVertices + 1), snk(g.numVertices + 2),
        net(g.numVertices + 3), isCompute(g.numVertices, 0),
        out(g.numVertices), in(g.numVertices) {
    for (int v : g.compute)
      isCompute[v] = 1;
    for (size_t i = 0; i < g.arcs.size(); ++i) {
      int u = reversed ? g.arcs[i].to : g.arcs[i].from;
      int t = reversed ? g.arcs[i].from : g.arcs[i].to;
      if (u == t || units[i] <= 0)
        continue;
      res.direct[{u, t}] += units[i];
      add(u, t, units[i]);
    }
    degree.assign(g.numVertices, 0);
    {
      std::set<Key> seen;
      for (const analysis::BoundGraph::Arc &a : g.arcs)
        if (a.from != a.to &&
            seen.insert({std::min(a.from, a.to), std::max(a.from, a.to)})
                .second) {
          ++degree[a.from];
          ++degree[a.to];
        }
    }
    for (int v : g.compute)
      net.addArc(s, v, k);
    for (int x = 0; x <= s; ++x) {
      srcArc.push_back(net.addArc(src, x));
      snkArc.push_back(net.addArc(x, snk));
    }
    int64_t total = n * k;
    for (auto &[key, id] : arcId)
      total += net.capacity(id);
    big = total + 1;
    res.numVertices = g.numVertices;
    res.compute = g.compute;
    res.k = k;
    if (boxShift)
      findBoxShift();
  }

  int64_t cap(int u, int t) const {
    auto it = arcId.find({u, t});
    return it == arcId.end() ? 0 : net.capacity(it->second);
  }

  /// min over GPUs v of flow(s, v) - N k. `count`: add to res.maxFlows
  /// (not for Debug-only assertions, so counts match across builds).
  int64_t minSlack(bool count = true) {
    int64_t m = std::numeric_limits<int64_t>::max();
    for (int v : g.compute) {
      res.maxFlows += count;
      m = std::min(m, net.maxFlow(s, v) - n * k);
    }
    return m;
  }

  llvm::Expected<SwitchSplitResult> run(SplitPolicy policy) {
    if (int64_t slack = minSlack(); slack < 0)
      return makeUserError(llvm::formatv(
          "switch splitting: the tree units do not admit {0} trees per root "
          "(a GPU's max-flow is {1} short)",
          k, -slack));
    std::vector<int> switches;
    for (int w = 0; w < g.numVertices; ++w)
      if (!isCompute[w])
        switches.push_back(w);
    bool verified = true; // the state is known to satisfy I
    for (size_t i = 0; i < switches.size();) {
      if (policy == SplitPolicy::Proposal) {
        // Bulk: propose every remaining switch, check I once; on failure
        // undo and retry with the first half, down to one switch, which
        // then takes the exact loop below.
        size_t len = switches.size() - i;
        bool done = false;
        int rounds = 0;
        while (!done) {
          auto batch = llvm::ArrayRef<int>(switches).slice(i, len);
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
        if (done)
          continue;
      }
      int w = switches[i++];
      verified = false;
      for (int u : in[w])
        res.inAtProcessing[{u, w}] = cap(u, w);
      // Box 0's exact splits are kept for their twins in the other boxes
      // (mirrorPlan), which then need one check instead of this loop.
      std::map<Key, int64_t> exactPlan;
      recording = !shift.empty() && boxOf[w] == 0 ? &exactPlan : nullptr;
      if (policy == SplitPolicy::Spread || policy == SplitPolicy::Proposal)
        for (int u : std::vector<int>(in[w].begin(), in[w].end())) {
          int others = 0;
          for (int t : out[w])
            others += t != u;
          if (others == 0)
            continue;
          int64_t share = (cap(u, w) + others - 1) / others;
          for (int t : std::vector<int>(out[w].begin(), out[w].end()))
            if (t != u)
              trySplit(u, w, t, share);
        }
      for (int u : std::vector<int>(in[w].begin(), in[w].end())) {
        std::vector<int> order;
        for (int t : out[w])
          if (t != u)
            order.push_back(t);
        if (out[w].count(u))
          order.push_back(u); // the loop-discard fallback comes last
        for (int t : order) {
          if (cap(u, w) == 0)
            break;
          trySplit(u, w, t, std::numeric_limits<int64_t>::max());
        }
      }
      if (recording)
        repPlans[w] = std::move(exactPlan);
      recording = nullptr;
      int64_t inLeft = 0, outLeft = 0;
      for (int u : in[w])
        inLeft += cap(u, w);
      for (int t : out[w])
        outLeft += cap(w, t);
      if (inLeft != 0 || outLeft != 0)
        return makeInternalError(llvm::formatv(
            "switch splitting: {0} could not be isolated ({1} units in "
            "and {2} out remain; its in- and out-capacity must be equal)",
            g.vertexName(w), inLeft, outLeft));
#ifndef NDEBUG
      assert(minSlack(false) >= 0 && "switch splitting broke invariant I");
#endif
    }
    for (auto &[key, id] : arcId) {
      int64_t c = net.capacity(id);
      if (c > 0) {
        assert(isCompute[key.first] && isCompute[key.second]);
        res.arcs.push_back({key.first, key.second, c});
      }
    }
    // The last bulk check (if nothing changed since) already measured I on
    // this graph; otherwise measure it now.
    if (!verified)
      if (int64_t slack = minSlack(); slack < 0)
        return makeInternalError(llvm::formatv(
            "switch splitting: invariant I broken after removal ({0} short)",
            -slack));
    // Conservation: what entered w from u left towards some t (or looped).
    std::map<std::pair<int, int>, int64_t> sent;
    for (auto &[key, list] : res.viaSwitch)
      for (const SplitContribution &c : list)
        sent[{key.first, c.via}] += c.amount;
    for (auto &[key, amount] : res.inAtProcessing) {
      auto it = res.loopDiscarded.find(key);
      int64_t loops = it == res.loopDiscarded.end() ? 0 : it->second;
      if (sent[key] + loops != amount)
        return makeInternalError(llvm::formatv(
            "switch splitting: edge map of {0} -> {1} holds {2} units, "
            "expected {3}",
            key.first, key.second, sent[key] + loops, amount));
    }
    res.symmetricPlans = symmetricProposals;
    res.mirroredPlans = mirroredPlans;
    return std::move(res);
  }

private:
  /// Proposes a complete splitting of every switch of `batch` in order
  /// (proposeSwitch) and keeps them all when invariant I holds afterwards:
  /// splitting only lowers cut capacities, so I then held after every
  /// switch of the batch too. Otherwise every capacity is restored and
  /// nothing is recorded. Returns nothing on failure, else whether the
  /// state was measured (false: every split of the batch preserved all
  /// flows exactly, so no max-flow was needed).
  std::optional<bool> tryProposals(llvm::ArrayRef<int> batch) {
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
  bool proposeSwitch(int w, std::map<Key, int64_t> &plan, bool &exact) {
    if (mirrorPlan(w, plan)) {
      exact = false;
      return true;
    }
    bool ok = proposeOwnPlan(w, plan, exact);
    if (ok && !exact && !shift.empty() && boxOf[w] == 0)
      repPlans[w] = plan;
    return ok;
  }

  /// Under a box shift, a switch inside box j > 0 takes the plan its
  /// box-0 twin got, shifted j boxes, when w's in- and out-capacities are
  /// the images of what the twin had (so the split keeps the GPU graph
  /// symmetric; the proposal of each box on its own need not, e.g. after
  /// learned cuts). false, plan untouched, otherwise.
  bool mirrorPlan(int w, std::map<Key, int64_t> &plan) {
    if (shift.empty() || boxOf[w] <= 0)
      return false;
    auto rep = repPlans.find(orbitRep[w]);
    if (rep == repPlans.end())
      return false;
    auto image = [&](int v) {
      for (int j = 0; j < boxOf[w]; ++j)
        v = shift[v];
      return v;
    };
    std::map<Key, int64_t> mirrored;
    std::map<int, int64_t> rows, cols;
    for (auto &[key, x] : rep->second) {
      int u = image(key.first), t = image(key.second);
      mirrored[{u, t}] += x;
      rows[u] += x;
      cols[t] += x;
    }
    // The plan must split w completely: every in- and out-arc, exactly.
    size_t ins = 0, outs = 0;
    for (int u : in[w])
      if (int64_t c = cap(u, w); c > 0) {
        ++ins;
        if (rows[u] != c)
          return false;
      }
    for (int t : out[w])
      if (int64_t c = cap(w, t); c > 0) {
        ++outs;
        if (cols[t] != c)
          return false;
      }
    if (rows.size() != ins || cols.size() != outs || !fits(w, mirrored))
      return false;
    charge(w, mirrored);
    plan = std::move(mirrored);
    ++mirroredPlans;
    return true;
  }

  bool proposeOwnPlan(int w, std::map<Key, int64_t> &plan, bool &exact) {
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
  static bool shortCircuits(const std::vector<char> &x, int u, int w, int t) {
    return x[w] ? !x[u] && !x[t] : x[u] && x[t];
  }

  bool cutBlocks(int u, int w, int t) const {
    for (const std::vector<char> &x : cuts)
      if (shortCircuits(x, u, w, t))
        return true;
    return false;
  }

  /// c_in(X) + k |X cap GPUs| - N k on the current capacities: how many
  /// more units splits may take from the sink side X before some GPU of X
  /// (behind that cut) loses max-flow below N k.
  int64_t cutSlack(const std::vector<char> &x) {
    int64_t c = -n * k;
    for (int v : g.compute)
      c += x[v] ? k : 0;
    for (auto &[key, id] : arcId)
      if (!x[key.first] && x[key.second])
        c += net.capacity(id);
    return c;
  }

  /// Whether `plan` (splits at w) keeps every learned cut within budget.
  bool fits(int w, const std::map<Key, int64_t> &plan) const {
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

  void charge(int w, const std::map<Key, int64_t> &plan) {
    for (size_t c = 0; c < cuts.size(); ++c)
      for (auto &[key, x] : plan)
        if (shortCircuits(cuts[c], key.first, w, key.second))
          budget[c] -= x;
  }

  /// minSlack, and for every GPU v short of N k the sink side of its
  /// minimum cut closest to v (the vertices that reach v in the residual
  /// network) joins the learned cuts when new: the set the proposal
  /// short-circuited, which later proposals keep within its slack.
  int64_t checkAndLearn() {
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
  void learnPending(llvm::ArrayRef<int> batch) {
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
  bool budgetTransport(int w, const std::vector<int> &ins,
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
    std::map<int, std::pair<int, int>> cutNodes; // cut -> (in node, out node)
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
          cutIn[crossed][u] =
              fnet.addArc(rowId[u], it->second.first, kInf);
        if (!cutOut[crossed].count(t))
          cutOut[crossed][t] =
              fnet.addArc(it->second.second, colId[t], kInf);
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

  struct TransportPair {
    int u, t;
    int group;        ///< -1: none; else u sends at most groupCap to it
    int64_t groupCap; ///< the same for every pair of (u, group)
  };
  /// A maximum transport over `pairs` within the row and column budgets:
  /// one max-flow (src -> u -> [(u, group) ->] t -> snk). Deterministic.
  static std::vector<std::tuple<int, int, int64_t>>
  transport(const std::vector<TransportPair> &pairs,
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

  /// The box shift pi: vertex "node_i/x" -> "node_{i+1 mod M}/x", fabric
  /// devices (no node) fixed, when every node has the same devices and pi
  /// maps every arc onto an arc of the same capacity (a cluster of
  /// identical boxes behind fabric switches that treat them alike). When
  /// the nodes themselves are not alike (a fat tree whose leaves belong to
  /// pods), coarser boxes are tried: the leading segments of the node
  /// names (split at '-', '_' or '.'), "pod2-node3" -> box "pod2", with
  /// the fabric devices that carry the same prefix ("pod2-leaf0") as box
  /// members. Needs device names (graphs from buildBoundGraph); otherwise
  /// none.
  void findBoxShift() {
    const int nv = g.numVertices;
    if (static_cast<int>(g.names.size()) < nv)
      return;
    auto isSep = [](char c) { return c == '-' || c == '_' || c == '.'; };
    // The length of the first `segs` segments of `name` (a prefix ending
    // before a separator), or npos when it has no more segments than that.
    auto prefixLength = [&](llvm::StringRef name, int segs) {
      size_t i = 0;
      for (int seen = 0; i < name.size(); ++i)
        if (isSep(name[i]) && ++seen == segs)
          return i;
      return std::string::npos;
    };
    int maxSegs = 1;
    for (int v = 0; v < nv; ++v) {
      llvm::StringRef node = llvm::StringRef(g.names[v]).split('/').first;
      if (node.size() == g.names[v].size())
        continue;
      maxSegs = std::max(
          maxSegs, 1 + static_cast<int>(llvm::count_if(node, isSep)));
    }
    // segs == 0: the whole node name is the box.
    for (int segs = 0; segs < maxSegs; ++segs)
      if (tryBoxShift(segs, prefixLength))
        return;
  }

  template <typename PrefixFn>
  bool tryBoxShift(int segs, PrefixFn prefixLength) {
    const int nv = g.numVertices;
    std::map<std::string, int> nodeIndex;
    std::vector<std::map<std::string, int>> locals;
    std::vector<int> nodeOf(nv, -1);
    auto boxKey = [&](const std::string &name) -> std::string {
      size_t slash = name.find('/');
      if (segs == 0)
        return slash == std::string::npos ? "" : name.substr(0, slash);
      size_t len = prefixLength(llvm::StringRef(name).substr(0, slash), segs);
      return len == std::string::npos ? "" : name.substr(0, len);
    };
    // Boxes come from the nodes (device names with a '/'); fabric devices
    // join a box only when their prefix names one.
    for (bool nodes : {true, false})
      for (int v = 0; v < nv; ++v) {
        const std::string &name = g.names[v];
        if ((name.find('/') != std::string::npos) != nodes)
          continue;
        std::string key = boxKey(name);
        if (key.empty())
          continue;
        auto it = nodeIndex.find(key);
        if (it == nodeIndex.end()) {
          if (!nodes)
            continue;
          it = nodeIndex.try_emplace(key, static_cast<int>(locals.size()))
                   .first;
          locals.emplace_back();
        }
        nodeOf[v] = it->second;
        locals[it->second][name.substr(key.size())] = v;
      }
    const int m = static_cast<int>(locals.size());
    if (m < 2)
      return false;
    for (const auto &l : locals)
      if (l.size() != locals[0].size())
        return false;
    std::vector<int> pi(nv);
    for (int v = 0; v < nv; ++v) {
      if (nodeOf[v] < 0) {
        pi[v] = v;
        continue;
      }
      const std::string &name = g.names[v];
      std::string key = boxKey(name);
      auto it = locals[(nodeOf[v] + 1) % m].find(name.substr(key.size()));
      if (it == locals[(nodeOf[v] + 1) % m].end())
        return false;
      pi[v] = it->second;
    }
    for (auto &[key, id] : arcId)
      if (cap(pi[key.first], pi[key.second]) != net.capacity(id))
        return false;
    shift = std::move(pi);
    boxOf = std::move(nodeOf);
    numBoxes = m;
    orbitRep.assign(nv, -1);
    for (int v = 0; v < nv; ++v)
      if (boxOf[v] == 0)
        for (int x = v, j = 0; j < m; x = shift[x], ++j)
          orbitRep[x] = v;
    return true;
  }

  /// A complete splitting of a fabric switch w (fixed by the box shift)
  /// that the box shift maps onto itself, so that the GPU graph stays as
  /// symmetric as the cluster and tree packing can probe one box's trees
  /// (TreePacking.h). Fabric neighbours (other switches, fixed by the
  /// shift) are paired among themselves first, loops last; then a
  /// transport between orbits: one row per orbit of in-neighbours inside
  /// boxes and per fabric in-neighbour with units left (in units per box,
  /// so those must be multiples of the box count), one column likewise,
  /// a proportional share first as in the tiers below. An orbit pair's
  /// units are spread over the box offsets 1 .. M-1 (neighbours inside
  /// boxes send only to other boxes); a fabric neighbour's units go to
  /// every member of the orbit alike. false (plan untouched) when there is
  /// no box shift, w is not fixed, the state is not symmetric, or the two
  /// parts do not balance.
  bool symmetricPlan(int w, const std::vector<int> &ins,
                     const std::vector<int> &outs,
                     std::map<int, int64_t> &rowRem,
                     std::map<int, int64_t> &colRem,
                     std::map<Key, int64_t> &plan) {
    if (shift.empty() || shift[w] != w)
      return false;
    const int m = numBoxes;
    // Keys: the box-0 member of an orbit, or a fixed vertex itself.
    std::map<int, int64_t> rows, cols, fixedRows, fixedCols;
    for (int u : ins) {
      if (boxOf[u] < 0)
        fixedRows[u] = rowRem[u];
      else if (rowRem[u] != cap(orbitRep[u], w))
        return false;
      else
        rows[orbitRep[u]] = rowRem[u];
    }
    for (int t : outs) {
      if (boxOf[t] < 0)
        fixedCols[t] = colRem[t];
      else if (colRem[t] != cap(w, orbitRep[t]))
        return false;
      else
        cols[orbitRep[t]] = colRem[t];
    }
    // Every orbit member must be a neighbour (the state is symmetric).
    for (auto &[u0, r] : rows)
      for (int x = shift[u0]; x != u0; x = shift[x])
        if (rowRem.count(x) == 0)
          return false;
    for (auto &[t0, c] : cols)
      for (int x = shift[t0]; x != t0; x = shift[x])
        if (colRem.count(x) == 0)
          return false;
    std::map<Key, int64_t> out;
    // Fabric neighbours among themselves, other switches first.
    for (bool loops : {false, true})
      for (auto &[u, r] : fixedRows)
        for (auto &[t, c] : fixedCols)
          if ((t == u) == loops) {
            int64_t x = std::min(r, c);
            if (x > 0) {
              out[{u, t}] += x;
              r -= x;
              c -= x;
            }
          }
    // What fabric neighbours have left meets the orbits, per box.
    for (auto [fixed, orbit] : {std::pair{&fixedRows, &rows},
                                std::pair{&fixedCols, &cols}})
      for (auto &[v, r] : *fixed)
        if (r > 0) {
          if (r % m != 0)
            return false;
          (*orbit)[v] = r / m;
        }
    int64_t total = 0, colTotal = 0;
    for (auto &[u0, r] : rows)
      total += r;
    for (auto &[t0, c] : cols)
      colTotal += c;
    if (colTotal != total)
      return false;
    auto isFixed = [&](int v) { return boxOf[v] < 0; };
    std::map<Key, int64_t> amount; // (u0, t0) -> units per box
    for (int tier = 1; tier <= 2 && total > 0; ++tier) {
      std::vector<TransportPair> pairs;
      for (auto &[u0, r] : rows)
        for (auto &[t0, c] : cols) {
          if (r <= 0 || c <= 0 || (isFixed(u0) && isFixed(t0)))
            continue;
          TransportPair p{u0, t0, -1, 0};
          if (tier == 1) {
            p.group = t0;
            p.groupCap = static_cast<int64_t>(
                (static_cast<__int128>(r) * c + total - 1) / total);
          }
          pairs.push_back(p);
        }
      for (auto &[u0, t0, x] : transport(pairs, rows, cols)) {
        amount[{u0, t0}] += x;
        rows[u0] -= x;
        cols[t0] -= x;
      }
    }
    for (auto &[u0, r] : rows)
      if (r != 0)
        return false;
    // Copy to every box; an orbit pair's units spread over the box offsets
    // 1 .. M-1, the remainder from an offset that rotates with the pair.
    int pairIndex = 0;
    for (auto &[key, a] : amount) {
      auto [u0, t0] = key;
      if (isFixed(u0) || isFixed(t0)) {
        for (int b = 0, u = u0, t = t0; b < m; ++b) {
          out[{u, t}] += a;
          u = shift[u];
          t = shift[t];
        }
        continue;
      }
      int64_t base = a / (m - 1), extra = a % (m - 1);
      int start = pairIndex++ % (m - 1);
      for (int off = 1; off < m; ++off) {
        int64_t x = base + (((off - 1 - start + (m - 1)) % (m - 1)) < extra);
        if (x == 0)
          continue;
        int u = u0, t = t0;
        for (int j = 0; j < off; ++j)
          t = shift[t];
        for (int b = 0; b < m; ++b) {
          out[{u, t}] += x;
          u = shift[u];
          t = shift[t];
        }
      }
    }
    for (auto &[key, x] : out) {
      rowRem[key.first] -= x;
      colRem[key.second] -= x;
      plan[key] += x;
    }
    return true;
  }

  /// Component id of every vertex in the input graph without the switches
  /// at least as wide as w (as many distinct neighbours or more, w
  /// included): for an IB switch, the boxes behind it; for an NVSwitch,
  /// single GPUs. Pairs inside one component are what a switch must not
  /// short-circuit when the box's cut is tight.
  std::vector<int> components(int w) {
    std::vector<int> parent(g.numVertices);
    for (int v = 0; v < g.numVertices; ++v)
      parent[v] = v;
    auto find = [&](int v) {
      while (parent[v] != v)
        v = parent[v] = parent[parent[v]];
      return v;
    };
    auto kept = [&](int v) {
      return isCompute[v] || degree[v] < degree[w];
    };
    for (const analysis::BoundGraph::Arc &a : g.arcs)
      if (kept(a.from) && kept(a.to))
        parent[find(a.from)] = find(a.to);
    for (int v = 0; v < g.numVertices; ++v)
      parent[v] = find(v);
    return parent;
  }

  void setCap(int arc, int64_t c) {
    if (journaling)
      journal.push_back({arc, net.capacity(arc)});
    net.setCapacity(arc, c);
  }

  void add(int u, int t, int64_t c) {
    auto [it, inserted] = arcId.try_emplace({u, t}, -1);
    if (inserted)
      it->second = net.addArc(u, t, 0);
    setCap(it->second, net.capacity(it->second) + c);
    out[u].insert(t);
    in[t].insert(u);
  }

  /// Max-flow from SRC* to SNK* with `source` forced to the source side and
  /// `sink` to the sink side, minus N k.
  int64_t forcedSlack(std::initializer_list<int> source,
                      std::initializer_list<int> sink) {
    for (int x : source)
      net.setCapacity(srcArc[x], big);
    for (int x : sink)
      net.setCapacity(snkArc[x], big);
    ++res.maxFlows;
    int64_t f = net.maxFlow(src, snk);
    for (int x : source)
      net.setCapacity(srcArc[x], 0);
    for (int x : sink)
      net.setCapacity(snkArc[x], 0);
    return f - n * k;
  }

  void trySplit(int u, int w, int t, int64_t limit) {
    int64_t gamma = std::min({cap(u, w), cap(w, t), limit});
    if (gamma <= 0)
      return;
    // Gadget A: u, t on the source side, w and a GPU v on the sink side.
    for (int v : g.compute) {
      if (v == u || v == t)
        continue;
      gamma = std::min(gamma, forcedSlack({s, u, t}, {w, v}));
      if (gamma <= 0)
        return;
    }
    // Gadget B: w on the source side, u, t and a GPU v on the sink side
    // (v in {u, t} is one query).
    if (isCompute[u] || isCompute[t]) {
      gamma = std::min(gamma, forcedSlack({s, w}, {u, t}));
      if (gamma <= 0)
        return;
    }
    for (int v : g.compute) {
      if (v == u || v == t)
        continue;
      gamma = std::min(gamma, forcedSlack({s, w}, {u, t, v}));
      if (gamma <= 0)
        return;
    }
    net.setCapacity(arcId.at({u, w}), cap(u, w) - gamma);
    net.setCapacity(arcId.at({w, t}), cap(w, t) - gamma);
    if (recording)
      (*recording)[{u, t}] += gamma;
    if (t == u) {
      res.loopDiscarded[{u, w}] += gamma;
      return;
    }
    add(u, t, gamma);
    res.viaSwitch[{u, t}].push_back({w, gamma});
  }

  const analysis::BoundGraph &g;
  const int n;
  const int64_t k;
  const int s, src, snk;
  analysis::MaxFlowNetwork net;
  std::vector<char> isCompute;
  std::vector<int> degree; ///< distinct neighbours in g
  std::vector<std::set<int>> out, in;
  std::map<std::pair<int, int>, int> arcId;
  std::vector<int> srcArc, snkArc;
  int64_t big = 0;
  SwitchSplitResult res;
  /// The box shift (findBoxShift): pi per vertex, empty when none; the
  /// box of each vertex (-1: fabric); the box-0 member of its orbit.
  std::vector<int> shift, boxOf, orbitRep;
  int numBoxes = 0;
  int symmetricProposals = 0; ///< kept symmetric plans (symmetricPlan)
  int mirroredPlans = 0;       ///< box-0 plans shifted (mirrorPlan)
  /// The last non-exact plan proposed (or exact split made) for each
  /// switch of box 0; where the exact loop records its splits.
  std::map<int, std::map<Key, int64_t>> repPlans;
  std::map<Key, int64_t> *recording = nullptr;
  /// Learned cuts (checkAndLearn): sink sides X as membership flags, the
  /// same as a set for deduplication, their budgets while a batch is
  /// proposed (cutSlack minus what the batch's splits took), and how many
  /// the last check added.
  std::vector<std::vector<char>> cuts;
  std::set<std::vector<char>> cutKeys;
  std::vector<int64_t> budget;
  int learnedNow = 0;
  std::vector<std::vector<char>> pending; ///< found, not yet learned
  /// Proposal rounds for one batch before it is bisected.
  static constexpr int kMaxLearnRounds = 16;
  /// (arc, capacity before) of every change while a batch is proposed.
  std::vector<std::pair<int, int64_t>> journal;
  bool journaling = false;
};

} // namespace

llvm::Expected<SwitchSplitResult>
splitSwitches(const analysis::BoundGraph &g, bool reversed,
              llvm::ArrayRef<int64_t> units, int64_t k, SplitPolicy policy,
              bool boxShift) {
  if (units.size() != g.arcs.size())
    return makeInternalError("splitSwitches: one unit count per arc expected");
  if (k < 1)
    return makeInternalError("splitSwitches: k must be positive");
  Splitter sp(g, reversed, units, k, boxShift);
  return sp.run(policy);
}

int64_t minRootFlow(const SwitchSplitResult &r) {
  int s = r.numVertices;
  analysis::MaxFlowNetwork net(r.numVertices + 1);
  for (const SwitchSplitResult::Arc &a : r.arcs)
    net.addArc(a.from, a.to, a.cap);
  for (int v : r.compute)
    net.addArc(s, v, r.k);
  int64_t m = std::numeric_limits<int64_t>::max();
  for (int v : r.compute)
    m = std::min(m, net.maxFlow(s, v));
  return m;
}

} // namespace topocc::algorithms
