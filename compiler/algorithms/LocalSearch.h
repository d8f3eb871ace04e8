//===- compiler/algorithms/LocalSearch.h - 2-opt and Or-opt on orders -*- C++ -*-===//
//
// The local search the ring searches share (RingSearch.cpp's order search,
// RingPacking.cpp's heuristic pricing): first-improvement 2-opt (reverse a
// segment) and Or-opt (move a segment of 1 to 3 entries) over a range of
// positions of an order, until no move improves. Header only; never
// prints; deterministic.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_ALGORITHMS_LOCALSEARCH_H
#define TOPOCC_COMPILER_ALGORITHMS_LOCALSEARCH_H

#include <algorithm>
#include <vector>

namespace topocc::algorithms {

/// Improves `o` by moves confined to positions lo..hi (inclusive; the
/// others stay put), at most `maxPasses` passes of first improvement.
/// `cost(order)` prices an order; `better(t, cur)` says whether a cost t
/// improves on cur. Returns the final order's cost.
template <typename Cost, typename Better>
double improveOrder(std::vector<int> &o, int lo, int hi, int maxPasses,
                    Cost cost, Better better) {
  double cur = cost(o);
  for (int pass = 0; pass < maxPasses; ++pass) {
    bool improved = false;
    for (int i = lo; i <= hi && !improved; ++i)
      for (int j = i + 1; j <= hi && !improved; ++j) {
        std::vector<int> c = o;
        std::reverse(c.begin() + i, c.begin() + j + 1);
        double t = cost(c);
        if (better(t, cur)) {
          o = std::move(c);
          cur = t;
          improved = true;
        }
      }
    for (int len = 1; len <= 3 && !improved; ++len)
      for (int i = lo; i + len - 1 <= hi && !improved; ++i)
        for (int p = lo; p + len - 1 <= hi && !improved; ++p) {
          if (p == i)
            continue;
          std::vector<int> c = o;
          std::vector<int> seg(c.begin() + i, c.begin() + i + len);
          c.erase(c.begin() + i, c.begin() + i + len);
          c.insert(c.begin() + p, seg.begin(), seg.end());
          double t = cost(c);
          if (better(t, cur)) {
            o = std::move(c);
            cur = t;
            improved = true;
          }
        }
    if (!improved)
      break;
  }
  return cur;
}

} // namespace topocc::algorithms

#endif // TOPOCC_COMPILER_ALGORITHMS_LOCALSEARCH_H
