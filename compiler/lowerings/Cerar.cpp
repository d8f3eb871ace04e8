//===- compiler/lowerings/Cerar.cpp - --algorithm cerar -------------------===//
//
// CERAR, the coded all-reduce (docs/Algorithms-cerar.md): the policy's
// components and the code's design for the ring's bottleneck link
// (cerar::designCerarFor, its own timed step design-cerar), lowered on that
// ring by compiler/passes/LowerCerar.h. After the shared passes every
// rank's error operator is checked against the design
// (cerar::verifyCerarSchedule): exactness when c <= N.
//
//===----------------------------------------------------------------------===//

#include "compiler/lowerings/CodedRequest.h"
#include "compiler/lowerings/Lowering.h"

#include "compiler/algorithms/CerarVerify.h"
#include "compiler/passes/LowerCerar.h"
#include "support/Diagnostics.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

namespace topocc::lowerings {

llvm::Expected<cerar::PolicyOptions>
codedPolicyOptions(const CompileRequest &req, llvm::StringRef alg) {
  if (req.collective != ir::Collective::AllReduce)
    return makeUserError(llvm::formatv(
        "--algorithm {0} is a coded all-reduce; {1} has no CERAR form (use "
        "ring or trees)",
        alg, ir::collectiveName(req.collective)));
  auto wire = cerar::wireDtypeFromName(req.wireDtype);
  if (!wire)
    return makeUserError("unknown --wire-dtype '" + req.wireDtype +
                         "'; expected 'fp32', 'fp16' or 'bf16'");
  if (req.tolerance < 0 || !std::isfinite(req.tolerance))
    return makeUserError("--tolerance must be a non-negative number");
  if (req.components < 0)
    return makeUserError("--components must be positive");
  cerar::PolicyOptions p;
  p.tolerance = req.tolerance;
  p.wire = *wire;
  p.kappaMax = req.kappaMax;
  return p;
}

std::string msText(double seconds) {
  return llvm::formatv("{0:F3} ms", seconds * 1e3).str();
}

void recordCode(const cerar::Design &d, CompileResult &result) {
  result.coded = true;
  result.codedError = d.worstError;
  result.codedRoundoffGain = d.maxCondition * d.rounds;
}

namespace {

/// CERAR's policy and design for `req` (--algorithm cerar: forced; auto:
/// the design is empty when the exact ring wins, with the reason).
llvm::Expected<cerar::CerarChoice> designCerar(const topo::Topology *t,
                                               const CompileRequest &req,
                                               bool force) {
  if (!t)
    return makeUserError("--algorithm cerar needs the topology: its "
                         "parameters follow the ring's bottleneck link");
  auto policy = codedPolicyOptions(req, "cerar");
  if (!policy)
    return policy.takeError();
  if (req.channels != 1)
    return makeUserError("--channels applies to the ring algorithms; CERAR "
                         "runs on one ring");
  if (req.chunks != 1)
    return makeUserError("--chunks applies to the ring and trees algorithms; "
                         "CERAR's messages are its components (--components)");
  cerar::CerarRequest cr;
  cr.bytes = req.bytes;
  cr.policy = *policy;
  cr.components = req.components;
  cr.force = force;
  cr.seamOffset = req.seamOffset;
  cr.inplace = req.inplace;
  if (req.rankOrder)
    for (int r = 0; r < t->numRanks(); ++r)
      cr.ringOrder.push_back(r);
  else
    cr.ringOrder.assign(req.ringOrder.begin(), req.ringOrder.end());
  return cerar::designCerarFor(*t, cr);
}

class CerarLowering final : public Lowering {
public:
  using Lowering::Lowering;

  llvm::StringRef passName() const override { return "lower-cerar"; }
  llvm::StringRef prepareStep() const override { return "design-cerar"; }

  /// The policy (c, eps) and the code's design.
  llvm::Error prepare() override {
    auto c = designCerar(topology, req, /*force=*/true);
    if (!c)
      return c.takeError();
    choice = std::move(*c);
    return llvm::Error::success();
  }

  /// Codes with c > N are approximate by design: the exact postcondition
  /// gives way to the error-operator check in finish().
  ir::VerifyOptions verifyOptions() const override {
    ir::VerifyOptions v;
    if (choice.design->components > choice.design->ranks)
      v.checkSemantics = false;
    return v;
  }

  llvm::Expected<Lowered> lower() override {
    const cerar::Design &d = *choice.design;
    passes::CerarLowerOptions lo;
    lo.design = d;
    lo.ringOrder.assign(choice.ringOrder.begin(), choice.ringOrder.end());
    lo.seamOffset = req.seamOffset;
    lo.inplace = req.inplace;
    lo.name = req.name;
    auto lowered = passes::lowerCerar(lo);
    if (!lowered)
      return lowered.takeError();
    Lowered out;
    out.schedule = std::move(*lowered);
    std::vector<std::string> order;
    for (int r : choice.ringOrder)
      order.push_back(std::to_string(r));
    out.summary =
        llvm::formatv("CERAR c = {0} on {1} ranks ({2} construction, {3} "
                      "rounds), ring {4}, worst error operator norm {5:e}",
                      d.components, d.ranks,
                      cerar::constructionName(d.construction), d.rounds,
                      llvm::join(order, ","), d.worstError)
            .str();
    out.explain.push_back("cerar: " + choice.decision.reason);
    return out;
  }

  /// Each rank's error operator still equals the design's.
  llvm::Error finish(const ir::Schedule &s,
                     CompileResult &result) const override {
    const cerar::Design &d = *choice.design;
    auto chk = cerar::verifyCerarSchedule(s, d, choice.ringOrder,
                                          req.seamOffset);
    if (!chk)
      return makeInternalError("the CERAR schedule no longer matches its "
                               "code after the passes (a bug in topocc): " +
                               llvm::toString(chk.takeError()));
    recordCode(d, result);
    return llvm::Error::success();
  }

private:
  cerar::CerarChoice choice;
};

} // namespace

std::unique_ptr<Lowering> makeCerarLowering(const LoweringInput &in) {
  return std::make_unique<CerarLowering>(in);
}

llvm::Expected<AutoCandidate> CerarLoweringCandidate(const AutoContext &ctx) {
  const CompileRequest &req = ctx.request;
  AutoCandidate c;
  auto ring = ctx.priced.find(Algorithm::Ring);
  if (!(req.tolerance > 0) || req.collective != ir::Collective::AllReduce ||
      ring == ctx.priced.end() || ring->second <= 0) {
    c.lines.push_back("auto: cerar not considered (it needs --tolerance and "
                      "an all-reduce)");
    return c;
  }
  if (!req.target.codedOps) {
    c.lines.push_back("auto: cerar not considered (the output format cannot "
                      "carry coded schedules)");
    return c;
  }
  CompileRequest sub = candidateRequest(req, Algorithm::Cerar);
  sub.channels = 1;
  sub.chunks = 1;
  auto choice = designCerar(&ctx.topology, sub, /*force=*/false);
  if (!choice)
    return choice.takeError();
  if (!choice->design) {
    c.lines.push_back("auto: cerar not chosen (" + choice->decision.reason +
                      ")");
    return c;
  }
  // The policy's c, compiled and priced like the others.
  sub.components = choice->design->components;
  c.lines.push_back(
      llvm::formatv("auto: cerar c = {0}: the policy predicts {1:F3}x the "
                    "ring's time",
                    sub.components,
                    choice->decision.cerarTime / choice->decision.ringTime)
          .str());
  c.request = std::move(sub);
  c.mustCompile = true;
  return c;
}

} // namespace topocc::lowerings
