// A program outside topocc, built against an installed topocc
// (tests/install/check.sh): compiles a trees all-reduce for a topology file
// with topocc::compile, makes it a plan and runs it on one thread per rank
// over LocalTransport, then checks every element.
//   consumer TOPOLOGY.yaml
#include "compiler/Pipeline.h"
#include "compiler/topology/TopologyParser.h"
#include "runtime/Interpreter.h"
#include "runtime/LocalTransport.h"

#include "llvm/Support/raw_ostream.h"

#include <string>
#include <thread>
#include <vector>

int main(int argc, char **argv) {
  using namespace topocc;
  if (argc != 2) {
    llvm::errs() << "usage: consumer TOPOLOGY.yaml\n";
    return 2;
  }
  auto topo = topo::loadTopologyFile(argv[1]);
  if (!topo) {
    llvm::errs() << llvm::toString(topo.takeError());
    return 1;
  }
  CompileRequest req;
  req.collective = ir::Collective::AllReduce;
  req.algorithm = *parseAlgorithm("trees");
  PassLogger log;
  auto compiled = compile(*topo, req, log);
  if (!compiled) {
    llvm::errs() << llvm::toString(compiled.takeError());
    return 1;
  }
  auto plan = runtime::Plan::fromSchedule(compiled->schedule);
  if (!plan) {
    llvm::errs() << llvm::toString(plan.takeError());
    return 1;
  }
  const int n = topo->numRanks();
  const size_t count = 1001;
  runtime::LocalFabric fabric(n);
  std::vector<std::string> errors(n);
  std::vector<std::vector<float>> out(n, std::vector<float>(count));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      std::vector<float> in(count, float(r + 1));
      runtime::LocalTransport tr(fabric, r);
      if (auto err = plan->run(in.data(), out[r].data(), count,
                               runtime::DType::F32, tr, {}))
        errors[r] = llvm::toString(std::move(err));
    });
  for (std::thread &t : threads)
    t.join();
  const float want = float(n) * float(n + 1) / 2;
  long wrong = 0;
  for (int r = 0; r < n; ++r) {
    if (!errors[r].empty()) {
      llvm::errs() << "rank " << r << ": " << errors[r];
      return 1;
    }
    for (float v : out[r])
      wrong += v != want;
  }
  llvm::outs() << "consumer: " << compiled->summary << "; " << n
               << " ranks, count " << count << ": " << wrong << " wrong\n";
  return wrong == 0 ? 0 : 1;
}
