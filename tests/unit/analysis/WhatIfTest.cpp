//===- tests/unit/analysis/WhatIfTest.cpp - What-if engine tests ----------===//
//
// Size ranges, the registry (selection errors), winners (reference columns
// never win), simulated algorithms, and the CSV/table/JSON outputs on fixed
// numbers.
//
//===----------------------------------------------------------------------===//

#include "compiler/analysis/WhatIf.h"
#include "compiler/Pipeline.h"
#include "compiler/topology/TopologyParser.h"

#include "gtest/gtest.h"

#include "llvm/Support/JSON.h"

using namespace topocc;
using namespace topocc::analysis;

namespace {

const char *kPair = R"(schema: topocc/v1
name: pair
nodes:
  - name: a
    gpus: [ g0, g1 ]
    links:
      - { from: g0, to: g1, type: nvlink, bandwidth: 10 GB/s, latency: 1 us }
)";

topo::Topology pair() {
  auto t = topo::parseTopology(kPair, "pair.yaml");
  if (!t) {
    ADD_FAILURE() << llvm::toString(t.takeError());
    return topo::Topology();
  }
  return std::move(*t);
}

/// The message of a user error, without "error: " and the final newline.
std::string plain(std::string s) {
  if (llvm::StringRef(s).startswith("error: "))
    s = s.substr(7);
  while (!s.empty() && s.back() == '\n')
    s.pop_back();
  return s;
}

/// time = fixed + bytes / rate.
class Linear : public WhatIfEvaluator {
public:
  Linear(double fixed, double rate) : fixed(fixed), rate(rate) {}
  llvm::Expected<WhatIfEstimate> estimate(double bytes) override {
    WhatIfEstimate e;
    e.applicable = rate > 0;
    if (!e.applicable) {
      e.detail = "never";
      return e;
    }
    e.time = fixed + bytes / rate;
    e.algbw = bytes / e.time;
    e.busbw = e.algbw;
    return e;
  }

private:
  double fixed, rate;
};

WhatIfAlgorithm linear(std::string name, double fixed, double rate,
                       bool competes = true) {
  WhatIfAlgorithm a;
  a.name = std::move(name);
  a.competes = competes;
  a.make = [fixed, rate](const WhatIfContext &)
      -> llvm::Expected<std::unique_ptr<WhatIfEvaluator>> {
    return std::make_unique<Linear>(fixed, rate);
  };
  return a;
}

TEST(WhatIfTest, ParsesSizes) {
  auto a = parseSizes("1K:8K");
  ASSERT_TRUE(bool(a));
  EXPECT_EQ(*a, (std::vector<double>{1024, 2048, 4096, 8192}));
  auto b = parseSizes("1M:64M:4,2K,1M");
  ASSERT_TRUE(bool(b));
  EXPECT_EQ(*b, (std::vector<double>{2048, 1 << 20, 1 << 22, 1 << 24,
                                     1 << 26}));
  auto c = parseSizes("8G");
  ASSERT_TRUE(bool(c));
  EXPECT_EQ(*c, (std::vector<double>{8.0 * (1 << 30)}));
  auto bad = parseSizes("1K:8X");
  ASSERT_FALSE(bool(bad));
  EXPECT_EQ(plain(llvm::toString(bad.takeError())),
            "invalid size '8X' in --sizes '1K:8X' (expected a positive number "
            "with an optional K, M or G suffix, powers of 1024: 64M, 1G)");
  auto down = parseSizes("8K:1K");
  ASSERT_FALSE(bool(down));
  EXPECT_EQ(plain(llvm::toString(down.takeError())),
            "--sizes '8K:1K': the largest size is below the smallest");
  auto factor = parseSizes("1K:8K:1");
  ASSERT_FALSE(bool(factor));
  EXPECT_EQ(plain(llvm::toString(factor.takeError())),
            "invalid factor '1' in --sizes '1K:8K:1' (expected a number "
            "greater than 1)");
}

TEST(WhatIfTest, RegistrySelects) {
  WhatIfRegistry r;
  r.add(linear("fast", 0, 1));
  addAnalysisAlgorithms(r);
  auto sel = r.select({"nccl-model", "fast"});
  ASSERT_TRUE(bool(sel));
  ASSERT_EQ(sel->size(), 2u);
  EXPECT_EQ((*sel)[0]->name, "nccl-model");
  EXPECT_FALSE(r.find("bound")->competes);
  auto typo = r.select({"nccl-modle"});
  ASSERT_FALSE(bool(typo));
  EXPECT_EQ(plain(llvm::toString(typo.takeError())),
            "unknown algorithm 'nccl-modle'; did you mean 'nccl-model'? "
            "(known: fast, nccl-model, bound, realizable)");
  auto twice = r.select({"fast", "fast"});
  ASSERT_FALSE(bool(twice));
  EXPECT_EQ(plain(llvm::toString(twice.takeError())),
            "algorithm 'fast' is listed twice");
}

WhatIfReport twoByTwo() {
  topo::Topology t = pair();
  // "lat" wins small sizes (no fixed cost, slow), "bw" large ones; "ref" is
  // always fastest but a reference column; "none" never applies.
  WhatIfAlgorithm lat = linear("lat", 0, 1e9), bw = linear("bw", 1e-5, 1e11),
                  ref = linear("ref", 0, 1e12, false),
                  none = linear("none", 0, 0);
  std::vector<const WhatIfAlgorithm *> algos{&lat, &bw, &ref, &none};
  WhatIfSettings set;
  WhatIfReport r;
  r.topology = "pair";
  r.settings = set;
  for (const WhatIfAlgorithm *a : algos) {
    r.algorithms.push_back(a->name);
    r.competes.push_back(a->competes);
  }
  auto base = runWhatIf(t, algos, {1024, 1 << 20}, set, "base", "");
  EXPECT_TRUE(bool(base));
  r.tables.push_back(std::move(*base));
  // A "scenario": the same algorithms twice as slow.
  WhatIfAlgorithm lat2 = linear("lat", 0, 0.5e9),
                  bw2 = linear("bw", 2e-5, 0.5e11);
  std::vector<const WhatIfAlgorithm *> slow{&lat2, &bw2, &ref, &none};
  auto half = runWhatIf(t, slow, {1024, 1 << 20}, set, "half", "scale x 0.5");
  EXPECT_TRUE(bool(half));
  r.tables.push_back(std::move(*half));
  return r;
}

TEST(WhatIfTest, WinnersSkipReferenceColumns) {
  WhatIfReport r = twoByTwo();
  ASSERT_EQ(r.tables.size(), 2u);
  const WhatIfTable &b = r.tables[0];
  ASSERT_EQ(b.rows.size(), 2u);
  EXPECT_EQ(b.rows[0].winner, 0); // 1 KiB: lat 1.02 us < bw 10.01 us
  EXPECT_EQ(b.rows[1].winner, 1); // 1 MiB: bw 20.5 us < lat 1049 us
  EXPECT_FALSE(b.rows[0].cells[3].applicable);
  EXPECT_EQ(b.rows[0].cells[3].detail, "never");
}

TEST(WhatIfTest, CsvGolden) {
  std::string out;
  llvm::raw_string_ostream os(out);
  printWhatIfCsv(os, twoByTwo());
  EXPECT_EQ(os.str(),
            "scenario,size,count,lat_time_us,lat_algbw_GBps,lat_busbw_GBps,"
            "bw_time_us,bw_algbw_GBps,bw_busbw_GBps,ref_time_us,"
            "ref_algbw_GBps,ref_busbw_GBps,none_time_us,none_algbw_GBps,"
            "none_busbw_GBps,winner,winner_time_vs_base\n"
            "base,1024,256,1.024,1.000,1.000,10.010,0.102,0.102,0.001,"
            "1000.000,1000.000,,,,lat,1.0000\n"
            "base,1048576,262144,1048.576,1.000,1.000,20.486,51.186,51.186,"
            "1.049,1000.000,1000.000,,,,bw,1.0000\n"
            "half,1024,256,2.048,0.500,0.500,20.020,0.051,0.051,0.001,"
            "1000.000,1000.000,,,,lat,2.0000\n"
            "half,1048576,262144,2097.152,0.500,0.500,40.972,25.593,25.593,"
            "1.049,1000.000,1000.000,,,,bw,2.0000\n");
}

TEST(WhatIfTest, TableAndJson) {
  WhatIfReport r = twoByTwo();
  std::string out;
  llvm::raw_string_ostream os(out);
  printWhatIfTable(os, r);
  std::string s = os.str();
  EXPECT_NE(s.find("# base topology (2 ranks, 1 node)\n"), std::string::npos)
      << s;
  EXPECT_NE(s.find("# scenario 'half': scale x 0.5 (2 ranks, 1 node)\n"),
            std::string::npos);
  EXPECT_NE(s.find("        1024         256        1.02    1.00    1.00"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("n/a     n/a     n/a  lat\n"), std::string::npos) << s;
  EXPECT_NE(s.find("      2.000x      2.000x      1.000x         n/a  lat -> "
                   "lat\n"),
            std::string::npos)
      << s;
  std::string js;
  llvm::raw_string_ostream jos(js);
  printWhatIfJson(jos, r);
  auto v = llvm::json::parse(jos.str());
  ASSERT_TRUE(bool(v)) << llvm::toString(v.takeError());
  const llvm::json::Array *sc = v->getAsObject()->getArray("scenarios");
  ASSERT_TRUE(sc);
  ASSERT_EQ(sc->size(), 2u);
  const llvm::json::Object *row =
      (*sc)[1].getAsObject()->getArray("rows")->front().getAsObject();
  EXPECT_EQ(row->getString("winner"), llvm::StringRef("lat"));
  EXPECT_EQ(row->getNumber("winner_time_vs_base"), 2.0);
  EXPECT_EQ(row->getObject("results")->getObject("none")->getString("why"),
            llvm::StringRef("never"));
}

TEST(WhatIfTest, SimulatedAlgorithmAndAnalysisColumns) {
  topo::Topology t = pair();
  WhatIfRegistry reg;
  reg.add(simulatedAlgorithm(
      "rank-ring", "",
      [](const WhatIfContext &ctx) -> llvm::Expected<ir::Schedule> {
        CompileRequest req;
        req.collective = ctx.settings.collective;
        req.chunks = ctx.settings.chunks;
        PassLogger log;
        auto p = compile(ctx.topology.numRanks(), req, log);
        if (!p)
          return p.takeError();
        return std::move(p->schedule);
      }));
  addAnalysisAlgorithms(reg);
  auto algos = reg.select({"rank-ring", "nccl-model", "bound"});
  ASSERT_TRUE(bool(algos));
  WhatIfSettings set;
  set.chunks = 1;
  set.mode = SimMode::StoreAndForward;
  set.collective = ir::Collective::AllGather;
  double S = 1 << 30;
  auto table = runWhatIf(t, *algos, {S}, set, "base", "");
  ASSERT_TRUE(bool(table)) << llvm::toString(table.takeError());
  const WhatIfRow &row = table->rows[0];
  // Allgather over one 10 GB/s link each way: S/2 per direction + 1 us.
  EXPECT_NEAR(row.cells[0].time, S / 2 / 10e9 + 1e-6, 1e-12);
  // The bound: (n-1)/n S / B.
  ASSERT_TRUE(row.cells[2].applicable) << row.cells[2].detail;
  EXPECT_NEAR(row.cells[2].time, S / 2 / 10e9, 1e-12);
  EXPECT_TRUE(row.cells[1].applicable);
  EXPECT_NE(row.winner, 2);
}

} // namespace
