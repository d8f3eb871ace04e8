//===- compiler/algorithms/CerarPolicy.cpp - When and how to use CERAR ----===//

#include "compiler/algorithms/CerarPolicy.h"

#include "compiler/algorithms/CerarVerify.h"
#include "compiler/algorithms/RingSearch.h"
#include "compiler/analysis/ComputeModel.h"
#include "compiler/analysis/CostModel.h"
#include "support/Diagnostics.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace topocc::cerar {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();

std::string g(double v) {
  return llvm::formatv("{0}", llvm::format("%g", v)).str();
}
std::string sci(double v) { return llvm::formatv("{0:e2}", v).str(); }
std::string ms(double s) { return llvm::formatv("{0:F3} ms", s * 1e3).str(); }
std::string gbs(double b) {
  return llvm::formatv("{0:F1} GB/s", b / 1e9).str();
}
} // namespace

llvm::StringRef wireDtypeName(WireDtype w) {
  switch (w) {
  case WireDtype::FP32:
    return "fp32";
  case WireDtype::FP16:
    return "fp16";
  case WireDtype::BF16:
    return "bf16";
  }
  return "?";
}

std::optional<WireDtype> wireDtypeFromName(llvm::StringRef s) {
  for (WireDtype w : {WireDtype::FP32, WireDtype::FP16, WireDtype::BF16})
    if (s == wireDtypeName(w))
      return w;
  return std::nullopt;
}

int wireDtypeBytes(WireDtype w) { return w == WireDtype::FP32 ? 4 : 2; }

namespace {
/// The error contract's bound (compiler/algorithms/CodedErrorBound.h) at
/// its best eps for N = kContractRanks[i] ranks and c = qN, fp32 wire
/// (measured by scripts/bench-cerar-contract; docs/benchmarks/cerar.md).
constexpr int kContractRanks[] = {3, 4, 8, 16};
constexpr double kContractFp32[3][4] = {{4.47e-3, 6.03e-3, 1.07e-2, 1.85e-2},
                                        {4.9e-2, 6.25e-2, 0.106, 0.291},
                                        {0.153, 0.192, 0.318, 0.763}};
/// fp16 and bf16 at N = 3 (above 1 unusable), scaled with N as fp32.
constexpr double kContractHalf[2][3] = {{0.38, 1.13, kInf}, {1.16, kInf, kInf}};

/// log-log interpolation of row `v` over kContractRanks, extrapolated
/// with the last segment's slope (and the first value below N = 3).
double contractAt(const double (&v)[4], int n) {
  if (n <= kContractRanks[0])
    return v[0];
  int i = 0;
  while (i < 2 && n > kContractRanks[i + 1])
    ++i;
  double slope = std::log(v[i + 1] / v[i]) /
                 std::log(double(kContractRanks[i + 1]) / kContractRanks[i]);
  return v[i] * std::pow(double(n) / kContractRanks[i], slope);
}
} // namespace

double wireError(WireDtype w, int q, int n) {
  if (q < 2 || q > 4)
    return kInf;
  double fp32 = contractAt(kContractFp32[q - 2], n);
  if (w == WireDtype::FP32)
    return fp32;
  double half = kContractHalf[w == WireDtype::FP16 ? 0 : 1][q - 2];
  if (std::isinf(half))
    return kInf;
  return half * fp32 / kContractFp32[q - 2][0];
}

double wireEps(WireDtype w, int q) {
  // Where the contract's bound is smallest (e ~ eps against rounding ~
  // u eps^-(q-1)); nearly independent of N. The lowering moves eps to the
  // schedule's own minimum (compiler/lowerings/CodedRequest.h).
  static const double fp32[] = {2e-3, 2.5e-2, 8.5e-2};
  static const double fp16[] = {0.18, 0.3, 0.3};
  static const double bf16[] = {0.3, 0.3, 0.3};
  q = std::clamp(q, 2, 4);
  switch (w) {
  case WireDtype::FP32:
    return fp32[q - 2];
  case WireDtype::FP16:
    return fp16[q - 2];
  case WireDtype::BF16:
    return bf16[q - 2];
  }
  return 0;
}

double kappaConstant(int q) {
  static const double k[] = {1.0, 2.00, 4.24, 8.94};
  return q >= 1 && q <= 4 ? k[q - 1] : kInf;
}

double ringTime(const RingLink &l, double bytes) {
  int n = l.ranks;
  return 2.0 * (n - 1) * l.alpha + 2.0 * (n - 1) / n * bytes / l.bandwidth;
}

double cerarTime(const RingLink &l, double bytes, int c, double w,
                 const PolicyOptions &o) {
  int n = l.ranks;
  return (c + n - 2) * l.alpha +
         (1.0 + double(n - 2) / c) * w * bytes / l.bandwidth +
         o.phi * bytes / o.memBandwidth;
}

PolicyDecision chooseCerar(const RingLink &l, double bytes,
                           const PolicyOptions &o) {
  PolicyDecision d;
  int n = l.ranks;
  d.ringTime = ringTime(l, bytes);
  d.bandwidthCeiling = n > 0 ? o.memBandwidth * (n - 2) / (o.phi * n) : 0;
  if (!(o.tolerance > 0)) {
    d.reason = "exact all-reduce required (no --tolerance): CERAR is "
               "approximate for c > N and costs the same as the ring for "
               "c <= N";
    return d;
  }
  if (n < 3) {
    d.reason = llvm::formatv("N = {0}: CERAR's traffic per rank equals the "
                             "ring's",
                             n);
    return d;
  }
  double w = double(wireDtypeBytes(o.wire)) / o.baseBytes;
  double ringRate = 2.0 * (n - 1) / n;
  if (w >= ringRate) {
    d.reason = llvm::formatv(
        "a {0} wire is {1}x the baseline dtype, at least the ring's "
        "2(N-1)/N = {2}: CERAR can never win",
        wireDtypeName(o.wire), g(w), llvm::formatv("{0:F3}", ringRate).str());
    return d;
  }
  int qMax = 0;
  for (int q = 2; q <= o.maxQ; ++q)
    if (wireError(o.wire, q, n) <= o.tolerance)
      qMax = q;
  if (qMax == 0) {
    d.reason = llvm::formatv(
        "tolerance {0} is below the smallest error contract a {1} wire "
        "achieves ({2} at c = 2N, docs/Algorithms-cerar.md 8)",
        sci(o.tolerance), wireDtypeName(o.wire), sci(wireError(o.wire, 2, n)));
    return d;
  }
  if (l.bandwidth >= d.bandwidthCeiling) {
    d.reason = llvm::formatv(
        "ring bandwidth {0} is at or above the ceiling B_mem(N-2)/(phi N) = "
        "{1}: encode/decode memory traffic costs more than the saved "
        "link time for every c",
        gbs(l.bandwidth), gbs(d.bandwidthCeiling));
    return d;
  }
  double elements = bytes / o.baseBytes;
  int cMax = std::min(qMax * n, kMaxComponents);
  cMax = std::min<double>(cMax, std::floor(elements / o.granule));
  if (cMax < n + 1) {
    d.reason = llvm::formatv("{0} elements are too few to cut into more "
                             "than N = {1} components of {2} elements",
                             g(elements), n, o.granule);
    return d;
  }
  d.unconstrainedC = std::sqrt((n - 2) * w * bytes / (l.alpha * l.bandwidth));
  int best = n + 1;
  for (int c = n + 1; c <= cMax; ++c)
    if (cerarTime(l, bytes, c, w, o) < cerarTime(l, bytes, best, w, o))
      best = c;
  double tBest = cerarTime(l, bytes, best, w, o);
  if (tBest > (1 - o.margin) * d.ringTime) {
    d.reason = llvm::formatv(
        "best CERAR (c = {0}): the policy's alpha-beta model predicts {1} "
        "against the ring's {2}; it must "
        "be {3}% faster",
        best, ms(tBest), ms(d.ringTime), g(o.margin * 100));
    d.cerarTime = tBest;
    d.components = best;
    return d;
  }
  // Snap to the nearest multiple of N in range when nearly free.
  int lo = (best / n) * n, hi = lo + n;
  int snap = 0;
  if (lo >= n + 1 && (best - lo <= hi - best || hi > cMax))
    snap = lo;
  else if (hi <= cMax)
    snap = hi;
  else if (lo >= n + 1)
    snap = lo;
  if (snap && cerarTime(l, bytes, snap, w, o) <= 1.01 * tBest)
    best = snap;
  d.useCerar = true;
  d.components = best;
  d.cerarTime = cerarTime(l, bytes, best, w, o);
  d.q = (best + n - 1) / n;
  d.eps = wireEps(o.wire, d.q);
  d.kappa = kappaConstant(d.q) * std::pow(d.eps, -(d.q - 1));
  d.expectedError = wireError(o.wire, d.q, n);
  if (o.kappaMax > 0 && d.kappa > o.kappaMax) {
    d.eps = std::pow(kappaConstant(d.q) / o.kappaMax, 1.0 / (d.q - 1));
    d.kappa = o.kappaMax;
    // No-rounding error is about 0.7 eps (docs/Algorithms-cerar.md 5.3).
    d.expectedError = std::max(d.expectedError, 0.7 * d.eps);
    if (d.expectedError > o.tolerance) {
      d.useCerar = false;
      d.reason = llvm::formatv(
          "--kappa-max {0} forces eps = {1} at c = {2}, error about {3} > "
          "tolerance {4}",
          sci(o.kappaMax), sci(d.eps), best, sci(d.expectedError),
          sci(o.tolerance));
      return d;
    }
  }
  // e = eps ||Psi|| sqrt(N-1) with ||Psi|| = 1 when N | c
  // (docs/Algorithms-cerar.md 3.3.4); designCerarFor reports the design's
  // exact value.
  d.designError = d.eps * std::sqrt(n - 1.0);
  double tRing = d.ringTime;
  double gain = 2.0 * (n - 1) / n - w * (1.0 + double(n - 2) / best);
  double denom = gain / l.bandwidth - o.phi / o.memBandwidth;
  d.minBytes = denom > 0 ? (best - n) * l.alpha / denom : 0;
  d.reason = llvm::formatv(
      "CERAR c = {0} (q = {1}, eps = {2}, kappa ~ {3}): the policy's "
      "alpha-beta model predicts {4} against the ring's {5} ({6}); "
      "error contract in {7} about {8} <= tolerance {9}",
      best, d.q, sci(d.eps), sci(d.kappa), ms(d.cerarTime), ms(tRing),
      llvm::formatv("{0:F3}x", d.cerarTime / tRing).str(),
      wireDtypeName(o.wire), sci(d.expectedError), sci(o.tolerance));
  return d;
}

namespace {

/// What the built code achieved, in the decision: its worst error and, for
/// approximate codes, eps and the encoders' condition number.
void recordDesign(const Design &design, PolicyDecision &dec) {
  dec.designError = design.worstError;
  if (design.construction != Construction::Exact) {
    dec.eps = design.eps;
    dec.kappa = design.maxCondition;
  }
}

/// The code of designCerarFor and designHierCerarFor for N = n ranks: c =
/// `components`, or the policy's (a user error when it keeps the ring);
/// perturbed (or `construction`), exact when c <= n; the tolerance checks of
/// forced mode. Messages start with `who` ("cerar"); `where` names the ring.
llvm::Expected<Design> buildCode(int n, int components,
                                 const PolicyDecision &dec,
                                 const PolicyOptions &policy,
                                 Construction construction, bool force,
                                 llvm::StringRef who, llvm::StringRef where) {
  int c = components;
  if (c == 0) {
    if (!dec.useCerar)
      return makeUserError(who.str() + ": CERAR cannot win on this " +
                           where.str() + ": " + dec.reason +
                           "; pass --components to force a code");
    c = dec.components;
  }
  // The policy's eps when the code has the policy's layer count q, else
  // (a forced c with another q) the wire table's eps for this q: eps grows
  // with q (docs/Algorithms-cerar.md 5.3), so another q's eps is too coarse or
  // too fine.
  const int q = (c + n - 1) / n;
  double eps = dec.q == q ? dec.eps : 0;
  if (eps == 0)
    eps = q >= 2 ? wireEps(policy.wire, q) : 0;
  DesignRequest dr;
  dr.ranks = n;
  dr.components = c;
  // N = 2: E = I, D = I is exact for every c (docs/Algorithms-cerar.md 2.5) and
  // costs the same as any other code.
  dr.construction = c <= n || n == 2 ? Construction::Exact : construction;
  if (dr.construction == Construction::Optimized) {
    dr.kappaMax = policy.kappaMax > 0 ? policy.kappaMax : 1e3;
  } else if (dr.construction != Construction::Exact) {
    dr.eps = eps;
  }
  auto design = makeDesign(dr);
  if (!design)
    return design.takeError();
  // The tolerance itself is checked against the lowered schedule's error
  // contract (compiler/algorithms/CodedErrorBound.h) by the lowering, which
  // also moves eps to meet it; here only q's usability on the wire.
  const bool approximate = dr.construction != Construction::Exact;
  if (force && policy.tolerance > 0 && approximate) {
    double expected = wireError(policy.wire, q, n);
    if (std::isinf(expected))
      return makeUserError(llvm::formatv(
          "{5}: c = {0} on N = {1} ranks needs q = {2} layers; a {3} wire "
          "has no usable error beyond q = {4} (docs/Algorithms-cerar.md 5.3)",
          c, n, q, wireDtypeName(policy.wire),
          std::isinf(wireError(policy.wire, 4, n)) ? 3 : 4, who));
  }
  if (force && !(policy.tolerance > 0) && approximate)
    return makeUserError(llvm::formatv(
        "{2}: c = {0} > N = {1} is approximate; pass --tolerance to allow "
        "it, or use c <= N",
        c, n, who));
  return design;
}

} // namespace

llvm::Expected<RingChoice> ringFor(const topo::Topology &t, double bytes,
                                   const std::vector<int> &ringOrder) {
  int n = t.numRanks();
  if (n < 2)
    return makeUserError("cerar: the topology has fewer than 2 GPUs");
  analysis::LinkModel m(t);
  analysis::RingChannel ring;
  if (!ringOrder.empty()) {
    ring.order = ringOrder;
  } else {
    algorithms::RingSearchOptions so;
    so.bytes = bytes;
    so.channels = 1;
    auto found = algorithms::searchRings(t, m, so);
    if (!found)
      return found.takeError();
    ring = found->rings.front();
    ring.share = 1;
  }
  std::vector<int> sorted = ring.order;
  std::sort(sorted.begin(), sorted.end());
  for (int k = 0; k < n; ++k)
    if (int(sorted.size()) != n || sorted[k] != k)
      return makeUserError(llvm::formatv(
          "cerar: the ring order must be a permutation of 0..{0}", n - 1));
  analysis::RingBottleneck bn = analysis::ringBottleneck(ring, m);
  if (!bn.routed)
    return makeUserError("cerar: a hop of the ring has no route");
  RingChoice rc;
  rc.link.ranks = n;
  rc.link.bandwidth = bn.bandwidth;
  for (size_t i = 0; i < ring.order.size(); ++i)
    rc.link.alpha =
        std::max(rc.link.alpha, analysis::hopFlow(ring, i, m).latency);
  rc.order = ring.order;
  return rc;
}

llvm::Expected<CerarChoice> designCerarFor(const topo::Topology &t,
                                         const CerarRequest &req) {
  CerarChoice plan;
  int n = t.numRanks();
  auto rc = ringFor(t, req.bytes, req.ringOrder);
  if (!rc)
    return rc.takeError();
  plan.link = rc->link;
  plan.ringOrder = rc->order;
  analysis::RingChannel ring;
  ring.order = rc->order;
  // B_mem: the slowest GPU's memory bandwidth from the compute model the
  // simulator and the cost model share (analysis/ComputeModel.h); the
  // option's value when no GPU model is known.
  PolicyOptions policy = req.policy;
  if (double mem = analysis::slowestMemoryBandwidth(t); mem > 0)
    policy.memBandwidth = mem;
  plan.decision = chooseCerar(plan.link, req.bytes, policy);
  PolicyDecision &dec = plan.decision;

  int c = req.components;
  if (!req.force && !dec.useCerar)
    return plan; // auto: the exact ring
  auto design = buildCode(n, c, dec, req.policy, req.construction, req.force,
                          "cerar", "ring");
  if (!design)
    return design.takeError();
  recordDesign(*design, dec);
  plan.design = std::move(*design);
  return plan;
}

llvm::Expected<HierLinks>
hierLinksFor(const topo::Topology &t,
             const std::vector<std::vector<int>> &nodes,
             const std::vector<int> &localOrder) {
  HierLinks hl;
  hl.nodes = static_cast<int>(nodes.size());
  hl.gpusPerNode = nodes.empty() ? 0 : static_cast<int>(nodes[0].size());
  const int m = hl.nodes, g = hl.gpusPerNode;
  analysis::LinkModel lm(t);
  // Intra-node ring of node 0 in the local order.
  hl.intra.ranks = g;
  if (g >= 2) {
    analysis::RingChannel intra;
    for (int k = 0; k < g; ++k)
      intra.order.push_back(
          nodes[0][localOrder.empty() ? k : localOrder[size_t(k)]]);
    analysis::RingBottleneck bn = analysis::ringBottleneck(intra, lm);
    if (!bn.routed)
      return makeUserError("hier-cerar: a hop of the intra-node ring has no "
                           "route");
    hl.intra.bandwidth = bn.bandwidth;
    for (size_t i = 0; i < intra.order.size(); ++i)
      hl.intra.alpha =
          std::max(hl.intra.alpha, analysis::hopFlow(intra, i, lm).latency);
  }
  // Every rail's hops loaded together: the rails share NICs and switches.
  hl.rail.ranks = m;
  std::map<int, double> load;
  for (int l = 0; l < g; ++l)
    for (int p = 0; p < m; ++p) {
      const analysis::PathFlow &f = lm.rankFlow(
          nodes[size_t(p)][size_t(l)], nodes[size_t((p + 1) % m)][size_t(l)]);
      if (!f.found)
        return makeUserError(llvm::formatv(
            "hier-cerar: rail {0} has no route from node {1} to node {2}", l, p,
            (p + 1) % m));
      hl.rail.alpha = std::max(hl.rail.alpha, f.latency);
      for (auto [res, x] : f.res)
        load[res] += x;
    }
  hl.rail.bandwidth = kInf;
  for (auto [res, x] : load)
    hl.rail.bandwidth = std::min(hl.rail.bandwidth, lm.capacity(res) / x);
  return hl;
}

double exactPhasesTime(const HierLinks &l, double bytes) {
  const int g = l.gpusPerNode;
  if (g < 2)
    return 0;
  return 2.0 * ((g - 1) * l.intra.alpha +
                double(g - 1) / g * bytes / l.intra.bandwidth);
}

double hierRingTime(const HierLinks &l, double bytes) {
  return exactPhasesTime(l, bytes) +
         ringTime(l.rail, bytes / std::max(l.gpusPerNode, 1));
}

double hierCerarTime(const HierLinks &l, double bytes, int c, double w,
                     const PolicyOptions &o) {
  return exactPhasesTime(l, bytes) +
         cerarTime(l.rail, bytes / std::max(l.gpusPerNode, 1), c, w, o);
}

llvm::Expected<HierCerarChoice> designHierCerarFor(const topo::Topology &t,
                                                 const HierCerarRequest &req) {
  const int m = static_cast<int>(req.nodes.size());
  if (m < 2)
    return makeUserError(llvm::formatv(
        "--algorithm hier-cerar needs at least 2 nodes with GPUs, the "
        "topology has {0}; use --algorithm cerar",
        m));
  HierCerarChoice plan;
  auto links = hierLinksFor(t, req.nodes, req.localOrder);
  if (!links)
    return links.takeError();
  plan.links = *links;
  const int g = plan.links.gpusPerNode;
  PolicyOptions policy = req.policy;
  if (double mem = analysis::slowestMemoryBandwidth(t); mem > 0)
    policy.memBandwidth = mem;
  // The rail's share: S/G bytes, whose elements set the largest c.
  plan.decision = chooseCerar(plan.links.rail, req.bytes / g, policy);
  PolicyDecision &dec = plan.decision;
  plan.exactPhases = exactPhasesTime(plan.links, req.bytes);
  plan.hierRing = hierRingTime(plan.links, req.bytes);
  // The flat alternatives on the ring search's ring, for --explain.
  auto flat = ringFor(t, req.bytes, {});
  if (!flat)
    return flat.takeError();
  PolicyDecision fd = chooseCerar(flat->link, req.bytes, policy);
  plan.flatRing = fd.ringTime;
  plan.flatReason = fd.reason;
  if (fd.useCerar) {
    plan.flatCerar = fd.cerarTime;
    plan.flatComponents = fd.components;
  }
  if (!req.force && !dec.useCerar)
    return plan; // auto: the exact algorithms
  auto design = buildCode(m, req.components, dec, req.policy, req.construction,
                          req.force, "hier-cerar", "rail");
  if (!design)
    return design.takeError();
  const double w =
      double(wireDtypeBytes(req.policy.wire)) / req.policy.baseBytes;
  plan.hierCerar =
      hierCerarTime(plan.links, req.bytes, design->components, w, policy);
  recordDesign(*design, dec);
  plan.design = std::move(*design);
  return plan;
}

} // namespace topocc::cerar
