//===- compiler/algorithms/SwitchSplittingImpl.h - Splitter -----*- C++ -*-===//
//
// Private to the SwitchSplitting*.cpp files: the Splitter that
// splitSwitches (SwitchSplitting.h) runs, with its state. Each member is
// defined in the file of its strategy:
//   SwitchSplitting.cpp           the driver: the networks, run() (which
//                                 switch takes which strategy), checks
//   SwitchSplittingExact.cpp      the exact loop: gamma per (u,w,t) by
//                                 terminal-forcing max-flow gadgets
//   SwitchSplittingProposals.cpp  bulk proposals checked once per batch,
//                                 with bisection and cut learning
//   SwitchSplittingSymmetry.cpp   the box shift: findBoxShift, mirrorPlan,
//                                 symmetricPlan
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_ALGORITHMS_SWITCHSPLITTINGIMPL_H
#define TOPOCC_COMPILER_ALGORITHMS_SWITCHSPLITTINGIMPL_H

#include "compiler/algorithms/SwitchSplitting.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

namespace topocc::algorithms::detail {

using Key = std::pair<int, int>;

class Splitter {
public:
  // SwitchSplitting.cpp: the driver.
  Splitter(const analysis::BoundGraph &g, bool reversed,
           llvm::ArrayRef<int64_t> units, int64_t k, bool boxShift);

  int64_t cap(int u, int t) const {
    auto it = arcId.find({u, t});
    return it == arcId.end() ? 0 : net.capacity(it->second);
  }

  /// min over GPUs v of flow(s, v) - N k. `count`: add to res.maxFlows
  /// (not for Debug-only assertions, so counts match across builds).
  int64_t minSlack(bool count = true);

  llvm::Expected<SwitchSplitResult> run(SplitPolicy policy);

private:
  void setCap(int arc, int64_t c);
  void add(int u, int t, int64_t c);

  // SwitchSplittingExact.cpp: the exact loop.
  llvm::Error splitExactly(int w, SplitPolicy policy);
  int64_t forcedSlack(std::initializer_list<int> source,
                      std::initializer_list<int> sink);
  void trySplit(int u, int w, int t, int64_t limit);

  // SwitchSplittingProposals.cpp: bulk proposals with cut learning.
  bool proposeFrom(llvm::ArrayRef<int> switches, size_t &i, bool &verified);
  std::optional<bool> tryProposals(llvm::ArrayRef<int> batch);
  bool proposeSwitch(int w, std::map<Key, int64_t> &plan, bool &exact);
  bool proposeOwnPlan(int w, std::map<Key, int64_t> &plan, bool &exact);
  static bool shortCircuits(const std::vector<char> &x, int u, int w, int t);
  bool cutBlocks(int u, int w, int t) const;
  int64_t cutSlack(const std::vector<char> &x);
  bool fits(int w, const std::map<Key, int64_t> &plan) const;
  void charge(int w, const std::map<Key, int64_t> &plan);
  int64_t checkAndLearn();
  void learnPending(llvm::ArrayRef<int> batch);
  bool budgetTransport(int w, const std::vector<int> &ins,
                       const std::vector<int> &outs,
                       const std::map<int, int64_t> &rows,
                       const std::map<int, int64_t> &cols,
                       std::map<Key, int64_t> &plan);
  struct TransportPair {
    int u, t;
    int group;        ///< -1: none; else u sends at most groupCap to it
    int64_t groupCap; ///< the same for every pair of (u, group)
  };
  static std::vector<std::tuple<int, int, int64_t>>
  transport(const std::vector<TransportPair> &pairs,
            const std::map<int, int64_t> &rows,
            const std::map<int, int64_t> &cols);
  std::vector<int> components(int w);

  // SwitchSplittingSymmetry.cpp: the box shift.
  void findBoxShift();
  template <typename PrefixFn>
  bool tryBoxShift(int segs, PrefixFn prefixLength);
  bool mirrorPlan(int w, std::map<Key, int64_t> &plan);
  bool symmetricPlan(int w, const std::vector<int> &ins,
                     const std::vector<int> &outs,
                     std::map<int, int64_t> &rowRem,
                     std::map<int, int64_t> &colRem,
                     std::map<Key, int64_t> &plan);

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
  int mirroredPlans = 0;      ///< box-0 plans shifted (mirrorPlan)
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

} // namespace topocc::algorithms::detail

#endif // TOPOCC_COMPILER_ALGORITHMS_SWITCHSPLITTINGIMPL_H
