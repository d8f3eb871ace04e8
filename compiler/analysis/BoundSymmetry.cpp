//===- compiler/analysis/BoundSymmetry.cpp - Rank orbits of the bound ---===//
//
// rankOrbits (Bound.h): ranks that an automorphism of the bound graph maps
// onto each other have equal max flows from the super source in every
// Dinkelbach round, so a round needs one flow per orbit.
//
// Candidates are the renamings of one index of the device names that
// namePermutations (NameSymmetry.h) proposes with NameMoves::All: all of
// unit 3's devices swapped with unit 4's, box 12 with box 13 in every unit,
// a torus dimension rotated, a mesh reflected. A proposal counts only when
// it is an automorphism: ranks go to ranks, and every ordered vertex pair
// keeps its summed arc capacity (what a max flow sees).
// The orbits are those of the group the accepted swaps generate
// (union-find). A proposal that is not an automorphism is dropped, so the
// orbits are never coarser than the true ones; at worst they are finer and
// a round computes more flows than it needs. A proposal that would join no
// two orbits is not checked, and a check visits only the arcs at vertices
// the proposal moves.
//
//===----------------------------------------------------------------------===//

#include "compiler/analysis/Bound.h"
#include "compiler/analysis/NameSymmetry.h"

#include "support/UnionFind.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace topocc::analysis {

std::vector<int> rankOrbits(const BoundGraph &g) {
  const int n = static_cast<int>(g.compute.size());
  std::vector<int> rep(n);
  for (int r = 0; r < n; ++r)
    rep[r] = r;
  if (static_cast<int>(g.names.size()) < g.numVertices)
    return rep;
  std::vector<int> rankOf(g.numVertices, -1);
  for (int r = 0; r < n; ++r)
    rankOf[g.compute[r]] = r;
  // What a max flow sees: the summed capacity of each ordered pair, as
  // sorted out-lists, and the in-lists (a proposal maps the pairs of the
  // vertices it leaves in place onto themselves, so only the pairs at the
  // vertices it moves need a look).
  const int nv = g.numVertices;
  std::vector<std::pair<uint64_t, int64_t>> pairs;
  pairs.reserve(g.arcs.size());
  for (const BoundGraph::Arc &a : g.arcs)
    pairs.push_back(
        {static_cast<uint64_t>(a.from) << 32 | static_cast<uint32_t>(a.to),
         a.cap});
  llvm::sort(pairs);
  size_t kept = 0;
  for (size_t i = 0; i < pairs.size(); ++i) {
    if (kept > 0 && pairs[kept - 1].first == pairs[i].first)
      pairs[kept - 1].second += pairs[i].second;
    else
      pairs[kept++] = pairs[i];
  }
  pairs.resize(kept);
  auto fromOf = [](uint64_t p) { return static_cast<int>(p >> 32); };
  auto toOf = [](uint64_t p) { return static_cast<int>(p & 0xffffffffu); };
  std::vector<uint32_t> outBegin(nv + 1, 0), inBegin(nv + 1, 0);
  for (const auto &[p, cap] : pairs) {
    ++outBegin[fromOf(p) + 1];
    ++inBegin[toOf(p) + 1];
  }
  for (int v = 0; v < nv; ++v) {
    outBegin[v + 1] += outBegin[v];
    inBegin[v + 1] += inBegin[v];
  }
  std::vector<int> inFrom(pairs.size());
  {
    std::vector<uint32_t> fill(inBegin.begin(), inBegin.end() - 1);
    for (const auto &[p, cap] : pairs)
      inFrom[fill[toOf(p)]++] = fromOf(p);
  }
  // The summed capacity from u to w, -1 without an arc.
  auto capacity = [&](int u, int w) -> int64_t {
    auto first = pairs.begin() + outBegin[u],
         last = pairs.begin() + outBegin[u + 1];
    auto at = std::lower_bound(first, last, w,
                               [&](const std::pair<uint64_t, int64_t> &e,
                                   int x) { return toOf(e.first) < x; });
    return at != last && toOf(at->first) == w ? at->second : -1;
  };

  UnionFind orbits(n);
  for (const std::vector<int> &perm :
       namePermutations(llvm::makeArrayRef(g.names).take_front(g.numVertices),
                        NameMoves::All)) {
    // A proposal that joins no two orbits cannot change them: skip its
    // check.
    bool joins = false;
    for (int r = 0; r < n && !joins; ++r) {
      const int image = rankOf[perm[g.compute[r]]];
      joins = image < 0 || orbits.find(r) != orbits.find(image);
    }
    if (!joins)
      continue;
    bool ok = true;
    for (int v = 0; v < nv && ok; ++v) {
      if (perm[v] == v)
        continue;
      ok = (rankOf[perm[v]] < 0) == (rankOf[v] < 0);
      for (uint32_t k = outBegin[v]; ok && k < outBegin[v + 1]; ++k) {
        const int w = toOf(pairs[k].first);
        ok = capacity(perm[v], perm[w]) == pairs[k].second;
      }
      for (uint32_t k = inBegin[v]; ok && k < inBegin[v + 1]; ++k) {
        const int u = inFrom[k];
        if (perm[u] == u) // a moved u's pairs are checked at u
          ok = capacity(u, perm[v]) == capacity(u, v);
      }
    }
    if (!ok)
      continue;
    for (int r = 0; r < n; ++r)
      orbits.join(r, rankOf[perm[g.compute[r]]]);
  }
  for (int r = 0; r < n; ++r)
    rep[r] = static_cast<int>(orbits.find(r));
  return rep;
}

} // namespace topocc::analysis
