//===- runtime/PlanLoad.cpp - Plans from files and schedules --------------===//
//
// A Plan from a plan file (backends::loadPlanFile reads, validates and
// re-verifies it) or from a schedule in memory (verified here), with its
// dataflow order (Plan::buildDataflow, PlanAnalysis.cpp).
//
//===----------------------------------------------------------------------===//

#include "runtime/Interpreter.h"

namespace topocc::runtime {

llvm::Expected<Plan> Plan::load(llvm::StringRef path) {
  auto loaded = backends::loadPlanFile(path);
  if (!loaded)
    return loaded.takeError();
  Plan p;
  p.plan = std::move(*loaded);
  p.buildDataflow();
  return p;
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
