//===- runtime/PlanLoad.cpp - Plans from files and schedules --------------===//
//
// A Plan from a plan file or plan set, on disk or as text
// (backends::loadPlanSetFile and parsePlanSetJson read,
// validates and re-verifies it), from a schedule in memory (verified here),
// with its dataflow order (Plan::buildDataflow, PlanAnalysis.cpp), or from
// plans per size window (a plan set: Plan::select picks by the call's size).
//
//===----------------------------------------------------------------------===//

#include "runtime/Interpreter.h"

#include "support/Diagnostics.h"

#include "llvm/Support/FormatVariadic.h"

namespace topocc::runtime {

llvm::Expected<Plan> Plan::load(llvm::StringRef path) {
  auto loaded = backends::loadPlanSetFile(path);
  if (!loaded)
    return loaded.takeError();
  return fromLoaded(std::move(*loaded));
}

llvm::Expected<Plan> Plan::loadText(llvm::StringRef text,
                                    llvm::StringRef name) {
  auto loaded = backends::parsePlanSetJson(text, name);
  if (!loaded)
    return loaded.takeError();
  return fromLoaded(std::move(*loaded));
}

llvm::Expected<Plan> Plan::fromLoaded(backends::PlanSetFile loaded) {
  std::vector<backends::PlanWindow> windows;
  std::vector<Plan> plans;
  for (backends::PlanVariant &v : loaded.variants) {
    Plan p;
    p.plan = std::move(v.plan);
    p.buildDataflow();
    windows.push_back(v.window);
    plans.push_back(std::move(p));
  }
  if (!loaded.isSet)
    return std::move(plans.front());
  return fromVariants(std::move(windows), std::move(plans));
}

llvm::Expected<Plan>
Plan::fromVariants(std::vector<backends::PlanWindow> windows,
                   std::vector<Plan> plans) {
  if (windows.size() != plans.size())
    return makeInternalError("Plan::fromVariants: one plan per window");
  if (auto err = backends::checkPlanWindows(windows))
    return err;
  Plan set;
  for (size_t i = 0; i < plans.size(); ++i) {
    if (!plans[i].variantList.empty())
      return makeUserError(
          llvm::formatv("variant {0} of a plan set is itself a plan set", i));
    const ir::Schedule &a = plans[0].schedule(), &b = plans[i].schedule();
    if (a.collective != b.collective || a.numRanks != b.numRanks ||
        a.inplace != b.inplace)
      return makeUserError(llvm::formatv(
          "variant {0} ('{1}') is not the same call as variant 0 ('{2}'): "
          "the variants of a plan set share collective, rank count and "
          "in-place mode",
          i, b.name, a.name));
    set.variantList.push_back(
        {windows[i], std::make_shared<const Plan>(std::move(plans[i]))});
  }
  return set;
}

int64_t Plan::callBytes(size_t count, DType t) const {
  const ir::Schedule &s = schedule();
  const bool wholeBuffer = s.collective == ir::Collective::AllGather ||
                           s.collective == ir::Collective::ReduceScatter;
  return int64_t(count) * int64_t(dtypeSize(t)) *
         (wholeBuffer ? int64_t(s.numRanks) : 1);
}

llvm::Expected<const Plan *> Plan::select(size_t count, DType t) const {
  if (variantList.empty())
    return this;
  const int64_t bytes = callBytes(count, t);
  for (const Variant &v : variantList)
    if (v.window.contains(bytes))
      return v.plan.get();
  const backends::PlanWindow &lo = variantList.front().window,
                             &hi = variantList.back().window;
  return makeUserError(llvm::formatv(
      "plan set '{0}': no variant serves a call of {1} bytes (count {2}); "
      "its windows cover {3}",
      schedule().name, bytes, count,
      hi.maxBytes == 0
          ? llvm::formatv("{0} bytes and up", lo.minBytes).str()
          : llvm::formatv("{0} to {1} bytes", lo.minBytes, hi.maxBytes).str()));
}

const Plan &Plan::nearest(size_t count, DType t) const {
  if (variantList.empty())
    return *this;
  const int64_t bytes = callBytes(count, t);
  for (const Variant &v : variantList)
    if (v.window.contains(bytes))
      return *v.plan;
  // Windows tile one range (checkPlanWindows): outside it is below the
  // first or above the last.
  return bytes < variantList.front().window.minBytes ? *variantList.front().plan
                                                     : *variantList.back().plan;
}

llvm::Expected<Plan> Plan::fromSchedule(ir::Schedule s,
                                        backends::PlanMeta meta) {
  if (auto err = backends::verifyPlanSchedule(s, meta.errorBound))
    return err;
  Plan p;
  p.plan.contentHash = backends::planContentHash(s);
  p.plan.schedule = std::move(s);
  p.plan.meta = std::move(meta);
  p.buildDataflow();
  return p;
}

} // namespace topocc::runtime
