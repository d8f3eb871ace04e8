//===- compiler/lowerings/Lowering.h - One algorithm's front end -*- C++ -*-===//
//
// The interface every algorithm of compiler/Algorithms.def implements, one
// file each in this folder: check the request and choose the algorithm's
// structure (prepare: the ring search's rings, the trees' packing, a CERAR
// code), lower it to unfused send/recv/reduce chains (lower), and after the
// shared passes check that the final schedule still implements what was
// lowered (finish). compile() (compiler/Pipeline.cpp) drives them in that
// order; --algorithm auto (compiler/SelectAlgorithm.cpp) asks each for its
// candidate request.
// A Lowering object serves one compile() call: not thread-safe.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_LOWERINGS_LOWERING_H
#define TOPOCC_COMPILER_LOWERINGS_LOWERING_H

#include "compiler/CompileRequest.h"
#include "compiler/topology/Topology.h"
#include "ir/Schedule.h"
#include "ir/Verifier.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace topocc::lowerings {

/// What a lowering is given: the topology (null when compile() has only a
/// rank count) and the request.
struct LoweringInput {
  const topo::Topology *topology = nullptr;
  int32_t numRanks = 0;
  const CompileRequest *request = nullptr;
};

/// A lowering's product: the schedule and what it was built from.
struct Lowered {
  ir::Schedule schedule;
  std::vector<ChannelRing> rings;
  std::vector<analysis::RingChannel> searched;
  std::string summary;
  std::vector<std::string> explain;
};

class Lowering {
public:
  explicit Lowering(const LoweringInput &in)
      : topology(in.topology), numRanks(in.numRanks), req(*in.request) {}
  virtual ~Lowering();

  /// The lowering pass's name in logs and timings ("lower-ring").
  virtual llvm::StringRef passName() const = 0;
  /// The timed step before lowering ("build-trees"); empty when none.
  virtual llvm::StringRef prepareStep() const { return ""; }
  /// Checks the request and chooses the structure lower() emits. User
  /// errors for requests the algorithm cannot take.
  virtual llvm::Error prepare() { return llvm::Error::success(); }
  /// The verifier's options for the lowered and the final schedule (a
  /// coded schedule with c > N has no exact postcondition). After prepare.
  virtual ir::VerifyOptions verifyOptions() const { return {}; }
  /// Unfused chains, one per channel.
  virtual llvm::Expected<Lowered> lower() = 0;
  /// Tree schedules for MSCCL XML may merge roles across trees in
  /// assign-threadblocks to fit the target (AssignThreadblocks.h).
  virtual bool mayCoalesce() const { return false; }
  /// What lower() chose, prefixed to the user errors of the later passes
  /// (which limit its choice exceeded); empty when nothing. After lower.
  virtual std::string errorContext() const { return ""; }
  /// A coded lowering (lincomb ops, its own verifier options and a
  /// finish() that executes the code): its final check stays inside
  /// compile(), before finish() (CompileRequest::deferFinalCheck).
  virtual bool coded() const { return false; }
  /// After the shared passes: an internal error when `s` no longer
  /// implements what was lowered; records what `result` reports of it.
  virtual llvm::Error finish(const ir::Schedule &s,
                             CompileResult &result) const {
    return llvm::Error::success();
  }

protected:
  const topo::Topology *topology;
  const int32_t numRanks;
  const CompileRequest &req;
};

/// What --algorithm auto knows when it asks an algorithm for its candidate.
struct AutoContext {
  const topo::Topology &topology;
  const CompileRequest &request; ///< the auto request
  bool multiNode = false;        ///< two or more nodes with GPUs
  /// The candidates priced so far (registry order), by algorithm.
  std::map<Algorithm, double> priced;
};

/// One algorithm's entry in --algorithm auto.
struct AutoCandidate {
  /// --explain lines before the candidate's price: why it is not
  /// considered, or the policy's own prediction.
  std::vector<std::string> lines;
  /// The request to compile and price; none when not a candidate.
  std::optional<CompileRequest> request;
  /// A policy chose it: a failure to compile is an error, not "not
  /// applicable".
  bool mustCompile = false;
  /// Tried when `request` is a user error: "auto: <fallbackWhat> not
  /// applicable (why); <fallbackHow>".
  std::optional<CompileRequest> fallback;
  std::string fallbackWhat, fallbackHow;
  /// More settings of the same algorithm to price beside `request` (ring
  /// channel counts, trees' k and chunking), each with the flags that
  /// select it (e.g. "--channels 8"); the fastest of all wins.
  struct Variant {
    std::string flags;
    CompileRequest request;
    /// About how many ops its schedule has; 0: selectAlgorithm estimates
    /// it from `request`'s compiled schedule, scaled by chunks x channels
    /// (where both requests fix them). Over autoMaxVariantOps it is not
    /// compiled.
    int64_t estimatedOps = 0;
  };
  std::vector<Variant> variants;
  /// About how many ops `request`'s schedule has at least; 0 when not
  /// known. Over autoMaxVariantOps the candidate is compiled only when no
  /// other one applies (a flat ring of 4096 ranks is 33.5 million ops per
  /// channel).
  int64_t estimatedOps = 0;
  /// The messages one chunk crosses one after another in every schedule
  /// of this candidate and its variants (a ring all-reduce: 2(n - 1)); 0
  /// when not known. auto bounds the candidate's time from below by their
  /// least latencies (analysis::leastChainTime) to say why a candidate it
  /// does not compile cannot win.
  int64_t chainMessages = 0;
};

/// `autoRequest` for algorithm `a`: the options of other algorithms reset
/// (trees per root, CERAR's), --channels auto left to the ring search.
CompileRequest candidateRequest(const CompileRequest &autoRequest,
                                Algorithm a);

/// The lowering of `a` (not Auto) for one compile() call.
std::unique_ptr<Lowering> makeLowering(Algorithm a, const LoweringInput &in);
/// `a`'s --algorithm auto candidate.
llvm::Expected<AutoCandidate> autoCandidate(Algorithm a,
                                            const AutoContext &ctx);

// Each registry row's factory and auto candidate, defined in its file.
#define TOPOCC_ALGORITHM(Enum, Name, Class)                                    \
  std::unique_ptr<Lowering> make##Class(const LoweringInput &in);              \
  llvm::Expected<AutoCandidate> Class##Candidate(const AutoContext &ctx);
#include "compiler/Algorithms.def"

// Pieces the lowerings share, and other tools use.

/// Adds to `c` (whose request is set) one variant per count in `chunks`
/// other than the request's own, flags "--chunks K".
void addChunkVariants(AutoCandidate &c, llvm::ArrayRef<int32_t> chunks);

/// Why `t` has no grid --algorithm dims can use (no `generate:` grid, or
/// a dimension without a ring); empty when it has one.
std::string whyNoDimsGrid(const topo::Topology &t);

/// The ranks of each node of `t` with GPUs, by local GPU index (device
/// declaration order inside the node).
std::vector<std::vector<ir::RankId>> nodeRanks(const topo::Topology &t);

/// Intra-node ring order (local indices) of the hierarchical algorithms:
/// the best single ring over `node0`'s GPUs for `bytes`, else 0..G-1.
std::vector<int32_t> hierLocalOrder(const topo::Topology &t,
                                    const std::vector<ir::RankId> &node0,
                                    ir::Collective c, double bytes);

/// Intra-node rings per channel (local indices) for `channels` channels:
/// the ring packing's rings over `node0`'s GPUs
/// (algorithms::packRings), each on a number of channels in proportion to
/// its share (largest remainder); empty when the packing keeps one ring,
/// or `channels` is 1 (then hierLocalOrder's ring serves every channel).
std::vector<std::vector<int32_t>>
hierChannelOrders(const topo::Topology &t, const std::vector<ir::RankId> &node0,
                  int32_t channels);

/// The lowered (unoptimised) hierarchical ring all-reduce on `t` with
/// `channels` and `chunks` (intra-node order chosen for `bytes`): what
/// compile() lowers for hier-ring, for cost estimates. User error when `t`
/// has fewer than 2 nodes with GPUs or nodes of different sizes.
llvm::Expected<ir::Schedule> lowerHierRingFor(const topo::Topology &t,
                                              ir::Collective c,
                                              int32_t channels, int32_t chunks,
                                              bool inplace, double bytes);

} // namespace topocc::lowerings

#endif // TOPOCC_COMPILER_LOWERINGS_LOWERING_H
