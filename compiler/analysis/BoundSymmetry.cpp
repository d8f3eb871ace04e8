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
// a round computes more flows than it needs.
//
//===----------------------------------------------------------------------===//

#include "compiler/analysis/Bound.h"
#include "compiler/analysis/NameSymmetry.h"

#include "support/UnionFind.h"

#include <cstdint>
#include <unordered_map>
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
  // What a max flow sees: the summed capacity of each ordered pair.
  std::unordered_map<uint64_t, int64_t> capacity;
  auto key = [](int u, int v) {
    return static_cast<uint64_t>(u) << 32 | static_cast<uint32_t>(v);
  };
  for (const BoundGraph::Arc &a : g.arcs)
    capacity[key(a.from, a.to)] += a.cap;

  UnionFind orbits(n);
  for (const std::vector<int> &perm :
       namePermutations(llvm::makeArrayRef(g.names).take_front(g.numVertices),
                        NameMoves::All)) {
    bool ok = true;
    for (int v = 0; v < g.numVertices && ok; ++v)
      ok = (rankOf[perm[v]] < 0) == (rankOf[v] < 0);
    for (auto c = capacity.begin(); ok && c != capacity.end(); ++c) {
      int u = static_cast<int>(c->first >> 32);
      int v = static_cast<int>(c->first & 0xffffffffu);
      auto image = capacity.find(key(perm[u], perm[v]));
      ok = image != capacity.end() && image->second == c->second;
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
