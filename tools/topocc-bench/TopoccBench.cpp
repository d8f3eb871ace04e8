//===- tools/topocc-bench/TopoccBench.cpp - topocc-bench ------------------===//
//
// An nccl-tests style benchmark of a topocc plan over MPI (host memory) or
// NCCL (one GPU per rank), with MPI's or NCCL's own collective as the
// baseline in the same run on the same buffers:
//
//   topocc-mpirun -np 8 topocc-bench --plan P.json -b 1K -e 256M -f 2
//       -n 20 -w 5 -c 1 -d float --baseline mpi -J out.json
//   mpirun -np 8 topocc-bench --plan P.json --baseline nccl -d bfloat16
//   topocc-mpirun -np 8 topocc-bench --topology T.yaml --algorithm cerar
//       --tolerance 1e-3 --size 256M -b 16M -e 256M ...
//
// --topology compiles on the fly with compile(topology, request) (the same
// pipeline as `topocc compile`): --algorithm (ring, hier-ring, trees,
// cerar, auto), --size (the size the plan is chosen for; default the
// largest -e size), --tolerance, --components, --trees-per-root.
// Exact plans report #wrong (elements that differ from the exact sum,
// summed over ranks); coded plans (errorBound > 0, CERAR all-reduce) report
// the measured error of the error contract (docs/Algorithms-cerar.md 8),
// max over ranks of ||got - exact||_2 / ||x||_2 with x every rank's input,
// next to the plan's bound.
//
// Sizes follow nccl-tests: allreduce size = count*elemsize; allgather size =
// the gathered output (count per rank = size/ranks); reducescatter size = the
// input (count per rank = size/ranks). time is the mean per iteration over
// -n iterations, the maximum over ranks; algbw = size/time; busbw = algbw *
// 2(n-1)/n (allreduce) or (n-1)/n (allgather, reducescatter). The header
// check (every rank runs the same plan and count) runs on the first warm-up
// iteration of each size, not in the timed loop.
//
// --transport nccl (the default with --baseline nccl) runs the plan through
// NcclTransport on device buffers (GPU = local rank modulo the device
// count; runtime/cuda/nccl/NcclSession.h) and --baseline nccl times
// ncclAllReduce / ncclAllGather / ncclReduceScatter on the same buffers.
// Only in builds with CUDA and NCCL (TOPOCC_BENCH_NCCL); without a device on
// every rank it stops with the reason before any NCCL call.
//
//===----------------------------------------------------------------------===//

#include "backends/PlanJson.h"
#include "backends/TopologyHash.h"
#include "compiler/Pipeline.h"
#include "compiler/topology/TopologyParser.h"
#include "runtime/Interpreter.h"
#include "runtime/mpi/MpiTransport.h"
#include "support/ByteSize.h"
#include "support/Diagnostics.h"
#ifdef TOPOCC_BENCH_NCCL
#include "runtime/cuda/CudaTransport.h"
#include "runtime/cuda/nccl/NcclSession.h"
#include "runtime/cuda/nccl/NcclTransport.h"
#endif

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <mpi.h>

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

using namespace topocc;
using namespace topocc::runtime;

namespace {

struct Options {
  std::string minBytes = "32M", maxBytes = "32M";
  double factor = 2;
  int iters = 20, warmup = 5, check = 1;
  std::string dtype = "float";
  std::string planFile, topology, collective = "allreduce", baseline;
  std::string transport; ///< mpi or nccl; empty: nccl with --baseline nccl

  std::string algorithm = "ring", size;
  double tolerance = 0;
  int components = 0;
  long long treesPerRoot = 0;
  int chunks = 1, channels = -1; ///< -1: auto for --algorithm auto, else 1
  bool inplace = false;
  double timeout = 600; // RunOptions::timeoutSeconds
  std::string jsonOut;
};

float inputValue(int r, size_t i, int iter) {
  return float(int((r * 7 + i * 3 + size_t(iter)) % 11) - 5);
}

/// The NCCL communicator and stream of a --transport nccl run.
struct DeviceSide {
#ifdef TOPOCC_BENCH_NCCL
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
#endif
};

struct Result {
  double timeUs = 0, algbw = 0, busbw = 0;
  long long wrong = -1; ///< -1: not checked
  /// Coded plans: max over ranks of ||got - exact||_2 / ||x||_2, x all
  /// ranks' inputs (-1: not checked or not coded).
  double relErr = -1;
};

class Bench {
public:
  /// `dev` (a build with NCCL): the plan runs on device buffers through
  /// `tr`, an NcclTransport of `dev`; null: host buffers.
  Bench(const Options &o, const Plan &plan, DType t, Transport &tr,
        const DeviceSide *dev)
      : o(o), plan(plan), s(plan.schedule()), t(t), tr(tr), dev(dev),
        n(tr.size()), rank(tr.rank()), esz(dtypeSize(t)) {}

  size_t countFor(size_t bytes) const {
    size_t total = bytes / esz;
    return s.collective == ir::Collective::AllReduce ? total : total / n;
  }
  double busFactor() const {
    double f = double(n - 1) / n;
    return s.collective == ir::Collective::AllReduce ? 2 * f : f;
  }

  /// Buffers for `count`, laid out as the plan's in-place rule needs.
  void setup(size_t count) {
    auto l = layoutFor(s, count);
    if (!l)
      fatal(l.takeError());
    layout = *l;
    mem.assign((layout.inputElements() + layout.outputElements()) * esz + 64,
               0);
    size_t sendOff = 0, recvOff = layout.inputElements() * esz;
    if (s.inplace) {
      if (s.collective == ir::Collective::AllGather) {
        recvOff = 0;
        sendOff = size_t(rank) * count * esz;
      } else if (s.collective == ir::Collective::ReduceScatter) {
        sendOff = 0;
        recvOff = size_t(rank) * count * esz;
      } else {
        sendOff = recvOff = 0;
      }
    }
    hsend = mem.data() + sendOff;
    hrecv = mem.data() + recvOff;
    char *base = mem.data();
#ifdef TOPOCC_BENCH_NCCL
    if (dev) {
      // Same layout on the device; every run and baseline uses it.
      if (auto err = dmem.allocate(mem.size()))
        fatal(std::move(err));
      base = dmem.data();
    }
#endif
    send = base + sendOff;
    recv = base + recvOff;
  }
  void fill(int iter) {
    for (size_t i = 0; i < layout.inputElements(); ++i)
      storeElement(hsend, i, t, inputValue(rank, i, iter));
#ifdef TOPOCC_BENCH_NCCL
    if (dev)
      if (auto err = cudaCheck(cudaMemcpy(dmem.data(), mem.data(), mem.size(),
                                          cudaMemcpyHostToDevice),
                               "cudaMemcpy to the device"))
        fatal(std::move(err));
#endif
  }
  /// Waits for the device work of the timed loop (the baseline's NCCL
  /// calls are asynchronous; Plan::run synchronises itself).
  void sync() {
#ifdef TOPOCC_BENCH_NCCL
    if (dev)
      if (auto err = cudaCheck(cudaStreamSynchronize(dev->stream),
                               "cudaStreamSynchronize"))
        fatal(std::move(err));
#endif
  }
  /// Checks the output against the exact result of iteration `iter`'s
  /// inputs: the number of wrong elements (summed over ranks) and, for
  /// coded plans, the relative error (maxima over ranks).
  void check(int iter, Result &r) {
#ifdef TOPOCC_BENCH_NCCL
    if (dev)
      if (auto err = cudaCheck(cudaMemcpy(mem.data(), dmem.data(), mem.size(),
                                          cudaMemcpyDeviceToHost),
                               "cudaMemcpy from the device"))
        fatal(std::move(err));
#endif
    long long wrong = 0;
    double errorSq = 0, inputSq = 0;
    size_t count = layout.count;
    for (size_t i = 0; i < layout.outputElements(); ++i) {
      float want = 0;
      switch (s.collective) {
      case ir::Collective::AllGather:
        want = inputValue(int(i / count), i % count, iter);
        break;
      case ir::Collective::ReduceScatter:
        for (int q = 0; q < n; ++q)
          want += inputValue(q, size_t(rank) * count + i, iter);
        break;
      default:
        for (int q = 0; q < n; ++q) {
          double x = inputValue(q, i, iter);
          want += float(x);
          inputSq += x * x;
        }
        break;
      }
      float got = loadElement(hrecv, i, t);
      wrong += got != want;
      errorSq += (double(got) - double(want)) * (double(got) - double(want));
    }
    long long total = 0;
    MPI_Allreduce(&wrong, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    r.wrong = total;
    double mine = inputSq > 0 ? std::sqrt(errorSq / inputSq) : 0, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    r.relErr = all;
  }

  void runPlan(bool checkPeers) {
    RunOptions ro;
    ro.checkPeers = checkPeers;
    ro.timeoutSeconds = o.timeout;
    if (auto err = plan.run(send, recv, layout.count, t, tr, ro))
      fatal(std::move(err));
  }
  void runBaseline() {
    size_t count = layout.count;
#ifdef TOPOCC_BENCH_NCCL
    if (dev) {
      if (auto err = runNcclCollective(s.collective, send, recv, count, t,
                                       dev->comm, dev->stream))
        fatal(std::move(err));
      return;
    }
#endif
    const void *in = s.inplace ? MPI_IN_PLACE : send;
    switch (s.collective) {
    case ir::Collective::AllGather:
      MPI_Allgather(in, int(count), MPI_FLOAT, recv, int(count), MPI_FLOAT,
                    MPI_COMM_WORLD);
      break;
    case ir::Collective::ReduceScatter:
      MPI_Reduce_scatter_block(s.inplace ? MPI_IN_PLACE : send,
                               s.inplace ? send : recv, int(count), MPI_FLOAT,
                               MPI_SUM, MPI_COMM_WORLD);
      if (s.inplace && recv != send) // MPI leaves the result at the front
        std::memmove(recv, send, count * esz);
      break;
    default:
      MPI_Allreduce(in, recv, int(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      break;
    }
  }

  template <typename Fn> Result measure(size_t bytes, Fn &&fn) {
    Result r;
    for (int i = 0; i < o.warmup; ++i)
      fn(i == 0);
    sync();
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < o.iters; ++i)
      fn(false);
    sync();
    double mine = (MPI_Wtime() - t0) / std::max(1, o.iters), worst = 0;
    MPI_Allreduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    r.timeUs = worst * 1e6;
    r.algbw = worst > 0 ? double(bytes) / worst / 1e9 : 0;
    r.busbw = r.algbw * busFactor();
    if (o.check) {
      fill(1);
      fn(false);
      sync();
      check(1, r);
      fill(0);
    }
    return r;
  }

  [[noreturn]] void fatal(llvm::Error err) {
    llvm::errs() << "topocc-bench: rank " << rank << ": error: "
                 << llvm::toString(std::move(err)) << "\n";
    llvm::errs().flush();
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::exit(1);
  }

  const Options &o;
  const Plan &plan;
  const ir::Schedule &s;
  DType t;
  Transport &tr;
  const DeviceSide *dev;
  int n, rank;
  size_t esz;
  BufferLayout layout;
  std::vector<char> mem; ///< host buffers (the device's mirror with dev)
  char *hsend = nullptr, *hrecv = nullptr; ///< in mem
  char *send = nullptr, *recv = nullptr;   ///< what runs use
#ifdef TOPOCC_BENCH_NCCL
  DeviceBuffer dmem;
#endif
};

/// One side of a row; `bound` > 0 (a coded plan) shows the relative error
/// and the bound ("1.2e-04(1.0e-03)", 18 wide) instead of #wrong.
std::string fmtResult(const Result &r, double bound) {
  std::string check;
  if (bound > 0)
    check = r.relErr < 0 ? "N/A"
                         : llvm::formatv("{0:e1}({1:e1}){2}", r.relErr, bound,
                                         r.relErr > bound ? "!" : "")
                               .str();
  else
    check = r.wrong < 0 ? "N/A" : std::to_string(r.wrong);
  size_t width = bound > 0 ? 18 : 6;
  if (check.size() < width)
    check.insert(0, width - check.size(), ' ');
  return llvm::formatv("{0,10:f1} {1,7:f2} {2,7:f2} {3}", r.timeUs, r.algbw,
                       r.busbw, check)
      .str();
}

int runMain(int argc, char **argv) {
  Options o;
  CLI::App app{"topocc-bench: time a topocc plan over MPI or NCCL "
               "(nccl-tests conventions)"};
  app.add_option("-b,--minbytes", o.minBytes, "Smallest size (8, 1K, 256M; docs/CLI.md, Sizes)");
  app.add_option("-e,--maxbytes", o.maxBytes, "Largest size");
  app.add_option("-f,--stepfactor", o.factor, "Size multiplier per step");
  app.add_option("-n,--iters", o.iters, "Timed iterations per size");
  app.add_option("-w,--warmup_iters", o.warmup, "Warm-up iterations");
  app.add_option("-c,--check", o.check, "Check results (0 or 1)");
  app.add_option("-d,--datatype", o.dtype, "float, half or bfloat16");
  app.add_option("--plan", o.planFile, "Plan file (topocc compile --emit plan)");
  app.add_option("--topology", o.topology,
                 "Compile a plan for this topology instead of --plan");
  app.add_option("--algorithm", o.algorithm,
                 "With --topology: ring (default), hier-ring, trees, cerar "
                 "or auto");
  app.add_option("--size", o.size,
                 "With --topology: the size the plan is chosen for (default: "
                 "the largest -e size)");
  app.add_option("--tolerance", o.tolerance,
                 "With --topology, cerar/auto: relative error tolerance");
  app.add_option("--components", o.components,
                 "With --topology, cerar/auto: CERAR components c (0: the "
                 "policy's choice)");
  app.add_option("--trees-per-root", o.treesPerRoot,
                 "With --topology, trees/auto: spanning trees per root (0: "
                 "the optimum's k)");
  app.add_option("--collective", o.collective,
                 "allreduce, allgather or reducescatter (with --topology)");
  app.add_option("--chunks", o.chunks, "Chunks per rank (with --topology)");
  app.add_option("--channels", o.channels,
                 "Channels (with --topology; 0: the ring search's choice; "
                 "default 1, auto for --algorithm auto)");
  app.add_flag("--inplace", o.inplace, "In-place plan (with --topology)");
  app.add_option("--baseline", o.baseline,
                 "mpi: also time MPI_Allreduce/MPI_Allgather/"
                 "MPI_Reduce_scatter_block (host buffers, fp32); nccl: also "
                 "time ncclAllReduce/ncclAllGather/ncclReduceScatter on the "
                 "plan's device buffers (builds with CUDA and NCCL; one GPU "
                 "per rank)");
  app.add_option("--transport", o.transport,
                 "mpi: run the plan over MPI on host buffers (default); "
                 "nccl: over NCCL on device buffers, GPU = local rank modulo "
                 "the device count (default with --baseline nccl)");
  app.add_option("--timeout", o.timeout,
                 "Seconds without progress before a run fails (default 600; 0: "
                 "none)");
  app.add_option("-J,--output_file", o.jsonOut, "Write results as JSON");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
      app.exit(e);
    return e.get_exit_code() == 0 ? 0 : 1;
  }

  MpiTransport mpi;
  int rank = mpi.rank(), n = mpi.size();
  auto userError = [&](const llvm::Twine &msg) {
    if (rank == 0)
      llvm::errs() << "topocc-bench: error: " << msg << "\n";
    return 1;
  };
  auto dtype = dtypeFromName(o.dtype);
  if (!dtype)
    return userError("unknown datatype '" + o.dtype +
                     "'; expected float, half or bfloat16");
  auto minB = readByteCount(o.minBytes), maxB = readByteCount(o.maxBytes);
  if (!minB || !maxB || *maxB < *minB || o.factor <= 1)
    return userError("bad size range -b " + o.minBytes + " -e " + o.maxBytes +
                     " -f " + std::to_string(o.factor));
  if (!o.baseline.empty() && o.baseline != "mpi" && o.baseline != "nccl")
    return userError("unknown --baseline '" + o.baseline +
                     "'; expected mpi or nccl");
  if (o.transport.empty())
    o.transport = o.baseline == "nccl" ? "nccl" : "mpi";
  if (o.transport != "mpi" && o.transport != "nccl")
    return userError("unknown --transport '" + o.transport +
                     "'; expected mpi or nccl");
  if (o.baseline == "mpi" && *dtype != DType::F32)
    return userError("--baseline mpi needs -d float (MPI has no fp16/bf16 "
                     "type)");
  if (o.baseline == "mpi" && o.transport == "nccl")
    return userError("--baseline mpi times MPI on host buffers; it cannot run "
                     "with --transport nccl (use --baseline nccl)");
  if (o.baseline == "nccl" && o.transport == "mpi")
    return userError("--baseline nccl times NCCL on device buffers; it needs "
                     "--transport nccl (the default with --baseline nccl)");
  const bool useNccl = o.transport == "nccl";
#ifndef TOPOCC_BENCH_NCCL
  if (useNccl)
    return userError("this topocc-bench was built without NCCL (CMake did not "
                     "find the CUDA toolkit and NCCL), so --transport nccl and "
                     "--baseline nccl are not available");
#else
  // Every rank needs a GPU: agree on that before any NCCL call, so a
  // machine without one gets the reason instead of a hang or a crash.
  if (useNccl) {
    auto devices = cudaDeviceCount();
    std::string why = devices ? "" : llvm::toString(devices.takeError());
    if (llvm::StringRef(why).startswith("error: ")) // a user error's prefix
      why.erase(0, 7);
    while (!why.empty() && why.back() == '\n')
      why.pop_back();
    int none = !why.empty(), firstNone = n;
    int mine = none ? rank : n;
    MPI_Allreduce(&mine, &firstNone, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (firstNone < n) {
      if (rank == firstNone)
        llvm::errs() << "topocc-bench: error: --" 
                     << (o.baseline == "nccl" ? "baseline" : "transport")
                     << " nccl needs a GPU on every rank; rank " << rank
                     << " has none: " << why << "\n";
      return 1;
    }
  }
#endif
  if (o.planFile.empty() == o.topology.empty())
    return userError("give either --plan FILE or --topology FILE");
  std::optional<size_t> planBytes = maxB;
  if (!o.size.empty())
    planBytes = readByteCount(o.size);
  if (!planBytes)
    return userError("bad --size '" + o.size + "'");
  if (o.components < 0 || o.tolerance < 0 || o.treesPerRoot < 0)
    return userError("--components, --tolerance and --trees-per-root must "
                     "not be negative");

  // Every rank loads or compiles the plan; an error on any rank stops all.
  std::optional<Plan> plan;
  std::string loadError;
  if (!o.planFile.empty()) {
    auto p = Plan::load(o.planFile);
    if (p)
      plan = std::move(*p);
    else
      loadError = llvm::toString(p.takeError());
  } else {
    auto topo = topo::loadTopologyFile(o.topology);
    auto coll = ir::collectiveFromName(o.collective);
    if (!topo) {
      loadError = llvm::toString(topo.takeError());
    } else if (!coll) {
      loadError = "unknown collective '" + o.collective + "'";
    } else if (topo->numRanks() != n) {
      loadError = llvm::formatv("topology '{0}' has {1} ranks but the job has "
                                "{2}",
                                topo->name(), topo->numRanks(), n)
                      .str();
    } else if (auto alg = parseAlgorithm(o.algorithm); !alg) {
      loadError = llvm::toString(alg.takeError());
    } else {
      CompileRequest req;
      req.collective = *coll;
      req.algorithm = *alg;
      req.chunks = o.chunks;
      req.channels =
          o.channels >= 0 ? o.channels : (o.algorithm == "auto" ? 0 : 1);
      req.inplace = o.inplace;
      req.bytes = double(*planBytes);
      req.tolerance = o.tolerance;
      req.components = o.components;
      if (o.treesPerRoot > 0)
        req.treesPerRoot = o.treesPerRoot;
      req.name = llvm::formatv("{0}_{1}_{2}_{3}", topo->name(), o.algorithm,
                               o.collective,
                               o.inplace ? "inplace" : "outofplace");
      PassLogger log;
      auto compiled = compile(*topo, req, log);
      if (!compiled) {
        loadError = llvm::toString(compiled.takeError());
      } else {
        backends::PlanMeta meta;
        meta.generator = "topocc-bench";
        meta.topologyName = topo->name().str();
        meta.topologyHash = backends::topologyHash(*topo);
        meta.algorithm = algorithmName(compiled->algorithm).str();
        compiled->setCodedMeta(meta);
        auto p = Plan::fromSchedule(std::move(compiled->schedule), meta);
        if (p)
          plan = std::move(*p);
        else
          loadError = llvm::toString(p.takeError());
      }
    }
  }
  int failed = !loadError.empty(), anyFailed = 0;
  MPI_Allreduce(&failed, &anyFailed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (anyFailed) {
    if (failed)
      llvm::errs() << "topocc-bench: rank " << rank << ": error: " << loadError
                   << "\n";
    return 1;
  }

  DeviceSide side;
  Transport *tr = &mpi;
#ifdef TOPOCC_BENCH_NCCL
  std::unique_ptr<NcclSession> session;
  std::unique_ptr<NcclTransport> nccl;
  if (useNccl) {
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank,
                        MPI_INFO_NULL, &local);
    int localRank = 0;
    MPI_Comm_rank(local, &localRank);
    MPI_Comm_free(&local);
    auto created = NcclSession::create(
        rank, n, localRank, [](void *id, size_t bytes) {
          MPI_Bcast(id, int(bytes), MPI_BYTE, 0, MPI_COMM_WORLD);
        });
    if (!created) {
      llvm::errs() << "topocc-bench: rank " << rank << ": error: "
                   << llvm::toString(created.takeError()) << "\n";
      llvm::errs().flush();
      MPI_Abort(MPI_COMM_WORLD, 1);
      return 1;
    }
    session = std::move(*created);
    nccl = std::make_unique<NcclTransport>(session->comm(), session->stream());
    side.comm = session->comm();
    side.stream = session->stream();
    tr = nccl.get();
  }
#endif
  Bench b(o, *plan, *dtype, *tr, useNccl ? &side : nullptr);
  const ir::Schedule &s = plan->schedule();
  bool baseline = !o.baseline.empty();
  const std::string baseName = o.baseline == "nccl" ? "NCCL" : "MPI";
  // > 0: a coded plan; includes the dtype's rounding amplified by the code.
  const double bound = valueErrorBound(plan->meta(), *dtype);
  const bool coded = bound > 0;
  bool overBound = false;
  if (rank == 0) {
    std::string algo = plan->meta().algorithm.empty()
                           ? std::string()
                           : plan->meta().algorithm + ", ";
    llvm::outs() << llvm::formatv(
        "# topocc-bench: plan '{0}' ({7}{1}, {2}, {3} ranks, {4} chunks per "
        "loop, {5} channels), hash {6}, over {8}\n",
        s.name, ir::collectiveName(s.collective),
        s.inplace ? "in-place" : "out-of-place", s.numRanks, s.chunksPerLoop,
        s.numChannels, backends::formatHash(plan->hash()), algo,
        useNccl ? "NCCL (device buffers)" : "MPI (host buffers)");
    if (coded)
      llvm::outs() << llvm::formatv(
          "# coded plan: error bound {0:e} = {1:e} (code) + {2:e} (unit "
          "roundoff of {3}) x {4:e} (roundoff gain); relerr = max over ranks "
          "of ||got - exact|| / ||x||, x all ranks' inputs (the error "
          "contract); '!' marks relerr "
          "> bound\n",
          bound, plan->meta().errorBound, unitRoundoff(*dtype),
          dtypeName(*dtype), plan->meta().roundoffGain[size_t(*dtype)]);
    llvm::outs() << llvm::formatv("# iters {0}, warmup {1}, check {2}\n",
                                  o.iters, o.warmup, o.check);
    // The plan's check column: #wrong (6 wide) or relerr(bound) (18 wide).
    const char *checkHead = coded ? "     relerr(bound)" : "#wrong";
    const char *checkPad = coded ? "                  " : "      ";
    llvm::outs() << "#                                           topocc plan"
                 << (baseline ? std::string(coded ? 12 : 0, ' ') +
                                    std::string(33 - baseName.size() - 9, ' ') +
                                    baseName + " baseline"
                              : "")
                 << "\n";
    llvm::outs() << "#       size      count   type  redop       time   algbw"
                    "   busbw "
                 << checkHead
                 << (baseline ? "       time   algbw   busbw #wrong" : "")
                 << "\n";
    llvm::outs() << "#        (B) (elements)                     (us)  (GB/s)"
                    "  (GB/s) "
                 << checkPad
                 << (baseline ? "       (us)  (GB/s)  (GB/s)       " : "")
                 << "\n";
    llvm::outs().flush();
  }
  llvm::json::Array rows;
  double sumPlan = 0, sumBase = 0;
  int sizes = 0;
  for (double bytesD = double(*minB); bytesD <= double(*maxB) * 1.0000001;
       bytesD *= o.factor) {
    size_t count = b.countFor(size_t(bytesD));
    if (count == 0)
      continue;
    size_t bytes = s.collective == ir::Collective::AllReduce
                       ? count * b.esz
                       : count * b.esz * n;
    b.setup(count);
    b.fill(0);
    Result p = b.measure(bytes, [&](bool first) { b.runPlan(first); });
    Result m;
    if (baseline)
      m = b.measure(bytes, [&](bool) { b.runBaseline(); });
    sumPlan += p.busbw;
    sumBase += m.busbw;
    ++sizes;
    if (rank == 0) {
      llvm::outs() << llvm::formatv("{0,12} {1,10} {2,6} {3,6} ", bytes, count,
                                    o.dtype, "sum")
                   << fmtResult(p, bound)
                   << (baseline ? " " + fmtResult(m, 0) : "")
                   << "\n";
      llvm::outs().flush();
      llvm::json::Object row{{"size", int64_t(bytes)},
                             {"count", int64_t(count)},
                             {"type", o.dtype},
                             {"redop", "sum"},
                             {"time_us", p.timeUs},
                             {"algbw", p.algbw},
                             {"busbw", p.busbw}};
      if (coded) {
        row["relerr"] = p.relErr;
        row["bound"] = bound;
        overBound |= p.relErr > bound;
      } else {
        row["wrong"] = p.wrong;
      }
      if (baseline)
        row["baseline"] = llvm::json::Object{{"name", o.baseline},
                                             {"time_us", m.timeUs},
                                             {"algbw", m.algbw},
                                             {"busbw", m.busbw},
                                             {"wrong", m.wrong}};
      rows.push_back(std::move(row));
    }
  }
  if (rank == 0) {
    llvm::outs() << llvm::formatv("# Avg bus bandwidth    : {0:f3} GB/s",
                                  sizes ? sumPlan / sizes : 0);
    if (baseline)
      llvm::outs() << llvm::formatv(" ({0} baseline {1:f3} GB/s)", baseName,
                                  sizes ? sumBase / sizes : 0);
    llvm::outs() << "\n";
    if (overBound)
      llvm::outs() << "# WARNING: the measured relative error exceeds the "
                      "plan's bound (rows marked '!')\n";
    if (!o.jsonOut.empty()) {
      std::error_code ec;
      llvm::raw_fd_ostream os(o.jsonOut, ec);
      if (ec)
        return userError("cannot write '" + o.jsonOut + "': " + ec.message());
      llvm::json::Object doc{{"plan", s.name},
                             {"algorithm", plan->meta().algorithm},
                             {"collective", ir::collectiveName(s.collective)},
                             {"inplace", s.inplace},
                             {"ranks", n},
                             {"hash", backends::formatHash(plan->hash())},
                             {"iters", o.iters},
                             {"warmup", o.warmup},
                             {"results", std::move(rows)}};
      if (coded)
        doc["errorBound"] = bound;
      os << llvm::formatv("{0:2}", llvm::json::Value(std::move(doc))) << "\n";
    }
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rc = runMain(argc, argv);
  MPI_Finalize();
  return rc;
}
