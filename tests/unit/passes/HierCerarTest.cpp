//===- tests/unit/passes/HierCerarTest.cpp - Hierarchical CERAR -----------===//
//
// passes::lowerHierCerar (exact intra-node reduce-scatter, one CERAR ring per
// rail, exact all-gather) for M x G = 2x2, 2x4, 3x2, 4x2 and c in {2, M,
// M+1, 2M}: the structural verifier, the exact postcondition for c <= M,
// cerar::verifyHierCerarSchedule (every coefficient against the composed
// operator) and the plan's error bound. A corrupted coefficient and a
// wrong seam per rail are detected; staggered seams make a different node
// exact on each rail; G = 1 is plain CERAR; the later passes keep the
// meaning; the policy's rail link and the hierarchical cost formula.
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipeline.h"
#include "compiler/algorithms/Cerar.h"
#include "compiler/algorithms/CerarPolicy.h"
#include "compiler/algorithms/CerarVerify.h"
#include "compiler/passes/AssignChannels.h"
#include "compiler/passes/AssignThreadblocks.h"
#include "compiler/passes/Fuse.h"
#include "compiler/passes/LegalizeDependencies.h"
#include "compiler/passes/LowerCerar.h"
#include "compiler/passes/LowerHierCerar.h"
#include "compiler/passes/SplitChannels.h"
#include "compiler/topology/Topology.h"

#include "backends/PlanJson.h"
#include "ir/Semantics.h"
#include "ir/Verifier.h"

#include "tests/support/ErrorText.h"

#include "gtest/gtest.h"

#include "llvm/Support/Error.h"

#include <cmath>
#include <set>
#include <tuple>

using namespace topocc;
using namespace topocc::ir;
using cerar::Construction;

namespace {

cerar::Design design(int n, int c, Construction k, double eps = 0) {
  cerar::DesignRequest r;
  r.ranks = n;
  r.components = c;
  r.construction = k;
  r.eps = eps;
  auto d = cerar::makeDesign(r);
  if (!d) {
    ADD_FAILURE() << llvm::toString(d.takeError());
    return cerar::Design();
  }
  return std::move(*d);
}

/// M nodes of G ranks: node p holds ranks p*G .. p*G+G-1.
std::vector<std::vector<RankId>> grid(int m, int g) {
  std::vector<std::vector<RankId>> nodes(m);
  for (int p = 0; p < m; ++p)
    for (int l = 0; l < g; ++l)
      nodes[p].push_back(p * g + l);
  return nodes;
}

passes::HierCerarOptions options(const cerar::Design &d, int m, int g,
                                 bool inplace) {
  passes::HierCerarOptions o;
  o.design = d;
  o.numRanks = m * g;
  o.nodes = grid(m, g);
  o.inplace = inplace;
  return o;
}

Schedule lower(const passes::HierCerarOptions &o) {
  auto s = passes::lowerHierCerar(o);
  if (!s) {
    ADD_FAILURE() << llvm::toString(s.takeError());
    return Schedule();
  }
  return std::move(*s);
}

cerar::HierCerarLayout layoutOf(const passes::HierCerarOptions &o) {
  cerar::HierCerarLayout l;
  for (const auto &node : o.nodes)
    l.nodes.emplace_back(node.begin(), node.end());
  l.seamOffset = o.seamOffset;
  l.staggerSeams = o.staggerSeams;
  return l;
}

std::string verifyText(const Schedule &s, const cerar::Design &d,
                       const cerar::HierCerarLayout &l,
                       cerar::HierCerarCheck *out = nullptr) {
  auto chk = cerar::verifyHierCerarSchedule(s, d, l);
  if (!chk)
    return topocc::testing::errorMessage(chk.takeError());
  if (out)
    *out = *chk;
  return "ok";
}

/// The codes of the sweep: exact for c <= M, perturbed for c > M (also for
/// M = 2, where the perturbed code is approximate: e_0 = eps).
Construction constructionFor(int m, int c) {
  return c <= m ? Construction::Exact : Construction::Perturbed;
}

class HierCerarSweep
    : public ::testing::TestWithParam<std::tuple<int, int, int, bool>> {};

TEST_P(HierCerarSweep, VerifiesAgainstTheComposedOperator) {
  auto [m, g, c, inplace] = GetParam();
  cerar::Design d = design(m, c, constructionFor(m, c), 1e-2);
  ASSERT_EQ(d.ranks, m);
  passes::HierCerarOptions o = options(d, m, g, inplace);
  passes::HierCerarInfo info;
  auto lowered = passes::lowerHierCerar(o, &info);
  ASSERT_TRUE(bool(lowered)) << llvm::toString(lowered.takeError());
  Schedule s = std::move(*lowered);
  EXPECT_EQ(s.chunksPerLoop, g * c);
  EXPECT_EQ(info.nodes, m);
  EXPECT_EQ(info.gpusPerNode, g);
  EXPECT_EQ(info.rail.rounds, c + m - 2);
  // Structural checks always; the exact postcondition when c <= M.
  VerifyOptions structural;
  structural.checkSemantics = false;
  EXPECT_FALSE(bool(verifySchedule(s, structural)));
  if (c <= m) {
    llvm::Error exact = verifySchedule(s);
    EXPECT_FALSE(bool(exact)) << llvm::toString(std::move(exact));
  }
  cerar::HierCerarCheck chk;
  EXPECT_EQ(verifyText(s, d, layoutOf(o), &chk), "ok");
  EXPECT_LE(chk.maxDeviation, chk.tolerance);
  // The plan's error bound (the design's worst operator norm) holds for
  // every output coefficient; approximate codes do deviate.
  EXPECT_LE(chk.maxCoeffError, d.worstError + 1e-12);
  if (d.worstError > 0) {
    EXPECT_GT(chk.maxCoeffError, 0.0);
    llvm::Error bound = backends::verifyPlanSchedule(s, d.worstError);
    EXPECT_FALSE(bool(bound)) << llvm::toString(std::move(bound));
    // A bound below the schedule's error is refused.
    llvm::Error tight =
        backends::verifyPlanSchedule(s, chk.maxCoeffError * 0.5);
    EXPECT_TRUE(bool(tight));
    llvm::consumeError(std::move(tight));
  } else {
    EXPECT_LE(chk.maxCoeffError, 1e-12);
    llvm::Error bound = backends::verifyPlanSchedule(s, 0);
    EXPECT_FALSE(bool(bound)) << llvm::toString(std::move(bound));
  }
}

std::vector<std::tuple<int, int, int, bool>> sweep() {
  std::vector<std::tuple<int, int, int, bool>> out;
  for (auto [m, g] :
       std::vector<std::pair<int, int>>{{2, 2}, {2, 4}, {3, 2}, {4, 2}}) {
    std::set<int> cs{2, m, m + 1, 2 * m};
    for (int c : cs)
      for (bool inplace : {false, true})
        out.emplace_back(m, g, c, inplace);
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(
    Grid, HierCerarSweep, ::testing::ValuesIn(sweep()),
    [](const ::testing::TestParamInfo<std::tuple<int, int, int, bool>> &i) {
      return "M" + std::to_string(std::get<0>(i.param)) + "G" +
             std::to_string(std::get<1>(i.param)) + "c" +
             std::to_string(std::get<2>(i.param)) +
             (std::get<3>(i.param) ? "_inplace" : "_outofplace");
    });

TEST(HierCerar, CorruptedCoefficientIsDetected) {
  cerar::Design d = design(3, 6, Construction::Perturbed, 1e-2);
  passes::HierCerarOptions o = options(d, 3, 2, false);
  Schedule s = lower(o);
  ASSERT_EQ(verifyText(s, d, layoutOf(o)), "ok");
  // The first lincomb with a non-unit coefficient on rank 2 (node 1).
  bool changed = false;
  for (Op &op : s.ranks[2].ops)
    if (op.kind == OpKind::LinComb)
      for (LinTerm &t : op.terms)
        if (!changed && t.coeff != 1.0 && t.coeff != 0.0) {
          t.coeff *= 1.001;
          changed = true;
        }
  ASSERT_TRUE(changed);
  std::string text = verifyText(s, d, layoutOf(o));
  EXPECT_EQ(text.rfind("hier-cerar verification: rank ", 0), 0u) << text;
  EXPECT_NE(text.find("the composed operator's is"), std::string::npos) << text;
}

TEST(HierCerar, WrongSeamOnARailIsDetected) {
  // Lowered without staggering: rail 1 runs with seam 0, the layout says 1.
  cerar::Design d = design(3, 6, Construction::Perturbed, 1e-2);
  passes::HierCerarOptions o = options(d, 3, 2, false);
  o.staggerSeams = false;
  Schedule s = lower(o);
  EXPECT_EQ(verifyText(s, d, layoutOf(o)), "ok");
  cerar::HierCerarLayout staggered = layoutOf(o);
  staggered.staggerSeams = true;
  std::string text = verifyText(s, d, staggered);
  EXPECT_NE(text.find("(rail 1, component"), std::string::npos) << text;
}

/// Largest |coefficient - exact| of node p's outputs on rail r.
double railError(const Schedule &s, const SymbolicResult &res, int g, int c,
                 int p, int r) {
  double worst = 0;
  for (int l = 0; l < g; ++l) {
    RankId rank = p * g + l;
    for (int j = 0; j < c; ++j) {
      int u = r * c + j;
      std::vector<double> row(size_t(s.numRanks) * s.chunksPerLoop, 0.0);
      for (const Term &t : res.output[rank][u].terms)
        row[size_t(t.rank) * s.chunksPerLoop + t.chunk] += t.coeff;
      for (int q = 0; q < s.numRanks; ++q)
        row[size_t(q) * s.chunksPerLoop + u] -= 1.0;
      for (double x : row)
        worst = std::max(worst, std::fabs(x));
    }
  }
  return worst;
}

TEST(HierCerar, StaggeredSeamsMakeADifferentNodeExactPerRail) {
  const int m = 3, g = 3, c = 6;
  cerar::Design d = design(m, c, Construction::Perturbed, 1e-2);
  for (bool stagger : {true, false}) {
    passes::HierCerarOptions o = options(d, m, g, false);
    o.staggerSeams = stagger;
    o.seamOffset = 1;
    Schedule s = lower(o);
    ASSERT_EQ(verifyText(s, d, layoutOf(o)), "ok");
    auto res = execute(s);
    ASSERT_TRUE(bool(res)) << llvm::toString(res.takeError());
    for (int r = 0; r < g; ++r) {
      // Logical index M-1 is exact: node p = (M-1 - seam_r) mod M.
      int seam = passes::hierCerarRailSeam(r, m, 1, stagger);
      int exactNode = ((m - 1 - seam) % m + m) % m;
      EXPECT_EQ(seam, stagger ? (1 + r) % m : 1);
      for (int p = 0; p < m; ++p) {
        double e = railError(s, *res, g, c, p, r);
        if (p == exactNode)
          EXPECT_LE(e, 1e-12) << "rail " << r << " node " << p;
        else
          EXPECT_GT(e, 1e-6) << "rail " << r << " node " << p;
      }
    }
  }
}

TEST(HierCerar, OneGpuPerNodeIsPlainCerar) {
  const int m = 4, c = 8;
  cerar::Design d = design(m, c, Construction::Perturbed, 1e-2);
  passes::HierCerarOptions o = options(d, m, 1, false);
  Schedule hier = lower(o);
  passes::CerarLowerOptions co;
  co.design = d;
  auto lowered = passes::lowerCerar(co);
  ASSERT_TRUE(bool(lowered)) << llvm::toString(lowered.takeError());
  Schedule flat = std::move(*lowered);
  auto a = execute(hier), b = execute(flat);
  ASSERT_TRUE(a && b);
  ASSERT_EQ(hier.chunksPerLoop, flat.chunksPerLoop);
  for (int r = 0; r < m; ++r)
    for (int j = 0; j < c; ++j)
      EXPECT_TRUE(valuesMatch(a->output[r][j], b->output[r][j], 0.0))
          << "rank " << r << " chunk " << j;
  EXPECT_EQ(verifyText(hier, d, layoutOf(o)), "ok");
  auto chk = cerar::verifyCerarSchedule(hier, d, {}, 0);
  EXPECT_TRUE(bool(chk)) << topocc::testing::errorMessage(chk.takeError());
}

TEST(HierCerar, LaterPassesKeepTheOperator) {
  cerar::Design d = design(4, 8, Construction::Perturbed, 1e-2);
  passes::HierCerarOptions o = options(d, 4, 2, true);
  Schedule s = lower(o);
  passes::fuse(s);
  ASSERT_FALSE(bool(passes::assignChannels(s)));
  ASSERT_FALSE(bool(passes::splitChannels(s, 64)));
  ASSERT_FALSE(bool(passes::assignThreadblocks(s, {})));
  passes::legalizeDependencies(s);
  EXPECT_EQ(verifyText(s, d, layoutOf(o)), "ok");
}

TEST(HierCerar, UserErrors) {
  cerar::Design d = design(3, 6, Construction::Perturbed, 1e-2);
  passes::HierCerarOptions one = options(d, 1, 4, false);
  auto s = passes::lowerHierCerar(one);
  ASSERT_FALSE(bool(s));
  EXPECT_EQ(topocc::testing::errorMessage(s.takeError()),
            "hier-cerar needs at least 2 nodes with GPUs, the topology has 1");
  passes::HierCerarOptions wrongN = options(d, 4, 2, false);
  s = passes::lowerHierCerar(wrongN);
  ASSERT_FALSE(bool(s));
  EXPECT_EQ(topocc::testing::errorMessage(s.takeError()),
            "the inter-node code has N = 3, the topology has 4 nodes");
  passes::HierCerarOptions uneven = options(d, 3, 2, false);
  uneven.nodes[2].pop_back();
  s = passes::lowerHierCerar(uneven);
  ASSERT_FALSE(bool(s));
  EXPECT_EQ(topocc::testing::errorMessage(s.takeError()),
            "hier-cerar needs the same number of GPUs on every node: node 2 "
            "has 1, node 0 has 2\nrank 5 is on no node");
  passes::HierCerarOptions order = options(d, 3, 2, false);
  order.localOrder = {0, 0};
  s = passes::lowerHierCerar(order);
  ASSERT_FALSE(bool(s));
  EXPECT_EQ(topocc::testing::errorMessage(s.takeError()),
            "the intra-node order must be a permutation of 0..1");
}

TEST(HierCerar, LocalOrderIsHonoured) {
  cerar::Design d = design(3, 6, Construction::Perturbed, 1e-2);
  passes::HierCerarOptions o = options(d, 3, 4, false);
  o.localOrder = {0, 2, 3, 1};
  Schedule s = lower(o);
  EXPECT_EQ(verifyText(s, d, layoutOf(o)), "ok");
  // Intra-node messages follow the order: rank 0 sends to rank 2 first.
  bool sendsTo2 = false;
  for (const Op &op : s.ranks[0].ops)
    if (sends(op.kind) && op.sendPeer < 4) {
      sendsTo2 = op.sendPeer == 2;
      break;
    }
  EXPECT_TRUE(sendsTo2);
}

std::string topologyPath(const std::string &name) {
  return std::string(TOPOCC_SOURCE_DIR) + "/topologies/" + name;
}

TEST(HierCerarPolicy, CostIsExactPhasesPlusRailCerar) {
  cerar::HierLinks l;
  l.nodes = 4;
  l.gpusPerNode = 8;
  l.intra = {8, 5e-6, 230e9};
  l.rail = {4, 20e-6, 12e9};
  cerar::PolicyOptions o;
  const double s = 2.83e9;
  // docs/Algorithms-cerar.md 7's example: RS = AG = 10.80 ms with these
  // constants at G = 8, inter ring 44.34 ms, CERAR c = 8 38.94 ms.
  EXPECT_NEAR(cerar::exactPhasesTime(l, s), 2 * 10.80e-3, 0.01e-3);
  EXPECT_NEAR(cerar::hierRingTime(l, s), 65.94e-3, 0.01e-3);
  EXPECT_NEAR(cerar::hierCerarTime(l, s, 8, 1, o), 60.54e-3, 0.01e-3);
  // G = 1: no exact phases.
  l.gpusPerNode = 1;
  EXPECT_EQ(cerar::exactPhasesTime(l, s), 0.0);
}

TEST(HierCerarPolicy, RailLinkSharesTheNics) {
  auto t = topo::loadTopologyFile(topologyPath("dgx-a100x4.yaml"));
  ASSERT_TRUE(bool(t)) << llvm::toString(t.takeError());
  std::vector<std::vector<int>> nodes(4);
  for (int r = 0; r < t->numRanks(); ++r)
    nodes[r / 8].push_back(r);
  auto l = cerar::hierLinksFor(*t, nodes, {});
  ASSERT_TRUE(bool(l)) << llvm::toString(l.takeError());
  EXPECT_EQ(l->nodes, 4);
  EXPECT_EQ(l->gpusPerNode, 8);
  EXPECT_EQ(l->rail.ranks, 4);
  EXPECT_GT(l->rail.alpha, 0.0);
  // The rails are slower than the intra-node ring (NVLink).
  EXPECT_LT(l->rail.bandwidth, l->intra.bandwidth);
  // One rail alone is at least as fast as all eight together.
  std::vector<std::vector<int>> oneRail(4);
  for (int p = 0; p < 4; ++p)
    oneRail[p].push_back(nodes[p][0]);
  auto single = cerar::hierLinksFor(*t, oneRail, {});
  ASSERT_TRUE(bool(single));
  EXPECT_GE(single->rail.bandwidth, l->rail.bandwidth);
}

TEST(HierCerarPolicy, ForcedDesignFollowsTheRail) {
  auto t = topo::loadTopologyFile(topologyPath("dgx-a100x4.yaml"));
  ASSERT_TRUE(bool(t)) << llvm::toString(t.takeError());
  cerar::HierCerarRequest req;
  req.bytes = 1024.0 * 1024 * 1024;
  req.policy.tolerance = 1e-2; // q = 2 on 4 rails (contract 6.03e-3)
  req.force = true;
  for (int r = 0; r < t->numRanks(); ++r) {
    if (r % 8 == 0)
      req.nodes.emplace_back();
    req.nodes.back().push_back(r);
  }
  auto p = cerar::designHierCerarFor(*t, req);
  ASSERT_TRUE(bool(p)) << llvm::toString(p.takeError());
  ASSERT_TRUE(p->design.has_value());
  EXPECT_EQ(p->design->ranks, 4);
  EXPECT_EQ(p->design->components, p->decision.components);
  EXPECT_GT(p->design->components, 4);
  EXPECT_LT(p->hierCerar, p->hierRing);
  // Two nodes: N = 2 gains nothing; forced without --components fails.
  req.nodes.resize(2);
  auto t2 = topo::loadTopologyFile(topologyPath("dgx-a100x2.yaml"));
  ASSERT_TRUE(bool(t2));
  p = cerar::designHierCerarFor(*t2, req);
  ASSERT_FALSE(bool(p));
  EXPECT_EQ(topocc::testing::errorMessage(p.takeError()),
            "hier-cerar: CERAR cannot win on this rail: N = 2: CERAR's "
            "traffic per rank equals the ring's; pass --components to force "
            "a code");
}

TEST(HierCerarPipeline, PlanCarriesTheBoundAndLoads) {
  auto t = topo::loadTopologyFile(std::string(TOPOCC_SOURCE_DIR) +
                                  "/tests/mpi/Inputs/nodes3x2.yaml");
  ASSERT_TRUE(bool(t)) << llvm::toString(t.takeError());
  for (bool inplace : {false, true}) {
    CompileRequest req;
    req.algorithm = Algorithm::HierCerar;
    req.components = 6;
    req.tolerance = 1e-2;
    req.inplace = inplace;
    PassLogger log;
    auto plan = compile(*t, req, log);
    ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
    EXPECT_EQ(plan->algorithm, Algorithm::HierCerar);
    EXPECT_TRUE(plan->coded);
    EXPECT_GT(plan->codedError, 0.0);
    EXPECT_EQ(plan->schedule.stage, Stage::Legalized);
    backends::PlanMeta meta;
    meta.algorithm = algorithmName(plan->algorithm).str();
    meta.errorBound = plan->codedError;
    auto text = backends::planToJson(plan->schedule, meta);
    ASSERT_TRUE(bool(text)) << llvm::toString(text.takeError());
    auto loaded = backends::parsePlanJson(*text, "hier.json");
    ASSERT_TRUE(bool(loaded)) << llvm::toString(loaded.takeError());
    EXPECT_EQ(loaded->meta.errorBound, plan->codedError);
    // Without its bound the approximate plan is refused.
    meta.errorBound = 0;
    auto exact = backends::planToJson(plan->schedule, meta);
    EXPECT_FALSE(bool(exact));
    llvm::consumeError(exact.takeError());
  }
  // Two nodes: every c is exact (E = I, D = I), no tolerance needed, and
  // the plan passes the exact postcondition.
  auto t2 = topo::loadTopologyFile(std::string(TOPOCC_SOURCE_DIR) +
                                   "/tests/mpi/Inputs/nodes2x2.yaml");
  ASSERT_TRUE(bool(t2)) << llvm::toString(t2.takeError());
  CompileRequest req;
  req.algorithm = Algorithm::HierCerar;
  req.components = 4;
  PassLogger log;
  auto plan = compile(*t2, req, log);
  ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  EXPECT_EQ(plan->codedError, 0.0);
  llvm::Error exact = verifySchedule(plan->schedule);
  EXPECT_FALSE(bool(exact)) << llvm::toString(std::move(exact));
}

} // namespace
