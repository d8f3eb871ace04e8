//===- tests/unit/runtime/RuntimeTestUtil.h - Shared test helpers -*- C++ -*-=//
//
// Compiles ring plans with topocc::compile and runs every rank of a plan on
// its own thread over a LocalFabric, checking the result against a
// reference computed directly from the inputs.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_TESTS_UNIT_RUNTIME_RUNTIMETESTUTIL_H
#define TOPOCC_TESTS_UNIT_RUNTIME_RUNTIMETESTUTIL_H

#include "compiler/Pipeline.h"
#include "runtime/Interpreter.h"
#include "runtime/LocalTransport.h"

#include "gtest/gtest.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <string>
#include <thread>
#include <vector>

namespace topocc::runtime::test {

inline ir::Schedule compileRing(ir::Collective c, int ranks, int chunks = 1,
                                int channels = 1, bool inplace = false) {
  CompileRequest req;
  req.collective = c;
  req.chunks = chunks;
  req.channels = channels;
  req.inplace = inplace;
  PassLogger log;
  auto plan = compile(ranks, req, log);
  if (!plan) {
    ADD_FAILURE() << llvm::toString(plan.takeError());
    return {};
  }
  return std::move(plan->schedule);
}

/// Input element i of rank r: a small integer, so sums are exact in every
/// dtype.
inline float inputValue(int r, size_t i) {
  return float(int((r * 7 + i * 3) % 11) - 5);
}

/// Runs `plan` on every rank of a fresh fabric and returns each rank's error
/// text ("" for success); `outputs[r]` gets rank r's output elements.
/// Rank r's input element i is `input(r, i)` (stored in `t`).
inline std::vector<std::string>
runAll(const Plan &plan, size_t count, DType t,
       std::vector<std::vector<float>> &outputs, uint64_t delaySeed = 0,
       RunOptions opts = {},
       llvm::function_ref<float(int, size_t)> input = inputValue) {
  const ir::Schedule &s = plan.schedule();
  int n = s.numRanks;
  auto layout = layoutFor(s, count);
  if (!layout) {
    ADD_FAILURE() << llvm::toString(layout.takeError());
    return {};
  }
  size_t esz = dtypeSize(t);
  size_t inElems = layout->inputElements(), outElems = layout->outputElements();
  LocalFabric fabric(n, delaySeed);
  std::vector<std::string> errors(n);
  outputs.assign(n, {});
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      // One allocation big enough for both views in every in-place form.
      std::vector<char> mem((inElems + outElems) * esz + 64, 0);
      char *send = mem.data(), *recv = mem.data() + inElems * esz;
      if (s.inplace) {
        if (s.collective == ir::Collective::AllGather) {
          recv = mem.data();
          send = recv + size_t(r) * count * esz;
        } else if (s.collective == ir::Collective::ReduceScatter) {
          send = mem.data();
          recv = send + size_t(r) * count * esz;
        } else {
          send = recv = mem.data();
        }
      }
      for (size_t i = 0; i < inElems; ++i)
        storeElement(send, i, t, input(r, i));
      LocalTransport tr(fabric, r);
      if (auto err = plan.run(send, recv, count, t, tr, opts)) {
        errors[r] = llvm::toString(std::move(err));
        return;
      }
      for (size_t i = 0; i < outElems; ++i)
        outputs[r].push_back(loadElement(recv, i, t));
    });
  for (std::thread &th : threads)
    th.join();
  return errors;
}

/// The collective's result on rank r (nccl-tests conventions).
inline std::vector<float> reference(ir::Collective c, int n, int r,
                                    size_t count) {
  std::vector<float> out;
  switch (c) {
  case ir::Collective::AllReduce:
    for (size_t i = 0; i < count; ++i) {
      float sum = 0;
      for (int q = 0; q < n; ++q)
        sum += inputValue(q, i);
      out.push_back(sum);
    }
    break;
  case ir::Collective::AllGather:
    for (int q = 0; q < n; ++q)
      for (size_t i = 0; i < count; ++i)
        out.push_back(inputValue(q, i));
    break;
  case ir::Collective::ReduceScatter:
    for (size_t i = 0; i < count; ++i) {
      float sum = 0;
      for (int q = 0; q < n; ++q)
        sum += inputValue(q, size_t(r) * count + i);
      out.push_back(sum);
    }
    break;
  default:
    ADD_FAILURE() << "no reference for this collective";
  }
  return out;
}

} // namespace topocc::runtime::test

#endif // TOPOCC_TESTS_UNIT_RUNTIME_RUNTIMETESTUTIL_H
