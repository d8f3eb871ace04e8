//===- python/TopoccPython.cpp - The Python module topocc._topocc ---------===//
//
// pybind11 bindings (docs/Python.md): topologies (load, devices, links),
// compile() on a topology with the library pipeline (compiler/Pipeline.h),
// its schedule as MSCCL XML or plan JSON text or files, and plans (load,
// describe, run on numpy arrays with one thread per rank over
// LocalTransport). User errors raise topocc.Error with the library's text.
// Built by CMake when pybind11 and Python are found (python/CMakeLists
// part of the top-level CMakeLists.txt); python/topocc/__init__.py
// re-exports it.
//
//===----------------------------------------------------------------------===//

#include "backends/MscclXml.h"
#include "backends/PlanJson.h"
#include "compiler/Pipeline.h"
#include "compiler/topology/TopologyParser.h"
#include "runtime/Interpreter.h"
#include "runtime/LocalTransport.h"
#include "support/ByteSize.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace py = pybind11;
using namespace topocc;

namespace {

/// topocc.Error, set up in the module init.
py::object errorType;

[[noreturn]] void raise(llvm::Error err) {
  std::string text = llvm::toString(std::move(err));
  while (!text.empty() && text.back() == '\n')
    text.pop_back();
  PyErr_SetString(errorType.ptr(), text.c_str());
  throw py::error_already_set();
}

[[noreturn]] void raise(const std::string &text) {
  PyErr_SetString(errorType.ptr(), text.c_str());
  throw py::error_already_set();
}

template <typename T> T take(llvm::Expected<T> v) {
  if (!v)
    raise(v.takeError());
  return std::move(*v);
}

/// A size given as bytes (int) or text ("64M").
double sizeArg(const py::object &size, const char *what) {
  if (py::isinstance<py::str>(size))
    return take(parseByteSize(size.cast<std::string>(), what));
  double v = size.cast<double>();
  if (!(v > 0))
    raise(std::string(what) + " must be a positive number of bytes");
  return v;
}

struct PyTopology {
  std::shared_ptr<topo::Topology> t;
};

struct PyCompiled {
  std::shared_ptr<topo::Topology> topology;
  CompileResult result;
  std::string algorithm;

  backends::PlanMeta meta() const {
    backends::PlanMeta m;
    m.generator = "topocc python";
    m.topologyName = topology->name().str();
    m.algorithm = algorithm;
    if (result.coded) {
      m.errorBound = result.codedError;
      m.roundoffGain = result.codedRoundoffGain;
    }
    return m;
  }
  std::string text(const std::string &emit) const {
    if (emit == "plan")
      return take(backends::planToJson(result.schedule, meta()));
    if (emit == "msccl-xml") {
      if (result.coded)
        raise("a coded (CERAR) schedule has no MSCCL XML form: write it with "
              "emit='plan'");
      return take(backends::mscclXmlToString(result.schedule));
    }
    raise("emit must be 'msccl-xml' or 'plan', got '" + emit + "'");
  }
};

void writeText(const std::string &path, const std::string &text) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    raise("cannot write '" + path + "': " + ec.message());
  os << text;
  os.close();
  if (os.has_error())
    raise("cannot write '" + path + "': " + os.error().message());
}

runtime::DType dtypeOf(const py::array &a) {
  if (a.dtype().is(py::dtype::of<float>()))
    return runtime::DType::F32;
  if (a.dtype().kind() == 'f' && a.dtype().itemsize() == 2)
    return runtime::DType::F16;
  raise("arrays must be float32 or float16, got " +
        py::str(a.dtype()).cast<std::string>());
}

/// Runs `plan` once per rank on threads: inputs[r] is rank r's input (one
/// dimension, contiguous, all the same dtype); returns the outputs.
std::vector<py::array> runLocal(const runtime::Plan &plan,
                                const std::vector<py::array> &inputs,
                                double timeout) {
  const ir::Schedule &s = plan.schedule();
  const int n = s.numRanks;
  if (int(inputs.size()) != n)
    raise("plan '" + s.name + "' has " + std::to_string(n) +
          " ranks: pass one input array per rank, got " +
          std::to_string(inputs.size()));
  runtime::DType t = dtypeOf(inputs[0]);
  size_t inBlocks = s.collective == ir::Collective::ReduceScatter ? n : 1;
  size_t outBlocks = s.collective == ir::Collective::AllGather ? n : 1;
  size_t total = size_t(inputs[0].size());
  if (total == 0 || total % inBlocks)
    raise("a " + ir::collectiveName(s.collective).str() + " input of " +
          std::to_string(n) + " ranks needs a positive multiple of " +
          std::to_string(inBlocks) + " elements, got " + std::to_string(total));
  size_t count = total / inBlocks;
  std::vector<py::array> in, out;
  for (int r = 0; r < n; ++r) {
    const py::array &a = inputs[r];
    if (a.ndim() != 1 || size_t(a.size()) != total || dtypeOf(a) != t)
      raise("input " + std::to_string(r) + " must be one-dimensional with " +
            std::to_string(total) + " elements of the same dtype as input 0");
    // Contiguous copies; in-place plans run on one buffer per rank.
    size_t inLen = s.inplace ? std::max(inBlocks, outBlocks) * count : total;
    in.push_back(py::array(a.dtype(), std::vector<py::ssize_t>{py::ssize_t(inLen)}));
    out.push_back(py::array(
        a.dtype(), std::vector<py::ssize_t>{py::ssize_t(outBlocks * count)}));
  }
  size_t esz = runtime::dtypeSize(t);
  std::vector<char *> sendPtr(n), recvPtr(n), base(n);
  for (int r = 0; r < n; ++r) {
    char *b = static_cast<char *>(in[r].mutable_data());
    base[r] = b;
    sendPtr[r] = b;
    recvPtr[r] = static_cast<char *>(out[r].mutable_data());
    if (s.inplace) {
      if (s.collective == ir::Collective::AllGather) {
        recvPtr[r] = b;
        sendPtr[r] = b + size_t(r) * count * esz;
      } else if (s.collective == ir::Collective::ReduceScatter) {
        recvPtr[r] = b + size_t(r) * count * esz;
      } else {
        recvPtr[r] = b;
      }
    }
    py::buffer_info src = py::array::ensure(inputs[r], py::array::c_style).request();
    std::memcpy(sendPtr[r], src.ptr, total * esz);
  }
  std::vector<std::string> errors(n);
  {
    py::gil_scoped_release nogil;
    runtime::LocalFabric fabric(n);
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r)
      threads.emplace_back([&, r] {
        runtime::LocalTransport tr(fabric, r);
        runtime::RunOptions opts;
        opts.timeoutSeconds = timeout;
        if (auto err = plan.run(sendPtr[r], recvPtr[r], count, t, tr, opts))
          errors[r] = llvm::toString(std::move(err));
      });
    for (std::thread &th : threads)
      th.join();
  }
  for (int r = 0; r < n; ++r)
    if (!errors[r].empty()) {
      std::string e = errors[r];
      while (!e.empty() && e.back() == '\n')
        e.pop_back();
      raise(e);
    }
  if (s.inplace)
    for (int r = 0; r < n; ++r)
      std::memcpy(out[r].mutable_data(), recvPtr[r], outBlocks * count * esz);
  return out;
}

} // namespace

PYBIND11_MODULE(_topocc, m) {
  m.doc() = "topocc: topology-aware collective compiler (docs/Python.md)";
  errorType = py::reinterpret_borrow<py::object>(
      PyErr_NewException("topocc.Error", PyExc_RuntimeError, nullptr));
  m.attr("Error") = errorType;

  py::class_<PyTopology>(m, "Topology", "A topology file (topocc/v1 YAML)")
      .def_property_readonly("name",
                             [](const PyTopology &p) { return p.t->name().str(); })
      .def_property_readonly("num_ranks",
                             [](const PyTopology &p) { return p.t->numRanks(); })
      .def_property_readonly(
          "devices",
          [](const PyTopology &p) {
            py::list out;
            for (const topo::Device &d : p.t->devices()) {
              py::dict e;
              e["name"] = d.name;
              e["kind"] = topo::deviceKindName(d.kind).str();
              e["rank"] = d.rank;
              out.append(e);
            }
            return out;
          },
          "Every device: {'name', 'kind' ('gpu', 'nic', 'switch'), 'rank' "
          "(-1 unless a GPU)}")
      .def_property_readonly(
          "ranks",
          [](const PyTopology &p) {
            std::vector<std::string> names;
            for (int r = 0; r < p.t->numRanks(); ++r)
              names.push_back(p.t->rankName(r));
            return names;
          },
          "The GPU of each rank, by name")
      .def_property_readonly(
          "num_links", [](const PyTopology &p) { return p.t->links().size(); })
      .def("__repr__", [](const PyTopology &p) {
        return "<topocc.Topology '" + p.t->name().str() + "': " +
               std::to_string(p.t->numRanks()) + " ranks, " +
               std::to_string(p.t->devices().size()) + " devices, " +
               std::to_string(p.t->links().size()) + " links>";
      });

  m.def(
      "load_topology",
      [](const std::string &path) {
        return PyTopology{std::make_shared<topo::Topology>(
            take(topo::loadTopologyFile(path)))};
      },
      py::arg("path"), "Reads and validates a topology file");

  py::class_<runtime::Plan, std::shared_ptr<runtime::Plan>>(
      m, "Plan", "A verified plan (plan file or plan set) the runtime runs")
      .def_static(
          "load",
          [](const std::string &path) {
            return std::make_shared<runtime::Plan>(
                take(runtime::Plan::load(path)));
          },
          py::arg("path"), "Reads, validates and re-verifies a plan file")
      .def_property_readonly(
          "name", [](const runtime::Plan &p) { return p.schedule().name; })
      .def_property_readonly(
          "num_ranks", [](const runtime::Plan &p) { return p.schedule().numRanks; })
      .def_property_readonly("collective",
                             [](const runtime::Plan &p) {
                               return ir::collectiveName(p.schedule().collective)
                                   .str();
                             })
      .def_property_readonly(
          "inplace", [](const runtime::Plan &p) { return p.schedule().inplace; })
      .def_property_readonly("hash",
                             [](const runtime::Plan &p) {
                               return backends::formatHash(p.hash());
                             })
      .def_property_readonly(
          "error_bound",
          [](const runtime::Plan &p) { return p.meta().errorBound; },
          "Coded (CERAR) plans: the code's relative error bound; 0 if exact")
      .def(
          "value_error_bound",
          [](const runtime::Plan &p, const std::string &dtype) {
            auto t = runtime::dtypeFromName(dtype);
            if (!t)
              raise("dtype must be fp32, fp16 or bf16, got '" + dtype + "'");
            return runtime::valueErrorBound(p.meta(), *t);
          },
          py::arg("dtype") = "fp32",
          "Coded plans: the relative error max|got - exact| / max|exact| a "
          "run in `dtype` may show (error_bound plus the dtype's unit "
          "roundoff amplified by the code); 0 for exact plans")
      .def(
          "run_local",
          [](const runtime::Plan &p, const std::vector<py::array> &inputs,
             double timeout) { return runLocal(p, inputs, timeout); },
          py::arg("inputs"), py::arg("timeout") = 60.0,
          "Runs the plan with one thread per rank: inputs[r] is rank r's "
          "input (float32 or float16; reducescatter: ranks x count "
          "elements); returns every rank's output")
      .def("__repr__", [](const runtime::Plan &p) {
        return "<topocc.Plan '" + p.schedule().name + "': " +
               ir::collectiveName(p.schedule().collective).str() + ", " +
               std::to_string(p.schedule().numRanks) + " ranks>";
      });

  py::class_<PyCompiled>(m, "Compiled", "A verified schedule from compile()")
      .def_property_readonly("algorithm",
                             [](const PyCompiled &c) { return c.algorithm; })
      .def_property_readonly(
          "summary", [](const PyCompiled &c) { return c.result.summary; })
      .def_property_readonly(
          "chosen_flags",
          [](const PyCompiled &c) { return c.result.chosenFlags; },
          "algorithm auto: the winning setting's flags beyond the algorithm")
      .def_property_readonly(
          "predicted_time",
          [](const PyCompiled &c) { return c.result.predictedTime; },
          "algorithm auto: the winner's simulated time at `size`, seconds "
          "(0 otherwise)")
      .def_property_readonly("coded",
                             [](const PyCompiled &c) { return c.result.coded; })
      .def_property_readonly(
          "error_bound", [](const PyCompiled &c) { return c.result.codedError; })
      .def_property_readonly("num_ranks",
                             [](const PyCompiled &c) {
                               return c.result.schedule.numRanks;
                             })
      .def_property_readonly("channels",
                             [](const PyCompiled &c) {
                               return c.result.schedule.numChannels;
                             })
      .def("text", &PyCompiled::text, py::arg("emit") = "msccl-xml",
           "The schedule as 'msccl-xml' or 'plan' (JSON) text")
      .def(
          "write",
          [](const PyCompiled &c, const std::string &path,
             const std::string &emit) { writeText(path, c.text(emit)); },
          py::arg("path"), py::arg("emit") = "msccl-xml",
          "Writes text(emit) to `path`")
      .def(
          "plan",
          [](const PyCompiled &c) {
            return std::make_shared<runtime::Plan>(
                take(runtime::Plan::fromSchedule(c.result.schedule, c.meta())));
          },
          "The schedule as a runnable Plan");

  m.def(
      "compile",
      [](const PyTopology &t, const std::string &collective,
         const std::string &algorithm, const py::object &size,
         const py::object &channels, int chunks, bool inplace,
         double tolerance, const std::string &target) {
        CompileRequest req;
        auto coll = ir::collectiveFromName(collective);
        if (!coll || (*coll != ir::Collective::AllReduce &&
                      *coll != ir::Collective::AllGather &&
                      *coll != ir::Collective::ReduceScatter))
          raise("collective must be allreduce, allgather or reducescatter, "
                "got '" + collective + "'");
        req.collective = *coll;
        req.algorithm = take(parseAlgorithm(algorithm));
        req.bytes = sizeArg(size, "size");
        // As `topocc compile`: channels auto for auto, else 1.
        req.channels = channels.is_none()
                           ? (req.algorithm == Algorithm::Auto ? 0 : 1)
                           : channels.cast<int>();
        req.chunks = chunks;
        req.inplace = inplace;
        req.tolerance = tolerance;
        // The limits of the output, as `topocc compile --emit`.
        ir::OutputFormat format = take(ir::parseOutputFormat(target));
        if (format != ir::OutputFormat::MscclXml &&
            format != ir::OutputFormat::Plan)
          raise("target must be 'msccl-xml' or 'plan', got '" + target + "'");
        req.target = ir::TargetLimits::forFormat(
            format, ir::kDefaultSmCount, backends::MscclXmlOptions().maxSteps,
            ir::MscclRuntime::MscclExecutor);
        if (auto err = checkCompileRequest(req))
          raise(std::move(err));
        PassLogger log;
        PyCompiled out;
        out.topology = t.t;
        llvm::Expected<CompileResult> r = [&] {
          py::gil_scoped_release nogil;
          return compile(*t.t, req, log);
        }();
        out.result = take(std::move(r));
        out.algorithm = algorithmName(out.result.algorithm).str();
        // As `topocc compile`: auto's schedule is named after its choice.
        if (req.algorithm == Algorithm::Auto)
          out.result.schedule.name =
              t.t->name().str() + "_" + out.algorithm + "_" + collective + "_" +
              (inplace ? "inplace" : "outofplace");
        return out;
      },
      py::arg("topology"), py::arg("collective") = "allreduce",
      py::arg("algorithm") = "auto", py::arg("size") = py::int_(64 << 20),
      py::arg("channels") = py::none(), py::arg("chunks") = 1,
      py::arg("inplace") = false, py::arg("tolerance") = 0.0,
      py::arg("target") = "msccl-xml",
      "Compiles a collective for the topology with the library pipeline "
      "(compiler/Pipeline.h), with `topocc compile`'s defaults: algorithm "
      "auto (the fastest candidate by the runtime model; ring, hier-ring, "
      "trees, cerar, hier-cerar name one), channels auto for auto else 1 "
      "(0 = auto), size 64 MiB; tolerance > 0 allows CERAR; target "
      "'msccl-xml' or 'plan' sets the output's limits (--emit)");
}
