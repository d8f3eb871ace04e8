//===- compiler/topology/GpuModels.cpp - What topocc knows of each GPU ----===//

#include "compiler/topology/GpuModels.h"

#include "support/Diagnostics.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cctype>
#include <string>

namespace topocc::topo {

namespace {

constexpr double kGBs = 1e9;

// Sources: docs/MscclXml.md, "GPU models" (the vendors' whitepapers and
// datasheets). Most specific key first.
const GpuModel kModels[] = {
    {"h200", "NVIDIA H200 SXM", GpuVendor::Nvidia, 132, 4800 * kGBs},
    {"h100-pcie", "NVIDIA H100 PCIe", GpuVendor::Nvidia, 114, 2000 * kGBs},
    {"h100", "NVIDIA H100 SXM5", GpuVendor::Nvidia, 132, 3350 * kGBs},
    {"a100-pcie", "NVIDIA A100 PCIe 80GB", GpuVendor::Nvidia, 108,
     1935 * kGBs},
    {"a100", "NVIDIA A100 SXM4 80GB", GpuVendor::Nvidia, 108, 2039 * kGBs},
    {"a10", "NVIDIA A10", GpuVendor::Nvidia, 72, 600 * kGBs},
    {"v100", "NVIDIA V100 (SXM2, SXM3, PCIe)", GpuVendor::Nvidia, 80,
     900 * kGBs},
    {"mi300x", "AMD Instinct MI300X", GpuVendor::Amd, 304, 5300 * kGBs},
    {"mi250x", "AMD Instinct MI250X, one GCD", GpuVendor::Amd, 110,
     1638 * kGBs},
    {"mi250", "AMD Instinct MI250, one GCD", GpuVendor::Amd, 104, 1638 * kGBs},
};

bool matches(llvm::StringRef lower, llvm::StringRef key) {
  for (size_t at = lower.find(key); at != llvm::StringRef::npos;
       at = lower.find(key, at + 1)) {
    size_t end = at + key.size();
    if (end == lower.size() ||
        !std::isdigit(static_cast<unsigned char>(lower[end])))
      return true;
  }
  return false;
}

} // namespace

llvm::StringRef gpuVendorName(GpuVendor v) {
  switch (v) {
  case GpuVendor::Nvidia:
    return "nvidia";
  case GpuVendor::Amd:
    return "amd";
  }
  llvm_unreachable("unknown GPU vendor");
}

llvm::ArrayRef<GpuModel> gpuModels() { return kModels; }

const GpuModel *findGpuModel(llvm::StringRef model) {
  if (model.empty())
    return nullptr;
  std::string lower = model.lower();
  for (const GpuModel &m : kModels)
    if (matches(lower, m.key))
      return &m;
  return nullptr;
}

llvm::Expected<int32_t> targetSmCount(const Topology &t) {
  int32_t best = 0;
  for (int r = 0; r < t.numRanks(); ++r) {
    const Device &d = t.device(t.rankDevice(r));
    const GpuModel *m = findGpuModel(d.model);
    if (!m) {
      std::string what =
          d.model.empty()
              ? llvm::formatv("GPU '{0}' (rank {1}) has no model", d.name, r)
                    .str()
              : llvm::formatv("the GPU model '{0}' of '{1}' (rank {2}) is "
                              "not one topocc knows",
                              d.model, d.name, r)
                    .str();
      return makeUserError(
          llvm::formatv("topology '{0}': {1}, so the SM count of the target "
                        "is unknown (docs/MscclXml.md, GPU models); pass "
                        "--sm-count N with its SM (CU) count",
                        t.name(), what)
              .str());
    }
    best = best > 0 ? std::min(best, m->smCount) : m->smCount;
  }
  return best;
}

std::optional<GpuVendor> targetGpuVendor(const Topology &t) {
  std::optional<GpuVendor> vendor;
  for (int r = 0; r < t.numRanks(); ++r) {
    const GpuModel *m = findGpuModel(t.device(t.rankDevice(r)).model);
    if (!m || (vendor && *vendor != m->vendor))
      return std::nullopt;
    vendor = m->vendor;
  }
  return vendor;
}

} // namespace topocc::topo
