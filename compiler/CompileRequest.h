//===- compiler/CompileRequest.h - What compile() is asked and gives -*- C++ -*-===//
//
// The typed request of compile() (compiler/Pipeline.h): the collective, the
// algorithm (an enum from compiler/Algorithms.def, or Auto), each
// algorithm's parameters and the target's limits (ir/Target.h); and its
// result, a verified schedule with what was chosen. The CLI, the what-if
// columns, topocc-bench and the tests fill the same struct; compile()
// validates it (checkCompileRequest) with the errors the CLI shows.
// Plain value types: safe to copy and to share read-only between threads.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_COMPILEREQUEST_H
#define TOPOCC_COMPILER_COMPILEREQUEST_H

#include "compiler/analysis/CostModel.h"
#include "backends/PlanJson.h"
#include "compiler/analysis/Simulator.h"
#include "ir/Schedule.h"
#include "ir/Target.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace topocc {

/// The algorithms of compiler/Algorithms.def, then Auto: the fastest of
/// them by simulation (compiler/SelectAlgorithm.h).
enum class Algorithm : uint8_t {
#define TOPOCC_ALGORITHM(Enum, Name, Lowering) Enum,
#include "compiler/Algorithms.def"
  Auto,
};

/// The registered algorithms, in table order (Auto not included).
llvm::ArrayRef<Algorithm> loweringAlgorithms();
/// "ring", "hier-ring", "trees", "cerar", "hier-cerar", "auto"; user error
/// naming the known ones otherwise.
llvm::Expected<Algorithm> parseAlgorithm(llvm::StringRef name);
llvm::StringRef algorithmName(Algorithm a);

/// One ring channel as lowered: its order and its share of the data as a
/// chunk count (units per rank on that channel).
struct ChannelRing {
  std::vector<ir::RankId> order;
  int32_t chunks = 1;
  int32_t stepChunks = 1; ///< chunks one step moves (--ring-steps wide)
};

struct CompileRequest {
  ir::Collective collective = ir::Collective::AllReduce;
  Algorithm algorithm = Algorithm::Ring;
  /// Rings (channels); 0 means auto: as many as the ring search chooses
  /// (needs the topology).
  int32_t channels = 1;
  /// Chunks per rank per channel on average: the channels share
  /// channels * chunks units per rank in proportion to their data shares
  /// (passes::chunksForShares).
  int32_t chunks = 1;
  /// Ring order for every channel (a permutation of the ranks). Empty: the
  /// ring search's rings when compile() has the topology, else rank order.
  std::vector<ir::RankId> ringOrder;
  /// Use rank order 0, 1, ..., n-1 on every channel (--ring rank-order).
  bool rankOrder = false;
  /// Ring search: how a ring's share of k units per rank moves
  /// (--ring-steps): as k pipelined chunks, one step each (Pipelined), or
  /// as `chunks` pieces of k units, one step per piece (Wide): unequal
  /// shares then cost no more steps per threadblock than equal ones
  /// (docs/Algorithms-rings.md, "Wide steps").
  enum class RingSteps { Pipelined, Wide };
  RingSteps ringSteps = RingSteps::Pipelined;
  /// Message size S the rings are chosen for, bytes (nccl-tests S).
  double bytes = 64.0 * 1024 * 1024;
  bool inplace = false;
  std::string proto = "Simple"; ///< "Simple", "LL" or "LL128"
  /// What the output's runtime can execute (ir::TargetLimits::forFormat
  /// for an --emit format). The default: MSCCL's encoding limits without a
  /// residency limit, coded schedules allowed.
  ir::TargetLimits target;
  /// Trees algorithm: spanning trees per root K, 1 to 1000 (the best
  /// schedule with exactly K, docs/Algorithms-trees.md); none means the
  /// optimum's k.
  std::optional<int64_t> treesPerRoot;
  /// Trees algorithm: the graph the trees are packed on
  /// (docs/Algorithms-trees.md, "Trees on the runtime's routes"): the
  /// physical links (ForestColl's graph; a tree arc's data may then take
  /// a path its ranks' messages do not) or one rate per rank pair that the
  /// runtime's routes carry (algorithms::buildRouteGraph), or (hier) that
  /// graph over one node's GPUs, its trees joined across the nodes by each
  /// GPU's message to its peers (docs/Algorithms-trees.md, "Hierarchical
  /// trees").
  enum class TreeGraph { Physical, Routes, Hier };
  TreeGraph treeGraph = TreeGraph::Physical;
  /// CERAR (--algorithm cerar or hier-cerar, or auto with a tolerance):
  /// components c (0: the policy's choice), relative error tolerance (0:
  /// exact only), wire dtype (fp32, fp16, bf16), condition-number limit (0:
  /// none) and the seam offset of the ring (--cerar-rotate-seam; hier-cerar
  /// staggers it: rail l uses seamOffset + l).
  int32_t components = 0;
  double tolerance = 0;
  std::string wireDtype = "fp32";
  double kappaMax = 0;
  int32_t seamOffset = 0;
  /// auto: price the candidates with the event simulator in this mode (and
  /// reduce bandwidth, nullopt: the GPU models') instead of cut-through
  /// (whatif sets it so that its auto column is the fastest of the columns
  /// it simulates).
  std::optional<analysis::SimMode> autoSimMode;
  std::optional<double> autoReduceBandwidth;
  /// auto: consider only candidates whose MSCCL XML file a runtime selects
  /// for a call of `bytes` fp32 bytes (backends::servedSizes: the element
  /// count is a multiple of lcm(nchunksperloop, m)); the others get an
  /// explain line. compile --sizes sets it at its power-of-two sizes, so
  /// that every window's file serves the powers of two of its window.
  bool autoMustServe = false;
  /// auto: a variant (AutoCandidate::variants) whose schedule would have
  /// more ops than this is not compiled (an explain line says so): at 512
  /// ranks a 32-channel ring is 17 million ops, took 13 GB and minutes, and
  /// was priced by the cost model in the end. No library topology (at most
  /// 128 ranks) reaches the default.
  int64_t autoMaxVariantOps = int64_t(1) << 21;
  bool verifyEach = false; ///< verify after every stage, not only the end
  /// False only for auto's candidates, which are priced and then dropped:
  /// the winner is compiled again with this set, so every schedule that
  /// leaves compile() is verified (twice: after lowering and at the end).
  bool verify = true;
  /// With verify: compile() returns an exact product before its final
  /// whole-schedule check and leaves that check to the caller
  /// (CompileResult::pendingCheck, checkCompiled() in compiler/Pipeline.h),
  /// which can write the file meanwhile. Coded products (Lowering::coded),
  /// and auto's winner when the IR is logged, are checked inside compile()
  /// as always.
  bool deferFinalCheck = false;
  std::string name;        ///< schedule name; derived when empty
};

/// User errors for a request no algorithm can take (an unknown protocol, a
/// step limit under 1, a trees-per-root count out of range, CERAR options
/// on an exact algorithm, a coded algorithm for a target that cannot carry
/// coded schedules), in the wording the CLI shows.
llvm::Error checkCompileRequest(const CompileRequest &req);

/// --tree-graph: "physical", "routes" or "hier"; user error otherwise.
llvm::Expected<CompileRequest::TreeGraph> parseTreeGraph(llvm::StringRef name);

/// --ring-steps: "pipelined" or "wide"; user error otherwise.
llvm::Expected<CompileRequest::RingSteps> parseRingSteps(llvm::StringRef name);

/// What compile() produced.
struct CompileResult {
  ir::Schedule schedule; ///< stage Legalized
  /// The pipeline verified `schedule` as it is (CompileRequest::verify):
  /// backends::PlanCheck::VerifiedByCompile.
  bool verified = false;
  /// Set when the final check was left to the caller
  /// (CompileRequest::deferFinalCheck): the request that compiles
  /// `schedule` again, for checkCompiled() to name the stage that broke it
  /// should the check fail. `verified` stays false.
  std::optional<CompileRequest> pendingCheck;
  Algorithm algorithm = Algorithm::Ring; ///< never Auto: the one chosen
  /// Ring algorithm: the rings lowered, one per requested channel (before
  /// split-channels), with their NIC hops when the search chose them.
  std::vector<ChannelRing> rings;
  std::vector<analysis::RingChannel> searched; ///< empty unless searched
  /// One line for people: where the rings came from ("ring search
  /// (exact)", "--ring", "rank order"), hier-ring's nodes and rails, the
  /// trees' k, chains and fluid throughput against the bound, the code.
  std::string summary;
  /// Why this algorithm and these parameters: for auto every candidate's
  /// predicted time; for CERAR the policy's decision (--explain).
  std::vector<std::string> explain;
  /// CERAR: the schedule is coded (lincomb ops, coefficients); MSCCL XML
  /// cannot express it. For an approximate code, its error contract
  /// (cerar::analyzeErrorContract, backends::PlanMeta): codedError is the
  /// worst per-rank error operator norm (0 when exact, c <= N), the gains
  /// how the runtime's rounding adds to it (probable and worst case).
  bool coded = false;
  double codedError = 0;
  /// The written code's eps (after the error-contract tuning; 0 when exact).
  double codedEps = 0;
  std::array<double, 3> codedRoundoffGain{}; ///< backends::PlanMeta's order
  std::array<double, 3> codedRoundoffGainWorst{};
  /// `m` with this result's errorBound and roundoff gains.
  void setCodedMeta(backends::PlanMeta &m) const {
    m.errorBound = codedError;
    m.roundoffGain = codedRoundoffGain;
    m.roundoffGainWorst = codedRoundoffGainWorst;
  }
  /// --algorithm auto: the flags of the winning setting beyond the
  /// algorithm ("--channels 8"; empty for the algorithm's own default) and
  /// its predicted time, seconds (0 otherwise).
  std::string chosenFlags;
  double predictedTime = 0;
  /// --algorithm auto priced in the runtime model with the GPU models'
  /// reduction bandwidths (no autoSimMode, no autoReduceBandwidth): its
  /// simulation of this schedule at the request's bytes, which is the
  /// prediction of a file written from it (compile reuses it instead of
  /// simulating the same schedule again).
  std::optional<analysis::SimResult> predictedRun;
};

} // namespace topocc

#endif // TOPOCC_COMPILER_COMPILEREQUEST_H
