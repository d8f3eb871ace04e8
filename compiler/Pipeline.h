//===- compiler/Pipeline.h - The ordered pass pipeline ----------*- C++ -*-===//
//
// compile(): THE ordered list of passes from a compile request to a verified,
// Legalized schedule, with a logger that prints the IR after each pass and
// times the passes (output only to the streams the caller passes in). Given
// the topology, compile() first chooses the algorithm's structure (the ring
// search's rings, the hierarchical ring's nodes); one switch over Algorithm
// dispatches the lowering.
// runSinglePass(): one named pass on a parsed schedule (--run-pass).
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_PIPELINE_H
#define TOPOCC_COMPILER_PIPELINE_H

#include "backends/NcclGraphXml.h"
#include "compiler/algorithms/ForestColl.h"
#include "compiler/analysis/CostModel.h"
#include "compiler/analysis/Simulator.h"
#include "compiler/passes/LowerTrees.h"
#include "compiler/topology/Topology.h"
#include "ir/Schedule.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <utility>
#include <vector>

namespace topocc {

/// The lowerings compile() knows; add one here, to the name table in
/// Pipeline.cpp (kAlgorithms) and to the switch in compileOn().
enum class Algorithm { Ring, HierRing, Trees, Cerar, HierCerar, Auto };

/// "ring", "hier-ring", "trees", "cerar", "hier-cerar", "auto"; user error
/// naming the known ones otherwise. auto compiles every applicable
/// algorithm and keeps the one the cost model predicts fastest for the
/// request's size.
llvm::Expected<Algorithm> parseAlgorithm(llvm::StringRef name);
llvm::StringRef algorithmName(Algorithm a);

/// One ring channel as lowered: its order and its share of the data as a
/// chunk count (units per rank on that channel).
struct ChannelRing {
  std::vector<ir::RankId> order;
  int32_t chunks = 1;
};

struct CompileRequest {
  ir::Collective collective = ir::Collective::AllReduce;
  std::string algorithm = "ring";
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
  /// Message size S the rings are chosen for, bytes (nccl-tests S).
  double bytes = 64.0 * 1024 * 1024;
  bool inplace = false;
  std::string proto = "Simple"; ///< "Simple", "LL" or "LL128"
  int32_t maxSteps = 64;        ///< MSCCL_MAX_NUM_STEPS of the runtime
  /// Channels the output allows: MSCCL XML's 32; 0 means no limit (plan
  /// JSON and the IR have none).
  int32_t maxChannels = 32;
  /// Threadblocks one rank may launch: the MSCCL executor's blocks spin-wait
  /// on each other, so they must all be resident, one per SM (MSCCL_XML.md
  /// 2.7); a schedule over the limit would hang and is refused. 0 means no
  /// limit (plan JSON and the IR: the topocc runtime does not launch them).
  int32_t maxThreadblocksPerRank = 0;
  /// Trees algorithm: spanning trees per root K (the best schedule with
  /// exactly K, FORESTCOLL.md 5.5); 0 means the optimum's k.
  int64_t treesPerRoot = 0;
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
  /// auto: whether coded (CERAR) schedules may be chosen; false when the
  /// output cannot carry them (MSCCL XML).
  bool allowCoded = true;
  /// auto: price the candidates with the event simulator in this mode (and
  /// reduce bandwidth, nullopt: the GPU models') instead of the cost model
  /// (analysis::estimateSchedule). whatif sets it so that its auto column
  /// is the fastest of the columns it simulates.
  std::optional<analysis::SimMode> autoSimMode;
  std::optional<double> autoReduceBandwidth;
  bool verifyEach = false;      ///< verify after every pass, not only twice
  std::string name;             ///< schedule name; derived when empty
};

/// Prints the IR after each pass (printAfterAll) to `irOut` and records each
/// pass's wall time (timePasses), reported by printTimings. Prints nothing
/// unless asked.
class PassLogger {
public:
  PassLogger() = default;
  PassLogger(llvm::raw_ostream *irOut, bool printAfterAll, bool timePasses)
      : irOut(irOut), printAfterAll(printAfterAll), timePasses(timePasses) {}

  /// Called by the pipeline after pass `pass` produced `s`.
  void afterPass(llvm::StringRef pass, const ir::Schedule &s);
  void recordTime(llvm::StringRef pass, double seconds);
  bool isTiming() const { return timePasses; }
  /// Neither prints the IR nor times the passes.
  bool isQuiet() const { return !(printAfterAll && irOut) && !timePasses; }
  /// "===-- pass timing --===" table in pass order; nothing if not timing.
  void printTimings(llvm::raw_ostream &os) const;
  llvm::ArrayRef<std::pair<std::string, double>> timings() const {
    return times;
  }

private:
  llvm::raw_ostream *irOut = nullptr;
  bool printAfterAll = false;
  bool timePasses = false;
  std::vector<std::pair<std::string, double>> times;
};

struct CompiledPlan {
  ir::Schedule schedule; ///< stage Legalized, verified
  /// "ring", "hier-ring", "trees", "cerar" or "hier-cerar"
  std::string algorithm;
  /// Ring algorithm: the rings lowered, one per requested channel (before
  /// split-channels), with their NIC hops when the search chose them.
  std::vector<ChannelRing> rings;
  std::vector<analysis::RingChannel> searched; ///< empty unless searched
  /// Where the rings came from: "ring search (exact)", "--ring", "rank
  /// order", ...; for hier-ring a description of nodes and rails; for trees
  /// k, the trees, channels and predicted throughput vs the bound.
  std::string source;
  /// Why this algorithm and these parameters: for auto every candidate's
  /// predicted time; for CERAR the policy's decision (--explain).
  std::vector<std::string> explain;
  /// CERAR: the schedule is coded (lincomb ops, coefficients); MSCCL XML
  /// cannot express it. codedError is the design's worst per-rank error
  /// operator norm (0 when exact, c <= N).
  bool coded = false;
  double codedError = 0;
  /// Coded plans: the largest encoder condition number times the rounds,
  /// how much the code amplifies rounding (backends::PlanMeta).
  double codedRoundoffGain = 0;
};

/// Lowers, optimizes, assigns and legalizes; verifies after lowering and at
/// the end (and after every pass with verifyEach). User errors for bad
/// requests and limits; an internal error (with the IR before and after)
/// when a pass produces a schedule the verifier rejects. Without a topology
/// the ring is req.ringOrder or rank order, and hier-ring and auto channels
/// are user errors; so is trees (it packs trees on the topology's links).
llvm::Expected<CompiledPlan>
compile(int32_t numRanks, const CompileRequest &req, PassLogger &log);
/// The same on `t`'s ranks; the ring algorithm uses the ring search
/// (compiler/algorithms/RingSearch.h) for req.bytes unless an order is given;
/// trees packs ForestColl spanning trees (compiler/algorithms/ForestColl.h)
/// and lowers them (compiler/passes/LowerTrees.h).
llvm::Expected<CompiledPlan> compile(const topo::Topology &t,
                                     const CompileRequest &req,
                                     PassLogger &log);

/// The lowered (unoptimised) hierarchical ring all-reduce on `t` with
/// `channels` and `chunks` (intra-node order chosen for `bytes`): what
/// compile() lowers for hier-ring, for cost estimates. User error when `t` has fewer than 2 nodes with GPUs or
/// nodes of different sizes.
llvm::Expected<ir::Schedule> lowerHierRingFor(const topo::Topology &t,
                                              ir::Collective c,
                                              int32_t channels, int32_t chunks,
                                              bool inplace, double bytes);

/// NCCL_GRAPH_FILE for ring channels on `t`, with per-channel speeds from
/// the cost model (the set's per-hop rate split over the channels; the
/// inter-node speed is the slowest NIC hop's flow). Notes say what the
/// file cannot express.
llvm::Expected<backends::NcclGraphOutput>
ncclGraphForRings(const topo::Topology &t,
                  llvm::ArrayRef<analysis::RingChannel> rings,
                  ir::Collective c, double bytes, analysis::LinkModel &m);

/// The trees of `f` as the tree lowering takes them: each root's k units
/// split in tree order into consecutive ranges of the trees' multiplicities.
passes::TreeSet forestTreeSet(const algorithms::Forest &f, int32_t numRanks);

/// Names accepted by runSinglePass, in pipeline order.
llvm::ArrayRef<llvm::StringRef> passNames();

/// Runs the pass `name` ("lower-ring" is not one: it has no input IR) on `s`.
/// User error when `s` is invalid or not at the stage the pass expects; the
/// result is always verified (internal error with the IR before and after).
llvm::Expected<ir::Schedule> runSinglePass(llvm::StringRef name, ir::Schedule s,
                                           const CompileRequest &req,
                                           PassLogger &log);

} // namespace topocc

#endif // TOPOCC_COMPILER_PIPELINE_H
