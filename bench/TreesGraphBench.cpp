//===- bench/TreesGraphBench.cpp - ForestColl stages on pure GPU meshes ---===//
//
// The reference fixtures (docs/Algorithms-trees.md, "Reference fixtures")
// that topocc/v1 cannot describe (1x MI250 and DGX-1 are pure GPU meshes:
// GPUs do not forward, so GPU pairs without a
// direct link have no route): the same graphs as the unit tests
// (tests/support/BoundGraphs.h), through the same stages as `topocc trees`
// (bound, units, switch splitting, tree packing; allgather), timed in
// process. Prints one line per fixture:
//
//   FIXTURE k K bound MS units MS splitting MS packing MS stages MS
//     (median of R runs) max-flows S + P height MAX / MEAN
//
//   topocc-trees-graph-bench [--runs R] [mi250x1[:K]] [dgx1[:K]] ...
//
// K: trees per root (0 or absent: the optimum's k). scripts/bench-trees
// prints its rows.
//
//===----------------------------------------------------------------------===//

#include "compiler/algorithms/ForestColl.h"
#include "tests/support/BoundGraphs.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

using namespace topocc;

namespace {

struct Timing {
  double bound = 0, units = 0, split = 0, pack = 0;
  double stages() const { return bound + units + split + pack; }
};

int run(llvm::StringRef name, const analysis::BoundGraph &g, int64_t k,
        int runs) {
  std::vector<Timing> times;
  algorithms::Forest last;
  for (int i = 0; i < runs; ++i) {
    algorithms::ForestOptions opts;
    opts.treesPerRoot = k;
    auto f = algorithms::buildForest(g, opts);
    if (!f) {
      llvm::errs() << name << ": " << llvm::toString(f.takeError()) << "\n";
      return 1;
    }
    times.push_back({f->boundSeconds * 1e3, f->unitsSeconds * 1e3,
                     f->splitSeconds * 1e3, f->packSeconds * 1e3});
    last = std::move(*f);
  }
  std::sort(times.begin(), times.end(), [](const Timing &a, const Timing &b) {
    return a.stages() < b.stages();
  });
  const Timing &m = times[times.size() / 2];
  llvm::outs() << llvm::formatv(
      "{0} k {1} bound {2:F3} ms units {3:F3} ms splitting {4:F3} ms "
      "packing {5:F3} ms stages {6:F3} ms (median of {7} runs) max-flows "
      "{8} + {9} height {10} / {11:F2}\n",
      name, last.k, m.bound, m.units, m.split, m.pack, m.stages(), runs,
      last.split.maxFlows, last.trees.maxFlows, last.trees.maxHeight,
      last.trees.meanHeight);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  int runs = 11;
  std::vector<std::string> fixtures;
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef a = argv[i];
    if (a == "--runs" && i + 1 < argc) {
      if (llvm::StringRef(argv[++i]).getAsInteger(10, runs) || runs < 1) {
        llvm::errs() << "--runs takes a positive integer\n";
        return 2;
      }
    } else if (a == "-h" || a == "--help") {
      llvm::outs() << "usage: topocc-trees-graph-bench [--runs R] "
                      "[mi250x1[:K]] [dgx1[:K]] ...\n";
      return 0;
    } else {
      fixtures.push_back(a.str());
    }
  }
  if (fixtures.empty())
    fixtures = {"mi250x1", "dgx1"};
  int status = 0;
  for (const std::string &fx : fixtures) {
    auto [name, kText] = llvm::StringRef(fx).split(':');
    int64_t k = 0;
    if (!kText.empty() && (kText.getAsInteger(10, k) || k < 0)) {
      llvm::errs() << fx << ": K must be a non-negative integer\n";
      return 2;
    }
    if (name == "mi250x1")
      status |= run(name, testgraphs::forestCollMi250(1), k, runs);
    else if (name == "dgx1")
      status |= run(name, testgraphs::meshGraph(testgraphs::kDgx1, 25), k, runs);
    else {
      llvm::errs() << "unknown fixture '" << name
                   << "'; expected mi250x1 or dgx1\n";
      return 2;
    }
  }
  return status;
}
