//===- compiler/algorithms/SwitchSplittingSymmetry.cpp - Box shift --------===//
//
// The box shift of switch splitting: findBoxShift finds the permutation
// that moves every box (node, else pod) to the next one; under it a
// switch inside box j > 0 takes its box-0 twin's plan, shifted
// (mirrorPlan), and a fabric switch that the shift fixes gets a plan the
// shift maps onto itself (symmetricPlan), so the split GPU graph stays as
// symmetric as the cluster (Proposal policy).
//
//===----------------------------------------------------------------------===//

#include "compiler/algorithms/SwitchSplittingImpl.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"

#include <algorithm>
#include <string>

namespace topocc::algorithms::detail {

/// Under a box shift, a switch inside box j > 0 takes the plan its
/// box-0 twin got, shifted j boxes, when w's in- and out-capacities are
/// the images of what the twin had (so the split keeps the GPU graph
/// symmetric; the proposal of each box on its own need not, e.g. after
/// learned cuts). false, plan untouched, otherwise.
bool Splitter::mirrorPlan(int w, std::map<Key, int64_t> &plan) {
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
void Splitter::findBoxShift() {
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
    maxSegs =
        std::max(maxSegs, 1 + static_cast<int>(llvm::count_if(node, isSep)));
  }
  // segs == 0: the whole node name is the box.
  for (int segs = 0; segs < maxSegs; ++segs)
    if (tryBoxShift(segs, prefixLength))
      return;
}

template <typename PrefixFn>
bool Splitter::tryBoxShift(int segs, PrefixFn prefixLength) {
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
        it = nodeIndex.try_emplace(key, static_cast<int>(locals.size())).first;
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
/// a proportional share first as in the tiers of proposeOwnPlan
/// (SwitchSplittingProposals.cpp). An orbit pair's units are spread over
/// the box offsets 1 .. M-1 (neighbours inside boxes send only to other
/// boxes); a fabric neighbour's units go to every member of the orbit
/// alike. false (plan untouched) when there is
/// no box shift, w is not fixed, the state is not symmetric, or the two
/// parts do not balance.
bool Splitter::symmetricPlan(int w, const std::vector<int> &ins,
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
  for (auto [fixed, orbit] :
       {std::pair{&fixedRows, &rows}, std::pair{&fixedCols, &cols}})
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

} // namespace topocc::algorithms::detail
