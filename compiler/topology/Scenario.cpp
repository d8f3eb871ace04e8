//===- compiler/topology/Scenario.cpp - What-if patches -------------------===//

#include "compiler/topology/Scenario.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <functional>

namespace topocc::topo {

bool globMatch(llvm::StringRef p, llvm::StringRef s) {
  // Iterative wildcard match with backtracking to the last '*'.
  size_t pi = 0, si = 0, star = llvm::StringRef::npos, mark = 0;
  while (si < s.size()) {
    if (pi < p.size() && (p[pi] == s[si] || (p[pi] == '?' && s[si] != '/'))) {
      ++pi, ++si;
    } else if (pi < p.size() && p[pi] == '*') {
      star = pi++;
      mark = si;
    } else if (star != llvm::StringRef::npos && s[mark] != '/') {
      pi = star + 1;
      si = ++mark;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == '*')
    ++pi;
  return pi == p.size();
}

bool selectorMatchesDevice(llvm::StringRef sel, const Device &d) {
  if (sel.contains('/'))
    return globMatch(sel, d.name);
  return globMatch(sel, d.localName);
}

namespace {
struct LinkSel {
  std::string a, b;
  bool directed = false;
  bool isLink = false;
};

LinkSel splitSelector(llvm::StringRef s) {
  LinkSel r;
  size_t und = s.find("--"), dir = s.find("->");
  if (und == llvm::StringRef::npos && dir == llvm::StringRef::npos) {
    r.a = s.str();
    return r;
  }
  r.isLink = true;
  r.directed = und == llvm::StringRef::npos;
  size_t at = r.directed ? dir : und;
  r.a = s.substr(0, at).trim().str();
  r.b = s.substr(at + 2).trim().str();
  return r;
}
} // namespace

std::optional<std::string> checkSelectorSyntax(llvm::StringRef s,
                                               bool isFail) {
  if (s.trim().empty())
    return std::string("empty selector");
  size_t ops = 0;
  for (size_t i = 0; i + 1 < s.size(); ++i)
    if ((s[i] == '-' && s[i + 1] == '-') || (s[i] == '-' && s[i + 1] == '>'))
      ++ops, ++i;
  if (ops > 1)
    return "malformed selector '" + s.str() +
           "': a link selector has one '--' or '->'";
  LinkSel l = splitSelector(s);
  if (l.isLink && (l.a.empty() || l.b.empty()))
    return "malformed selector '" + s.str() +
           "': expected 'A--B' or 'A->B' with both ends";
  if (isFail && l.directed)
    return "'fail' takes a device or an undirected link 'A--B'; a link "
           "cannot fail in one direction only: '" +
           s.str() + "'";
  if (!isFail && !l.isLink)
    return "links selector '" + s.str() +
           "' must name links: 'A--B' (either direction) or 'A->B' (one "
           "direction)";
  return std::nullopt;
}

std::optional<std::pair<SourceLoc, std::string>>
findExtendsCycle(const Topology &t) {
  const auto &defs = t.scenarios();
  std::vector<int> state(defs.size(), 0); // 0 new, 1 on stack, 2 done
  std::vector<std::string> stack;
  std::optional<std::pair<SourceLoc, std::string>> found;
  std::function<void(size_t)> visit = [&](size_t i) {
    state[i] = 1;
    stack.push_back(defs[i].name);
    for (const ScenarioOp &op : defs[i].ops)
      for (size_t k = 0; k < op.extends.size() && !found; ++k) {
        for (size_t j = 0; j < defs.size(); ++j) {
          if (defs[j].name != op.extends[k])
            continue;
          if (state[j] == 1) {
            std::string path;
            auto it = llvm::find(stack, defs[j].name);
            for (; it != stack.end(); ++it)
              path += *it + " -> ";
            path += defs[j].name;
            found = {op.extendsLocs[k].loc,
                     "scenario '" + defs[j].name +
                         "' extends itself: " + path};
          } else if (state[j] == 0) {
            visit(j);
          }
        }
      }
    stack.pop_back();
    state[i] = 2;
  };
  for (size_t i = 0; i < defs.size() && !found; ++i)
    if (state[i] == 0)
      visit(i);
  return found;
}

namespace {

class Applier {
public:
  Applier(Topology &t, DiagnosticList &diags) : t(t), diags(diags) {}

  bool apply(const ScenarioDef &def, std::vector<std::string> &stack) {
    if (llvm::is_contained(stack, def.name)) {
      error(def.loc, "scenario '" + def.name + "' extends itself");
      return false;
    }
    stack.push_back(def.name);
    bool ok = true;
    for (const ScenarioOp &op : def.ops) {
      ok &= applyOp(def, op, stack);
      if (!ok)
        break;
    }
    stack.pop_back();
    return ok;
  }

private:
  void error(const Located &l, std::string msg) {
    Diagnostic d;
    d.loc = l.loc;
    d.message = std::move(msg);
    d.sourceLine = l.sourceLine;
    diags.add(std::move(d));
  }

  /// Directions of link `i` selected by `sel`: bit 0 fwd, bit 1 rev.
  int linkDirs(const LinkSel &sel, const Link &l) const {
    const Device &f = t.device(l.from), &to = t.device(l.to);
    bool fwd = selectorMatchesDevice(sel.a, f) &&
               selectorMatchesDevice(sel.b, to);
    bool rev = selectorMatchesDevice(sel.a, to) &&
               selectorMatchesDevice(sel.b, f);
    if (sel.directed)
      return (fwd ? 1 : 0) | (rev ? 2 : 0);
    return fwd || rev ? 3 : 0;
  }

  bool applyOp(const ScenarioDef &def, const ScenarioOp &op,
               std::vector<std::string> &stack) {
    switch (op.kind) {
    case ScenarioOp::Extends: {
      for (size_t k = 0; k < op.extends.size(); ++k) {
        const ScenarioDef *other = t.findScenario(op.extends[k]);
        if (!other) {
          error(op.extendsLocs[k],
                "unknown scenario '" + op.extends[k] + "' in 'extends'");
          return false;
        }
        if (!apply(*other, stack))
          return false;
      }
      return true;
    }
    case ScenarioOp::Sweep:
      error(op.loc, "scenario '" + def.name +
                        "': applying a 'sweep' is not yet supported (it "
                        "describes a family of topologies, one per value)");
      return false;
    case ScenarioOp::Fail:
      return applyFail(def, op);
    case ScenarioOp::Scale:
    case ScenarioOp::Set:
      return applyChange(op);
    }
    return false;
  }

  bool applyFail(const ScenarioDef &def, const ScenarioOp &op) {
    LinkSel sel = splitSelector(op.selector);
    std::vector<bool> removeDev(t.devices().size(), false);
    std::vector<bool> removeLink(t.links().size(), false);
    bool any = false;
    if (sel.isLink) {
      for (size_t i = 0; i < t.links().size(); ++i)
        if (linkDirs(sel, t.link(i))) {
          removeLink[i] = true;
          any = true;
        }
    } else {
      for (size_t i = 0; i < t.devices().size(); ++i)
        if (selectorMatchesDevice(sel.a, t.device(i))) {
          removeDev[i] = true;
          any = true;
        }
    }
    if (!any) {
      error(op.selectorLoc, "selector '" + op.selector + "' matches no " +
                                (sel.isLink ? "link" : "device"));
      return false;
    }
    t.removeDevicesAndLinks(removeDev, removeLink);
    if (t.numRanks() == 0) {
      error(op.loc, "scenario '" + def.name + "' fails every GPU");
      return false;
    }
    DiagnosticList cut;
    checkConnectivity(t, cut, op.selectorLoc.loc,
                      "after 'fail: " + op.selector + "' in scenario '" +
                          def.name + "', ");
    if (cut.hasErrors()) {
      for (Diagnostic d : cut.all()) {
        d.sourceLine = op.selectorLoc.sourceLine;
        diags.add(std::move(d));
      }
      return false;
    }
    return true;
  }

  bool applyChange(const ScenarioOp &op) {
    LinkSel sel = splitSelector(op.selector);
    bool any = false;
    auto &links = t.mutableLinks();
    for (Link &l : links) {
      int dirs = linkDirs(sel, l);
      if (!dirs)
        continue;
      any = true;
      if (l.duplex == Duplex::Half)
        dirs = 3; // one shared capacity
      if (op.bandwidth) {
        for (int dir = 0; dir < 2; ++dir) {
          if (!(dirs & (1 << dir)))
            continue;
          double v = l.bandwidth[dir];
          if (op.kind == ScenarioOp::Scale)
            v *= op.bandwidth->value;
          else if (op.bandwidth->hasSign)
            v += op.bandwidth->value;
          else {
            v = op.bandwidth->value;
            l.bandwidthUnit[dir] = op.bandwidth->unit;
          }
          if (!(v > 0)) {
            error(op.bandwidthLoc,
                  "bandwidth of link " + t.device(l.from).name + "--" +
                      t.device(l.to).name + " would become " +
                      formatInUnit(v, l.bandwidthUnit[dir]) +
                      "; it must stay positive (use 'fail' to remove it)");
            return false;
          }
          l.bandwidth[dir] = v;
        }
      }
      if (op.latency) {
        double v = l.latency;
        if (op.kind == ScenarioOp::Scale)
          v *= op.latency->value;
        else if (op.latency->hasSign)
          v += op.latency->value;
        else {
          v = op.latency->value;
          l.latencyUnit = op.latency->unit;
        }
        if (v < 0) {
          error(op.latencyLoc, "latency of link " + t.device(l.from).name +
                                   "--" + t.device(l.to).name +
                                   " would become negative (" +
                                   formatInUnit(v, l.latencyUnit) + ")");
          return false;
        }
        l.latency = v;
      }
    }
    if (!any) {
      error(op.selectorLoc,
            "selector '" + op.selector + "' matches no link");
      return false;
    }
    return true;
  }

  Topology &t;
  DiagnosticList &diags;
};

} // namespace

llvm::Error applyScenario(Topology &t, llvm::StringRef name) {
  const ScenarioDef *def = t.findScenario(name);
  if (!def) {
    std::vector<llvm::StringRef> names;
    for (const ScenarioDef &d : t.scenarios())
      names.push_back(d.name);
    if (names.empty())
      return makeUserError("unknown scenario '" + name + "': " +
                           t.fileName() + " defines no scenarios");
    std::string near = nearestMatch(name, names);
    return makeUserError("unknown scenario '" + name + "'" +
                         (near.empty() ? std::string()
                                       : "; did you mean '" + near + "'?") +
                         "; known scenarios: " + llvm::join(names, ", "));
  }
  Topology copy = t;
  DiagnosticList diags;
  Applier applier(copy, diags);
  std::vector<std::string> stack;
  // Copy the definition: applying removes nothing from the scenario list, but
  // keep `def` independent of `copy`.
  ScenarioDef d = *def;
  if (!applier.apply(d, stack) || diags.hasErrors())
    return diags.takeError();
  copy.mutableApplied().push_back(name.str());
  t = std::move(copy);
  return llvm::Error::success();
}

} // namespace topocc::topo
