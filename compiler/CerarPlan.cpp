//===- compiler/CerarPlan.cpp - Where CERAR pays, in the one model --------===//

#include "compiler/CerarPlan.h"

#include "compiler/Pipeline.h"
#include "compiler/algorithms/CodedErrorBound.h"
#include "compiler/analysis/ComputeModel.h"
#include "compiler/analysis/Simulator.h"
#include "compiler/topology/ScenarioCli.h"
#include "support/Diagnostics.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>

namespace topocc {

namespace {

/// What one compile wrote and its simulated time.
struct Compiled {
  double time = 0;
  double eps = 0, contract = 0;
  std::string why; ///< the user error when it did not compile
};

class Planner {
public:
  Planner(const CerarPlanRequest &req) : req(req) {}

  /// `compile --algorithm ring --channels auto` (or the given ring) at
  /// `bytes` on `t`, simulated there.
  llvm::Expected<Compiled> ring(const topo::Topology &t, double bytes) const {
    CompileRequest r = base(bytes);
    r.algorithm = Algorithm::Ring;
    r.channels = req.ringOrder.empty() ? 0 : 1;
    return run(t, r);
  }

  /// `compile --algorithm cerar --tolerance T [--components c]`.
  llvm::Expected<Compiled> code(const topo::Topology &t, double bytes,
                                int components) const {
    CompileRequest r = base(bytes);
    r.algorithm = Algorithm::Cerar;
    r.components = components;
    r.tolerance = req.policy.tolerance;
    r.wireDtype = cerar::wireDtypeName(req.policy.wire).str();
    r.kappaMax = req.policy.kappaMax;
    return run(t, r);
  }

  /// CERAR's simulated time over the ring's for code `c` at `bytes` on
  /// `t`; nullopt when either does not compile.
  llvm::Expected<std::optional<double>>
  ratio(const topo::Topology &t, double bytes, int c) const {
    auto a = code(t, bytes, c);
    if (!a)
      return a.takeError();
    auto b = ring(t, bytes);
    if (!b)
      return b.takeError();
    if (!a->why.empty() || !b->why.empty() || !(b->time > 0))
      return std::optional<double>();
    return std::optional<double>(a->time / b->time);
  }

private:
  const CerarPlanRequest &req;

  CompileRequest base(double bytes) const {
    CompileRequest r;
    r.collective = ir::Collective::AllReduce;
    r.bytes = bytes;
    r.ringOrder.assign(req.ringOrder.begin(), req.ringOrder.end());
    return r;
  }

  llvm::Expected<Compiled> run(const topo::Topology &t,
                               const CompileRequest &r) const {
    PassLogger log;
    auto res = compile(t, r, log);
    Compiled out;
    if (!res) {
      llvm::Error err = res.takeError();
      if (err.isA<InternalError>())
        return err;
      out.why = llvm::StringRef(errorMessages(std::move(err), "; ")).str();
      return out;
    }
    analysis::LinkModel m(t);
    analysis::SimOptions o;
    o.bytes = r.bytes;
    o.mode = analysis::SimMode::Runtime;
    auto sim = analysis::simulate(res->schedule, m, o);
    if (!sim)
      return sim.takeError();
    out.time = sim->time;
    out.eps = res->codedEps;
    if (res->codedError > 0) {
      size_t k = 0;
      for (size_t i = 0; i < std::size(backends::kRoundoffDtypes); ++i)
        if (cerar::wireDtypeName(req.policy.wire) ==
            backends::kRoundoffDtypes[i])
          k = i;
      out.contract = res->codedError + cerar::unitRoundoff(req.policy.wire) *
                                           res->codedRoundoffGain[k];
    }
    return out;
  }
};

/// `t` with every link's bandwidth times `f`.
llvm::Expected<topo::Topology> scaled(const topo::Topology &t, double f) {
  auto op = topo::parseScaleOption(
      llvm::formatv("*--*={0:F12}x", f).str());
  if (!op)
    return op.takeError();
  topo::Topology out = t;
  std::vector<topo::ScenarioOp> ops{std::move(*op)};
  if (auto err = topo::applyScenarioOps(out, "bandwidth", ops))
    return err;
  return out;
}

/// Narrows [win, lose] (either order; CERAR is faster at `win`, not at
/// `lose`) geometrically to 2% or `steps` halvings. A point where either
/// schedule does not compile counts as a loss.
llvm::Error bisect(double &win, double &lose, int steps,
                   llvm::function_ref<llvm::Expected<std::optional<double>>(
                       double)>
                       ratioAt) {
  for (int k = 0; k < steps && std::max(win, lose) / std::min(win, lose) >
                                   1.02;
       ++k) {
    double mid = std::sqrt(win * lose);
    auto r = ratioAt(mid);
    if (!r)
      return r.takeError();
    (*r && **r < 1 ? win : lose) = mid;
  }
  return llvm::Error::success();
}

} // namespace

llvm::Expected<CerarPlanReport> cerarPlan(const topo::Topology &t,
                                          const CerarPlanRequest &req) {
  if (req.sizes.empty())
    return makeUserError("cerar-plan: no message sizes");
  CerarPlanReport rep;
  auto rc = cerar::ringFor(t, req.sizes.back(), req.ringOrder);
  if (!rc)
    return rc.takeError();
  rep.link = rc->link;
  rep.order = rc->order;
  // The memory bandwidth compile's policy uses (cerar::designCerarFor).
  cerar::PolicyOptions policy = req.policy;
  if (double mem = analysis::slowestMemoryBandwidth(t); mem > 0)
    policy.memBandwidth = mem;
  for (double s : req.sizes) {
    CerarPlanRow row;
    row.bytes = s;
    row.policy = cerar::chooseCerar(rep.link, s, policy);
    rep.rows.push_back(std::move(row));
  }
  // The crossover code: the policy's c at the largest size it picks
  // CERAR, else its best c at the largest size.
  for (auto it = rep.rows.rbegin(); it != rep.rows.rend(); ++it)
    if (it->policy.useCerar) {
      rep.components = it->policy.components;
      break;
    }
  if (rep.components == 0)
    rep.components = rep.rows.back().policy.components;
  // The simulator moves the baseline's bytes: a wire dtype other than the
  // baseline's would be priced wrongly, so only the policy speaks there.
  const bool simulable = req.policy.baseBytes ==
                         double(cerar::wireDtypeBytes(req.policy.wire));
  if (!simulable)
    rep.components = 0;

  Planner p(req);
  for (CerarPlanRow &row : rep.rows) {
    auto r = p.ring(t, row.bytes);
    if (!r)
      return r.takeError();
    if (!r->why.empty())
      return makeUserError(r->why);
    row.ringTime = r->time;
    int c = row.policy.useCerar ? row.policy.components : rep.components;
    if (c <= 0 || !simulable) {
      row.why = row.policy.reason;
      continue;
    }
    row.forced = !row.policy.useCerar;
    auto code = p.code(t, row.bytes, row.forced ? c : 0);
    if (!code)
      return code.takeError();
    if (!code->why.empty()) {
      row.why = code->why;
      continue;
    }
    row.components = c;
    row.cerarTime = code->time;
    row.eps = code->eps;
    row.contract = code->contract;
  }
  if (rep.components <= 0 || req.crossoverSteps <= 0)
    return rep;

  // Size: the first table size where the code wins, then bisection on
  // log(size) against the size before it.
  const int c = rep.components;
  size_t first = rep.rows.size();
  for (size_t i = 0; i < rep.rows.size(); ++i) {
    const CerarPlanRow &row = rep.rows[i];
    if (row.components == c && row.cerarTime > 0 &&
        row.cerarTime < row.ringTime) {
      first = i;
      break;
    }
  }
  if (first == 0) {
    rep.crossoverBytes = rep.rows.front().bytes;
  } else if (first < rep.rows.size()) {
    double lose = rep.rows[first - 1].bytes, win = rep.rows[first].bytes;
    if (auto err = bisect(win, lose, req.crossoverSteps, [&](double s) {
          return p.ratio(t, s, c);
        }))
      return err;
    rep.crossoverBytes = win;
  }

  // Bandwidth at the largest size: the factor where the ratio crosses 1,
  // bracketed by doubling (or halving) from today's links.
  const double bytes = rep.rows.back().bytes;
  auto ratioAt = [&](double f) -> llvm::Expected<std::optional<double>> {
    auto s = scaled(t, f);
    if (!s)
      return s.takeError();
    return p.ratio(*s, bytes, c);
  };
  auto r1 = ratioAt(1);
  if (!r1)
    return r1.takeError();
  if (!*r1)
    return rep;
  const bool winsToday = **r1 < 1;
  constexpr int kMaxDoublings = 6; // 1/64x to 64x
  double lo = 1, hi = 1; // the code wins at lo, loses at hi
  bool bracketed = false;
  for (int k = 0; k < kMaxDoublings && !bracketed; ++k) {
    double f = winsToday ? lo * 2 : hi / 2;
    auto r = ratioAt(f);
    if (!r)
      return r.takeError();
    if (!*r)
      break;
    const bool wins = **r < 1;
    (wins ? lo : hi) = f;
    bracketed = winsToday ? !wins : wins;
  }
  if (!bracketed)
    return rep;
  if (auto err = bisect(lo, hi, req.crossoverSteps, ratioAt))
    return err;
  rep.bandwidthFactor = std::sqrt(lo * hi);
  rep.crossoverBandwidth = rep.link.bandwidth * rep.bandwidthFactor;
  return rep;
}

} // namespace topocc
