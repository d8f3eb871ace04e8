//===- tools/topocc/CerarDesignCommand.cpp - `topocc cerar-design` --------===//
//
// `topocc cerar-design --ranks N --components c [--construction exact|
// vandermonde|perturbed|optimized] [--eps E | --kappa-max K]
// [--iterations I] [--matrices] [--format text|json]`: builds a CERAR code
// (compiler/algorithms/Cerar.h) and prints its figures of merit: per-rank
// error e_i, worst error, condition numbers, norms, nonzeros per row, and
// with --matrices (always in JSON) the encoders E_k and decoders D_i.
// `topocc cerar-plan TOPO.yaml [--sizes 1M:4G] [--tolerance T]
// [--wire-dtype fp32|fp16|bf16] [--base-dtype fp32|fp16|bf16]
// [--kappa-max K] [--ring LIST] [--scenario NAME] [--format text|json]`:
// the policy of compiler/algorithms/CerarPolicy.h per message size on the
// topology's ring: predicted ring and CERAR times, chosen c, eps, kappa,
// error, and the reason. Schemas: docs/Algorithms-cerar.md.
//
//===----------------------------------------------------------------------===//

#include "tools/topocc/Driver.h"

#include "compiler/CerarPlan.h"
#include "compiler/algorithms/Cerar.h"
#include "compiler/algorithms/CerarPolicy.h"
#include "compiler/analysis/CostModel.h"
#include "support/ByteSize.h"
#include "support/Diagnostics.h"

#include "CLI/CLI.hpp"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <memory>

namespace topocc::driver {

namespace {

struct CerarDesignOptions {
  int ranks = 0;
  int components = 0;
  std::string construction = "perturbed";
  double eps = 0;
  double kappaMax = 0;
  int iterations = 30;
  bool matrices = false;
  std::string format = "text";
};

llvm::json::Array matrixJson(const cerar::Matrix &m) {
  llvm::json::Array rows;
  for (int r = 0; r < m.rows; ++r) {
    llvm::json::Array row;
    for (int c = 0; c < m.cols; ++c)
      row.push_back(m(r, c) == 0.0 ? 0.0 : m(r, c)); // no -0
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string num(double v) { return llvm::formatv("{0:e3}", v).str(); }

void printMatrix(llvm::raw_ostream &os, llvm::StringRef name,
                 const cerar::Matrix &m) {
  os << "  " << name << ":\n";
  for (int r = 0; r < m.rows; ++r) {
    os << "   ";
    for (int c = 0; c < m.cols; ++c)
      os << ' ' << plainNumber(m(r, c) == 0.0 ? 0.0 : m(r, c));
    os << '\n';
  }
}

llvm::Error runCerarDesign(const CerarDesignOptions &opts) {
  if (auto err = checkFormat(opts.format))
    return err;
  auto kind = cerar::constructionFromName(opts.construction);
  if (!kind)
    return makeUserError("unknown --construction '" + opts.construction +
                         "'; expected exact, vandermonde, perturbed or "
                         "optimized");
  cerar::DesignRequest req;
  req.ranks = opts.ranks;
  req.components = opts.components;
  req.construction = *kind;
  req.eps = opts.eps;
  req.kappaMax = opts.kappaMax;
  req.iterations = opts.iterations;
  auto d = cerar::makeDesign(req);
  if (!d)
    return d.takeError();
  std::string out;
  llvm::raw_string_ostream os(out);
  int n = d->ranks, c = d->components;
  double ringRate = 2.0 * (n - 1) / n;
  double rate = 1.0 + double(n - 2) / c;
  if (opts.format == "json") {
    llvm::json::Array errs, conds, enc, dec;
    for (double e : d->rankError)
      errs.push_back(e);
    for (double k : d->encoderCondition)
      conds.push_back(k);
    for (const cerar::Matrix &m : d->encoders)
      enc.push_back(matrixJson(m));
    for (const cerar::Matrix &m : d->decoders)
      dec.push_back(matrixJson(m));
    llvm::json::Object o{
        {"format", "topocc-cerar-design/v1"},
        {"ranks", n},
        {"components", c},
        {"rounds", d->rounds},
        {"construction", cerar::constructionName(d->construction)},
        {"eps", d->eps},
        {"kappa_max", d->kappaMax},
        {"exact", d->isExact()},
        {"companion", d->companion},
        {"traffic_per_rank", rate},
        {"ring_traffic_per_rank", ringRate},
        {"rank_error", std::move(errs)},
        {"worst_error", d->worstError},
        {"objective", d->objective},
        {"encoder_condition", std::move(conds)},
        {"max_condition", d->maxCondition},
        {"max_decoder_norm", d->maxDecoderNorm},
        {"encoder_nnz_per_row", d->encoderNnzPerRow},
        {"decoder_nnz_per_row", d->decoderNnzPerRow},
        {"encoders", std::move(enc)},
        {"decoders", std::move(dec)}};
    if (d->construction == cerar::Construction::Optimized) {
      o["initial_eps"] = d->initialEps;
      o["initial_error"] = d->initialError;
    }
    os << llvm::formatv("{0:2}", llvm::json::Value(std::move(o))) << '\n';
  } else {
    os << llvm::formatv("cerar {0} code: N = {1} ranks, c = {2} components, "
                        "L = {3} rounds\n",
                        cerar::constructionName(d->construction), n, c,
                        d->rounds);
    if (d->construction != cerar::Construction::Exact)
      os << "eps: " << num(d->eps) << '\n';
    if (d->construction == cerar::Construction::Optimized)
      os << llvm::formatv("kappa-max: {0}; start: perturbed eps {1}, worst "
                          "error {2}\n",
                          num(d->kappaMax), num(d->initialEps),
                          num(d->initialError));
    os << llvm::formatv("traffic per rank: {0} d (ring {1} d)\n",
                        llvm::formatv("{0:F4}", rate).str(),
                        llvm::formatv("{0:F4}", ringRate).str());
    os << "exact: " << (d->isExact() ? "yes" : "no") << '\n';
    os << "worst error e: " << num(d->worstError) << '\n';
    os << "objective F: " << num(d->objective) << '\n';
    os << "max condition kappa(E_k): " << num(d->maxCondition) << '\n';
    os << "max ||D_i||_2: " << num(d->maxDecoderNorm) << '\n';
    os << llvm::formatv("nonzeros per row: E {0}, D {1}\n",
                        llvm::formatv("{0:F2}", d->encoderNnzPerRow).str(),
                        llvm::formatv("{0:F2}", d->decoderNnzPerRow).str());
    os << "rank  e_i         kappa(E_k)\n";
    for (int k = 0; k < n; ++k)
      os << llvm::formatv("{0,-4}  {1}   {2}\n", k, num(d->rankError[k]),
                          num(d->encoderCondition[k]));
    if (opts.matrices) {
      for (int k = 0; k < n; ++k)
        printMatrix(os, llvm::formatv("E_{0}", k).str(), d->encoders[k]);
      for (int k = 0; k < n; ++k)
        printMatrix(os, llvm::formatv("D_{0}", k).str(), d->decoders[k]);
    }
  }
  os.flush();
  return writeOutputFile("-", out);
}

void registerCerarDesignCommand(CLI::App &app) {
  auto opts = std::make_shared<CerarDesignOptions>();
  CLI::App *cmd = app.add_subcommand(
      "cerar-design", "Build a CERAR code (coded approximate ring "
                      "all-reduce) and print its error and conditioning");
  cmd->add_option("--ranks", opts->ranks, "Ranks N on the ring (2..64)")
      ->required();
  cmd->add_option("--components", opts->components,
                  "Components c per rank buffer (1..256)")
      ->required();
  cmd->add_option("--construction", opts->construction,
                  "exact, vandermonde, perturbed or optimized")
      ->capture_default_str();
  auto *eps = cmd->add_option("--eps", opts->eps,
                              "Perturbation eps in (0, 1) (default 1e-2)");
  auto *kappa = cmd->add_option(
      "--kappa-max", opts->kappaMax,
      "Condition-number limit on the encoders (picks eps; optimized: the "
      "constraint, default 1e3)");
  eps->excludes(kappa);
  cmd->add_option("--iterations", opts->iterations,
                  "ALS iterations (optimized)")
      ->capture_default_str();
  cmd->add_flag("--matrices", opts->matrices,
                "Print E_k and D_i (always present in JSON)");
  cmd->add_option("--format", opts->format, "Output format: text or json")
      ->capture_default_str();
  cmd->callback([opts] { finishCommand(runCerarDesign(*opts)); });
}

static CommandRegistration reg("cerar-design", registerCerarDesignCommand);

struct CerarPlanOptions {
  std::string file;
  std::string scenario;
  std::string sizes = "1M:4G";
  int factor = 4;
  double tolerance = 0;
  std::string wire = "fp32";
  std::string base = "fp32";
  double kappaMax = 0;
  std::string ring;
  std::string format = "text";
};

llvm::Expected<std::vector<double>> parseSizes(llvm::StringRef text,
                                               int factor) {
  auto [lo, hi] = text.split(':');
  auto a = parseByteSize(lo, "--size");
  if (!a)
    return a.takeError();
  double b = *a;
  if (!hi.empty()) {
    auto h = parseByteSize(hi, "--size");
    if (!h)
      return h.takeError();
    b = *h;
  }
  if (b < *a)
    return makeUserError("--sizes: the upper size is below the lower one");
  if (factor < 2)
    return makeUserError("--factor must be at least 2");
  std::vector<double> out;
  for (double s = *a; s <= b * (1 + 1e-12) && out.size() < 64; s *= factor)
    out.push_back(s);
  return out;
}

llvm::Expected<std::vector<int>> parseRing(llvm::StringRef text) {
  std::vector<int> out;
  if (text.empty())
    return out;
  llvm::SmallVector<llvm::StringRef, 16> parts;
  text.split(parts, ',');
  for (llvm::StringRef p : parts) {
    int v;
    if (p.trim().getAsInteger(10, v))
      return makeUserError("--ring: '" + p + "' is not a rank number");
    out.push_back(v);
  }
  return out;
}

llvm::Error runCerarPlan(const CerarPlanOptions &opts) {
  if (auto err = checkFormat(opts.format))
    return err;
  auto wire = cerar::wireDtypeFromName(opts.wire);
  auto base = cerar::wireDtypeFromName(opts.base);
  if (!wire || !base)
    return makeUserError("unknown dtype '" + (wire ? opts.base : opts.wire) +
                         "'; expected fp32, fp16 or bf16");
  if (opts.tolerance < 0)
    return makeUserError("--tolerance must be >= 0");
  auto sizes = parseSizes(opts.sizes, opts.factor);
  if (!sizes)
    return sizes.takeError();
  auto ringOrder = parseRing(opts.ring);
  if (!ringOrder)
    return ringOrder.takeError();
  auto t = loadTopology(opts.file, opts.scenario);
  if (!t)
    return t.takeError();
  CerarPlanRequest req;
  req.sizes = *sizes;
  req.policy.tolerance = opts.tolerance;
  req.policy.wire = *wire;
  req.policy.baseBytes = cerar::wireDtypeBytes(*base);
  req.policy.kappaMax = opts.kappaMax;
  req.ringOrder = *ringOrder;
  auto rep = cerarPlan(*t, req);
  if (!rep)
    return rep.takeError();
  const cerar::RingLink &l = rep->link;
  const double ceiling =
      rep->rows.empty() ? 0.0 : rep->rows.front().policy.bandwidthCeiling;
  auto ms = [](double s) { return llvm::formatv("{0:F3}", s * 1e3).str(); };

  std::string out;
  llvm::raw_string_ostream os(out);
  if (opts.format == "json") {
    llvm::json::Array arr, order;
    for (int r : rep->order)
      order.push_back(r);
    for (const CerarPlanRow &r : rep->rows) {
      llvm::json::Object o{{"bytes", r.bytes},
                           {"ring_time_s", r.ringTime},
                           {"policy_ring_time_s", r.policy.ringTime},
                           {"choice", r.policy.useCerar ? "cerar" : "ring"},
                           {"reason", r.policy.reason}};
      if (r.policy.useCerar) {
        o["policy_components"] = r.policy.components;
        o["q"] = r.policy.q;
        o["policy_eps"] = r.policy.eps;
        o["policy_cerar_time_s"] = r.policy.cerarTime;
        o["policy_contract"] = r.policy.expectedError;
        o["min_bytes"] = r.policy.minBytes;
      }
      if (r.components > 0) {
        o["components"] = r.components;
        o["forced"] = r.forced;
        o["cerar_time_s"] = r.cerarTime;
        o["eps"] = r.eps;
        o["contract"] = r.contract;
      } else if (!r.why.empty()) {
        o["why"] = r.why;
      }
      arr.push_back(std::move(o));
    }
    llvm::json::Object cross{{"components", rep->components},
                             {"bytes", rep->crossoverBytes},
                             {"bandwidth_factor", rep->bandwidthFactor},
                             {"bandwidth_bytes_per_s",
                              rep->crossoverBandwidth}};
    llvm::json::Object root{
        {"format", "topocc-cerar-plan/v2"},
        {"model", "runtime"},
        {"topology", t->name()},
        {"ranks", l.ranks},
        {"ring", std::move(order)},
        {"alpha_s", l.alpha},
        {"bandwidth_bytes_per_s", l.bandwidth},
        {"bandwidth_ceiling_bytes_per_s", ceiling},
        {"tolerance", opts.tolerance},
        {"wire_dtype", opts.wire},
        {"base_dtype", opts.base},
        {"crossover", std::move(cross)},
        {"sizes", std::move(arr)}};
    os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << '\n';
  } else {
    os << llvm::formatv(
        "topology {0}: ring of N = {1} ranks, alpha {2} us, B {3} GB/s "
        "(ceiling {4} GB/s); tolerance {5}, {6} wire, {7} baseline\n",
        t->name(), l.ranks, llvm::formatv("{0:F2}", l.alpha * 1e6).str(),
        llvm::formatv("{0:F2}", l.bandwidth / 1e9).str(),
        llvm::formatv("{0:F1}", ceiling / 1e9).str(), num(opts.tolerance),
        opts.wire, opts.base);
    os << "times: simulated in the runtime model (what `compile --algorithm "
          "ring --channels auto` and `compile --algorithm cerar` write at "
          "each size; c* forced with --components where the policy keeps "
          "the ring); policy: the policy's alpha-beta model\n";
    os << "size        ring ms      choice  c    CERAR ms     ratio   policy"
          "   eps        contract\n";
    for (const CerarPlanRow &r : rep->rows) {
      os << llvm::formatv("{0,-10}  {1,11}  {2,-6}  ", sizeText(r.bytes),
                          ms(r.ringTime),
                          r.policy.useCerar ? "cerar" : "ring");
      if (r.components > 0) {
        std::string c = std::to_string(r.components) + (r.forced ? "*" : "");
        std::string policy =
            r.policy.useCerar
                ? llvm::formatv("{0:F3}", r.policy.cerarTime /
                                              r.policy.ringTime)
                      .str()
                : "-";
        os << llvm::formatv("{0,-3}  {1,11}  {2}  {3,-6}  {4}  {5}", c,
                            ms(r.cerarTime),
                            llvm::formatv("{0:F3}", r.cerarTime / r.ringTime)
                                .str(),
                            policy, r.eps > 0 ? num(r.eps) : "exact    ",
                            r.contract > 0 ? num(r.contract) : "0");
        if (!r.policy.useCerar)
          os << "  (policy: " << r.policy.reason << ")";
        os << '\n';
      } else {
        os << "-    (" << r.why << ")\n";
      }
    }
    if (rep->components > 0) {
      std::string code = "CERAR c = " + std::to_string(rep->components);
      if (rep->crossoverBytes > 0)
        os << llvm::formatv(
            "crossover: {0} is faster than the ring from {1}{2} (runtime "
            "model)\n",
            code, sizeText(std::round(rep->crossoverBytes)),
            rep->crossoverBytes == rep->rows.front().bytes
                ? " (the smallest size here; run lower --sizes)"
                : "");
      else
        os << "crossover: " << code
           << " is not faster than the ring at any size here (runtime "
              "model)\n";
      if (rep->bandwidthFactor > 0)
        os << llvm::formatv(
            "bandwidth: at {0} {1} is faster than the ring while every "
            "link's bandwidth is below {2}x today's (ring bottleneck {3} "
            "GB/s; runtime model)\n",
            sizeText(rep->rows.back().bytes), code,
            llvm::formatv("{0:F2}", rep->bandwidthFactor).str(),
            llvm::formatv("{0:F1}", rep->crossoverBandwidth / 1e9).str());
      else
        os << llvm::formatv("bandwidth: at {0} {1}: no crossover between "
                            "1/64x and 64x today's link bandwidths\n",
                            sizeText(rep->rows.back().bytes), code);
    }
  }
  os.flush();
  return writeOutputFile("-", out);
}

void registerCerarPlanCommand(CLI::App &app) {
  auto opts = std::make_shared<CerarPlanOptions>();
  CLI::App *cmd = app.add_subcommand(
      "cerar-plan", "Where CERAR beats the ring on a topology: the policy's "
                    "choice of c, eps and kappa per message size");
  cmd->add_option("topology", opts->file, "Topology YAML file")->required();
  cmd->add_option("--sizes", opts->sizes,
                  "Sizes A:B (K/M/G/T are powers of 1024; docs/CLI.md, "
                  "Sizes)")
      ->capture_default_str();
  cmd->add_option("--factor", opts->factor, "Size step factor")
      ->capture_default_str();
  cmd->add_option("--tolerance", opts->tolerance,
                  "Relative error tolerance; 0 = exact only")
      ->capture_default_str();
  cmd->add_option("--wire-dtype", opts->wire, "fp32, fp16 or bf16")
      ->capture_default_str();
  cmd->add_option("--base-dtype", opts->base,
                  "dtype of the baseline all-reduce")
      ->capture_default_str();
  cmd->add_option("--kappa-max", opts->kappaMax,
                  "Condition-number limit (0 = none)");
  cmd->add_option("--ring", opts->ring,
                  "Ring order (default: the ring search's first ring)");
  cmd->add_option("--scenario", opts->scenario,
                  "Apply this named scenario first");
  cmd->add_option("--format", opts->format, "Output format: text or json")
      ->capture_default_str();
  cmd->callback([opts] { finishCommand(runCerarPlan(*opts)); });
}

static CommandRegistration planReg("cerar-plan", registerCerarPlanCommand);

} // namespace

} // namespace topocc::driver
