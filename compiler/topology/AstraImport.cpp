//===- compiler/topology/AstraImport.cpp - ASTRA-sim networks -------------===//
//
// See AstraImport.h. ASTRA-sim's analytical backend reads bandwidth in
// "GB/s" and converts it with 2^30 bytes per GB, so the numbers are GiB/s;
// the topology written here keeps them, in GiB/s, and says so. Latency is
// in nanoseconds. Ring, FullyConnected and Switch map to the generator's
// ring, fully-connected and switch dimensions.
//
//===----------------------------------------------------------------------===//

#include "compiler/topology/AstraImport.h"

#include "support/ByteSize.h"
#include "support/Diagnostics.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <optional>

namespace topocc::topo {

namespace {

class Importer {
public:
  Importer(llvm::StringRef text, llvm::StringRef file)
      : text(text), file(file.str()) {}

  llvm::Expected<AstraImport> run(const AstraImportOptions &opts);

private:
  std::string lineText(unsigned line) const {
    llvm::StringRef rest = text;
    for (unsigned i = 1; i < line && !rest.empty(); ++i)
      rest = rest.split('\n').second;
    return rest.split('\n').first.rtrim("\r").str();
  }
  void error(const YAML::Mark &m, const llvm::Twine &msg) {
    SourceLoc loc{file, m.line >= 0 ? static_cast<unsigned>(m.line + 1) : 0,
                  m.column >= 0 ? static_cast<unsigned>(m.column + 1) : 0};
    diags.error(loc, msg.str(), loc.line ? lineText(loc.line) : "");
  }
  /// The list under `key` (a scalar counts as a list of one).
  std::vector<YAML::Node> list(const YAML::Node &root, const char *key) {
    std::vector<YAML::Node> out;
    YAML::Node n = root[key];
    if (!n) {
      error(root.Mark(), llvm::Twine("missing key '") + key +
                             "' (ASTRA-sim network files list one value "
                             "per dimension)");
      return out;
    }
    if (n.IsSequence()) {
      for (auto it = n.begin(); it != n.end(); ++it)
        out.push_back(*it);
    } else if (n.IsScalar()) {
      out.push_back(n);
    } else {
      error(n.Mark(), llvm::Twine("expected a list for '") + key + "'");
    }
    return out;
  }
  std::optional<double> positive(const YAML::Node &n, llvm::StringRef what) {
    double v = 0;
    if (!n.IsScalar() || llvm::StringRef(n.Scalar()).trim().getAsDouble(v) ||
        !std::isfinite(v) || !(v > 0)) {
      error(n.Mark(), llvm::formatv("expected a positive number for {0}, got "
                                    "'{1}'",
                                    what, n.IsScalar() ? n.Scalar() : "?"));
      return std::nullopt;
    }
    return v;
  }

  llvm::StringRef text;
  std::string file;
  DiagnosticList diags;
};

llvm::Expected<AstraImport> Importer::run(const AstraImportOptions &opts) {
  YAML::Node root;
  try {
    root = YAML::Load(text.str());
  } catch (const YAML::Exception &e) {
    error(e.mark, "YAML syntax error: " + e.msg);
    return diags.takeError();
  }
  if (!root.IsMap()) {
    diags.error(SourceLoc{file, 1, 1},
                "expected an ASTRA-sim network file: a mapping with "
                "'topology', 'npus_count', 'bandwidth' and 'latency'");
    return diags.takeError();
  }
  static const llvm::StringRef known[] = {"topology", "npus_count", "bandwidth",
                                          "latency"};
  for (auto it = root.begin(); it != root.end(); ++it) {
    std::string key = it->first.IsScalar() ? it->first.Scalar() : "";
    if (!llvm::is_contained(known, key))
      error(it->first.Mark(),
            "unknown key '" + key +
                "' in an ASTRA-sim network file; expected topology, "
                "npus_count, bandwidth and latency (the analytical "
                "backend's YAML)");
  }
  std::vector<YAML::Node> kinds = list(root, "topology"),
                          npus = list(root, "npus_count"),
                          bws = list(root, "bandwidth"),
                          lats = list(root, "latency");
  if (diags.hasErrors())
    return diags.takeError();
  const size_t d = kinds.size();
  auto sameLength = [&](const std::vector<YAML::Node> &l, const char *key) {
    if (l.size() != d)
      error(l.front().Mark(),
            llvm::formatv("'{0}' lists {1} values for the {2} dimensions of "
                          "'topology'",
                          key, l.size(), d));
  };
  sameLength(npus, "npus_count");
  sameLength(bws, "bandwidth");
  sameLength(lats, "latency");
  if (diags.hasErrors())
    return diags.takeError();

  AstraImport out;
  std::string name = opts.name;
  if (name.empty())
    name = llvm::sys::path::stem(file).str();
  std::string dims;
  uint64_t total = 1;
  for (size_t i = 0; i < d; ++i) {
    std::string kind;
    std::string k = kinds[i].IsScalar() ? kinds[i].Scalar() : "";
    if (k == "Ring")
      kind = "ring";
    else if (k == "FullyConnected")
      kind = "fully-connected";
    else if (k == "Switch")
      kind = "switch";
    else
      error(kinds[i].Mark(), "unknown ASTRA-sim topology '" + k +
                                 "'; expected Ring, FullyConnected or "
                                 "Switch");
    std::optional<double> n = positive(npus[i], "npus_count");
    std::optional<double> bw = positive(bws[i], "bandwidth (GB/s)");
    std::optional<double> lat = positive(lats[i], "latency (ns)");
    if (n && (*n != std::floor(*n) || *n > 1000000)) {
      error(npus[i].Mark(), "npus_count must be a whole number of NPUs (at "
                            "most 1000000), got '" +
                                npus[i].Scalar() + "'");
      n.reset();
    }
    if (kind.empty() || !n || !bw || !lat)
      continue;
    total *= static_cast<uint64_t>(*n);
    dims += llvm::formatv("    - {{ kind: {0}, size: {1}, bandwidth: {2} "
                          "GiB/s, latency: {3} ns }\n",
                          kind, static_cast<uint64_t>(*n), plainNumber(*bw),
                          plainNumber(*lat))
                .str();
  }
  if (diags.hasErrors())
    return diags.takeError();
  out.yaml = llvm::formatv(
                 "# Imported from the ASTRA-sim network file '{0}' by "
                 "`topocc import astra-sim`.\n"
                 "# ASTRA-sim's \"GB/s\" is GiB/s (2^30 bytes/s): the "
                 "bandwidths keep its numbers in GiB/s.\n"
                 "# Latencies are per link, in ns, as ASTRA-sim gives them.\n"
                 "schema: topocc/v1\n"
                 "name: {1}\n"
                 "description: {2} NPUs in {3} dimensions, from ASTRA-sim\n"
                 "\n"
                 "generate:\n"
                 "  dimensions:\n"
                 "{4}",
                 llvm::sys::path::filename(file), name, total, d, dims)
                 .str();
  if (!opts.model.empty())
    out.yaml += "  model: " + opts.model + "\n";
  out.notes.push_back("ASTRA-sim's \"GB/s\" is GiB/s (2^30 bytes/s); the "
                      "bandwidths are written in GiB/s");
  if (opts.model.empty())
    out.notes.push_back("the NPUs have no GPU model: MSCCL XML needs "
                        "--sm-count (or import with --model)");
  return out;
}

} // namespace

llvm::Expected<AstraImport> importAstraSim(llvm::StringRef text,
                                           llvm::StringRef fileName,
                                           const AstraImportOptions &opts) {
  return Importer(text, fileName).run(opts);
}

} // namespace topocc::topo
