//===- bench/PlanLoadBench.cpp - What loading a plan costs each rank ------===//
//
// Every rank of a job loads the whole plan (it checks the schedule and
// derives its dataflow), so the load's time and memory are paid once per
// rank: 128 ranks on one host pay them 128 times. For each plan file, side
// by side, each in a fresh child process (peak RSS from wait4, minus that of
// a child that only reads the file):
//
//   one DOM    llvm::json::parse of the whole file (what the loader did
//              before it parsed each program and op on its own; a lower
//              bound of that loader's cost)
//   JsonDocument  the whole file as one support/JsonDocument (the parser
//              the loader uses; it holds one program at a time)
//   load       backends::loadPlanFile: parse, validate, content hash,
//              verify the schedule
//   Plan::load load + the interpreter's dataflow (what a rank runs)
//
//   topocc-plan-load-bench [--runs R] PLAN.json...
//
// Times are medians of R runs (default 5) in one child.
//
//===----------------------------------------------------------------------===//

#include "backends/PlanJson.h"
#include "runtime/Interpreter.h"
#include "support/JsonDocument.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace topocc;

namespace {

struct Measure {
  double ms = -1;       ///< median, -1: failed
  double peakMiB = 0;   ///< the child's peak RSS
};

/// Runs `fn` `runs` times in a child process; the median time and the
/// child's peak RSS.
Measure inChild(int runs, const std::function<bool()> &fn) {
  int fds[2];
  if (pipe(fds) != 0)
    return {};
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::vector<double> ms;
    bool ok = true;
    for (int i = 0; i < runs && ok; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      ok = fn();
      ms.push_back(std::chrono::duration<double, std::milli>(
                       std::chrono::steady_clock::now() - t0)
                       .count());
    }
    std::sort(ms.begin(), ms.end());
    double median = ok ? ms[ms.size() / 2] : -1;
    ssize_t n = write(fds[1], &median, sizeof(median));
    _exit(n == sizeof(median) ? 0 : 1);
  }
  close(fds[1]);
  Measure m;
  if (pid < 0 || read(fds[0], &m.ms, sizeof(m.ms)) != sizeof(m.ms))
    m.ms = -1;
  close(fds[0]);
  int status = 0;
  struct rusage ru {};
  if (pid > 0)
    wait4(pid, &status, 0, &ru);
  m.peakMiB = double(ru.ru_maxrss) / 1024.0;
  return m;
}

} // namespace

int main(int argc, char **argv) {
  int runs = 5;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef a = argv[i];
    if (a == "--runs" && i + 1 < argc) {
      if (llvm::StringRef(argv[++i]).getAsInteger(10, runs) || runs < 1) {
        llvm::errs() << "--runs: expected a positive integer\n";
        return 2;
      }
    } else if (a.startswith("-")) {
      llvm::errs() << "usage: topocc-plan-load-bench [--runs R] PLAN.json...\n";
      return 2;
    } else {
      files.push_back(a.str());
    }
  }
  if (files.empty()) {
    llvm::errs() << "usage: topocc-plan-load-bench [--runs R] PLAN.json...\n";
    return 2;
  }
  llvm::outs() << llvm::formatv(
      "# median of {0} runs; peak: the child's peak RSS minus that of a child "
      "that only reads the file\n",
      runs);
  llvm::outs() << llvm::formatv("{0,-44} {1,5} {2,8} {3,7} | {4,20} | {5,20} "
                                "| {6,20} | {7,20}\n",
                                "plan", "ranks", "ops", "MiB", "one DOM",
                                "JsonDocument", "load", "Plan::load");
  llvm::outs() << llvm::formatv("{0,-44} {1,5} {2,8} {3,7} | {4,9} {5,10} | "
                                "{4,9} {5,10} | {4,9} {5,10} | {4,9} {5,10}\n",
                                "", "", "", "", "ms", "peak MiB");
  int failures = 0;
  for (const std::string &path : files) {
    auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
    if (!buf) {
      llvm::errs() << path << ": " << buf.getError().message() << "\n";
      ++failures;
      continue;
    }
    llvm::StringRef text = (*buf)->getBuffer();
    size_t ops = 0;
    int32_t ranks = 0;
    { // freed before the children fork
      auto plan = backends::loadPlanFile(path);
      if (!plan) {
        llvm::errs() << llvm::toString(plan.takeError());
        ++failures;
        continue;
      }
      for (const ir::RankProgram &rp : plan->schedule.ranks)
        ops += rp.ops.size();
      ranks = plan->schedule.numRanks;
    }
    Measure base = inChild(1, [&] {
      auto b = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
      return bool(b);
    });
    Measure dom = inChild(runs, [&] {
      auto b = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
      if (!b)
        return false;
      llvm::Expected<llvm::json::Value> v = llvm::json::parse((*b)->getBuffer());
      if (!v) {
        llvm::consumeError(v.takeError());
        return false;
      }
      return true;
    });
    Measure doc = inChild(runs, [&] {
      auto b = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
      if (!b)
        return false;
      JsonDocument d;
      return !d.parse((*b)->getBuffer());
    });
    Measure load = inChild(runs, [&] {
      auto p = backends::loadPlanFile(path);
      if (!p) {
        llvm::consumeError(p.takeError());
        return false;
      }
      return true;
    });
    Measure full = inChild(runs, [&] {
      auto p = runtime::Plan::load(path);
      if (!p) {
        llvm::consumeError(p.takeError());
        return false;
      }
      return true;
    });
    auto col = [&](const Measure &m) {
      if (m.ms < 0)
        return std::string(llvm::formatv("{0,9} {1,10}", "failed", ""));
      return std::string(llvm::formatv("{0,9:f1} {1,10:f1}", m.ms,
                                       std::max(0.0, m.peakMiB - base.peakMiB)));
    };
    failures += dom.ms < 0 || doc.ms < 0 || load.ms < 0 || full.ms < 0;
    std::string name = llvm::StringRef(path).rsplit('/').second.str();
    if (name.empty())
      name = path;
    llvm::outs() << llvm::formatv("{0,-44} {1,5} {2,8} {3,7:f1} | {4} | {5} | "
                                  "{6} | {7}\n",
                                  name, ranks, ops,
                                  double(text.size()) / (1 << 20), col(dom),
                                  col(doc), col(load), col(full));
  }
  return failures ? 1 : 0;
}
