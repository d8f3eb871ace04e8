//===- support/UnionFind.h - Disjoint sets over dense ids ------*- C++ -*-===//
//
// Disjoint sets over ids 0..n-1 with path halving; the smallest id of a set
// is its root, so roots (and anything keyed by them) are deterministic.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_SUPPORT_UNIONFIND_H
#define TOPOCC_SUPPORT_UNIONFIND_H

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <vector>

namespace topocc {

class UnionFind {
public:
  explicit UnionFind(size_t n) : parent(n) {
    std::iota(parent.begin(), parent.end(), 0);
  }
  size_t find(size_t x) {
    while (parent[x] != x)
      x = parent[x] = parent[parent[x]];
    return x;
  }
  void join(size_t a, size_t b) {
    a = find(a);
    b = find(b);
    if (a != b)
      parent[std::max(a, b)] = std::min(a, b);
  }

private:
  std::vector<size_t> parent;
};

} // namespace topocc

#endif // TOPOCC_SUPPORT_UNIONFIND_H
