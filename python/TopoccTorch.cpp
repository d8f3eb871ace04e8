//===- python/TopoccTorch.cpp - The Python module topocc._torch -----------===//
//
// pybind11 bindings for topocc.torch (python/topocc/torch.py,
// docs/PyTorch.md): a plan (or plan set) loaded once and run as an
// all-reduce on CPU tensors over a torch.distributed process group with
// runtime::C10dTransport. Built by CMake when libtorch and torch's Python
// bindings are found (Debian: libtorch-dev, python3-torch); it shares
// pybind11's internals with torch._C (same compiler, library and ABI), which
// is how a Python ProcessGroup object becomes a c10d::ProcessGroup here.
// User errors raise topocc.Error (the class of topocc._topocc, looked up at
// import).
//
//===----------------------------------------------------------------------===//

#include "runtime/Interpreter.h"
#include "runtime/c10d/C10dTransport.h"

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/utils/pybind.h>

#include <memory>
#include <string>

namespace py = pybind11;
using namespace topocc;

namespace {

/// topocc.Error (from topocc._topocc, set in the module init).
py::object errorType;

[[noreturn]] void raise(const std::string &text) {
  std::string t = text;
  while (!t.empty() && t.back() == '\n')
    t.pop_back();
  PyErr_SetString(errorType.ptr(), t.c_str());
  throw py::error_already_set();
}

[[noreturn]] void raise(llvm::Error err) { raise(llvm::toString(std::move(err))); }

runtime::DType dtypeOf(const at::Tensor &t) {
  switch (t.scalar_type()) {
  case at::kFloat:
    return runtime::DType::F32;
  case at::kHalf:
    return runtime::DType::F16;
  case at::kBFloat16:
    return runtime::DType::BF16;
  default:
    raise(std::string("topocc plans reduce float32, float16 and bfloat16 "
                      "tensors, got ") +
          c10::toString(t.scalar_type()));
  }
}

/// A plan or plan set for torch: immutable once loaded.
struct TorchPlan {
  std::shared_ptr<const runtime::Plan> plan;

  /// The plan a call of `t` runs: its window's variant, or the nearest.
  const runtime::Plan &variantFor(const at::Tensor &t) const {
    return plan->nearest(size_t(t.numel()), dtypeOf(t));
  }

  /// In-place sum of `t` over `group` (every rank calls it with a tensor of
  /// the same shape and dtype). Returns the variant's schedule name.
  std::string allReduce(at::Tensor t, const py::object &groupObj,
                        double timeout, bool checkPeers) const {
    const ir::Schedule &s0 = plan->schedule();
    if (s0.collective != ir::Collective::AllReduce)
      raise("plan '" + s0.name + "' is a " +
            ir::collectiveName(s0.collective).str() +
            ": all_reduce needs an allreduce plan");
    if (t.device().type() != c10::DeviceType::CPU)
      raise("topocc.torch runs plans on CPU tensors, got a tensor on " +
            t.device().str());
    if (!t.is_contiguous())
      raise("all_reduce needs a contiguous tensor (call .contiguous())");
    runtime::DType dt = dtypeOf(t);
    if (t.numel() == 0)
      return s0.name;
    auto group =
        groupObj.cast<c10::intrusive_ptr<c10d::ProcessGroup>>();
    const runtime::Plan &p = variantFor(t);
    const ir::Schedule &s = p.schedule();
    if (group->getSize() != s.numRanks)
      raise("plan '" + s.name + "' is for " + std::to_string(s.numRanks) +
            " ranks, the process group has " +
            std::to_string(group->getSize()));
    runtime::RunOptions opts;
    opts.timeoutSeconds = timeout;
    opts.checkPeers = checkPeers;
    llvm::Error err = llvm::Error::success();
    {
      py::gil_scoped_release nogil;
      auto tr = runtime::C10dTransport::create(std::move(group));
      if (!tr) {
        err = tr.takeError();
      } else if (s.inplace) {
        err = p.run(t.data_ptr(), t.data_ptr(), size_t(t.numel()), dt, **tr,
                    opts);
      } else {
        at::Tensor out = at::empty_like(t);
        err = p.run(t.data_ptr(), out.data_ptr(), size_t(t.numel()), dt, **tr,
                    opts);
        if (!err)
          t.copy_(out);
      }
    }
    if (err)
      raise(std::move(err));
    return s.name;
  }
};

} // namespace

PYBIND11_MODULE(_torch, m) {
  m.doc() = "topocc plans over torch.distributed (docs/PyTorch.md)";
  errorType = py::module_::import("topocc._topocc").attr("Error");

  py::class_<TorchPlan>(m, "TorchPlan",
                        "A verified plan or plan set for torch tensors")
      .def(py::init([](const std::string &text, const std::string &name) {
             auto p = runtime::Plan::loadText(text, name);
             if (!p)
               raise(p.takeError());
             return TorchPlan{
                 std::make_shared<const runtime::Plan>(std::move(*p))};
           }),
           py::arg("text"), py::arg("name"),
           "Parses, validates and re-verifies plan JSON text (`name` is the "
           "file name its errors carry)")
      .def_property_readonly(
          "name", [](const TorchPlan &p) { return p.plan->schedule().name; })
      .def_property_readonly(
          "num_ranks",
          [](const TorchPlan &p) { return p.plan->schedule().numRanks; })
      .def_property_readonly("collective",
                             [](const TorchPlan &p) {
                               return ir::collectiveName(
                                          p.plan->schedule().collective)
                                   .str();
                             })
      .def_property_readonly(
          "inplace",
          [](const TorchPlan &p) { return p.plan->schedule().inplace; })
      .def_property_readonly(
          "variants",
          [](const TorchPlan &p) {
            py::list out;
            auto describe = [&](const runtime::Plan &v, int64_t lo,
                                int64_t hi) {
              py::dict d;
              d["name"] = v.schedule().name;
              d["algorithm"] = v.meta().algorithm;
              d["min_bytes"] = lo;
              d["max_bytes"] = hi;
              d["error_bound"] = v.meta().errorBound;
              out.append(d);
            };
            if (p.plan->variants().empty())
              describe(*p.plan, 0, 0);
            for (const runtime::Plan::Variant &v : p.plan->variants())
              describe(*v.plan, v.window.minBytes, v.window.maxBytes);
            return out;
          },
          "Each variant: {'name', 'algorithm', 'min_bytes', 'max_bytes' "
          "(0: no upper limit), 'error_bound'}; one for a plain plan")
      .def(
          "variant_for",
          [](const TorchPlan &p, const at::Tensor &t) {
            return p.variantFor(t).schedule().name;
          },
          py::arg("tensor"),
          "The name of the variant a call on `tensor` runs: its size "
          "window's, or the nearest window's outside them all")
      .def(
          "value_error_bound",
          [](const TorchPlan &p, const at::Tensor &t) {
            return runtime::valueErrorBound(p.variantFor(t).meta(),
                                            dtypeOf(t));
          },
          py::arg("tensor"),
          "The error contract of a call on `tensor`: every rank's "
          "||out - exact||_2 is at most this times ||x||_2, x all ranks' "
          "inputs (coded variants; 0 for exact ones)")
      .def("all_reduce", &TorchPlan::allReduce, py::arg("tensor"),
           py::arg("group"), py::arg("timeout") = 600.0,
           py::arg("check_peers") = true,
           "Sums `tensor` over the process group in place; returns the "
           "variant's name");
}
