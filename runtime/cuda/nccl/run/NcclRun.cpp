//===- runtime/cuda/nccl/run/NcclRun.cpp - Run a plan on GPUs with NCCL ---===//
//
// topocc-nccl-run: one MPI process per GPU. Rank 0 creates the NCCL unique
// id, MPI_Bcast shares it, every rank picks GPU (local rank % devices),
// loads the plan, fills its input on the device, runs the plan through
// NcclTransport (one agreement check, then -n timed runs), compares every
// output element with the reference on the host, and optionally times
// ncclAllReduce/ncclAllGather/ncclReduceScatter on the same buffers.
//
//   mpirun -np 8 topocc-nccl-run --plan P.json [--count 1048576]
//          [-d float|half|bfloat16] [-n 20] [-w 5] [--baseline nccl]
//
// Exit 0 when every element is right; 77 with a message when a rank has
// no CUDA device. Setup and the baseline are NcclSession.h's (shared with
// topocc-bench --transport nccl).
//
//===----------------------------------------------------------------------===//

#include "runtime/Interpreter.h"
#include "runtime/cuda/nccl/NcclSession.h"
#include "runtime/cuda/nccl/NcclTransport.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <mpi.h>

#include <cstdlib>
#include <string>
#include <vector>

using namespace topocc;
using namespace topocc::runtime;

namespace {

float inputValue(int r, size_t i) {
  return float(int((r * 7 + i * 3) % 11) - 5);
}

int fail(const llvm::Twine &msg) {
  llvm::errs() << "topocc-nccl-run: " << msg << "\n";
  MPI_Abort(MPI_COMM_WORLD, 1);
  return 1;
}

int runMain(int argc, char **argv) {
  std::string planPath, dt = "float", baseline;
  size_t count = 1 << 20;
  int iters = 20, warm = 5;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--plan")
      planPath = next();
    else if (a == "--count")
      count = std::stoull(next());
    else if (a == "-d")
      dt = next();
    else if (a == "-n")
      iters = std::stoi(next());
    else if (a == "-w")
      warm = std::stoi(next());
    else if (a == "--baseline")
      baseline = next();
    else
      return fail("unknown argument '" + a + "'");
  }
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  auto dtype = dtypeFromName(dt);
  if (!dtype || planPath.empty())
    return fail("usage: topocc-nccl-run --plan P.json [--count N] "
                "[-d float|half|bfloat16] [-n 20] [-w 5] [--baseline nccl]");
  // Every rank needs a device; agree before NCCL setup so none waits.
  auto devices = cudaDeviceCount();
  int noDevice = !devices, anyNoDevice = 0;
  MPI_Allreduce(&noDevice, &anyNoDevice, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (anyNoDevice) {
    if (!devices) {
      std::string why = llvm::toString(devices.takeError());
      if (llvm::StringRef(why).startswith("error: ")) // a user error's prefix
        why.erase(0, 7);
      while (!why.empty() && why.back() == '\n')
        why.pop_back();
      llvm::outs() << "topocc-nccl-run: rank " << rank << ": " << why
                   << "; nothing run\n";
    }
    else
      llvm::consumeError(devices.takeError());
    return 77;
  }
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank,
                      MPI_INFO_NULL, &local);
  int localRank = 0;
  MPI_Comm_rank(local, &localRank);

  auto plan = Plan::load(planPath);
  if (!plan)
    return fail(llvm::toString(plan.takeError()));
  const ir::Schedule &s = plan->schedule();
  auto layout = layoutFor(s, count);
  if (!layout)
    return fail(llvm::toString(layout.takeError()));

  auto session = NcclSession::create(
      rank, world, localRank, [](void *id, size_t bytes) {
        MPI_Bcast(id, int(bytes), MPI_BYTE, 0, MPI_COMM_WORLD);
      });
  if (!session)
    return fail(llvm::toString(session.takeError()));
  ncclComm_t comm = (*session)->comm();
  cudaStream_t stream = (*session)->stream();

  size_t esz = dtypeSize(*dtype);
  size_t inE = layout->inputElements(), outE = layout->outputElements();
  DeviceBuffer buf;
  if (auto err = buf.allocate((inE + outE) * esz + 256))
    return fail(llvm::toString(std::move(err)));
  char *mem = buf.data();
  char *send = mem, *recv = mem + (inE * esz + 255) / 256 * 256;
  if (s.inplace) {
    if (s.collective == ir::Collective::AllGather) {
      recv = mem;
      send = recv + size_t(rank) * count * esz;
    } else if (s.collective == ir::Collective::ReduceScatter) {
      recv = send + size_t(rank) * count * esz;
    } else {
      recv = send;
    }
  }
  std::vector<char> host(inE * esz);
  for (size_t i = 0; i < inE; ++i)
    storeElement(host.data(), i, *dtype, inputValue(rank, i));

  NcclTransport tr(comm, stream);
  RunOptions checked, fast;
  fast.checkPeers = false;
  auto timeRuns = [&](auto &&call, int n) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < n; ++i)
      call();
    cudaStreamSynchronize(stream);
    double mine = (MPI_Wtime() - t0) / std::max(1, n), worst = 0;
    MPI_Allreduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return worst;
  };
  auto runPlan = [&](const RunOptions &o) {
    if (llvm::Error err = plan->run(send, recv, count, *dtype, tr, o))
      fail(llvm::toString(std::move(err)));
  };
  // Correctness run (with the agreement check), then timing.
  cudaMemcpy(send, host.data(), host.size(), cudaMemcpyHostToDevice);
  runPlan(checked);
  std::vector<char> out(outE * esz);
  cudaMemcpy(out.data(), recv, out.size(), cudaMemcpyDeviceToHost);
  long long wrong = 0;
  for (size_t i = 0; i < outE; ++i) {
    float want = 0;
    if (s.collective == ir::Collective::AllGather)
      want = inputValue(int(i / count), i % count);
    else if (s.collective == ir::Collective::ReduceScatter)
      for (int q = 0; q < world; ++q)
        want += inputValue(q, size_t(rank) * count + i);
    else
      for (int q = 0; q < world; ++q)
        want += inputValue(q, i);
    wrong += loadElement(out.data(), i, *dtype) != want;
  }
  long long totalWrong = 0;
  MPI_Allreduce(&wrong, &totalWrong, 1, MPI_LONG_LONG, MPI_SUM,
                MPI_COMM_WORLD);
  timeRuns([&] { runPlan(fast); }, warm);
  double planTime = timeRuns([&] { runPlan(fast); }, iters);
  double ncclTime = 0;
  if (baseline == "nccl") {
    auto coll = [&] {
      if (llvm::Error err = runNcclCollective(s.collective, send, recv, count,
                                              *dtype, comm, stream))
        fail(llvm::toString(std::move(err)));
    };
    timeRuns(coll, warm);
    ncclTime = timeRuns(coll, iters);
  }
  if (rank == 0) {
    double bytes = double(std::max(inE, outE)) * esz;
    llvm::outs() << llvm::formatv(
        "plan '{0}' ({1}, {2}, {3} ranks), count {4}, {5}: {6} wrong; "
        "{7:f1} us, algbw {8:f2} GB/s",
        s.name, ir::collectiveName(s.collective),
        s.inplace ? "in-place" : "out-of-place", world, count,
        dtypeName(*dtype), totalWrong, planTime * 1e6, bytes / planTime / 1e9);
    if (ncclTime > 0)
      llvm::outs() << llvm::formatv("; NCCL {0:f1} us, algbw {1:f2} GB/s",
                                    ncclTime * 1e6, bytes / ncclTime / 1e9);
    llvm::outs() << "\n";
  }
  MPI_Comm_free(&local);
  return totalWrong ? 1 : 0;
}

} // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rc = runMain(argc, argv);
  MPI_Finalize();
  return rc;
}
