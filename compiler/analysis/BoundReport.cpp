//===- compiler/analysis/BoundReport.cpp - `topocc bound`'s report --------===//

#include "compiler/analysis/BoundReport.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

namespace topocc::analysis {

namespace {

llvm::json::Object numbersJson(const BoundNumbers &n) {
  return llvm::json::Object{
      {"time_s", n.time}, {"algbw", n.algbw}, {"busbw", n.busbw}};
}

llvm::json::Object directionJson(const topo::Topology &t, const BoundResult &b,
                                 const DirectionalBound &d,
                                 const BoundNumbers &n) {
  const BoundGraph &g = b.graph;
  llvm::json::Array ranks, devices, arcs;
  for (int r : d.cut.ranks)
    ranks.push_back(r);
  for (int v : d.cut.vertices)
    devices.push_back(g.vertexName(v));
  for (int a : d.cut.arcs) {
    auto [from, to] = boundArcEnds(t, g, a);
    arcs.push_back(
        llvm::json::Object{{"from", from},
                           {"to", to},
                           {"bytes_per_s", boundArcBytesPerSec(g, a)}});
  }
  llvm::json::Object o = numbersJson(n);
  o["lambda"] = d.lambda.str();
  o["lambda_s_per_gb"] = d.lambda.value();
  o["iterations"] = d.iterations;
  o["max_flows"] = d.maxFlows;
  o["k"] = d.k;
  o["u"] = d.u.str();
  o["cut"] = llvm::json::Object{
      {"ranks", std::move(ranks)},
      {"devices", std::move(devices)},
      {"capacity_bytes_per_s", static_cast<double>(d.cut.capacity) *
                                   static_cast<double>(g.quantumBytesPerSec)},
      {"arcs", std::move(arcs)}};
  return o;
}

} // namespace

double boundArcBytesPerSec(const BoundGraph &g, int arc) {
  return static_cast<double>(g.arcs[arc].cap) *
         static_cast<double>(g.quantumBytesPerSec);
}

std::pair<std::string, std::string> boundArcEnds(const topo::Topology &t,
                                                 const BoundGraph &g, int arc) {
  const BoundGraph::Arc &a = g.arcs[arc];
  if (a.link < 0)
    return {g.vertexName(a.from), g.vertexName(a.to)};
  const topo::Link &l = t.link(a.link);
  const std::string &from = t.device(l.from).name, &to = t.device(l.to).name;
  return a.dir == 0 ? std::make_pair(from, to) : std::make_pair(to, from);
}

void printBoundJson(llvm::raw_ostream &os, const topo::Topology &t,
                    const BoundResult &b, const BoundResult &rb, double bytes,
                    llvm::StringRef scenario, llvm::StringRef capacity) {
  using ir::Collective;
  BoundNumbers ag = boundNumbers(b, Collective::AllGather, bytes),
               rs = boundNumbers(b, Collective::ReduceScatter, bytes),
               ar = boundNumbers(b, Collective::AllReduce, bytes),
               rag = boundNumbers(rb, Collective::AllGather, bytes),
               rrs = boundNumbers(rb, Collective::ReduceScatter, bytes),
               rar = boundNumbers(rb, Collective::AllReduce, bytes);
  llvm::json::Object arj = numbersJson(ar);
  arj["lambda"] = b.allreduceLambda.str();
  arj["lambda_s_per_gb"] = b.allreduceLambda.value();
  llvm::json::Object rarj = numbersJson(rar);
  rarj["lambda"] = rb.allreduceLambda.str();
  rarj["lambda_s_per_gb"] = rb.allreduceLambda.value();
  llvm::json::Object root{
      {"format", "topocc-bound/v1"},
      {"topology", t.name()},
      {"scenario", scenario},
      {"capacity", capacity},
      {"ranks", b.numRanks()},
      {"bytes", bytes},
      {"quantum_bytes_per_s", b.graph.quantumBytesPerSec},
      {"allgather", directionJson(t, b, b.allgather, ag)},
      {"reducescatter", directionJson(t, b, b.reduceScatter, rs)},
      {"allreduce", std::move(arj)},
      {"realizable",
       llvm::json::Object{
           {"capacity", "effective"},
           {"routes", "runtime"},
           {"quantum_bytes_per_s", rb.graph.quantumBytesPerSec},
           {"allgather", directionJson(t, rb, rb.allgather, rag)},
           {"reducescatter", directionJson(t, rb, rb.reduceScatter, rrs)},
           {"allreduce", std::move(rarj)}}}};
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << '\n';
}

} // namespace topocc::analysis
