//===- compiler/WhatIfRun.h - `topocc whatif` from a request ----*- C++ -*-===//
//
// What `topocc whatif` runs, for the CLI and the Python module
// (topocc.whatif): the registry of every algorithm it knows (the analysis
// columns of compiler/analysis/WhatIf.h plus those that need the compiler:
// `ring`, `rank-ring`, `trees`, `hier-ring`, `cerar`, `hier-cerar`, `auto`),
// the checks of its options (with the CLI's wording), the topologies it
// tabulates after the base (scenarios with their sweeps expanded, then the
// --fail/--scale/--set patch as "cli"), and the run into one report.
// Stage: analysis over compiled schedules. Never prints; deterministic.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_WHATIFRUN_H
#define TOPOCC_COMPILER_WHATIFRUN_H

#include "compiler/analysis/WhatIf.h"
#include "compiler/topology/Topology.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace topocc {

/// Every algorithm whatif knows, in the order `--algorithms` lists them.
analysis::WhatIfRegistry makeWhatIfRegistry();

/// `topocc whatif`'s options that say what to run, named and defaulted as
/// the CLI's.
struct WhatIfRequest {
  ir::Collective collective = ir::Collective::AllReduce;
  std::string sizes = "1K:8G"; ///< --sizes (analysis::parseSizes)
  /// --algorithms, comma-separated.
  std::string algorithms = "ring,rank-ring,nccl-model,bound";
  std::vector<std::string> scenarios;           ///< --scenario, in order
  std::vector<std::string> fails, scales, sets; ///< --fail, --scale, --set
  int chunks = 1;
  double tolerance = 0;
  std::string mode = "runtime";
  std::string reduceBandwidth; ///< empty: per GPU model
  int timeSimulation = 0;
  bool fold = true; ///< false: --no-fold
};

/// The settings of `req` (collective, --chunks, --time-simulation,
/// --tolerance, --mode, --reduce-bandwidth, checked in that order).
llvm::Expected<analysis::WhatIfSettings>
whatIfSettings(const WhatIfRequest &req);

/// The algorithms of the comma list `names` (--algorithms) in `registry`.
llvm::Expected<std::vector<const analysis::WhatIfAlgorithm *>>
selectWhatIfAlgorithms(const analysis::WhatIfRegistry &registry,
                       llvm::StringRef names);

/// A topology to tabulate after the base.
struct WhatIfVariant {
  std::string name, detail; ///< the scenario and the ops applied
  topo::Topology topology;
};

/// The scenarios of `req` (sweeps expanded), then the patch of --fail,
/// --scale and --set as "cli" when there is one, applied to `base`.
llvm::Expected<std::vector<WhatIfVariant>>
whatIfVariants(const topo::Topology &base, const WhatIfRequest &req);

/// The table of `base` ("base") and of each variant.
llvm::Expected<analysis::WhatIfReport>
runWhatIfReport(const topo::Topology &base,
                llvm::ArrayRef<const analysis::WhatIfAlgorithm *> algos,
                llvm::ArrayRef<double> sizes,
                const analysis::WhatIfSettings &settings,
                llvm::ArrayRef<WhatIfVariant> variants);

/// What a request runs: its settings, sizes and algorithms (pointers into
/// `registry`, which moves with them).
struct WhatIfPlan {
  analysis::WhatIfSettings settings;
  std::vector<double> sizes;
  analysis::WhatIfRegistry registry;
  std::vector<const analysis::WhatIfAlgorithm *> algos;
};

/// whatIfSettings, then the sizes (analysis::parseSizes) and the
/// algorithms of makeWhatIfRegistry() (selectWhatIfAlgorithms).
llvm::Expected<WhatIfPlan> planWhatIf(const WhatIfRequest &req);

/// All of the above in the CLI's order: the settings, the sizes, the
/// algorithms, the variants and the run.
llvm::Expected<analysis::WhatIfReport> whatIfReport(const topo::Topology &base,
                                                    const WhatIfRequest &req);

} // namespace topocc

#endif // TOPOCC_COMPILER_WHATIFRUN_H
