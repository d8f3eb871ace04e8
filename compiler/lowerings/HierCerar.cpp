//===- compiler/lowerings/HierCerar.cpp - --algorithm hier-cerar ----------===//
//
// Hierarchical CERAR (docs/Algorithms-cerar.md): exact intra-node
// reduce-scatter and all-gather around a CERAR code on every rail, the code
// chosen by the policy for one rail (cerar::designHierCerarFor, its own
// timed step design-hier-cerar) and lowered by
// compiler/passes/LowerHierCerar.h. After the shared passes every output
// coefficient is checked against the composed operator.
//
//===----------------------------------------------------------------------===//

#include "compiler/lowerings/CodedRequest.h"
#include "compiler/lowerings/Lowering.h"

#include "compiler/algorithms/CerarVerify.h"
#include "compiler/passes/LowerHierCerar.h"
#include "support/Diagnostics.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

namespace topocc::lowerings {

namespace {

/// The policy's choice and the nodes and intra-node order it runs on.
struct HierCerarPlacement {
  cerar::HierCerarChoice choice;
  std::vector<std::vector<ir::RankId>> nodes; ///< topology order = rails
  std::vector<int32_t> localOrder;            ///< hier-ring's intra order
};

/// Hierarchical CERAR's links, policy and code (--algorithm hier-cerar:
/// forced; auto: the design is empty when the policy keeps the exact rail
/// ring, with the reason).
llvm::Expected<HierCerarPlacement> designHierCerar(const topo::Topology *t,
                                                   const CompileRequest &req,
                                                   bool force, int maxQ = 0) {
  if (!t)
    return makeUserError("--algorithm hier-cerar needs the topology's nodes");
  auto policy = codedPolicyOptions(req, "hier-cerar");
  if (!policy)
    return policy.takeError();
  if (!req.ringOrder.empty() || req.rankOrder)
    return makeUserError("--ring applies to --algorithm ring and cerar, not "
                         "hier-cerar (its rings are the nodes and rails)");
  if (req.channels != 1)
    return makeUserError("--channels applies to the ring algorithms; "
                         "hier-cerar runs one ring per node and per rail");
  if (req.chunks != 1)
    return makeUserError("--chunks applies to the ring and trees algorithms; "
                         "hier-cerar's messages are its components "
                         "(--components)");
  HierCerarPlacement out;
  out.nodes = nodeRanks(*t);
  if (out.nodes.size() < 2)
    return makeUserError(llvm::formatv(
        "--algorithm hier-cerar needs at least 2 nodes with GPUs, the "
        "topology has {0}; use --algorithm cerar",
        out.nodes.size()));
  for (const std::vector<ir::RankId> &node : out.nodes)
    if (node.size() != out.nodes[0].size())
      return makeUserError(llvm::formatv(
          "--algorithm hier-cerar needs the same number of GPUs on every "
          "node: {0} and {1}",
          out.nodes[0].size(), node.size()));
  out.localOrder = hierLocalOrder(*t, out.nodes[0], req.collective, req.bytes);
  cerar::HierCerarRequest hr;
  hr.bytes = req.bytes;
  hr.policy = *policy;
  if (maxQ > 0)
    hr.policy.maxQ = maxQ;
  hr.components = req.components;
  hr.force = force;
  for (const std::vector<ir::RankId> &node : out.nodes)
    hr.nodes.emplace_back(node.begin(), node.end());
  hr.localOrder.assign(out.localOrder.begin(), out.localOrder.end());
  auto choice = cerar::designHierCerarFor(*t, hr);
  if (!choice)
    return choice.takeError();
  out.choice = std::move(*choice);
  return out;
}

class HierCerarLowering final : public Lowering {
public:
  using Lowering::Lowering;

  llvm::StringRef passName() const override { return "lower-hier-cerar"; }
  llvm::StringRef prepareStep() const override { return "design-hier-cerar"; }

  /// Links of the rails and the nodes, the policy on one rail, the code.
  /// When the policy chose c and no eps of its q meets the error
  /// contract, the policy again with one layer fewer.
  llvm::Error prepare() override {
    for (int maxQ = 0;;) {
      auto p = designHierCerar(topology, req, /*force=*/true, maxQ);
      if (!p)
        return p.takeError();
      placement = std::move(*p);
      cerar::Design &d = *placement.choice.design;
      auto policy = codedPolicyOptions(req, "hier-cerar");
      if (!policy)
        return policy.takeError();
      std::string tuned;
      auto err = tuneForContract(
          d, placement.choice.decision, *policy,
          [&](const cerar::Design &code) {
            return passes::lowerHierCerar(lowerOptions(code));
          },
          "hier-cerar", tuned);
      const int q = (d.components + d.ranks - 1) / d.ranks;
      if (err && req.components == 0 && q > 2) {
        stepDown.push_back(errorMessages(std::move(err), "; ") +
                           "; the rail policy again with q <= " +
                           std::to_string(q - 1));
        maxQ = q - 1;
        continue;
      }
      if (err)
        return err;
      if (!tuned.empty())
        stepDown.push_back(tuned);
      return llvm::Error::success();
    }
  }

  /// Exact codes (c <= M, or any c on 2 nodes) also pass the exact
  /// postcondition; approximate ones the composed-operator check.
  bool coded() const override { return true; }

  ir::VerifyOptions verifyOptions() const override {
    ir::VerifyOptions v;
    if (placement.choice.design->construction != cerar::Construction::Exact)
      v.checkSemantics = false;
    return v;
  }

  passes::HierCerarOptions lowerOptions(const cerar::Design &d) const {
    passes::HierCerarOptions o;
    o.design = d;
    o.numRanks = 0;
    for (const auto &node : placement.nodes)
      o.numRanks += static_cast<int32_t>(node.size());
    o.nodes = placement.nodes;
    o.localOrder = placement.localOrder;
    o.seamOffset = req.seamOffset;
    o.staggerSeams = true;
    o.inplace = req.inplace;
    o.name = req.name;
    return o;
  }

  llvm::Expected<Lowered> lower() override {
    const cerar::HierCerarChoice &choice = placement.choice;
    const cerar::Design &d = *choice.design;
    passes::HierCerarOptions o = lowerOptions(d);
    auto lowered = passes::lowerHierCerar(o);
    if (!lowered)
      return lowered.takeError();
    Lowered out;
    out.schedule = std::move(*lowered);
    const cerar::HierLinks &l = choice.links;
    std::vector<std::string> order;
    for (int32_t k : placement.localOrder)
      order.push_back(std::to_string(k));
    out.summary =
        llvm::formatv("{0} nodes x {1} GPUs, intra-node order {2}; exact "
                      "intra-node reduce-scatter and all-gather, CERAR c = "
                      "{3} on each rail ({4} construction, {5} rounds, seams "
                      "staggered by rail), the rail code's error operator norm {6:e}",
                      l.nodes, l.gpusPerNode, llvm::join(order, ","),
                      d.components, cerar::constructionName(d.construction),
                      d.rounds, d.worstError)
            .str();
    out.explain.push_back(
        llvm::formatv(
            "hier-cerar: {0} nodes x {1} GPUs; rail link alpha "
            "{2:F2} us, B {3:F2} GB/s (N = {0}, S/G = {4} bytes); {5}",
            l.nodes, l.gpusPerNode, l.rail.alpha * 1e6,
            l.rail.bandwidth / 1e9,
            static_cast<int64_t>(req.bytes / l.gpusPerNode),
            l.gpusPerNode > 1
                ? llvm::formatv("intra-node alpha {0:F2} us, B "
                                "{1:F2} GB/s",
                                l.intra.alpha * 1e6, l.intra.bandwidth / 1e9)
                      .str()
                : std::string("no intra-node phases (1 GPU per "
                              "node)"))
            .str());
    out.explain.insert(out.explain.end(), stepDown.begin(), stepDown.end());
    out.explain.push_back(forcedLine("hier-cerar: rail policy: ",
                                     req.components, choice.decision.reason));
    std::string flat =
        choice.flatCerar > 0
            ? llvm::formatv("{0} (c = {1})", msText(choice.flatCerar),
                            choice.flatComponents)
                  .str()
            : std::string("- (the policy keeps the ring)");
    out.explain.push_back(
        llvm::formatv("hier-cerar: the policy's alpha-beta model at {0} "
                      "bytes: ring {1}, hier-ring {2}, cerar {3}, hier-cerar "
                      "{4} (c = {5}; "
                      "exact phases {6})",
                      static_cast<int64_t>(req.bytes), msText(choice.flatRing),
                      msText(choice.hierRing), flat, msText(choice.hierCerar),
                      d.components, msText(choice.exactPhases))
            .str());
    layout = cerar::HierCerarLayout{};
    for (const auto &node : placement.nodes)
      layout.nodes.emplace_back(node.begin(), node.end());
    layout.seamOffset = req.seamOffset;
    layout.staggerSeams = o.staggerSeams;
    return out;
  }

  /// Every output coefficient against the composed operator (exact
  /// intra-node phases around the rails' CERAR codes).
  llvm::Error finish(const ir::Schedule &s,
                     CompileResult &result) const override {
    const cerar::Design &d = *placement.choice.design;
    auto chk = cerar::verifyHierCerarSchedule(s, d, layout);
    if (!chk)
      return makeInternalError("the hier-cerar schedule no longer matches "
                               "its code after the passes (a bug in "
                               "topocc): " +
                               llvm::toString(chk.takeError()));
    return recordCode(d, s, req, result, "hier-cerar");
  }

private:
  HierCerarPlacement placement;
  /// What prepare() changed for the error contract (--explain).
  std::vector<std::string> stepDown;
  cerar::HierCerarLayout layout;
};

} // namespace

std::unique_ptr<Lowering> makeHierCerarLowering(const LoweringInput &in) {
  return std::make_unique<HierCerarLowering>(in);
}

llvm::Expected<AutoCandidate>
HierCerarLoweringCandidate(const AutoContext &ctx) {
  const CompileRequest &req = ctx.request;
  AutoCandidate c;
  // Only where it applies: a multi-node all-reduce with a tolerance, an
  // output that carries coded schedules, a priced ring to compare with.
  auto ring = ctx.priced.find(Algorithm::Ring);
  if (!ctx.multiNode || !(req.tolerance > 0) ||
      req.collective != ir::Collective::AllReduce || !req.target.codedOps ||
      ring == ctx.priced.end() || ring->second <= 0)
    return c;
  CompileRequest sub = candidateRequest(req, Algorithm::HierCerar);
  sub.channels = 1;
  sub.chunks = 1;
  auto p = designHierCerar(&ctx.topology, sub, /*force=*/false);
  if (!p) {
    llvm::Error err = p.takeError();
    if (err.isA<InternalError>())
      return err;
    std::string why = llvm::toString(std::move(err));
    c.lines.push_back(("auto: hier-cerar not applicable (" +
                       llvm::StringRef(why).split('\n').first + ")")
                          .str());
    return c;
  }
  const cerar::HierCerarChoice &choice = p->choice;
  if (!choice.design) {
    c.lines.push_back("auto: hier-cerar not chosen (rail: " +
                      choice.decision.reason + ")");
    return c;
  }
  // The lowering chooses c again (and may step it down for the error
  // contract); a code no eps brings within it is "not applicable".
  c.lines.push_back(
      llvm::formatv("auto: hier-cerar c = {0}: the policy predicts {1:F3}x "
                    "hier-ring's time",
                    choice.design->components, choice.hierCerar / choice.hierRing)
          .str());
  c.request = std::move(sub);
  c.mustCompile = false;
  return c;
}

} // namespace topocc::lowerings
