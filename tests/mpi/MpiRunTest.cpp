//===- tests/mpi/MpiRunTest.cpp - Plans under mpirun ----------------------===//
//
// Run by ctest under mpirun (tests/mpi/CMakeLists.txt). Rank 0 compiles a
// ring plan with topocc::compile, writes it with planToJson, every rank
// loads it with Plan::load and runs it over MpiTransport for each count;
// every rank checks its output against the reference and rank 0 prints the
// total of wrong elements. With --mismatch count|plan|dtype the last rank
// passes another count or dtype or loads another plan, and every rank must
// fail with the documented message (exit 0 when it does). With --fault, rank
// --fault-rank (default the last) fails and every other rank must report it
// within the timeout (--timeout S, default 20) and exit 0 when it does:
//   kill       it dies (SIGKILL) after its second send: run under mpirun
//              --enable-recovery, the others time out naming what they wait
//              for (without it, mpirun aborts the whole job at once);
//   truncated  it loads a truncated copy of the plan, reports the parse
//              error (file:line:col) and never calls Plan::run: the others
//              name it (or, when it is rank 0, name rank 0).
//
//   topocc-mpi-test --collective allreduce --chunks 2 --channels 2
//       [--inplace] [--rounds] [--dtype fp32] --counts 1,7,1001
//       [--mismatch count] [--fault kill|truncated [--fault-rank R]]
//       [--timeout S]
//   topocc-mpi-test --plans P1.json,P2.json [--rounds]
//       [--bound-scale F] --counts 7,1001
//       (run plan files; collective and in-place mode from each plan;
//       coded plans, errorBound > 0: the relative error max|got - exact| /
//       max|exact| over every element of every rank must be <= the bound,
//       exact ones must have 0 wrong elements)
//       --dir DIR
//
//===----------------------------------------------------------------------===//

#include "backends/PlanJson.h"
#include "compiler/Pipeline.h"
#include "runtime/Interpreter.h"
#include "runtime/mpi/MpiTransport.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <unistd.h>
#include <string>
#include <vector>

using namespace topocc;
using namespace topocc::runtime;

namespace {

float inputValue(int r, size_t i) {
  return float(int((r * 7 + i * 3) % 11) - 5);
}

struct Args {
  std::string collective = "allreduce", dtype = "fp32", mismatch, dir = ".";
  std::string fault; ///< --fault kill|truncated
  int faultRank = -1; ///< --fault-rank; -1: the last rank
  double timeout = 20;
  int chunks = 1, channels = 1;
  bool inplace = false;
  bool rounds = false; ///< RunOptions::rounds (the NCCL ordering)
  std::vector<size_t> counts{1, 7, 1001};
  std::vector<std::string> plans; ///< --plans: run these files instead
  /// --bound-scale F: check coded plans against F times their bound (F < 1
  /// tests that the check fails when the error exceeds the bound).
  double boundScale = 1;
};

bool parseArgs(int argc, char **argv, Args &a) {
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg = argv[i];
    auto next = [&]() -> llvm::StringRef {
      return i + 1 < argc ? argv[++i] : "";
    };
    if (arg == "--collective")
      a.collective = next().str();
    else if (arg == "--dtype")
      a.dtype = next().str();
    else if (arg == "--mismatch")
      a.mismatch = next().str();
    else if (arg == "--fault")
      a.fault = next().str();
    else if (arg == "--fault-rank")
      a.faultRank = std::stoi(next().str());
    else if (arg == "--timeout")
      a.timeout = std::stod(next().str());
    else if (arg == "--dir")
      a.dir = next().str();
    else if (arg == "--chunks")
      a.chunks = std::stoi(next().str());
    else if (arg == "--channels")
      a.channels = std::stoi(next().str());
    else if (arg == "--inplace")
      a.inplace = true;
    else if (arg == "--rounds")
      a.rounds = true;
    else if (arg == "--bound-scale")
      a.boundScale = std::stod(next().str());
    else if (arg == "--counts") {
      a.counts.clear();
      llvm::SmallVector<llvm::StringRef, 8> parts;
      next().split(parts, ',');
      for (llvm::StringRef p : parts)
        a.counts.push_back(std::stoull(p.str()));
    } else if (arg == "--plans") {
      llvm::SmallVector<llvm::StringRef, 8> parts;
      next().split(parts, ',', -1, false);
      for (llvm::StringRef p : parts)
        a.plans.push_back(p.str());
    } else {
      llvm::errs() << "unknown argument '" << arg << "'\n";
      return false;
    }
  }
  return true;
}

/// MpiTransport that kills its process (SIGKILL, no cleanup) when asked to
/// post send number `killAt` (0: never): a rank dying mid-collective.
class KillingTransport final : public Transport {
public:
  KillingTransport(MpiTransport &mpi, int killAt) : mpi(mpi), killAt(killAt) {}
  int rank() const override { return mpi.rank(); }
  int size() const override { return mpi.size(); }
  llvm::Expected<RequestId> isend(const void *buf, size_t bytes, int peer,
                                  int64_t msg) override {
    if (killAt > 0 && ++sends == killAt) {
      llvm::outs() << "rank " << rank() << ": killing myself at send " << sends
                   << " (message " << msg << " to rank " << peer << ")\n";
      llvm::outs().flush();
      ::raise(SIGKILL);
    }
    return mpi.isend(buf, bytes, peer, msg);
  }
  llvm::Expected<RequestId> irecv(void *buf, size_t bytes, int peer,
                                  int64_t msg) override {
    return mpi.irecv(buf, bytes, peer, msg);
  }
  llvm::Expected<bool> test(RequestId req) override { return mpi.test(req); }
  llvm::Error wait(RequestId req) override { return mpi.wait(req); }
  llvm::Expected<std::optional<size_t>>
  waitAny(llvm::ArrayRef<RequestId> reqs, double timeoutSeconds) override {
    return mpi.waitAny(reqs, timeoutSeconds);
  }
  llvm::Expected<std::vector<RunHeader>>
  allgatherHeader(const RunHeader &mine, double timeoutSeconds) override {
    return mpi.allgatherHeader(mine, timeoutSeconds);
  }

private:
  MpiTransport &mpi;
  int killAt, sends = 0;
};

/// Writes the first half of `path` to `path.truncated`; returns that path.
std::string writeTruncated(const std::string &path) {
  auto buf = llvm::MemoryBuffer::getFile(path);
  if (!buf) {
    llvm::errs() << "cannot read " << path << "\n";
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  std::string out = path + ".truncated";
  std::error_code ec;
  llvm::raw_fd_ostream os(out, ec);
  if (ec) {
    llvm::errs() << "cannot write " << out << ": " << ec.message() << "\n";
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  os << (*buf)->getBuffer().take_front((*buf)->getBufferSize() / 2);
  return out;
}

/// --fault: the faulty rank fails as asked, every other rank checks that its
/// run fails in time with the message that names the fault. Returns the
/// exit code: 0 when this rank saw what it should.
int runFault(const Args &a, MpiTransport &mpi, const std::string &path) {
  int n = mpi.size(), rank = mpi.rank();
  int faulty = a.faultRank < 0 ? n - 1 : a.faultRank;
  bool me = rank == faulty;
  if (a.fault != "kill" && a.fault != "truncated") {
    llvm::errs() << "bad --fault '" << a.fault << "'\n";
    return 2;
  }
  // Every rank writes its own copy (no shared step after a fault).
  std::string truncated;
  if (a.fault == "truncated" && me) {
    truncated = writeTruncated(path);
    auto bad = Plan::load(truncated);
    std::string text = bad ? "loaded" : llvm::toString(bad.takeError());
    llvm::sys::fs::remove(truncated);
    bool ok = !bad && llvm::StringRef(text).startswith(truncated + ":");
    llvm::outs() << "rank " << rank
                 << (ok ? " (the faulty rank) cannot load its plan, as "
                          "expected: "
                        : " FAILED: the truncated plan gave: ")
                 << text << (ok ? "" : "\n");
    return ok ? 0 : 1;
  }
  auto plan = Plan::load(path);
  if (!plan) {
    llvm::errs() << "rank " << rank << ": " << llvm::toString(plan.takeError())
                 << "\n";
    return 1;
  }
  KillingTransport tr(mpi, a.fault == "kill" && me ? 2 : 0);
  DType dtype = *dtypeFromName(a.dtype);
  size_t count = a.counts.front(), esz = dtypeSize(dtype);
  auto layout = layoutFor(plan->schedule(), count);
  if (!layout) {
    llvm::errs() << llvm::toString(layout.takeError()) << "\n";
    return 2;
  }
  std::vector<char> mem(
      (layout->inputElements() + layout->outputElements()) * esz + 64, 0);
  RunOptions opts;
  opts.timeoutSeconds = a.timeout;
  auto t0 = std::chrono::steady_clock::now();
  llvm::Error err =
      plan->run(mem.data(), mem.data() + layout->inputElements() * esz, count,
                dtype, tr, opts);
  double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  std::string text = err ? llvm::toString(std::move(err)) : "success";
  std::string plain = "'" + plan->schedule().name + "'";
  // Killed: a wait for some peer's message times out, naming plan, peer and
  // message. Truncated: the header exchange names the rank that never came
  // (the last rank), or says rank 0 (the collector) never answered.
  bool named = false;
  if (a.fault == "kill")
    named = text.find("error: rank " + std::to_string(rank) + ": plan " +
                      plain + " made no progress for") == 0 &&
            text.find(" rank ") != std::string::npos &&
            text.find("message ") != std::string::npos;
  else if (faulty == 0)
    named = text.find("rank 0, which collects the run headers, did not "
                      "answer") != std::string::npos &&
            text.find(plain) != std::string::npos;
  else
    named = text.find("error: rank " + std::to_string(faulty) +
                      " did not join the run of plan " + plain) == 0 &&
            text.find("rank " + std::to_string(faulty) + ": -  <- missing") !=
                std::string::npos;
  // Rank 0 collects for a.timeout, the others wait up to 2 x + 1 for it.
  bool inTime = secs < 2 * a.timeout + 10;
  bool ok = named && inTime;
  if (rank == 0)
    llvm::sys::fs::remove(path); // every rank loaded it before the exchange
  std::string line =
      llvm::formatv("rank {0}{1}{2:f1} s: {3}{4}", rank,
                    ok ? " failed as expected in "
                       : " FAILED to report the fault in ",
                    secs, text,
                    text.empty() || text.back() != '\n' ? "\n" : "")
          .str();
  // One write: the ranks' reports must not interleave.
  llvm::outs().flush();
  (void)!::write(1, line.data(), line.size());
  // A job that lost a rank cannot finalize (MPI_Finalize may wait for the
  // dead one): leave as a program would after MPI_Abort, without it taking
  // the other reports down.
  if (a.fault == "kill")
    std::_Exit(ok ? 0 : 1);
  return ok ? 0 : 1;
}

/// Compiles and writes a plan file; returns its path.
std::string writePlan(const Args &a, int n, int chunks, llvm::StringRef tag) {
  CompileRequest req;
  req.collective = *ir::collectiveFromName(a.collective);
  req.chunks = chunks;
  req.channels = a.channels;
  req.inplace = a.inplace;
  PassLogger log;
  auto compiled = compile(n, req, log);
  if (!compiled) {
    llvm::errs() << llvm::toString(compiled.takeError()) << "\n";
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  backends::PlanMeta meta;
  meta.generator = "topocc-mpi-test";
  meta.algorithm = "ring";
  auto text = backends::planToJson(compiled->schedule, meta);
  if (!text) {
    llvm::errs() << llvm::toString(text.takeError()) << "\n";
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  std::string path = llvm::formatv("{0}/{1}-{2}-c{3}-ch{4}-{5}-{6}.json",
                                   a.dir, a.collective, n, chunks, a.channels,
                                   a.inplace ? "in" : "out", tag)
                         .str();
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec) {
    llvm::errs() << "cannot write " << path << ": " << ec.message() << "\n";
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  os << *text;
  return path;
}

/// --plans: every rank loads each plan file (compiled by `topocc compile
/// --emit plan`), runs it for each count with the collective and in-place
/// mode the plan says, and checks every element; rank 0 prints one line per
/// plan. Returns the exit code (same on every rank).
int runPlanFiles(const Args &a, MpiTransport &tr) {
  int n = tr.size(), rank = tr.rank();
  DType dtype = *dtypeFromName(a.dtype);
  size_t esz = dtypeSize(dtype);
  RunOptions opts;
  opts.timeoutSeconds = 20;
  opts.rounds = a.rounds;
  long long allWrong = 0;
  for (const std::string &path : a.plans) {
    auto plan = Plan::load(path);
    if (!plan) {
      llvm::errs() << "rank " << rank << ": "
                   << llvm::toString(plan.takeError()) << "\n";
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    ir::Collective coll = plan->schedule().collective;
    bool inplace = plan->schedule().inplace;
    // > 0: coded (CERAR)
    const double bound = valueErrorBound(plan->meta(), dtype) * a.boundScale;
    long long wrong = 0, checked = 0;
    // The error contract's measure (runtime::valueErrorBound): this rank's
    // ||out - exact||_2 over ||x||_2, x every rank's input, per count.
    double maxRel = 0;
    std::vector<size_t> usedCounts;
    for (size_t count : a.counts) {
      auto layout = layoutFor(plan->schedule(), count);
      if (!layout) {
        llvm::errs() << llvm::toString(layout.takeError()) << "\n";
        MPI_Abort(MPI_COMM_WORLD, 2);
      }
      usedCounts.push_back(count);
      size_t inE = layout->inputElements(), outE = layout->outputElements();
      std::vector<char> mem((inE + outE) * esz + 64, 0);
      char *send = mem.data(), *recv = mem.data() + inE * esz;
      if (inplace) {
        if (coll == ir::Collective::AllGather) {
          recv = mem.data();
          send = recv + size_t(rank) * count * esz;
        } else if (coll == ir::Collective::ReduceScatter) {
          recv = send + size_t(rank) * count * esz;
        } else {
          recv = send;
        }
      }
      double inputSq = 0, errorSq = 0;
      for (int q = 0; q < n; ++q)
        for (size_t i = 0; i < inE; ++i)
          inputSq += double(inputValue(q, i)) * inputValue(q, i);
      for (size_t i = 0; i < inE; ++i)
        storeElement(send, i, dtype, inputValue(rank, i));
      if (llvm::Error err = plan->run(send, recv, count, dtype, tr, opts)) {
        llvm::errs() << "rank " << rank << ": " << path << ": "
                     << llvm::toString(std::move(err)) << "\n";
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
      for (size_t i = 0; i < outE; ++i) {
        float want = 0;
        if (coll == ir::Collective::AllGather)
          want = inputValue(int(i / count), i % count);
        else if (coll == ir::Collective::ReduceScatter)
          for (int q = 0; q < n; ++q)
            want += inputValue(q, size_t(rank) * count + i);
        else
          for (int q = 0; q < n; ++q)
            want += inputValue(q, i);
        float got = loadElement(recv, i, dtype);
        wrong += got != want;
        errorSq += (double(got) - double(want)) * (double(got) - double(want));
        ++checked;
      }
      if (inputSq > 0)
        maxRel = std::max(maxRel, std::sqrt(errorSq / inputSq));
    }
    long long totals[2] = {wrong, checked}, sums[2] = {0, 0};
    MPI_Allreduce(totals, sums, 2, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    double relErr = 0;
    MPI_Allreduce(&maxRel, &relErr, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    // A coded plan passes when its error is within the contract
    // (runtime::valueErrorBound: the code's error plus the dtype's rounding
    // through the code, relative to ||x||_2); an exact one when no element
    // differs.
    bool bad = bound > 0 ? !(relErr <= bound) : sums[0] != 0;
    allWrong += bad;
    std::string counts = llvm::join(
        llvm::map_range(usedCounts, [](size_t c) { return std::to_string(c); }),
        ",");
    if (rank == 0 && bound > 0)
      llvm::outs() << llvm::formatv(
          "{0} ranks, plan '{1}' ({2}, {3}, {4}){5}, counts {6}: relative "
          "error {7:e} {8} bound {9:e} ({10} of {11} elements inexact){12}\n",
          n, plan->schedule().name, ir::collectiveName(coll),
          inplace ? "in-place" : "out-of-place", a.dtype,
          a.rounds ? ", by rounds" : "", counts, relErr, bad ? ">" : "<=",
          bound, sums[0], sums[1], bad ? ": FAILED" : "");
    else if (rank == 0)
      llvm::outs() << llvm::formatv(
          "{0} ranks, plan '{1}' ({2}, {3}, {4}){5}, counts {8}: {6} wrong "
          "of {7} elements checked\n",
          n, plan->schedule().name, ir::collectiveName(coll),
          inplace ? "in-place" : "out-of-place", a.dtype,
          a.rounds ? ", by rounds" : "", sums[0], sums[1], counts);
  }
  return allWrong ? 1 : 0;
}

int runMain(int argc, char **argv) {
  Args a;
  if (!parseArgs(argc, argv, a))
    return 2;
  MpiTransport tr;
  if (!a.plans.empty())
    return runPlanFiles(a, tr);
  int n = tr.size(), rank = tr.rank();
  auto coll = ir::collectiveFromName(a.collective);
  auto dtype = dtypeFromName(a.dtype);
  if (!coll || !dtype) {
    llvm::errs() << "bad --collective or --dtype\n";
    return 2;
  }
  llvm::sys::fs::create_directories(a.dir);
  std::string tag = std::to_string(::getppid());
  std::string path, otherPath;
  if (rank == 0) {
    path = writePlan(a, n, a.chunks, tag);
    if (a.mismatch == "plan")
      otherPath = writePlan(a, n, a.chunks + 1, tag);
  }
  // Share the paths (rank 0 wrote the files).
  char buf[2][512] = {};
  std::strncpy(buf[0], path.c_str(), 511);
  std::strncpy(buf[1], otherPath.c_str(), 511);
  MPI_Bcast(buf, sizeof(buf), MPI_CHAR, 0, MPI_COMM_WORLD);
  bool odd = rank == n - 1;
  path = a.mismatch == "plan" && odd ? buf[1] : buf[0];
  if (!a.fault.empty())
    return runFault(a, tr, path);
  auto plan = Plan::load(path);
  if (!plan) {
    llvm::errs() << "rank " << rank << ": " << llvm::toString(plan.takeError())
                 << "\n";
    MPI_Abort(MPI_COMM_WORLD, 2);
  }

  RunOptions opts;
  opts.timeoutSeconds = 20; // a hang becomes an error naming the messages
  opts.rounds = a.rounds;
  // --mismatch dtype: the last rank passes the other of fp32 and fp16.
  DType runDtype = a.mismatch == "dtype" && odd
                       ? (*dtype == DType::F32 ? DType::F16 : DType::F32)
                       : *dtype;
  size_t esz = dtypeSize(runDtype);
  long long wrong = 0, checked = 0;
  for (size_t count : a.counts) {
    size_t runCount = a.mismatch == "count" && odd ? count + 1 : count;
    auto layout = layoutFor(plan->schedule(), runCount);
    if (!layout) {
      llvm::errs() << llvm::toString(layout.takeError()) << "\n";
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    size_t inE = layout->inputElements(), outE = layout->outputElements();
    std::vector<char> mem((inE + outE) * esz + 64, 0);
    char *send = mem.data(), *recv = mem.data() + inE * esz;
    if (a.inplace) {
      if (*coll == ir::Collective::AllGather) {
        recv = mem.data();
        send = recv + size_t(rank) * runCount * esz;
      } else if (*coll == ir::Collective::ReduceScatter) {
        send = mem.data();
        recv = send + size_t(rank) * runCount * esz;
      } else {
        send = recv = mem.data();
      }
    }
    for (size_t i = 0; i < inE; ++i)
      storeElement(send, i, runDtype, inputValue(rank, i));
    auto t0 = std::chrono::steady_clock::now();
    llvm::Error err = plan->run(send, recv, runCount, runDtype, tr, opts);
    double secs = std::chrono::duration<double>(
                      std::chrono::steady_clock::now() - t0)
                      .count();
    if (!a.mismatch.empty()) {
      std::string text = llvm::toString(std::move(err));
      bool ok = llvm::StringRef(text).startswith(
                    "error: ranks disagree on the plan or the count") &&
                text.find("<- differs from rank 0 in " + a.mismatch) !=
                    std::string::npos &&
                secs < 10;
      // Every rank checks the text; rank 0 shows it.
      llvm::outs() << "rank " << rank << (ok ? " failed as expected in " : " FAILED to report the mismatch in ")
                   << llvm::formatv("{0:f3}", secs) << " s"
                   << (rank == 0 || !ok ? ": " + text : "\n");
      MPI_Barrier(MPI_COMM_WORLD);
      if (rank == 0) {
        llvm::sys::fs::remove(buf[0]);
        llvm::sys::fs::remove(buf[1]);
      }
      return ok ? 0 : 1;
    }
    if (err) {
      llvm::errs() << "rank " << rank << ": " << llvm::toString(std::move(err))
                   << "\n";
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (size_t i = 0; i < outE; ++i) {
      float want = 0;
      if (*coll == ir::Collective::AllGather)
        want = inputValue(int(i / count), i % count);
      else if (*coll == ir::Collective::ReduceScatter)
        for (int q = 0; q < n; ++q)
          want += inputValue(q, size_t(rank) * count + i);
      else
        for (int q = 0; q < n; ++q)
          want += inputValue(q, i);
      wrong += loadElement(recv, i, *dtype) != want;
      ++checked;
    }
  }
  long long totals[2] = {wrong, checked}, sums[2] = {0, 0};
  MPI_Reduce(totals, sums, 2, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    llvm::outs() << llvm::formatv(
        "{0} ranks, {1}, chunks {2}, channels {3}, {4}, {5}{8}: {6} wrong of "
        "{7} elements checked\n",
        n, a.collective, a.chunks, a.channels,
        a.inplace ? "in-place" : "out-of-place", a.dtype, sums[0], sums[1],
        a.rounds ? ", by rounds" : "");
    llvm::sys::fs::remove(path);
  }
  int bad = rank == 0 ? sums[0] != 0 : 0, anyBad = 0;
  MPI_Allreduce(&bad, &anyBad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return anyBad ? 1 : 0;
}

} // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rc = runMain(argc, argv);
  MPI_Finalize();
  return rc;
}
