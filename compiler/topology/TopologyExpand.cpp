//===- compiler/topology/TopologyExpand.cpp - Expand declarations ---------===//
//
// Counting (size limits before expansion) and expansion of templates, nodes
// and the fabric into the Topology model.
//
//===----------------------------------------------------------------------===//

#include "compiler/topology/TopologyDecl.h"
#include "compiler/topology/TopologyParser.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"

namespace topocc::topo {

namespace {
bool validName(llvm::StringRef s, bool allowSlash) {
  if (s.empty() || s.contains("--"))
    return false;
  for (char c : s)
    if (!(llvm::isAlnum(c) || c == '_' || c == '-' || c == '.' || c == ':' ||
          (allowSlash && c == '/')))
      return false;
  return true;
}
} // namespace

//===----------------------------------------------------------------------===//
// Counting and expansion
//===----------------------------------------------------------------------===//

void Expander::countBody(Body &b) {
  if (b.counted)
    return;
  b.counted = true;
  for (const auto &d : b.devices)
    b.deviceCount = saturatingAdd(b.deviceCount, d->binding.count());
  for (const auto &l : b.links)
    b.linkCount = saturatingAdd(b.linkCount, l->binding.count());
}

bool Expander::checkSizes() {
  uint64_t devices = 0, links = 0;
  bool ok = true;
  auto limitMsg = [](llvm::StringRef what, uint64_t n, llvm::StringRef kind,
                     uint64_t limit) {
    std::string count = n >= kCountSaturation ? std::string("more than 2^62")
                                              : std::to_string(n);
    return llvm::formatv("{0} would expand to {1} {2}, more than the limit of "
                         "{3}; refused before expansion",
                         what, count, kind, limit)
        .str();
  };
  for (const std::string &name : templateOrder) {
    Body &b = *templates[name];
    countBody(b);
    if (b.deviceCount > maxDevices) {
      error(b.loc, limitMsg("template '" + name + "'", b.deviceCount,
                            "devices", maxDevices));
      ok = false;
    } else if (b.linkCount > maxLinks) {
      error(b.loc, limitMsg("template '" + name + "'", b.linkCount, "links",
                            maxLinks));
      ok = false;
    }
  }
  SourceLoc biggestDevLoc{file, 1, 1}, biggestLinkLoc{file, 1, 1};
  uint64_t biggestDev = 0, biggestLink = 0;
  for (const auto &nd : nodeDecls) {
    uint64_t count = nd->binding.count();
    uint64_t perDev = 0, perLink = 0;
    if (nd->tmpl) {
      countBody(*nd->tmpl);
      perDev = saturatingAdd(perDev, nd->tmpl->deviceCount);
      perLink = saturatingAdd(perLink, nd->tmpl->linkCount);
    }
    if (nd->inlineBody) {
      countBody(*nd->inlineBody);
      perDev = saturatingAdd(perDev, nd->inlineBody->deviceCount);
      perLink = saturatingAdd(perLink, nd->inlineBody->linkCount);
    }
    uint64_t d = saturatingMul(count, perDev), l = saturatingMul(count, perLink);
    // Names alone count too: a node without devices is still expanded.
    d = saturatingAdd(d, count > maxDevices ? count : 0);
    devices = saturatingAdd(devices, d);
    links = saturatingAdd(links, l);
    if (d > biggestDev)
      biggestDev = d, biggestDevLoc = nd->loc;
    if (l > biggestLink)
      biggestLink = l, biggestLinkLoc = nd->loc;
  }
  if (fabric) {
    countBody(*fabric);
    devices = saturatingAdd(devices, fabric->deviceCount);
    links = saturatingAdd(links, fabric->linkCount);
    for (const auto &d : fabric->devices)
      if (d->binding.count() > biggestDev)
        biggestDev = d->binding.count(), biggestDevLoc = d->loc;
    for (const auto &l : fabric->links)
      if (l->binding.count() > biggestLink)
        biggestLink = l->binding.count(), biggestLinkLoc = l->loc;
  }
  if (generator && generator->ok) {
    uint64_t d = saturatingAdd(generator->gpuCount(), generator->switchCount());
    uint64_t l = generator->linkCount();
    devices = saturatingAdd(devices, d);
    links = saturatingAdd(links, l);
    if (d > biggestDev)
      biggestDev = d, biggestDevLoc = generator->loc;
    if (l > biggestLink)
      biggestLink = l, biggestLinkLoc = generator->loc;
  }
  if (devices > maxDevices) {
    error(biggestDevLoc,
          limitMsg("topology", devices, "devices", maxDevices));
    ok = false;
  }
  if (links > maxLinks) {
    error(biggestLinkLoc, limitMsg("topology", links, "links", maxLinks));
    ok = false;
  }
  return ok;
}

void Expander::expandBody(Body &b, bool isFabric) {
  if (b.expanded)
    return;
  b.expanded = true;
  std::unordered_map<std::string, int> local;
  for (const auto &d : b.devices) {
    d->binding.forEach([&](llvm::ArrayRef<uint64_t> idx) {
      std::string name;
      PatternError pe;
      if (!instantiate(d->name.pattern, d->binding, idx, name, pe)) {
        patternError(d->name, pe);
        b.ok = false;
        return false;
      }
      if (!validName(name, /*allowSlash=*/false)) {
        error(d->name.base, "invalid device name '" + name +
                                "': names may contain letters, digits, '_', "
                                "'-', '.' and ':' (not '--')");
        b.ok = false;
        return false;
      }
      auto [it, inserted] =
          local.emplace(name, static_cast<int>(b.localDevices.size()));
      if (!inserted) {
        const DeviceDecl *first = b.localDevices[it->second].decl;
        error(d->name.base,
              llvm::formatv("duplicate device name '{0}'{1} (first defined "
                            "at line {2})",
                            name,
                            b.name.empty() ? std::string()
                                           : " in template '" + b.name + "'",
                            first->loc.line)
                  .str());
        b.ok = false;
        return !tooManyErrors();
      }
      b.localDevices.push_back({name, d.get()});
      return true;
    });
  }
  if (isFabric)
    return; // fabric links resolve against the global names
  std::vector<llvm::StringRef> localNames;
  for (const LocalDevice &d : b.localDevices)
    localNames.push_back(d.name);
  for (const auto &l : b.links) {
    l->binding.forEach([&](llvm::ArrayRef<uint64_t> idx) {
      std::string names[2];
      const PatternAt *ends[2] = {&l->from, &l->to};
      int devs[2] = {-1, -1};
      for (int k = 0; k < 2; ++k) {
        PatternError pe;
        if (!instantiate(ends[k]->pattern, l->binding, idx, names[k], pe)) {
          patternError(*ends[k], pe);
          b.ok = false;
          return false;
        }
        auto it = local.find(names[k]);
        if (it == local.end()) {
          std::string near = nearestMatch(names[k], localNames);
          std::string msg = "unknown device '" + names[k] + "' in link '" +
                            (k == 0 ? "from" : "to") + "'";
          if (!b.name.empty())
            msg += " (template '" + b.name + "')";
          if (!near.empty())
            msg += "; did you mean '" + near + "'?";
          error(ends[k]->base, msg);
          b.ok = false;
          return false;
        }
        devs[k] = it->second;
      }
      if (devs[0] == devs[1]) {
        error(l->loc, "link connects '" + names[0] + "' to itself");
        b.ok = false;
        return false;
      }
      b.localLinks.push_back({devs[0], devs[1], l.get()});
      return true;
    });
  }
}

int Expander::addDevice(std::string fullName, std::string node,
                      std::string localName, int nodeIndex,
                      const DeviceDecl &decl) {
  auto [it, inserted] = byName.emplace(
      fullName, static_cast<int>(topo.mutableDevices().size()));
  if (!inserted) {
    error(decl.name.base,
          llvm::formatv("duplicate device name '{0}' (first defined at line "
                        "{1})",
                        fullName, topo.device(it->second).loc.line)
              .str());
    return -1;
  }
  Device d;
  d.name = std::move(fullName);
  d.node = std::move(node);
  d.localName = std::move(localName);
  d.kind = decl.kind;
  d.switchKind = decl.switchKind;
  d.model = decl.model;
  d.nodeIndex = nodeIndex;
  d.loc = decl.loc;
  topo.mutableDevices().push_back(std::move(d));
  return it->second;
}

void Expander::addLink(int from, int to, const LinkDecl &decl) {
  const LinkAttrs &a = decl.attrs;
  Link l;
  l.from = from;
  l.to = to;
  l.type = *a.type;
  l.className = decl.className;
  for (int dir = 0; dir < 2; ++dir) {
    l.bandwidth[dir] = a.bandwidth[dir]->value;
    l.bandwidthUnit[dir] = a.bandwidth[dir]->unit;
  }
  if (a.latency) {
    l.latency = a.latency->value;
    l.latencyUnit = a.latency->unit;
  }
  l.count = a.count.value_or(1);
  l.duplex = a.duplex.value_or(Duplex::Full);
  l.hasEfficiency = a.efficiency.has_value();
  l.efficiency = a.efficiency.value_or(1.0);
  l.loc = decl.loc;
  topo.mutableLinks().push_back(std::move(l));
}

void Expander::instantiateNodes() {
  llvm::StringMap<SourceLoc> nodeNames;
  for (const auto &nd : nodeDecls) {
    if (!nd->ok)
      continue;
    Body *bodies[2] = {nd->tmpl, nd->inlineBody.get()};
    bool bodiesOk = true;
    for (Body *b : bodies)
      if (b) {
        expandBody(*b, false);
        bodiesOk &= b->ok;
      }
    if (!bodiesOk)
      continue;
    nd->binding.forEach([&](llvm::ArrayRef<uint64_t> idx) {
      std::string name;
      PatternError pe;
      if (!instantiate(nd->name.pattern, nd->binding, idx, name, pe)) {
        patternError(nd->name, pe);
        return false;
      }
      if (!validName(name, false)) {
        error(nd->name.base,
              "invalid node name '" + name +
                  "': names may contain letters, digits, '_', '-', '.' and "
                  "':' (not '--')");
        return false;
      }
      auto [it, inserted] = nodeNames.try_emplace(name, nd->loc);
      if (!inserted) {
        error(nd->name.base,
              llvm::formatv("duplicate node name '{0}' (first defined at "
                            "line {1})",
                            name, it->second.line)
                  .str());
        return !tooManyErrors();
      }
      int nodeIndex = static_cast<int>(topo.nodes().size());
      Node node;
      node.name = name;
      node.templateName = nd->templateName;
      node.loc = nd->loc;
      topo.mutableNodes().push_back(node);
      for (Body *b : bodies) {
        if (!b)
          continue;
        std::vector<int> index;
        for (const LocalDevice &ld : b->localDevices) {
          int d = addDevice(name + "/" + ld.name, name, ld.name, nodeIndex,
                            *ld.decl);
          index.push_back(d);
          if (d >= 0)
            topo.mutableNodes()[nodeIndex].devices.push_back(d);
        }
        for (const LocalLink &ll : b->localLinks)
          if (index[ll.from] >= 0 && index[ll.to] >= 0)
            addLink(index[ll.from], index[ll.to], *ll.decl);
      }
      return !tooManyErrors();
    });
  }
}

void Expander::addFabric() {
  if (!fabric)
    return;
  expandBody(*fabric, /*isFabric=*/true);
  for (const LocalDevice &ld : fabric->localDevices)
    addDevice(ld.name, "", ld.name, -1, *ld.decl);
  for (const auto &l : fabric->links) {
    l->binding.forEach([&](llvm::ArrayRef<uint64_t> idx) {
      std::string names[2];
      const PatternAt *ends[2] = {&l->from, &l->to};
      int devs[2] = {-1, -1};
      for (int k = 0; k < 2; ++k) {
        PatternError pe;
        if (!instantiate(ends[k]->pattern, l->binding, idx, names[k], pe)) {
          patternError(*ends[k], pe);
          return false;
        }
        auto it = byName.find(names[k]);
        if (it == byName.end()) {
          std::string msg = "unknown device '" + names[k] + "' in link '" +
                            (k == 0 ? "from" : "to") + "'";
          if (byName.size() <= 20000) {
            std::vector<llvm::StringRef> all;
            for (const Device &d : topo.devices())
              all.push_back(d.name);
            std::string near = nearestMatch(names[k], all);
            if (!near.empty())
              msg += "; did you mean '" + near + "'?";
          }
          error(ends[k]->base, msg);
          return false;
        }
        devs[k] = it->second;
      }
      if (devs[0] == devs[1]) {
        error(l->loc, "link connects '" + names[0] + "' to itself");
        return false;
      }
      addLink(devs[0], devs[1], *l);
      return !tooManyErrors();
    });
  }
}

void Expander::expandAll() {
  // Templates are checked even when no node uses them.
  for (const std::string &t : templateOrder)
    expandBody(*templates[t], false);
  instantiateNodes();
  addGenerated(); // before the fabric, whose links may name generated GPUs
  addFabric();
  topo.reindex();
}

} // namespace topocc::topo
