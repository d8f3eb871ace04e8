//===- tests/gpu/GpuLocalTransportTest.cpp - Plans on LocalCudaTransport --===//
//
// Ring plans (topocc::compile) for allreduce, allgather and reducescatter,
// 2, 3, 4 and 8 ranks, in-place and out-of-place, 1 and 2 chunks and
// channels, counts that do not divide by the chunk count, fp32/fp16/bf16,
// run end to end with every rank a thread on one GPU (LocalCudaTransport):
// round by round (the NcclTransport ordering) and dataflow (every receive
// posted first). Every output element is compared with the host reference.
//
//===----------------------------------------------------------------------===//

#include "tests/gpu/GpuTest.h"

#include "compiler/Pipeline.h"
#include "runtime/Interpreter.h"
#include "runtime/cuda/LocalCudaTransport.h"

#include "llvm/Support/raw_ostream.h"

#include <string>
#include <thread>
#include <vector>

using namespace topocc;
using namespace topocc::runtime;
using namespace topocc::gputest;

namespace {

float inputValue(int r, size_t i) {
  return float(int((r * 7 + i * 3) % 11) - 5);
}

struct Case {
  ir::Collective coll;
  int ranks, chunks, channels;
  bool inplace;
  DType t;
  bool rounds;
};

void runCase(const Case &c, llvm::ArrayRef<size_t> counts) {
  CompileRequest req;
  req.collective = c.coll;
  req.chunks = c.chunks;
  req.channels = c.channels;
  req.inplace = c.inplace;
  PassLogger log;
  auto compiled = compile(c.ranks, req, log);
  if (!compiled) {
    GPU_CHECK(false, "compile: %s",
              llvm::toString(compiled.takeError()).c_str());
    return;
  }
  auto plan = Plan::fromSchedule(compiled->schedule);
  if (!plan) {
    GPU_CHECK(false, "plan: %s", llvm::toString(plan.takeError()).c_str());
    return;
  }
  size_t esz = dtypeSize(c.t);
  for (size_t count : counts) {
    auto layout = layoutFor(plan->schedule(), count);
    if (!layout) {
      GPU_CHECK(false, "layout: %s",
                llvm::toString(layout.takeError()).c_str());
      return;
    }
    size_t inE = layout->inputElements(), outE = layout->outputElements();
    LocalCudaFabric fabric(c.ranks);
    std::vector<char *> mem(c.ranks, nullptr);
    std::vector<char *> send(c.ranks), recv(c.ranks);
    for (int r = 0; r < c.ranks; ++r) {
      CUDA_OK(cudaMalloc(reinterpret_cast<void **>(&mem[r]), (inE + outE) * esz + 64));
      CUDA_OK(cudaMemset(mem[r], 0, (inE + outE) * esz + 64));
      send[r] = mem[r];
      recv[r] = mem[r] + inE * esz;
      if (c.inplace) {
        if (c.coll == ir::Collective::AllGather) {
          recv[r] = mem[r];
          send[r] = recv[r] + size_t(r) * count * esz;
        } else if (c.coll == ir::Collective::ReduceScatter) {
          recv[r] = send[r] + size_t(r) * count * esz;
        } else {
          recv[r] = send[r];
        }
      }
      std::vector<char> h(inE * esz);
      for (size_t i = 0; i < inE; ++i)
        storeElement(h.data(), i, c.t, inputValue(r, i));
      CUDA_OK(cudaMemcpy(send[r], h.data(), h.size(), cudaMemcpyHostToDevice));
    }
    std::vector<std::string> errors(c.ranks);
    std::vector<std::thread> threads;
    for (int r = 0; r < c.ranks; ++r)
      threads.emplace_back([&, r] {
        LocalCudaTransport tr(fabric, r, c.rounds);
        RunOptions opts;
        opts.timeoutSeconds = 20;
        if (llvm::Error err =
                plan->run(send[r], recv[r], count, c.t, tr, opts))
          errors[r] = llvm::toString(std::move(err));
      });
    for (std::thread &th : threads)
      th.join();
    int wrong = 0;
    for (int r = 0; r < c.ranks; ++r) {
      GPU_CHECK(errors[r].empty(), "rank %d: %s", r, errors[r].c_str());
      std::vector<char> h(outE * esz);
      CUDA_OK(cudaMemcpy(h.data(), recv[r], h.size(), cudaMemcpyDeviceToHost));
      for (size_t i = 0; i < outE; ++i) {
        float want = 0;
        if (c.coll == ir::Collective::AllGather)
          want = inputValue(int(i / count), i % count);
        else if (c.coll == ir::Collective::ReduceScatter)
          for (int q = 0; q < c.ranks; ++q)
            want += inputValue(q, size_t(r) * count + i);
        else
          for (int q = 0; q < c.ranks; ++q)
            want += inputValue(q, i);
        wrong += loadElement(h.data(), i, c.t) != want;
      }
      cudaFree(mem[r]);
    }
    GPU_CHECK(wrong == 0, "%s %d ranks chunks %d channels %d %s %s %s count "
              "%zu: %d wrong elements",
              ir::collectiveName(c.coll).data(), c.ranks, c.chunks,
              c.channels, c.inplace ? "in-place" : "out-of-place",
              dtypeName(c.t).data(), c.rounds ? "rounds" : "dataflow", count,
              wrong);
  }
}

} // namespace

int main() {
  if (noDevice("gpu-local-transport"))
    return kSkipCode;
  std::vector<size_t> counts = {1, 7, 1001, 65536};
  int cases = 0;
  for (ir::Collective coll :
       {ir::Collective::AllReduce, ir::Collective::AllGather,
        ir::Collective::ReduceScatter})
    for (int ranks : {2, 3, 4, 8})
      for (bool inplace : {false, true})
        for (bool rounds : {true, false}) {
          int chunks = ranks == 3 ? 2 : 1, channels = ranks == 4 ? 2 : 1;
          DType t = ranks == 2 ? DType::BF16 : ranks == 3 ? DType::F16
                                                          : DType::F32;
          runCase({coll, ranks, chunks, channels, inplace, t, rounds}, counts);
          ++cases;
        }
  std::printf("gpu-local-transport: %d cases x %zu counts, %d failures\n",
              cases, counts.size(), failures);
  return failures ? 1 : 0;
}
