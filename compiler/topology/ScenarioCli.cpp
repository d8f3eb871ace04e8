//===- compiler/topology/ScenarioCli.cpp - Scenarios from the command line ===//
//
// Command-line ops become a ScenarioDef on a copy of the topology, applied
// by applyScenario (Scenario.h), so both paths share every check and message.
//
//===----------------------------------------------------------------------===//

#include "compiler/topology/ScenarioCli.h"

#include "compiler/topology/Scenario.h"
#include "support/Diagnostics.h"

#include "llvm/ADT/StringExtras.h"

namespace topocc::topo {

namespace {

llvm::Error checkSelector(llvm::StringRef option, llvm::StringRef sel,
                          bool isFail) {
  if (auto problem = checkSelectorSyntax(sel, isFail))
    return makeUserError(option + ": " + *problem);
  return llvm::Error::success();
}

/// Splits "SEL=VALUE" at the last '='.
llvm::Expected<std::pair<std::string, std::string>>
splitAssignment(llvm::StringRef option, llvm::StringRef arg,
                llvm::StringRef example) {
  size_t eq = arg.rfind('=');
  if (eq == llvm::StringRef::npos || arg.substr(0, eq).trim().empty() ||
      arg.substr(eq + 1).trim().empty())
    return makeUserError(option + " '" + arg + "': expected SELECTOR=VALUE, "
                         "e.g. " + example);
  return std::make_pair(arg.substr(0, eq).trim().str(),
                        arg.substr(eq + 1).trim().str());
}

} // namespace

llvm::Expected<ScenarioOp> parseFailOption(llvm::StringRef arg) {
  ScenarioOp op;
  op.kind = ScenarioOp::Fail;
  op.selector = arg.trim().str();
  if (auto err = checkSelector("--fail", op.selector, /*isFail=*/true))
    return err;
  return op;
}

llvm::Expected<ScenarioOp> parseScaleOption(llvm::StringRef arg) {
  auto kv = splitAssignment("--scale", arg, "'node0/gpu*--node0/nvs*=2x'");
  if (!kv)
    return kv.takeError();
  ScenarioOp op;
  op.kind = ScenarioOp::Scale;
  op.selector = kv->first;
  if (auto err = checkSelector("--scale", op.selector, /*isFail=*/false))
    return err;
  auto q = parseQuantity(kv->second, QuantityKind::Factor, "bandwidth factor");
  if (!q)
    return makeUserError("--scale '" + arg +
                         "': " + llvm::toString(q.takeError()));
  if (!(q->value > 0) || q->hasSign)
    return makeUserError("--scale '" + arg +
                         "': the bandwidth factor must be positive, got '" +
                         kv->second + "'");
  op.bandwidth = *q;
  return op;
}

llvm::Expected<ScenarioOp> parseSetOption(llvm::StringRef arg) {
  auto kv = splitAssignment("--set", arg, "'leaf*--spine*=200Gb/s'");
  if (!kv)
    return kv.takeError();
  ScenarioOp op;
  op.kind = ScenarioOp::Set;
  op.selector = kv->first;
  if (auto err = checkSelector("--set", op.selector, /*isFail=*/false))
    return err;
  // A time unit sets the latency; anything else must be a bandwidth.
  auto lat = parseQuantity(kv->second, QuantityKind::Time, "latency");
  if (lat) {
    if (!lat->hasSign && lat->value < 0)
      return makeUserError("--set '" + arg + "': latency must not be negative");
    op.latency = *lat;
    return op;
  }
  llvm::consumeError(lat.takeError());
  auto bw = parseQuantity(kv->second, QuantityKind::Bandwidth, "bandwidth");
  if (!bw)
    return makeUserError("--set '" + arg +
                         "': " + llvm::toString(bw.takeError()));
  if (!bw->hasSign && !(bw->value > 0))
    return makeUserError("--set '" + arg + "': bandwidth must be positive");
  op.bandwidth = *bw;
  return op;
}

llvm::Expected<std::vector<ScenarioOp>>
parseScenarioOptions(llvm::ArrayRef<std::string> fails,
                     llvm::ArrayRef<std::string> scales,
                     llvm::ArrayRef<std::string> sets) {
  std::vector<ScenarioOp> ops;
  auto add = [&](llvm::ArrayRef<std::string> args,
                 llvm::Expected<ScenarioOp> (*parse)(llvm::StringRef))
      -> llvm::Error {
    for (const std::string &a : args) {
      auto op = parse(a);
      if (!op)
        return op.takeError();
      ops.push_back(std::move(*op));
    }
    return llvm::Error::success();
  };
  if (auto err = add(fails, parseFailOption))
    return err;
  if (auto err = add(scales, parseScaleOption))
    return err;
  if (auto err = add(sets, parseSetOption))
    return err;
  return ops;
}

std::string describeScenarioOps(llvm::ArrayRef<ScenarioOp> ops) {
  std::vector<std::string> parts;
  for (const ScenarioOp &op : ops) {
    switch (op.kind) {
    case ScenarioOp::Fail:
      parts.push_back("fail " + op.selector);
      break;
    case ScenarioOp::Scale:
    case ScenarioOp::Set: {
      std::string s =
          (op.kind == ScenarioOp::Scale ? "scale " : "set ") + op.selector;
      if (op.bandwidth)
        s += " bandwidth " + op.bandwidth->text();
      if (op.latency)
        s += " latency " + op.latency->text();
      parts.push_back(s);
      break;
    }
    case ScenarioOp::Sweep: {
      std::vector<std::string> vals;
      for (const Quantity &q : op.sweepValues)
        vals.push_back(q.text());
      parts.push_back("sweep " + op.selector + " bandwidth [" +
                      llvm::join(vals, ", ") + "]");
      break;
    }
    case ScenarioOp::Extends:
      parts.push_back("extends " + llvm::join(op.extends, ", "));
      break;
    }
  }
  return llvm::join(parts, "; ");
}

llvm::Error applyScenarioOps(Topology &t, llvm::StringRef name,
                             llvm::ArrayRef<ScenarioOp> ops) {
  Topology copy = t;
  // Replace a scenario of the same name (e.g. an expanded sweep member).
  auto &defs = copy.mutableScenarios();
  std::string key = name.str();
  llvm::erase_if(defs, [&](const ScenarioDef &d) { return d.name == key; });
  ScenarioDef def;
  def.name = key;
  def.ops.assign(ops.begin(), ops.end());
  defs.push_back(std::move(def));
  if (auto err = applyScenario(copy, name))
    return err;
  // Keep the file's own scenario list as it was.
  copy.mutableScenarios() = t.scenarios();
  t = std::move(copy);
  return llvm::Error::success();
}

llvm::Expected<std::vector<ExpandedScenario>>
expandScenario(const Topology &t, llvm::StringRef name) {
  const ScenarioDef *def = t.findScenario(name);
  if (!def) {
    // Same message as applying an unknown scenario.
    Topology copy = t;
    if (auto err = applyScenario(copy, name))
      return err;
    return std::vector<ExpandedScenario>{};
  }
  std::vector<ExpandedScenario> out{{def->name, {}}};
  for (const ScenarioOp &op : def->ops) {
    if (op.kind != ScenarioOp::Sweep) {
      for (ExpandedScenario &e : out)
        e.ops.push_back(op);
      continue;
    }
    std::vector<ExpandedScenario> next;
    for (const ExpandedScenario &e : out)
      for (const Quantity &q : op.sweepValues) {
        ExpandedScenario x = e;
        ScenarioOp set;
        set.kind = ScenarioOp::Set;
        set.selector = op.selector;
        set.selectorLoc = op.selectorLoc;
        set.loc = op.loc;
        set.bandwidth = q;
        set.bandwidthLoc = op.bandwidthLoc;
        x.ops.push_back(std::move(set));
        bool hasBracket = llvm::StringRef(x.name).endswith("]");
        std::string item = op.selector + "=" + q.text();
        if (hasBracket)
          x.name.insert(x.name.size() - 1, ", " + item);
        else
          x.name += "[" + item + "]";
        next.push_back(std::move(x));
      }
    out = std::move(next);
  }
  return out;
}

} // namespace topocc::topo
