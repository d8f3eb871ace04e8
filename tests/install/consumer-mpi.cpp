// The MPI transport from an installed topocc: every rank loads the plan
// file given and runs it over MpiTransport (tests/install/check.sh runs it
// under topocc-mpirun from the installed bin/).
//   consumer-mpi PLAN.json
#include "runtime/Interpreter.h"
#include "runtime/mpi/MpiTransport.h"

#include "llvm/Support/raw_ostream.h"

#include <mpi.h>

#include <vector>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rc = 0;
  {
    topocc::runtime::MpiTransport tr;
    auto plan = topocc::runtime::Plan::load(argc > 1 ? argv[1] : "");
    if (!plan) {
      llvm::errs() << llvm::toString(plan.takeError());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const size_t count = 777;
    std::vector<float> in(count, 1.0f), out(count);
    if (auto err = plan->run(in.data(), out.data(), count,
                             topocc::runtime::DType::F32, tr, {})) {
      llvm::errs() << llvm::toString(std::move(err));
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    long wrong = 0;
    for (float v : out)
      wrong += v != float(tr.size());
    if (tr.rank() == 0)
      llvm::outs() << "consumer-mpi: " << tr.size() << " ranks, plan '"
                   << plan->schedule().name << "': " << wrong << " wrong\n";
    rc = wrong != 0;
  }
  MPI_Finalize();
  return rc;
}
