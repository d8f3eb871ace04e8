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

#include "backends/MscclVerify.h"
#include "backends/MscclXml.h"
#include "backends/PlanJson.h"
#include "backends/TopologyHash.h"
#include "compiler/Pipeline.h"
#include "compiler/SizeWindows.h"
#include "compiler/WhatIfRun.h"
#include "compiler/analysis/BoundReport.h"
#include "compiler/analysis/RealizableGraph.h"
#include "compiler/topology/Scenario.h"
#include "compiler/topology/TopologyParser.h"
#include "runtime/Interpreter.h"
#include "runtime/LocalTransport.h"
#include "support/ByteSize.h"
#include "support/OutputFile.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <memory>
#include <optional>
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

/// allreduce, allgather or reducescatter (what compile and whatif take).
ir::Collective collectiveArg(const std::string &collective) {
  auto coll = ir::collectiveFromName(collective);
  if (!coll || (*coll != ir::Collective::AllReduce &&
                *coll != ir::Collective::AllGather &&
                *coll != ir::Collective::ReduceScatter))
    raise("collective must be allreduce, allgather or reducescatter, got '" +
          collective + "'");
  return *coll;
}

/// A size for the library's size parsers: text as given, a number of bytes
/// in decimal.
std::string sizeItem(const py::handle &v) {
  if (py::isinstance<py::str>(v))
    return v.cast<std::string>();
  if (py::isinstance<py::int_>(v))
    return std::to_string(v.cast<long long>());
  raise("sizes must be text ('64M') or whole numbers of bytes, got " +
        py::repr(v).cast<std::string>());
}

/// Text as given, or a list of items joined with commas (each by `item`).
template <typename Item>
std::string listArg(const py::object &v, Item item) {
  if (py::isinstance<py::str>(v))
    return v.cast<std::string>();
  std::string out;
  for (const py::handle &x : v) {
    if (!out.empty())
      out += ",";
    out += item(x);
  }
  return out;
}

/// None, one string or a sequence of strings (a repeatable CLI option).
std::vector<std::string> stringsArg(const py::object &v) {
  if (v.is_none())
    return {};
  if (py::isinstance<py::str>(v))
    return {v.cast<std::string>()};
  return v.cast<std::vector<std::string>>();
}

/// (MIN, MAX) as the text --sizes MIN:MAX.
std::string sizeRangeText(const py::object &range) {
  py::sequence seq = py::reinterpret_borrow<py::sequence>(range);
  if (!py::isinstance<py::sequence>(range) || py::len(seq) != 2)
    raise("sizes must be 'MIN:MAX' or (MIN, MAX), got " +
          py::repr(range).cast<std::string>());
  return sizeItem(seq[0]) + ":" + sizeItem(seq[1]);
}

struct PyTopology {
  std::shared_ptr<topo::Topology> t;
  std::string path; ///< the file it was loaded from
};

/// The topology with the named scenario of its file applied ("" or None:
/// as it is), as the CLI's --scenario.
std::shared_ptr<const topo::Topology> withScenario(const PyTopology &p,
                                                   const py::object &scenario) {
  if (scenario.is_none() || scenario.cast<std::string>().empty())
    return p.t;
  auto t = std::make_shared<topo::Topology>(*p.t);
  if (auto err = topo::applyScenario(*t, scenario.cast<std::string>()))
    raise(std::move(err));
  return t;
}

/// A report the library prints as JSON (what the CLI's --format json
/// prints), as Python objects: the same text through Python's json.
template <typename Print> py::object jsonReport(Print print) {
  std::string text;
  {
    llvm::raw_string_ostream os(text);
    print(os);
  }
  return py::module_::import("json").attr("loads")(text);
}

/// What the module's plan files record (as the CLI's, with this generator).
backends::PlanMeta planMeta(const topo::Topology &t) {
  backends::PlanMeta m;
  m.generator = "topocc python";
  m.topologyName = t.name().str();
  m.topologyHash = backends::topologyHash(t);
  return m;
}

struct PyCompiled {
  std::shared_ptr<topo::Topology> topology;
  CompileResult result;
  std::string algorithm;

  backends::PlanMeta meta() const {
    backends::PlanMeta m = planMeta(*topology);
    m.algorithm = algorithm;
    if (result.coded) {
      result.setCodedMeta(m);
    }
    return m;
  }
  std::string text(const std::string &emit) const {
    if (emit == "plan")
      return take(backends::planToJson(
          result.schedule, meta(),
          result.verified ? backends::PlanCheck::VerifiedByCompile
                          : backends::PlanCheck::Verify));
    if (emit == "msccl-xml") {
      if (result.coded)
        raise("a coded (CERAR) schedule has no MSCCL XML form: write it with "
              "emit='plan'");
      return take(backends::mscclXmlToString(result.schedule));
    }
    raise("emit must be 'msccl-xml' or 'plan', got '" + emit + "'");
  }
};

/// compile(sizes=...): one schedule per size window (compileSizeWindows),
/// written as one plan set.
struct PyCompiledSizes {
  std::shared_ptr<topo::Topology> topology;
  std::vector<SizeWindow> windows;
  int64_t minBytes = 0, maxBytes = 0;

  std::string text(const std::string &emit) const {
    if (emit != "plan")
      raise("a compile over sizes is a plan set: emit must be 'plan', got '" +
            emit + "'");
    return take(sizeWindowPlanSet(windows, planMeta(*topology)));
  }
  std::shared_ptr<runtime::Plan> plan() const {
    std::vector<backends::PlanMeta> metas =
        sizeWindowMetas(windows, planMeta(*topology));
    std::vector<backends::PlanWindow> bounds;
    std::vector<runtime::Plan> plans;
    for (size_t i = 0; i < windows.size(); ++i) {
      bounds.push_back({windows[i].minBytes, windows[i].maxBytes});
      plans.push_back(take(
          runtime::Plan::fromSchedule(windows[i].result.schedule, metas[i])));
    }
    return std::make_shared<runtime::Plan>(take(
        runtime::Plan::fromVariants(std::move(bounds), std::move(plans))));
  }
};

/// Written whole or not at all (support/OutputFile.h; the module installs
/// no signal handlers in the Python process).
void writeText(const std::string &path, const std::string &text) {
  auto out = OutputFile::open(path);
  if (!out)
    raise(out.takeError());
  (*out)->os() << text;
  if (llvm::Error err = (*out)->commit())
    raise(std::move(err));
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
                              take(topo::loadTopologyFile(path))),
                          path};
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
          "Coded (CERAR) plans: the code's error bound in exact arithmetic "
          "(||out_r - exact||_2 / ||x||_2, x every rank's input); 0 if exact")
      .def(
          "value_error_bound",
          [](const runtime::Plan &p, const std::string &dtype,
             bool worstCase) {
            auto t = runtime::dtypeFromName(dtype);
            if (!t)
              raise("dtype must be fp32, fp16 or bf16, got '" + dtype + "'");
            return runtime::valueErrorBound(p.meta(), *t, worstCase);
          },
          py::arg("dtype") = "fp32", py::arg("worst_case") = false,
          "Coded plans: the error contract of a run in `dtype`: every "
          "rank's ||out - exact||_2 is at most this times ||x||_2, x all "
          "ranks' inputs (error_bound plus the dtype's rounding through "
          "the code, under the probabilistic model of rounding, or for "
          "every rounding with worst_case); 0 for exact plans")
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

  py::class_<PyCompiledSizes>(
      m, "CompiledSizes",
      "Verified schedules from compile(sizes=...): one per size window")
      .def_property_readonly("min_bytes",
                             [](const PyCompiledSizes &c) { return c.minBytes; })
      .def_property_readonly("max_bytes",
                             [](const PyCompiledSizes &c) { return c.maxBytes; })
      .def_property_readonly(
          "windows",
          [](const PyCompiledSizes &c) {
            py::list out;
            for (const SizeWindow &w : c.windows) {
              py::dict d;
              d["min_bytes"] = w.minBytes;
              d["max_bytes"] = w.maxBytes;
              d["algorithm"] = algorithmName(w.result.algorithm).str();
              d["flags"] = w.result.chosenFlags;
              d["samples"] = w.samples;
              d["predicted_time"] = w.result.predictedTime;
              d["summary"] = w.result.summary;
              d["coded"] = w.result.coded;
              d["error_bound"] = w.result.codedError;
              d["channels"] = w.result.schedule.numChannels;
              d["name"] = w.result.schedule.name;
              out.append(std::move(d));
            }
            return out;
          },
          "One dict per window, in size order: min_bytes, max_bytes (both "
          "inclusive), algorithm, flags (auto's choice beyond the "
          "algorithm), samples (the sizes that chose it), predicted_time "
          "(seconds at the first sample), summary, coded, error_bound, "
          "channels, name")
      .def("text", &PyCompiledSizes::text, py::arg("emit") = "plan",
           "The plan set JSON (`topocc compile --emit plan --sizes`)")
      .def(
          "write",
          [](const PyCompiledSizes &c, const std::string &path,
             const std::string &emit) { writeText(path, c.text(emit)); },
          py::arg("path"), py::arg("emit") = "plan",
          "Writes text(emit) to `path`")
      .def("plan", &PyCompiledSizes::plan,
           "The plan set as a runnable Plan (each call runs its window's "
           "variant)")
      .def("__len__",
           [](const PyCompiledSizes &c) { return c.windows.size(); })
      .def("__repr__", [](const PyCompiledSizes &c) {
        return "<topocc.CompiledSizes " + std::to_string(c.minBytes) +
               " to " + std::to_string(c.maxBytes) + " B: " +
               std::to_string(c.windows.size()) + " window" +
               (c.windows.size() == 1 ? "" : "s") + ">";
      });

  m.def(
      "compile",
      [](const PyTopology &t, const std::string &collective,
         const std::string &algorithm, const py::object &size,
         const py::object &channels, int chunks, bool inplace,
         double tolerance, const py::object &target,
         const py::object &sizes) -> py::object {
        CompileRequest req;
        req.collective = collectiveArg(collective);
        req.algorithm = take(parseAlgorithm(algorithm));
        const bool windows = !sizes.is_none();
        if (windows && !size.is_none())
          raise("size and sizes exclude each other: sizes=(MIN, MAX) runs "
                "auto at every power of two from MIN to MAX");
        if (windows && req.algorithm != Algorithm::Auto)
          raise("sizes chooses the algorithm at every size (algorithm "
                "'auto'), got algorithm '" + algorithm + "'");
        req.bytes = size.is_none() ? double(64 << 20) : sizeArg(size, "size");
        // As `topocc compile`: channels auto for auto, else 1.
        req.channels = channels.is_none()
                           ? (req.algorithm == Algorithm::Auto ? 0 : 1)
                           : channels.cast<int>();
        req.chunks = chunks;
        req.inplace = inplace;
        req.tolerance = tolerance;
        // The limits of the output, as `topocc compile --emit`; a compile
        // over sizes is a plan set.
        const std::string emit =
            target.is_none() ? (windows ? "plan" : "msccl-xml")
                             : target.cast<std::string>();
        ir::OutputFormat format = take(ir::parseOutputFormat(emit));
        if (format != ir::OutputFormat::MscclXml &&
            format != ir::OutputFormat::Plan)
          raise("target must be 'msccl-xml' or 'plan', got '" + emit + "'");
        if (windows && format != ir::OutputFormat::Plan)
          raise("sizes gives a plan set: target must be 'plan' (the MSCCL "
                "XML directory of `topocc compile --sizes` is the CLI's)");
        req.target = ir::TargetLimits::forFormat(
            format, ir::kDefaultSmCount, backends::MscclXmlOptions().maxSteps,
            ir::MscclRuntime::MscclExecutor);
        if (auto err = checkCompileRequest(req))
          raise(std::move(err));
        if (windows) {
          std::string range = py::isinstance<py::str>(sizes)
                                  ? sizes.cast<std::string>()
                                  : sizeRangeText(sizes);
          auto bounds = take(parseSizeWindowRange(range));
          PyCompiledSizes out;
          out.topology = t.t;
          out.minBytes = bounds.first;
          out.maxBytes = bounds.second;
          llvm::Expected<std::vector<SizeWindow>> r = [&] {
            py::gil_scoped_release nogil;
            return compileSizeWindows(*t.t, req, bounds.first, bounds.second,
                                      /*mustServePowersOfTwo=*/false);
          }();
          out.windows = take(std::move(r));
          nameSizeWindows(out.windows, *t.t, inplace);
          return py::cast(std::move(out));
        }
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
        return py::cast(std::move(out));
      },
      py::arg("topology"), py::arg("collective") = "allreduce",
      py::arg("algorithm") = "auto", py::arg("size") = py::none(),
      py::arg("channels") = py::none(), py::arg("chunks") = 1,
      py::arg("inplace") = false, py::arg("tolerance") = 0.0,
      py::arg("target") = py::none(), py::arg("sizes") = py::none(),
      "Compiles a collective for the topology with the library pipeline "
      "(compiler/Pipeline.h), with `topocc compile`'s defaults: algorithm "
      "auto (the fastest candidate by the runtime model; ring, hier-ring, "
      "trees, cerar, hier-cerar name one), channels auto for auto else 1 "
      "(0 = auto), size 64 MiB; tolerance > 0 allows CERAR; target "
      "'msccl-xml' or 'plan' sets the output's limits (--emit). "
      "sizes='1K:64M' or (MIN, MAX) instead of size: auto at every power of "
      "two from MIN to MAX, one schedule per window of sizes with the same "
      "choice (`compile --emit plan --sizes`); returns a CompiledSizes");

  m.def(
      "bound",
      [](const PyTopology &p, const py::object &size,
         const py::object &scenario, const std::string &capacity) {
        analysis::CapacityKind kind =
            take(analysis::parseCapacityKind(capacity));
        double bytes = sizeArg(size, "size");
        std::shared_ptr<const topo::Topology> t = withScenario(p, scenario);
        std::optional<llvm::Expected<analysis::BoundResult>> physical,
            realizable;
        {
          py::gil_scoped_release nogil;
          physical.emplace(analysis::computeBound(*t, kind));
          if (*physical)
            realizable.emplace(analysis::computeRealizableBound(*t));
        }
        analysis::BoundResult b = take(std::move(*physical));
        analysis::BoundResult rb = take(std::move(*realizable));
        return jsonReport([&](llvm::raw_ostream &os) {
          analysis::printBoundJson(
              os, *t, b, rb, bytes,
              scenario.is_none() ? "" : scenario.cast<std::string>(),
              capacity);
        });
      },
      py::arg("topology"), py::arg("size") = "1G",
      py::arg("scenario") = py::none(), py::arg("capacity") = "raw",
      "The exact cut bound (compiler/analysis/Bound.h) of allgather, "
      "reducescatter and allreduce at `size` (bytes or text), as `topocc "
      "bound --format json` reports it: a dict with 'allgather', "
      "'reducescatter', 'allreduce' (time_s, algbw, busbw in bytes/s, "
      "lambda, ...) and 'realizable' (the same on the runtime's routes). "
      "capacity 'raw' or 'effective'; scenario: one of the file's "
      "scenarios, applied first");

  m.def(
      "whatif",
      [](const PyTopology &p, const std::string &collective,
         const py::object &sizes, const py::object &algorithms,
         const py::object &scenario, const py::object &fail,
         const py::object &scale, const py::object &set, int chunks,
         double tolerance, const std::string &mode,
         const py::object &reduceBandwidth) {
        WhatIfRequest req;
        req.collective = collectiveArg(collective);
        req.sizes = listArg(sizes, sizeItem);
        req.algorithms = listArg(
            algorithms, [](const py::handle &x) { return x.cast<std::string>(); });
        req.scenarios = stringsArg(scenario);
        req.fails = stringsArg(fail);
        req.scales = stringsArg(scale);
        req.sets = stringsArg(set);
        req.chunks = chunks;
        req.tolerance = tolerance;
        req.mode = mode;
        if (!reduceBandwidth.is_none())
          req.reduceBandwidth = reduceBandwidth.cast<std::string>();
        llvm::Expected<analysis::WhatIfReport> r = [&] {
          py::gil_scoped_release nogil;
          return whatIfReport(*p.t, req);
        }();
        analysis::WhatIfReport report = take(std::move(r));
        return jsonReport([&](llvm::raw_ostream &os) {
          analysis::printWhatIfJson(os, report);
        });
      },
      py::arg("topology"), py::arg("collective") = "allreduce",
      py::arg("sizes") = "1K:8G",
      py::arg("algorithms") = "ring,rank-ring,nccl-model,bound",
      py::arg("scenario") = py::none(), py::arg("fail") = py::none(),
      py::arg("scale") = py::none(), py::arg("set") = py::none(),
      py::arg("chunks") = 1, py::arg("tolerance") = 0.0,
      py::arg("mode") = "runtime", py::arg("reduce_bandwidth") = py::none(),
      "Simulates algorithms over message sizes on the topology and its "
      "what-if variants, as `topocc whatif --format json` reports it "
      "(compiler/WhatIfRun.h): a dict with 'algorithms' and 'scenarios', "
      "one per table (the base, each scenario, 'cli' for fail/scale/set), "
      "each with 'rows': bytes, count, results (per algorithm: applicable, "
      "time_s, algbw, busbw in bytes/s, or why not), winner. sizes: text "
      "('1K:8G', '64M', '1K:8G:4', comma lists) or a list of sizes; "
      "algorithms: comma text or a list (ring, rank-ring, nccl-model, "
      "bound, realizable, trees, hier-ring, cerar, hier-cerar, auto); "
      "scenario, fail, scale, set: one string or a list each, as the CLI's "
      "--scenario, --fail, --scale ('SEL=2x'), --set ('SEL=200Gb/s'); "
      "mode runtime, cut-through or store-and-forward; reduce_bandwidth "
      "e.g. '600GB/s' (default from the GPU model)");

  m.def(
      "verify",
      [](const py::object &paths, const py::object &topology,
         const py::object &size, bool legacy, unsigned maxSteps,
         const py::object &smCount, const std::string &mode) {
        std::vector<std::string> files = stringsArg(paths);
        backends::MscclVerifyOptions opts;
        opts.legacy = legacy;
        opts.maxSteps = maxSteps;
        opts.smCount = smCount.is_none() ? -1 : smCount.cast<int>();
        opts.mode = take(analysis::parseSimMode(mode));
        if (!size.is_none() && topology.is_none())
          raise("size needs topology (the size of the simulated call)");
        std::shared_ptr<topo::Topology> t;
        if (!topology.is_none()) {
          if (py::isinstance<py::str>(topology)) {
            opts.topologyFile = topology.cast<std::string>();
            t = std::make_shared<topo::Topology>(
                take(topo::loadTopologyFile(opts.topologyFile)));
          } else {
            const PyTopology &p = topology.cast<const PyTopology &>();
            t = p.t;
            opts.topologyFile = p.path;
          }
          opts.topology = t.get();
          opts.bytes =
              size.is_none() ? double(int64_t(1) << 30) : sizeArg(size, "size");
        }
        llvm::Expected<backends::MscclVerifyReport> r = [&] {
          py::gil_scoped_release nogil;
          return backends::verifyMscclFiles(files, opts);
        }();
        backends::MscclVerifyReport report = take(std::move(r));
        // A file that is not an MSCCL algorithm at all (unreadable, not
        // XML, no readable <algo>) raises; one that fails a check is a
        // verdict.
        for (const backends::MscclFileResult &f : report.files) {
          if (!f.ioError.empty())
            raise(f.ioError);
          bool lexical = llvm::any_of(
              f.verdict.findings,
              [](const backends::MscclFinding &x) { return x.rule == "lexical"; });
          if (lexical || !f.verdict.algo) {
            std::string text;
            llvm::raw_string_ostream os(text);
            for (const Diagnostic &d : f.verdict.problems)
              d.print(os);
            os.flush();
            raise(llvm::StringRef(text).rtrim().str());
          }
        }
        py::object out = jsonReport([&](llvm::raw_ostream &os) {
          backends::printMscclVerifyJson(os, report, opts);
        });
        out["ok"] = report.passes();
        return out;
      },
      py::arg("path"), py::arg("topology") = py::none(),
      py::arg("size") = py::none(), py::arg("legacy") = false,
      py::arg("max_steps") = 64, py::arg("sm_count") = py::none(),
      py::arg("mode") = "runtime",
      "Checks MSCCL algorithm XML files (one path or a list) as `topocc "
      "verify --format json` reports them (backends/MscclVerify.h): a dict "
      "with 'files' (per file: verdict 'accept' or 'reject', algo, "
      "properties, errors and warnings with file/line/col, rule and "
      "consequence; with a topology 'topology': the simulated run at size, "
      "default 1G), 'windowOverlaps', 'summary', and 'ok' (the CLI's exit "
      "status 0: every file accepted, none hangs or runs wrongly). A file "
      "that is not an MSCCL algorithm (unreadable, not XML, no readable "
      "<algo>) raises topocc.Error with file:line:col. topology: a "
      "Topology or a path; sm_count None: the topology's GPU model, else "
      "108");
}
