//===- compiler/Pipeline.cpp - The ordered pass pipeline ------------------===//
//
// Modelled on Halide's lower_impl: one function lists every pass, one line
// each, with a comment saying why it is there.
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipeline.h"

#include "compiler/algorithms/RingSearch.h"
#include "compiler/passes/AssignChannels.h"
#include "compiler/passes/AssignThreadblocks.h"
#include "compiler/passes/Fuse.h"
#include "compiler/passes/LegalizeDependencies.h"
#include "compiler/passes/LowerHierarchicalRing.h"
#include "compiler/passes/LowerRing.h"
#include "compiler/passes/SplitChannels.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "support/Diagnostics.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>

namespace topocc {

using ir::Schedule;
using ir::Stage;

void PassLogger::afterPass(llvm::StringRef pass, const Schedule &s) {
  if (!printAfterAll || !irOut)
    return;
  *irOut << "// *** IR Dump After " << pass << " ***\n";
  ir::printSchedule(s, *irOut);
}

void PassLogger::recordTime(llvm::StringRef pass, double seconds) {
  if (timePasses)
    times.emplace_back(pass.str(), seconds);
}

void PassLogger::printTimings(llvm::raw_ostream &os) const {
  if (!timePasses)
    return;
  os << "===-- pass execution timing report --===\n";
  os << "  wall time (s)  pass\n";
  double total = 0;
  for (const auto &[name, secs] : times) {
    os << llvm::formatv("  {0,12:f6}  {1}\n", secs, name);
    total += secs;
  }
  os << llvm::formatv("  {0,12:f6}  total\n", total);
}

namespace {

/// An internal error: `pass` turned `before` (absent for a lowering) into a
/// schedule the verifier rejects.
llvm::Error passBroke(llvm::StringRef pass,
                      const std::optional<Schedule> &before,
                      const Schedule &after, llvm::Error problems) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "the schedule is invalid after pass '" << pass
     << "' (a bug in topocc):\n"
     << llvm::toString(std::move(problems)) << '\n';
  if (before) {
    os << "--- IR before " << pass << " ---\n";
    ir::printSchedule(*before, os);
  }
  os << "--- IR after " << pass << " ---\n";
  ir::printSchedule(after, os);
  os.flush();
  return makeInternalError(text);
}

/// Runs one transform on `s`: times it, logs the IR, and verifies the result
/// when `verify` (keeping a copy of the input for the report).
llvm::Error runPass(llvm::StringRef name, Schedule &s, PassLogger &log,
                    bool verify,
                    const std::function<llvm::Error(Schedule &)> &pass) {
  std::optional<Schedule> before;
  if (verify)
    before = s;
  auto start = std::chrono::steady_clock::now();
  llvm::Error err = pass(s);
  log.recordTime(name, std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - start)
                           .count());
  if (err)
    return err;
  log.afterPass(name, s);
  if (verify)
    if (llvm::Error problems = ir::verifySchedule(s))
      return passBroke(name, before, s, std::move(problems));
  return llvm::Error::success();
}

llvm::Error checkRequest(const CompileRequest &req) {
  if (auto alg = parseAlgorithm(req.algorithm); !alg)
    return alg.takeError();
  if (req.proto != "Simple" && req.proto != "LL" && req.proto != "LL128")
    return makeUserError("unknown --proto '" + req.proto +
                         "'; expected 'Simple', 'LL' or 'LL128'");
  if (req.maxSteps < 1)
    return makeUserError(
        llvm::formatv("--max-steps must be at least 1, got {0}", req.maxSteps));
  return llvm::Error::success();
}

const llvm::StringRef kPassNames[] = {"fuse", "assign-channels",
                                     "split-channels", "assign-threadblocks",
                                     "legalize-dependencies"};

/// The transform registered under `name` (one of kPassNames).
std::function<llvm::Error(Schedule &)> passNamed(llvm::StringRef name,
                                                 const CompileRequest &req) {
  passes::ThreadblockLimits limits;
  limits.maxSteps = req.maxSteps;
  if (name == "fuse")
    return [](Schedule &s) {
      passes::fuse(s);
      return llvm::Error::success();
    };
  if (name == "assign-channels")
    return [](Schedule &s) { return passes::assignChannels(s); };
  if (name == "split-channels")
    return [maxSteps = req.maxSteps](Schedule &s) {
      return passes::splitChannels(s, maxSteps);
    };
  if (name == "assign-threadblocks")
    return
        [limits](Schedule &s) { return passes::assignThreadblocks(s, limits); };
  assert(name == "legalize-dependencies" && "unknown pass");
  return [](Schedule &s) {
    passes::legalizeDependencies(s);
    return llvm::Error::success();
  };
}

/// The ranks of each node of `t` with GPUs, by local GPU index (device
/// declaration order inside the node).
std::vector<std::vector<ir::RankId>> nodeRanks(const topo::Topology &t) {
  std::vector<std::vector<ir::RankId>> nodes;
  for (const topo::Node &node : t.nodes()) {
    std::vector<ir::RankId> ranks;
    for (int d : node.devices) {
      const topo::Device &dev = t.device(d);
      if (dev.kind == topo::DeviceKind::Gpu && dev.rank >= 0)
        ranks.push_back(dev.rank);
    }
    if (!ranks.empty())
      nodes.push_back(std::move(ranks));
  }
  return nodes;
}

/// A lowering's product: the schedule and what it was built from.
struct Lowered {
  Schedule schedule;
  std::vector<ChannelRing> rings;
  std::vector<analysis::RingChannel> searched;
  std::string source;
};

/// The ring algorithm: explicit order, rank order, or the ring search's
/// rings with their shares as chunk counts.
llvm::Expected<Lowered> lowerRingAlgorithm(const topo::Topology *t,
                                           int32_t numRanks,
                                           const CompileRequest &req) {
  Lowered out;
  passes::RingOptions ring{req.collective, numRanks,      req.channels,
                           req.chunks,     req.ringOrder, req.inplace,
                           req.name};
  const bool search = t && req.ringOrder.empty() && !req.rankOrder;
  if (!search && req.channels == 0)
    return makeUserError(
        "--channels auto lets the ring search choose the rings; give a number "
        "of channels with --ring or without a topology");
  if (search) {
    algorithms::RingSearchOptions so;
    so.collective = req.collective;
    so.bytes = req.bytes;
    so.channels = req.channels;
    so.maxChannels = 32; // MSCCL channels
    analysis::LinkModel m(*t);
    auto found = algorithms::searchRings(*t, m, so);
    if (!found)
      return found.takeError();
    std::vector<double> shares;
    for (const analysis::RingChannel &rc : found->rings) {
      ring.channelOrders.emplace_back(rc.order.begin(), rc.order.end());
      shares.push_back(rc.share);
    }
    ring.channels = static_cast<int32_t>(found->rings.size());
    ring.channelChunks = passes::chunksForShares(shares, req.chunks);
    out.searched = found->rings;
    out.source = "ring search (" + found->method + ")";
  } else {
    out.source = req.ringOrder.empty() ? "rank order" : "--ring";
  }
  auto lowered = passes::lowerRing(ring);
  if (!lowered)
    return lowered.takeError();
  out.schedule = std::move(*lowered);
  for (int32_t c = 0; c < ring.channels; ++c) {
    ChannelRing cr;
    if (!ring.channelOrders.empty())
      cr.order = ring.channelOrders[c];
    else if (!ring.ringOrder.empty())
      cr.order = ring.ringOrder;
    else
      for (int32_t r = 0; r < numRanks; ++r)
        cr.order.push_back(r);
    cr.chunks = ring.channelChunks.empty() ? req.chunks : ring.channelChunks[c];
    out.rings.push_back(std::move(cr));
  }
  return out;
}

/// Intra-node ring order (local indices) of the hierarchical ring: the best
/// single ring over node 0's GPUs, else 0..G-1.
std::vector<int32_t> hierLocalOrder(const topo::Topology &t,
                                    const std::vector<ir::RankId> &node0,
                                    ir::Collective c, double bytes) {
  std::vector<int32_t> order;
  algorithms::RingSearchOptions so;
  so.collective = c;
  so.bytes = bytes;
  so.channels = 1;
  analysis::LinkModel m(t);
  std::vector<int> ranks(node0.begin(), node0.end());
  if (ranks.size() >= 2) {
    auto found = algorithms::searchGroupRing(t, m, ranks, so);
    if (!found)
      llvm::consumeError(found.takeError());
    else
      for (int r : found->order)
        if (auto it = llvm::find(node0, r); it != node0.end())
          order.push_back(static_cast<int32_t>(it - node0.begin()));
  }
  if (order.size() != node0.size()) {
    order.clear();
    for (size_t l = 0; l < node0.size(); ++l)
      order.push_back(static_cast<int32_t>(l));
  }
  return order;
}

llvm::Expected<Lowered> lowerHierAlgorithm(const topo::Topology *t,
                                           const CompileRequest &req) {
  if (!t)
    return makeUserError("--algorithm hier-ring needs the topology's nodes");
  if (req.channels == 0)
    return makeUserError("--channels auto applies to --algorithm ring; give "
                         "hier-ring a number of channels");
  if (!req.ringOrder.empty() || req.rankOrder)
    return makeUserError("--ring applies to --algorithm ring, not hier-ring");
  passes::HierRingOptions o;
  o.collective = req.collective;
  o.numRanks = t->numRanks();
  o.nodes = nodeRanks(*t);
  if (o.nodes.size() >= 2 && req.collective == ir::Collective::AllReduce)
    o.localOrder = hierLocalOrder(*t, o.nodes[0], req.collective, req.bytes);
  o.channels = req.channels;
  o.chunks = req.chunks;
  o.inplace = req.inplace;
  o.name = req.name;
  auto lowered = passes::lowerHierarchicalRing(o);
  if (!lowered)
    return lowered.takeError();
  Lowered out;
  out.schedule = std::move(*lowered);
  std::vector<std::string> order;
  for (int32_t l : o.localOrder)
    order.push_back(std::to_string(l));
  out.source = llvm::formatv("{0} nodes x {1} GPUs, intra-node order {2}, "
                             "one inter-node ring per rail",
                             o.nodes.size(), o.nodes[0].size(),
                             llvm::join(order, ","))
                   .str();
  return out;
}

llvm::Expected<CompiledPlan> compileOn(const topo::Topology *t,
                                       int32_t numRanks,
                                       const CompileRequest &req,
                                       PassLogger &log) {
  if (auto err = checkRequest(req))
    return err;
  const Algorithm alg = cantFail(parseAlgorithm(req.algorithm));
  const bool each = req.verifyEach;
  Schedule s;
  Lowered info;
  auto run = [&](llvm::StringRef pass, bool verify) {
    return runPass(pass, s, log, verify, passNamed(pass, req));
  };
  // The one dispatch over algorithms: each lowering produces unfused
  // send/recv/reduce chains; the passes after it are shared.
  std::string lowerName;
  std::function<llvm::Expected<Lowered>()> lowering;
  switch (alg) {
  case Algorithm::Ring:
    lowerName = "lower-ring";
    lowering = [&] { return lowerRingAlgorithm(t, numRanks, req); };
    break;
  case Algorithm::HierRing:
    lowerName = "lower-hier-ring";
    lowering = [&] { return lowerHierAlgorithm(t, req); };
    break;
  }
  auto lower = [&](Schedule &out) -> llvm::Error {
    auto lowered = lowering();
    if (!lowered)
      return lowered.takeError();
    info = std::move(*lowered);
    out = std::move(info.schedule);
    return llvm::Error::success();
  };

  // Algorithm -> unfused send/recv/reduce chains, one chain per channel.
  if (auto err = runPass(lowerName, s, log, /*verify=*/false, lower))
    return err;
  // Always: a lowering bug must be caught where it is made, with its IR.
  if (llvm::Error problems = ir::verifySchedule(s))
    return passBroke(lowerName, std::nullopt, s, std::move(problems));
  // MSCCL's fused primitives (rcs, rrs, rrc, rrcs) halve steps and copies.
  if (auto err = run("fuse", each))
    return err;
  // Each ring gets its own MSCCL channel (its own connections and FIFOs).
  if (auto err = run("assign-channels", each))
    return err;
  // Chains longer than the step limit (large rings) continue on extra
  // channels, each segment in its own threadblock.
  if (auto err = run("split-channels", each))
    return err;
  // One send and one receive peer per threadblock; enforces the step limits.
  if (auto err = run("assign-threadblocks", each))
    return err;
  // MSCCL steps carry one dependency; the rest become nops. Always verified:
  // it is cheap, and this schedule is the product.
  if (auto err = run("legalize-dependencies", /*verify=*/true))
    return err;
  CompiledPlan plan;
  plan.schedule = std::move(s);
  plan.algorithm = algorithmName(alg).str();
  plan.rings = std::move(info.rings);
  plan.searched = std::move(info.searched);
  plan.source = std::move(info.source);
  return plan;
}

} // namespace

llvm::Expected<Algorithm> parseAlgorithm(llvm::StringRef name) {
  if (name == "ring")
    return Algorithm::Ring;
  if (name == "hier-ring")
    return Algorithm::HierRing;
  return makeUserError("unknown --algorithm '" + name +
                       "'; expected 'ring' or 'hier-ring'");
}

llvm::StringRef algorithmName(Algorithm a) {
  switch (a) {
  case Algorithm::Ring:
    return "ring";
  case Algorithm::HierRing:
    return "hier-ring";
  }
  llvm_unreachable("unknown algorithm");
}

llvm::Expected<CompiledPlan>
compile(int32_t numRanks, const CompileRequest &req, PassLogger &log) {
  return compileOn(nullptr, numRanks, req, log);
}

llvm::Expected<CompiledPlan> compile(const topo::Topology &t,
                                     const CompileRequest &req,
                                     PassLogger &log) {
  return compileOn(&t, t.numRanks(), req, log);
}

llvm::Expected<Schedule> lowerHierRingFor(const topo::Topology &t,
                                          ir::Collective c, int32_t channels,
                                          int32_t chunks, bool inplace,
                                          double bytes) {
  CompileRequest req;
  req.algorithm = "hier-ring";
  req.collective = c;
  req.channels = channels;
  req.chunks = chunks;
  req.inplace = inplace;
  req.bytes = bytes;
  auto low = lowerHierAlgorithm(&t, req);
  if (!low)
    return low.takeError();
  return std::move(low->schedule);
}

llvm::Expected<backends::NcclGraphOutput>
ncclGraphForRings(const topo::Topology &t,
                  llvm::ArrayRef<analysis::RingChannel> rings,
                  ir::Collective c, double bytes, analysis::LinkModel &m) {
  auto cost = analysis::estimateRings(rings, c, bytes, m);
  if (!cost)
    return cost.takeError();
  std::vector<backends::NcclGraphChannel> chans;
  double perChannel = 0, inter = std::numeric_limits<double>::infinity();
  const int n = t.numRanks();
  const int steps = analysis::ringSteps(c, n);
  // Per-hop rate of the whole set, split evenly over the channels.
  if (cost->bandwidthTime > 0)
    perChannel = steps * bytes / n / cost->bandwidthTime / rings.size();
  for (const analysis::RingChannel &rc : rings) {
    backends::NcclGraphChannel ch;
    ch.order = rc.order;
    for (size_t i = 0; i < rc.order.size(); ++i) {
      analysis::NicPair np =
          i < rc.nics.size() ? rc.nics[i] : analysis::NicPair{};
      ch.nics.push_back({np.out, np.in});
      if (np.isSet())
        inter = std::min(inter, analysis::hopFlow(rc, i, m).bandwidth);
    }
    chans.push_back(std::move(ch));
  }
  backends::NcclGraphOptions go;
  go.speedIntra = perChannel / 1e9;
  go.speedInter = std::isfinite(inter) ? std::min(inter, perChannel) / 1e9
                                       : go.speedIntra;
  return backends::writeNcclGraphXml(t, chans, go);
}

llvm::ArrayRef<llvm::StringRef> passNames() { return kPassNames; }

llvm::Expected<Schedule> runSinglePass(llvm::StringRef name, Schedule s,
                                       const CompileRequest &req,
                                       PassLogger &log) {
  if (!llvm::is_contained(kPassNames, name)) {
    std::string hint = nearestMatch(name, kPassNames);
    std::string names;
    for (llvm::StringRef n : kPassNames)
      names += (names.empty() ? "" : ", ") + n.str();
    return makeUserError(
        "unknown pass '" + name + "'" +
        (hint.empty() ? "" : "; did you mean '" + hint + "'?") +
        " (passes: " + names + ")");
  }
  if (auto err = checkRequest(req))
    return err;
  Stage expected = name == "fuse"              ? Stage::Lowered
                   : name == "assign-channels" ? Stage::Fused
                   : name == "assign-threadblocks" || name == "split-channels"
                       ? Stage::ChannelsAssigned
                       : Stage::ThreadblocksAssigned;
  if (s.stage != expected && !(name == "fuse" && s.stage == Stage::Fused))
    return makeUserError("pass '" + name + "' expects a schedule at stage '" +
                         ir::stageName(expected) +
                         "', the input is at stage '" + ir::stageName(s.stage) +
                         "'");
  // The passes assume a valid input; a failure afterwards is then theirs.
  if (llvm::Error problems = ir::verifySchedule(s))
    return makeUserError("the input schedule is invalid:\n" +
                         llvm::toString(std::move(problems)));
  for (size_t r = 0; r < s.ranks.size(); ++r)
    for (size_t i = 0; i < s.ranks[r].ops.size(); ++i)
      for (ir::OpId d : s.ranks[r].ops[i].deps)
        if (static_cast<size_t>(d) >= i && name != "fuse")
          return makeUserError(llvm::formatv(
              "rank {0} %{1} depends on the later op %{2}: pass '{3}' needs "
              "every dependency to point to an earlier op",
              r, i, d, name));
  if (auto err = runPass(name, s, log, /*verify=*/true, passNamed(name, req)))
    return err;
  return s;
}

} // namespace topocc
