//===- compiler/analysis/Simulator.h - Discrete-event schedule simulator -*- C++ -*-===//
//
// Executes any schedule IR on a topology at one message size, event by event
// (docs/WhatIf.md, "The simulator"). Every directed link (LinkModel
// resource) is a FIFO server with its effective capacity and latency; a
// message follows the
// LinkModel's routed flow (through switches and NICs, split over parallel
// planes), hop by hop: store-and-forward (the whole message is received
// before the next hop starts) or cut-through (the next hop starts when the
// head arrives). Ranks follow same-rank deps, threadblock program order (from
// ThreadblocksAssigned on) and message pairing; local work (reductions,
// lincombs) costs its memory traffic over the GPU's memory bandwidth
// (ComputeModel.h, the model the cost model shares). Route hints pin rank pairs to NICs (a ring
// search's choice). On request every transfer is recorded with the
// dependencies between transfers (trace flow arrows). Stage: analysis, on
// any verified schedule.
// Never prints; deterministic (ties break by event creation order).
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_ANALYSIS_SIMULATOR_H
#define TOPOCC_COMPILER_ANALYSIS_SIMULATOR_H

#include "compiler/analysis/CostModel.h"
#include "ir/Schedule.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace topocc::analysis {

enum class SimMode {
  StoreAndForward, ///< each hop receives the whole message, then forwards it
  CutThrough,      ///< hops pipeline: the next starts when the head arrives
  /// How the MSCCL executor and NCCL's Simple protocol run a schedule
  /// (RuntimeParams; docs/WhatIf.md, "The runtime model"): loop iterations
  /// of bounded chunks, steps pipelined slice by slice, a threadblock held
  /// until its send is out, cut-through switches, the kernel's launch
  /// latency. The mode every prediction uses.
  Runtime,
};

/// "store-and-forward", "cut-through", "runtime".
llvm::StringRef simModeName(SimMode m);
/// The inverse of simModeName; a user error naming the modes otherwise.
llvm::Expected<SimMode> parseSimMode(llvm::StringRef name);

/// The constants of SimMode::Runtime, with their sources in docs/WhatIf.md
/// ("The runtime model").
struct RuntimeParams {
  /// Bytes of one chunk in one loop iteration at most: the executor's
  /// chunk of MSCCL_CHUNKSTEPS (4) steps of NCCL's Simple step (the 4 MiB
  /// connection buffer over NCCL_STEPS = 8 slots), 2 MiB. A schedule runs
  /// ceil(S / (nchunksperloop * loopChunkBytes)) iterations.
  double loopChunkBytes = 2.0 * 1024 * 1024;
  /// Slices one step's data crosses its connection in (NCCL's Simple:
  /// CHUNKSTEPS / SLICESTEPS = 2). A step that receives starts when the
  /// first slice is in.
  int slicesPerStep = 2;
  /// Seconds from the collective's call to its kernel's first step: NCCL's
  /// base latency of the Simple protocol (8.4 us).
  double kernelLatency = 8.4e-6;
  /// Op instances (ops x iterations) simulated at most; above it the
  /// iterations are merged into fewer, larger ones (bounded time and
  /// memory).
  size_t maxOpInstances = size_t(1) << 20;
  /// Inter-node connections go through the NIC NCCL's net transport gives
  /// each end on the message's channel (NetRoutes.h) unless a route hint
  /// pins the pair; off: the LinkModel's free routing over every NIC.
  bool ncclNetRule = true;
};

/// Routes messages from rank `from` to rank `to` through the sender node's
/// NIC `nics.out` and the receiver node's NIC `nics.in` (device indices;
/// LinkModel::viaFlow) instead of the LinkModel's free routing: the NIC hops
/// a multi-node ring search chose (RingChannel::nics).
struct SimRouteHint {
  int from = -1, to = -1;
  NicPair nics;
};

struct SimOptions {
  /// S in the nccl-tests convention (allgather: output, reducescatter:
  /// input, allreduce: the buffer); one chunk is S / chunksPerLoop.
  double bytes = 0;
  SimMode mode = SimMode::StoreAndForward;
  /// Bytes/s of a two-operand reduction (3 bytes of memory traffic per
  /// byte), i.e. every GPU's memory bandwidth is 3 * reduceBandwidth; 0
  /// makes local work free; nullopt takes each rank's GPU model
  /// (ComputeModel.h memoryBandwidth).
  std::optional<double> reduceBandwidth;
  /// Record every link transfer (for traces); off for speed.
  bool recordTransfers = false;
  /// With recordTransfers: keep at most this many transfers (a trace's
  /// memory stays bounded); later ones are only counted
  /// (SimResult::transferCount), and no flows are derived.
  size_t maxTransfers = SIZE_MAX;
  /// Fixed NIC routes per rank pair; the first hint of a pair wins, pairs
  /// without one route freely.
  std::vector<SimRouteHint> routeHints;
  /// The constants of SimMode::Runtime (unused by the other modes).
  RuntimeParams runtime;
  /// Simulate one rank per orbit of a symmetry of the schedule on its
  /// topology when there is one (SimFold.h); never with recordTransfers.
  bool fold = true;
};

/// Reduction bandwidth of a GPU model, bytes/s: memoryBandwidth(gpuModel)
/// / 3 (ComputeModel.h; a reduction reads two operands and writes one). 0
/// for an unknown model.
double defaultReduceBandwidth(llvm::StringRef gpuModel);

/// One resource's totals.
struct SimLinkStats {
  int resource = -1; ///< LinkModel resource id
  double busy = 0;   ///< seconds the server was transmitting
  double bytes = 0;
};

/// One op on the critical path. `viaMessage` is the message whose arrival
/// released the op (-1 when a same-rank predecessor did).
struct SimStep {
  int rank = -1, op = -1;
  int iteration = 0; ///< loop iteration (SimMode::Runtime), else 0
  double start = 0, end = 0;
  int viaMessage = -1;
};

/// One message crossing one resource (recordTransfers only). `stage` is
/// the hop of the message's route (0 leaves the sender).
struct SimTransfer {
  int resource = -1, message = -1, sender = -1, receiver = -1;
  double start = 0, end = 0, bytes = 0;
  int stage = 0;
  int iteration = 0; ///< loop iteration of the message (SimMode::Runtime)
};

/// A dependency between two transfers (indices into SimResult::transfers):
/// `to` could not start before `from` ended. Two kinds: the next hop of the
/// same message (from the hop's transfer that finished last), and the first
/// hop of a message whose send was released, directly or through local ops
/// of its rank, by the arrival of another message (from that message's last
/// hop that finished last).
struct SimFlow {
  int from = -1, to = -1;
  bool sameMessage = false;
};

struct SimResult {
  double bytes = 0;
  double time = 0; ///< last op completion, plus launchLatency
  double launchLatency = 0; ///< SimMode::Runtime's kernel latency, else 0
  int iterations = 1;       ///< loop iterations simulated
  double algbw = 0, busbw = 0;
  std::vector<double> rankFinish;  ///< per rank, last op completion
  std::vector<SimLinkStats> links; ///< every used resource, by id
  std::vector<SimStep> criticalPath; ///< first op to the last one
  std::vector<SimTransfer> transfers; ///< by start time (recordTransfers)
  std::vector<SimFlow> flows; ///< by (to, from) (recordTransfers)
  /// Transfers of the run (recordTransfers), also those past maxTransfers:
  /// transfers.size() < transferCount says the record was cut short.
  size_t transferCount = 0;
  size_t events = 0; ///< events processed
  /// Ranks each simulated rank stood for (SimOptions::fold): 1 when every
  /// rank was simulated.
  int foldOrder = 1;
};

/// Simulates `s` on `m`'s topology. User error when the ranks do not match,
/// a pair has no route, a message is unmatched, or the schedule cannot run
/// to the end (a dependency cycle: the ops that never ran are named).
llvm::Expected<SimResult> simulate(const ir::Schedule &s, LinkModel &m,
                                   const SimOptions &opts);

/// The number of loop iterations SimMode::Runtime runs `s` in at `bytes`
/// (at least 1; bounded by params.maxOpInstances).
int runtimeIterations(const ir::Schedule &s, double bytes,
                      const RuntimeParams &params);

/// Seconds every message between two ranks of `t` takes at least in the
/// simulator, whatever its size: each hop of a route adds its link's
/// latency, and a route between two ranks is one link joining them or
/// leaves one rank and enters the other over two links (GPUs do not
/// forward). 0 when some link has no latency.
double leastMessageLatency(const topo::Topology &t);

/// A lower bound on the simulated time of any schedule on `t` in which
/// `messages` messages depend on one another in turn (a ring all-reduce's
/// chunk crosses 2(n - 1)): their least latencies, plus the runtime
/// model's kernel latency in SimMode::Runtime.
double leastChainTime(const topo::Topology &t, int64_t messages, SimMode mode,
                      const RuntimeParams &params = {});

/// The NIC hops the ring search chose for `rings`, as route hints: hop i of
/// a ring from order[i] to order[i + 1] (cyclically) where its NICs are set.
std::vector<SimRouteHint> ringRouteHints(llvm::ArrayRef<RingChannel> rings);

} // namespace topocc::analysis

#endif // TOPOCC_COMPILER_ANALYSIS_SIMULATOR_H
