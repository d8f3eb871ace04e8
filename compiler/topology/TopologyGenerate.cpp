//===- compiler/topology/TopologyGenerate.cpp - Generated fabrics ---------===//
//
// Expands a `generate:` section (docs/TopologyFormat.md, "Generated
// fabrics") into GPUs, switches and links: a grid of dimensions, each a ring
// (torus), a line (mesh), fully connected groups or a switch per group, in
// the style of ASTRA-sim's multi-dimensional network description. Counting
// is closed-form, so the size limits are checked before anything expands.
//
//===----------------------------------------------------------------------===//

#include "compiler/topology/TopologyDecl.h"

#include "llvm/Support/FormatVariadic.h"

namespace topocc::topo {

uint64_t GeneratorDecl::gpuCount() const {
  uint64_t n = 1;
  for (const GenDimension &d : dims)
    n = saturatingMul(n, d.size);
  return dims.empty() ? 0 : n;
}

uint64_t GeneratorDecl::linkCount() const {
  uint64_t n = gpuCount(), total = 0;
  for (const GenDimension &d : dims) {
    if (d.size < 2)
      continue;
    uint64_t groups = n / d.size, perGroup = 0;
    switch (d.kind) {
    case GridDim::Ring:
      perGroup = d.size == 2 ? 1 : d.size;
      break;
    case GridDim::Line:
      perGroup = d.size - 1;
      break;
    case GridDim::FullyConnected:
      perGroup = saturatingMul(d.size, d.size - 1) / 2;
      break;
    case GridDim::Switch:
      perGroup = d.size;
      break;
    }
    total = saturatingAdd(total, saturatingMul(groups, perGroup));
  }
  return total;
}

uint64_t GeneratorDecl::switchCount() const {
  uint64_t n = gpuCount(), total = 0;
  for (const GenDimension &d : dims)
    if (d.kind == GridDim::Switch && d.size >= 1)
      total = saturatingAdd(total, n / d.size);
  return total;
}

void Expander::addGenerated() {
  if (!generator || !generator->ok || generator->dims.empty())
    return;
  const GeneratorDecl &g = *generator;
  const size_t nd = g.dims.size();
  const uint64_t n = g.gpuCount();
  // coords(r): dimension 0 varies fastest.
  auto coords = [&](uint64_t r) {
    std::vector<uint64_t> c(nd);
    for (size_t d = 0; d < nd; ++d) {
      c[d] = r % g.dims[d].size;
      r /= g.dims[d].size;
    }
    return c;
  };
  auto rankOf = [&](const std::vector<uint64_t> &c) {
    uint64_t r = 0;
    for (size_t d = nd; d-- > 0;)
      r = r * g.dims[d].size + c[d];
    return r;
  };
  auto join = [](const std::vector<uint64_t> &c, size_t skip) {
    std::string s;
    for (size_t d = 0; d < c.size(); ++d) {
      if (d == skip)
        continue;
      s += (s.empty() ? "" : "_") + std::to_string(c[d]);
    }
    return s;
  };

  std::vector<int> gpu(n, -1); // device index at each linear index
  for (uint64_t r = 0; r < n; ++r) {
    std::string name = g.prefix + join(coords(r), nd);
    gpu[r] = addDevice(name, "", name, -1, g.gpu);
    if (gpu[r] < 0 || tooManyErrors())
      return;
  }
  {
    std::vector<GridDim> dims;
    for (const GenDimension &d : g.dims)
      dims.push_back({d.kind, static_cast<int>(d.size)});
    topo.setGrid(std::move(dims), gpu);
  }
  for (size_t d = 0; d < nd; ++d) {
    const GenDimension &dim = g.dims[d];
    const uint64_t s = dim.size;
    if (s < 2)
      continue;
    // One group per combination of the other coordinates: the ranks whose
    // coordinate d is 0.
    for (uint64_t r = 0; r < n; ++r) {
      std::vector<uint64_t> c = coords(r);
      if (c[d] != 0)
        continue;
      std::vector<int> members(s);
      for (uint64_t i = 0; i < s; ++i) {
        c[d] = i;
        members[i] = gpu[rankOf(c)];
      }
      switch (dim.kind) {
      case GridDim::Ring:
      case GridDim::Line: {
        bool wrap = dim.kind == GridDim::Ring && s > 2;
        for (uint64_t i = 0; i + 1 < s; ++i)
          addLink(members[i], members[i + 1], dim.link);
        if (wrap)
          addLink(members[s - 1], members[0], dim.link);
        // A ring of two: both neighbours are the same GPU, so its two
        // links are one bundle of twice the count.
        if (dim.kind == GridDim::Ring && s == 2)
          topo.mutableLinks().back().count *= 2;
        break;
      }
      case GridDim::FullyConnected:
        for (uint64_t i = 0; i < s; ++i)
          for (uint64_t j = i + 1; j < s; ++j)
            addLink(members[i], members[j], dim.link);
        break;
      case GridDim::Switch: {
        c[d] = 0;
        std::string name = llvm::formatv("sw{0}", d).str();
        std::string rest = join(c, d);
        if (!rest.empty())
          name += "_" + rest;
        int sw = addDevice(name, "", name, -1, dim.switchDecl);
        if (sw < 0)
          return;
        for (uint64_t i = 0; i < s; ++i)
          addLink(members[i], sw, dim.link);
        break;
      }
      }
      if (tooManyErrors())
        return;
    }
  }
}

} // namespace topocc::topo
