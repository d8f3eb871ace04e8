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
#include "compiler/algorithms/CodedErrorBound.h"
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

std::string forcedLine(llvm::StringRef prefix, int32_t components,
                       llvm::StringRef reason) {
  if (components <= 0)
    return (prefix + reason).str();
  return llvm::formatv("{0}c = {1} forced by --components; the policy alone "
                       "would say: {2}",
                       prefix, components, reason)
      .str();
}

std::string msText(double seconds) {
  return llvm::formatv("{0:F3} ms", seconds * 1e3).str();
}

namespace {
std::string sciText(double v) { return llvm::formatv("{0:e2}", v).str(); }

bool approximate(const cerar::Design &d) {
  return d.construction != cerar::Construction::Exact;
}
} // namespace

llvm::Error recordCode(const cerar::Design &d, const ir::Schedule &s,
                       const CompileRequest &req, CompileResult &result,
                       llvm::StringRef who) {
  result.coded = true;
  result.codedEps = approximate(d) ? d.eps : 0;
  if (!approximate(d)) {
    result.codedError = 0; // exact: the plan is verified exactly
    result.codedRoundoffGain = result.codedRoundoffGainWorst = {};
    return llvm::Error::success();
  }
  auto contract = cerar::analyzeErrorContract(s);
  if (!contract)
    return contract.takeError();
  result.codedError = contract->exactBound();
  for (size_t i = 0; i < std::size(backends::kRoundoffDtypes); ++i) {
    auto w = cerar::wireDtypeFromName(backends::kRoundoffDtypes[i]);
    result.codedRoundoffGain[i] = contract->roundoffGain(*w);
    result.codedRoundoffGainWorst[i] =
        contract->roundoffGain(*w, /*worstCase=*/true);
  }
  auto wire = cerar::wireDtypeFromName(req.wireDtype);
  if (req.tolerance > 0 && wire) {
    double b = contract->bound(*wire);
    if (b > req.tolerance)
      return makeUserError(llvm::formatv(
          "{0}: c = {1} on N = {2} ranks: the error contract's bound in "
          "{3} is {4} (exact arithmetic {5}), above --tolerance {6} "
          "(docs/Algorithms-cerar.md 8); use fewer --components or a larger "
          "tolerance",
          who, d.components, d.ranks, cerar::wireDtypeName(*wire),
          sciText(b), sciText(contract->exactBound()),
          sciText(req.tolerance)));
  }
  return llvm::Error::success();
}

llvm::Error
tuneForContract(cerar::Design &d, cerar::PolicyDecision &dec,
                const cerar::PolicyOptions &policy,
                llvm::function_ref<llvm::Expected<ir::Schedule>(
                    const cerar::Design &)>
                    lower,
                llvm::StringRef who, std::string &explain) {
  explain.clear();
  if (!(policy.tolerance > 0) || !approximate(d) ||
      d.construction == cerar::Construction::Optimized)
    return llvm::Error::success();
  struct Point {
    double eps = 0, exact = 0, bound = 0;
  };
  auto measure = [&](const cerar::Design &code) -> llvm::Expected<Point> {
    auto s = lower(code);
    if (!s)
      return s.takeError();
    auto c = cerar::analyzeErrorContract(*s);
    if (!c)
      return c.takeError();
    return Point{code.eps, c->exactBound(), c->bound(policy.wire)};
  };
  auto first = measure(d);
  if (!first)
    return first.takeError();
  // Under --kappa-max eps is the limit's: only the tolerance check.
  if (policy.kappaMax > 0 && first->bound <= policy.tolerance)
    return llvm::Error::success();
  const int q = (d.components + d.ranks - 1) / d.ranks;
  Point at = *first, best = *first;
  std::optional<cerar::Design> bestCode;
  for (int iter = 0; iter < 3 && policy.kappaMax <= 0; ++iter) {
    // f(eps) = A eps + B eps^-(q-1) through the last point: its minimum.
    double a = at.exact / at.eps;
    double b = (at.bound - at.exact) * std::pow(at.eps, q - 1);
    if (!(a > 0) || !(b > 0))
      break;
    double eps = std::pow((q - 1) * b / a, 1.0 / q);
    eps = std::clamp(eps, 1e-8, 0.5);
    if (std::fabs(eps - at.eps) <= 0.05 * at.eps)
      break;
    cerar::DesignRequest dr;
    dr.ranks = d.ranks;
    dr.components = d.components;
    dr.construction = d.construction;
    dr.eps = eps;
    auto code = cerar::makeDesign(dr);
    if (!code) {
      llvm::consumeError(code.takeError()); // beyond double precision
      break;
    }
    auto p = measure(*code);
    if (!p)
      return p.takeError();
    at = *p;
    if (at.bound >= best.bound)
      break;
    best = at;
    bestCode = std::move(*code);
  }
  if (best.bound > policy.tolerance)
    return makeUserError(llvm::formatv(
        "{0}: c = {1} on N = {2} ranks (q = {3}): no eps meets --tolerance "
        "{4} in {5}: the error contract's best bound is {6} at eps = {7} "
        "({8} in exact arithmetic; docs/Algorithms-cerar.md 8); use "
        "--components <= {9} or a larger tolerance",
        who, d.components, d.ranks, q, sciText(policy.tolerance),
        cerar::wireDtypeName(policy.wire), sciText(best.bound),
        sciText(best.eps), sciText(best.exact), (q - 1) * d.ranks));
  if (!bestCode) {
    explain = llvm::formatv(
        "{0}: eps kept at {1} (error contract {2} in {3}; {4} in exact "
        "arithmetic; tolerance {5})",
        who, sciText(first->eps), sciText(first->bound),
        cerar::wireDtypeName(policy.wire), sciText(first->exact),
        sciText(policy.tolerance));
    return llvm::Error::success();
  }
  explain = llvm::formatv(
      "{0}: eps moved from {1} (error contract {2} in {3}) to its minimum "
      "{4} ({5}; {6} in exact arithmetic; tolerance {7})",
      who, sciText(first->eps), sciText(first->bound),
      cerar::wireDtypeName(policy.wire), sciText(best.eps),
      sciText(best.bound), sciText(best.exact), sciText(policy.tolerance));
  d = std::move(*bestCode);
  dec.eps = d.eps;
  dec.kappa = d.maxCondition;
  dec.designError = d.worstError;
  return llvm::Error::success();
}

namespace {

/// CERAR's policy and design for `req` (--algorithm cerar: forced; auto:
/// the design is empty when the exact ring wins, with the reason).
llvm::Expected<cerar::CerarChoice> designCerar(const topo::Topology *t,
                                               const CompileRequest &req,
                                               bool force, int maxQ = 0) {
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
  if (maxQ > 0)
    cr.policy.maxQ = maxQ;
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
  /// When the policy chose c and no eps of its q meets the error
  /// contract, the policy again with one layer fewer.
  llvm::Error prepare() override {
    for (int maxQ = 0;;) {
      auto c = designCerar(topology, req, /*force=*/true, maxQ);
      if (!c)
        return c.takeError();
      choice = std::move(*c);
      cerar::Design &d = *choice.design;
      auto p = codedPolicyOptions(req, "cerar");
      if (!p)
        return p.takeError();
      std::string tuned;
      auto err = tuneForContract(
          d, choice.decision, *p,
          [&](const cerar::Design &code) {
            return passes::lowerCerar(lowerOptions(code));
          },
          "cerar", tuned);
      const int q = (d.components + d.ranks - 1) / d.ranks;
      if (err && req.components == 0 && q > 2) {
        stepDown.push_back(errorMessages(std::move(err), "; ") +
                           "; the policy again with q <= " +
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

  /// Codes with c > N are approximate by design: the exact postcondition
  /// gives way to the error-operator check in finish().
  bool coded() const override { return true; }

  ir::VerifyOptions verifyOptions() const override {
    ir::VerifyOptions v;
    if (choice.design->components > choice.design->ranks)
      v.checkSemantics = false;
    return v;
  }

  passes::CerarLowerOptions lowerOptions(const cerar::Design &d) const {
    passes::CerarLowerOptions lo;
    lo.design = d;
    lo.ringOrder.assign(choice.ringOrder.begin(), choice.ringOrder.end());
    lo.seamOffset = req.seamOffset;
    lo.inplace = req.inplace;
    lo.name = req.name;
    return lo;
  }

  llvm::Expected<Lowered> lower() override {
    const cerar::Design &d = *choice.design;
    auto lowered = passes::lowerCerar(lowerOptions(d));
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
    out.explain.insert(out.explain.end(), stepDown.begin(), stepDown.end());
    out.explain.push_back(forcedLine("cerar: ", req.components,
                                     choice.decision.reason));
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
    return recordCode(d, s, req, result, "cerar");
  }

private:
  cerar::CerarChoice choice;
  /// What prepare() changed for the error contract (--explain).
  std::vector<std::string> stepDown;
};

} // namespace

std::unique_ptr<Lowering> makeCerarLowering(const LoweringInput &in) {
  return std::make_unique<CerarLowering>(in);
}

llvm::Expected<AutoCandidate> CerarLoweringCandidate(const AutoContext &ctx) {
  const CompileRequest &req = ctx.request;
  AutoCandidate c;
  auto ring = ctx.priced.find(Algorithm::Ring);
  if (!(req.tolerance > 0) || req.collective != ir::Collective::AllReduce) {
    c.lines.push_back("auto: cerar not considered (it needs --tolerance and "
                      "an all-reduce)");
    return c;
  }
  if (ring == ctx.priced.end() || ring->second <= 0) {
    c.lines.push_back("auto: cerar not considered (its policy compares it "
                      "with the ring, which was not priced)");
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
  // The policy's c (chosen again by the lowering, which may step it down
  // for the error contract), compiled and priced like the others.
  c.lines.push_back(
      llvm::formatv("auto: cerar c = {0}: the policy predicts {1:F3}x the "
                    "ring's time",
                    choice->design->components,
                    choice->decision.cerarTime / choice->decision.ringTime)
          .str());
  c.request = std::move(sub);
  // A code that no eps brings within the error contract is "not
  // applicable", with the contract's numbers.
  c.mustCompile = false;
  return c;
}

} // namespace topocc::lowerings
