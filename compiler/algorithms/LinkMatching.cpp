//===- compiler/algorithms/LinkMatching.cpp - Greedy link-chunk matching --===//
//
// See LinkMatching.h. An event queue of (time, link): a link is looked at
// when it becomes free, or when its sender gets a chunk while it waits.
// Choosing among a sender's chunks scans what it holds, so the work is
// about (transfers) x (chunks); matchingWork estimates it up front.
//
//===----------------------------------------------------------------------===//

#include "compiler/algorithms/LinkMatching.h"

#include "support/Diagnostics.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <limits>
#include <queue>
#include <set>

namespace topocc::algorithms {

namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

/// Ranks that no path of direct links reaches from some origin, as text;
/// empty when every origin reaches every rank.
std::string unreachable(const BroadcastProblem &p) {
  std::set<int32_t> origins(p.origin.begin(), p.origin.end());
  for (int32_t o : origins)
    if (int32_t v = firstUnreachable(p.numRanks, p.links, o); v >= 0)
      return llvm::formatv("no path of direct links from rank {0} to rank {1}",
                           o, v);
  return "";
}

} // namespace

int32_t firstUnreachable(int32_t numRanks, const std::vector<MatchLink> &links,
                         int32_t from) {
  std::vector<std::vector<int32_t>> out(numRanks);
  for (const MatchLink &l : links)
    out[l.from].push_back(l.to);
  std::vector<bool> seen(numRanks, false);
  std::vector<int32_t> stack{from};
  seen[from] = true;
  while (!stack.empty()) {
    int32_t u = stack.back();
    stack.pop_back();
    for (int32_t v : out[u])
      if (!seen[v]) {
        seen[v] = true;
        stack.push_back(v);
      }
  }
  for (int32_t v = 0; v < numRanks; ++v)
    if (!seen[v])
      return v;
  return -1;
}

int64_t matchingWork(const BroadcastProblem &p) {
  const int64_t chunks = static_cast<int64_t>(p.origin.size());
  // Every rank receives every chunk it does not start with; each choice
  // scans the sender's chunks.
  return chunks * std::max<int64_t>(p.numRanks - 1, 0) *
         std::max<int64_t>(chunks, 1);
}

llvm::Expected<BroadcastPlan> matchBroadcasts(const BroadcastProblem &p) {
  const int32_t n = p.numRanks;
  const int32_t C = static_cast<int32_t>(p.origin.size());
  std::vector<std::string> problems;
  if (n < 1)
    problems.push_back(llvm::formatv("{0} ranks", n));
  for (size_t i = 0; i < p.links.size(); ++i) {
    const MatchLink &l = p.links[i];
    if (l.from < 0 || l.from >= n || l.to < 0 || l.to >= n || l.from == l.to)
      problems.push_back(
          llvm::formatv("link {0} joins ranks {1} and {2}", i, l.from, l.to));
    else if (!(l.busy > 0) || !std::isfinite(l.busy) || !(l.latency >= 0) ||
             !std::isfinite(l.latency))
      problems.push_back(llvm::formatv(
          "link {0} ({1} -> {2}) has busy time {3} s and latency {4} s", i,
          l.from, l.to, llvm::format("%g", l.busy),
          llvm::format("%g", l.latency)));
  }
  for (size_t c = 0; c < p.origin.size(); ++c)
    if (p.origin[c] < 0 || p.origin[c] >= n) {
      problems.push_back(
          llvm::formatv("chunk {0} starts on rank {1}", c, p.origin[c]));
      break;
    }
  if (!p.release.empty() && p.release.size() != p.origin.size())
    problems.push_back(llvm::formatv("{0} release times for {1} chunks",
                                     p.release.size(), p.origin.size()));
  if (!problems.empty())
    return makeUserError("link matching: " + llvm::join(problems, "; "));
  if (std::string why = unreachable(p); !why.empty())
    return makeUserError("link matching: " + why);
  if (int64_t work = matchingWork(p); work > p.maxWork)
    return makeUserError(llvm::formatv(
        "link matching: {0} chunks on {1} ranks is about {2} steps of "
        "synthesis, more than the limit of {3}; use fewer chunks",
        C, n, work, p.maxWork));

  BroadcastPlan plan;
  if (C == 0 || n == 1)
    return plan;
  // arrival[v * C + c]: when rank v holds chunk c (kNever: it neither holds
  // nor receives it).
  std::vector<double> arrival(static_cast<size_t>(n) * C, kNever);
  std::vector<std::vector<int32_t>> held(n); // chunks in order of arrival
  std::vector<int32_t> holders(C, 0);
  std::vector<int32_t> missing(n, C);
  int64_t left = static_cast<int64_t>(n) * C;
  auto gain = [&](int32_t v, int32_t c, double t) {
    arrival[static_cast<size_t>(v) * C + c] = t;
    held[v].push_back(c);
    ++holders[c];
    --missing[v];
    --left;
  };
  for (int32_t c = 0; c < C; ++c)
    gain(p.origin[c], c, p.release.empty() ? 0.0 : p.release[c]);

  std::vector<std::vector<int32_t>> outLinks(n);
  for (size_t e = 0; e < p.links.size(); ++e)
    outLinks[p.links[e].from].push_back(static_cast<int32_t>(e));
  using Event = std::pair<double, int32_t>; // (time, link)
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> queue;
  std::vector<bool> waiting(p.links.size(), false); // for its sender
  for (size_t e = 0; e < p.links.size(); ++e)
    queue.push({0.0, static_cast<int32_t>(e)});

  while (left > 0 && !queue.empty()) {
    auto [t, e] = queue.top();
    queue.pop();
    const MatchLink &l = p.links[e];
    const int32_t u = l.from, v = l.to;
    if (missing[v] == 0)
      continue; // the link has nothing left to do
    const double *au = &arrival[static_cast<size_t>(u) * C];
    const double *av = &arrival[static_cast<size_t>(v) * C];
    // The rarest chunk u holds by t and v lacks; ties by chunk index
    // rotated by v, so that neighbours start on different chunks.
    int32_t best = -1;
    int32_t bestHolders = 0, bestRot = 0;
    double next = kNever;
    for (int32_t c : held[u]) {
      if (av[c] != kNever)
        continue;
      if (au[c] > t) {
        next = std::min(next, au[c]);
        continue;
      }
      const int32_t rot = (c - v % C + C) % C;
      if (best < 0 || holders[c] < bestHolders ||
          (holders[c] == bestHolders && rot < bestRot)) {
        best = c;
        bestHolders = holders[c];
        bestRot = rot;
      }
    }
    if (best < 0) {
      if (next != kNever)
        queue.push({next, e});
      else
        waiting[e] = true;
      continue;
    }
    const double arrive = t + l.busy + l.latency;
    plan.transfers.push_back({e, best, t, arrive});
    plan.finish = std::max(plan.finish, arrive);
    gain(v, best, arrive);
    queue.push({t + l.busy, e});
    // v's links that waited for something to send wake when it arrives.
    for (int32_t f : outLinks[v])
      if (waiting[f]) {
        waiting[f] = false;
        queue.push({arrive, f});
      }
  }
  if (left > 0)
    return makeInternalError(llvm::formatv(
        "link matching stopped with {0} chunk deliveries left", left));
  return plan;
}

} // namespace topocc::algorithms
