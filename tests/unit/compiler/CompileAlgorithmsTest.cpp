//===- tests/unit/compiler/CompileAlgorithmsTest.cpp - cerar and auto -----===//
//
// compile() with --algorithm cerar (exact and approximate codes: the coded
// schedule keeps its code through every pass, and plans carry the error
// bound that the plan checker enforces) and --algorithm auto (every
// candidate's prediction, the fastest kept, CERAR only with a tolerance).
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipeline.h"

#include "backends/PlanJson.h"
#include "compiler/analysis/ComputeModel.h"
#include "compiler/lowerings/Lowering.h"
#include "compiler/topology/TopologyParser.h"
#include "ir/Verifier.h"

#include "tests/support/ErrorText.h"
#include "tests/support/Topologies.h"

#include "gtest/gtest.h"

#include <string>

using namespace topocc;
using topocc::testing::errorMessage;

namespace {

topo::Topology box4() {
  auto t = topo::loadTopologyFile(std::string(TOPOCC_SOURCE_DIR) +
                                  "/tests/lit/Inputs/compile/box4.yaml");
  EXPECT_TRUE(bool(t)) << llvm::toString(t.takeError());
  return std::move(*t);
}

CompileRequest cerarRequest(int32_t components, double tolerance) {
  CompileRequest req;
  req.collective = ir::Collective::AllReduce;
  req.algorithm = Algorithm::Cerar;
  req.components = components;
  req.tolerance = tolerance;
  req.bytes = 256.0 * 1024 * 1024;
  return req;
}

/// An all-reduce of `bytes` for --algorithm auto.
CompileRequest autoRequest(double bytes) {
  CompileRequest req;
  req.collective = ir::Collective::AllReduce;
  req.algorithm = Algorithm::Auto;
  req.bytes = bytes;
  return req;
}

bool mentions(const std::vector<std::string> &lines, llvm::StringRef what) {
  for (const std::string &l : lines)
    if (llvm::StringRef(l).contains(what))
      return true;
  return false;
}

TEST(CompileCerar, ExactCodeVerifiesFully) {
  topo::Topology t = box4();
  PassLogger log;
  auto plan = compile(t, cerarRequest(4, 0), log);
  ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  EXPECT_EQ(plan->algorithm, Algorithm::Cerar);
  EXPECT_TRUE(plan->coded);
  EXPECT_EQ(plan->codedError, 0.0);
  EXPECT_EQ(plan->schedule.stage, ir::Stage::Legalized);
  llvm::Error err = ir::verifySchedule(plan->schedule);
  EXPECT_FALSE(bool(err)) << llvm::toString(std::move(err));
}

TEST(CompileCerar, ApproximateCodeCarriesItsBound) {
  topo::Topology t = box4();
  PassLogger log;
  auto plan = compile(t, cerarRequest(8, 1e-2), log);
  ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  ASSERT_TRUE(plan->coded);
  ASSERT_GT(plan->codedError, 0.0);
  // Not exact by design: the full postcondition fails...
  llvm::Error exact = ir::verifySchedule(plan->schedule);
  EXPECT_TRUE(bool(exact));
  llvm::consumeError(std::move(exact));
  // ...the bound holds, and a bound ten times smaller is caught.
  llvm::Error ok = backends::verifyPlanSchedule(plan->schedule,
                                                plan->codedError);
  EXPECT_FALSE(bool(ok)) << llvm::toString(std::move(ok));
  std::string tight = errorMessage(backends::verifyPlanSchedule(
      plan->schedule, plan->codedError / 10));
  EXPECT_NE(tight.find("above the plan's error bound"), std::string::npos)
      << tight;

  // The rounding gain is the encoders' condition number times the rounds.
  EXPECT_GT(plan->codedRoundoffGain[0], 1.0); // fp32

  // The plan file carries the bound and the gain; loading re-checks it.
  backends::PlanMeta meta;
  meta.algorithm = algorithmName(plan->algorithm).str();
  plan->setCodedMeta(meta);
  auto json = backends::planToJson(plan->schedule, meta);
  ASSERT_TRUE(bool(json)) << llvm::toString(json.takeError());
  EXPECT_NE(json->find("\"errorBound\""), std::string::npos);
  auto loaded = backends::parsePlanJson(*json, "cerar.json");
  ASSERT_TRUE(bool(loaded)) << llvm::toString(loaded.takeError());
  EXPECT_DOUBLE_EQ(loaded->meta.errorBound, plan->codedError);
  for (size_t d = 0; d < 3; ++d) {
    EXPECT_DOUBLE_EQ(loaded->meta.roundoffGain[d], plan->codedRoundoffGain[d]);
    EXPECT_DOUBLE_EQ(loaded->meta.roundoffGainWorst[d],
                     plan->codedRoundoffGainWorst[d]);
    EXPECT_GT(plan->codedRoundoffGain[d], 0);
    EXPECT_LE(plan->codedRoundoffGain[d], plan->codedRoundoffGainWorst[d]);
  }
  std::string text = llvm::StringRef(*json).str();
  // The fp32 gain negated (the prefix's 25 bytes; 26 ate the first digit,
  // which llvm::json's parser let through as "-00.3").
  const std::string prefix = "\"roundoffGain\": {\"fp32\": ";
  std::string negative =
      errorMessage(backends::parsePlanJson(
                       std::string(text).replace(text.find(prefix),
                                                 prefix.size(), prefix + "-"),
                       "cerar.json")
                       .takeError());
  EXPECT_NE(negative.find("$.roundoffGain.fp32: expected a non-negative number"),
            std::string::npos)
      << negative;
  // One number (an older plan) applies to every dtype.
  size_t at = text.find("\"roundoffGain\": {");
  std::string scalar = text.substr(0, at) + "\"roundoffGain\": 5," +
                       text.substr(text.find("},", at) + 2);
  auto one = backends::parsePlanJson(scalar, "cerar.json");
  ASSERT_TRUE(bool(one)) << llvm::toString(one.takeError());
  EXPECT_EQ(one->meta.roundoffGain, (std::array<double, 3>{5, 5, 5}));
  // An exact plan file (no bound) with the same ops is rejected.
  backends::PlanMeta exactMeta = meta;
  exactMeta.errorBound = 0;
  std::string noBound = errorMessage(
      backends::planToJson(plan->schedule, exactMeta).takeError());
  EXPECT_NE(noBound.find("cannot write a plan for a schedule that fails "
                         "verification"),
            std::string::npos);
}

TEST(CompileCerar, Errors) {
  topo::Topology t = box4();
  PassLogger log;
  CompileRequest ag = cerarRequest(4, 0);
  ag.collective = ir::Collective::AllGather;
  EXPECT_EQ(errorMessage(compile(t, ag, log).takeError()),
            "--algorithm cerar is a coded all-reduce; allgather has no CERAR "
            "form (use ring or trees)");
  CompileRequest approx = cerarRequest(8, 0);
  EXPECT_EQ(errorMessage(compile(t, approx, log).takeError()),
            "cerar: c = 8 > N = 4 is approximate; pass --tolerance to allow "
            "it, or use c <= N");
  CompileRequest wire = cerarRequest(4, 0);
  wire.wireDtype = "fp8";
  EXPECT_EQ(errorMessage(compile(t, wire, log).takeError()),
            "unknown --wire-dtype 'fp8'; expected 'fp32', 'fp16' or 'bf16'");
  CompileRequest chunks = cerarRequest(4, 0);
  chunks.chunks = 2;
  EXPECT_EQ(errorMessage(compile(t, chunks, log).takeError()),
            "--chunks applies to the ring and trees algorithms; CERAR's "
            "messages are its components (--components)");
  EXPECT_EQ(errorMessage(compile(4, cerarRequest(4, 0), log).takeError()),
            "--algorithm cerar needs the topology: its parameters follow the "
            "ring's bottleneck link");
}

TEST(CompileAuto, KeepsTheFastestPrediction) {
  topo::Topology t = box4();
  CompileRequest req = autoRequest(1024.0 * 1024 * 1024);
  PassLogger log;
  auto plan = compile(t, req, log);
  ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  EXPECT_FALSE(plan->coded);
  EXPECT_TRUE(mentions(plan->explain, "auto: ring predicted"));
  EXPECT_TRUE(mentions(plan->explain, "auto: trees predicted"));
  EXPECT_TRUE(mentions(plan->explain, "auto: hier-ring not applicable"));
  EXPECT_TRUE(mentions(plan->explain, "auto: cerar not considered"));
  EXPECT_TRUE(mentions(plan->explain,
                       "auto: chose " + algorithmName(plan->algorithm).str()));
  // The candidates are priced by the simulator (the runtime model): the
  // winner is never slower than the ring or the trees there (ties within
  // 0.1% go to the earlier candidate).
  EXPECT_TRUE(mentions(plan->explain, "us (simulated)"));
  auto chosen = analysis::simulateTime(t, plan->schedule, req.bytes,
                                       analysis::SimMode::Runtime);
  ASSERT_TRUE(bool(chosen)) << llvm::toString(chosen.takeError());
  // Its simulation of the winner is that of the schedule it returns (compile
  // prints it as the prediction of a plan written from it).
  ASSERT_TRUE(plan->predictedRun.has_value());
  EXPECT_EQ(plan->predictedRun->time, *chosen);
  EXPECT_EQ(plan->predictedRun->bytes, req.bytes);
  EXPECT_EQ(plan->predictedTime, *chosen);
  // A request in another mode (whatif's auto column) keeps none.
  CompileRequest other = req;
  other.autoSimMode = analysis::SimMode::CutThrough;
  auto otherPlan = compile(t, other, log);
  ASSERT_TRUE(bool(otherPlan)) << llvm::toString(otherPlan.takeError());
  EXPECT_FALSE(otherPlan->predictedRun.has_value());
  for (Algorithm other : {Algorithm::Ring, Algorithm::Trees}) {
    CompileRequest sub = req;
    sub.algorithm = other;
    auto otherPlan = compile(t, sub, log);
    ASSERT_TRUE(bool(otherPlan)) << llvm::toString(otherPlan.takeError());
    auto base = analysis::simulateTime(t, otherPlan->schedule, req.bytes,
                                       analysis::SimMode::Runtime);
    ASSERT_TRUE(bool(base)) << llvm::toString(base.takeError());
    EXPECT_LE(*chosen, *base * (1 + 1e-3)) << algorithmName(other).str();
  }

  EXPECT_EQ(errorMessage(compile(4, req, log).takeError()),
            "--algorithm auto compares the algorithms on the topology; give "
            "one");
}

// deferFinalCheck: auto's exact winner comes back unverified with the
// request that compiles it (so that checkCompiled can name a stage), the
// same schedule as a verified auto gives.
TEST(CompileAuto, LeavesTheWinnersCheckToTheCaller) {
  topo::Topology t = box4();
  CompileRequest req = autoRequest(64.0 * 1024 * 1024);
  PassLogger log;
  auto checked = compile(t, req, log);
  ASSERT_TRUE(bool(checked)) << llvm::toString(checked.takeError());
  EXPECT_TRUE(checked->verified);
  EXPECT_FALSE(checked->pendingCheck);
  req.deferFinalCheck = true;
  auto deferred = compile(t, req, log);
  ASSERT_TRUE(bool(deferred)) << llvm::toString(deferred.takeError());
  EXPECT_FALSE(deferred->verified);
  ASSERT_TRUE(deferred->pendingCheck.has_value());
  EXPECT_EQ(deferred->pendingCheck->algorithm, deferred->algorithm);
  EXPECT_TRUE(deferred->pendingCheck->verify);
  EXPECT_EQ(deferred->chosenFlags, checked->chosenFlags);
  EXPECT_EQ(backends::planContentHash(deferred->schedule),
            backends::planContentHash(checked->schedule));
  EXPECT_FALSE(bool(checkCompiled(&t, t.numRanks(), *deferred->pendingCheck,
                                  deferred->schedule)));
  // The pending request compiles the same schedule again.
  PassLogger quiet;
  auto again = compile(t, *deferred->pendingCheck, quiet);
  ASSERT_TRUE(bool(again)) << llvm::toString(again.takeError());
  EXPECT_EQ(backends::planContentHash(again->schedule),
            backends::planContentHash(deferred->schedule));

  // A coded winner (CERAR's, exact or not) is checked inside compile():
  // its lowering's finish() executes the code of the checked schedule.
  for (CompileRequest codedReq : {cerarRequest(4, 0), cerarRequest(8, 1e-2)}) {
    codedReq.deferFinalCheck = true;
    auto coded = compile(t, codedReq, log);
    ASSERT_TRUE(bool(coded)) << llvm::toString(coded.takeError());
    EXPECT_TRUE(coded->coded);
    EXPECT_TRUE(coded->verified);
    EXPECT_FALSE(coded->pendingCheck);
  }
}

TEST(CompileAuto, ConsidersCerarOnlyWithATolerance) {
  topo::Topology t = box4();
  CompileRequest req = autoRequest(1024.0 * 1024 * 1024);
  req.tolerance = 1e-2;
  PassLogger log;
  auto plan = compile(t, req, log);
  ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  // NVLink-class links: CERAR's decision is made and explained either way.
  EXPECT_TRUE(mentions(plan->explain, "auto: cerar"));
  EXPECT_FALSE(mentions(plan->explain, "cerar not considered"));
}

} // namespace

// auto's candidate list at cluster scale, without compiling anything: on
// 512 ranks (64 boxes of 8 GPUs on 8 rail switches) the ring's channel
// variants stop where a schedule would pass about 2 million ops (4
// channels: 2.09 million, 8 channels: 4.2 million), and trees are not
// built above 64 ranks; both say so in --explain. On 128 ranks every ring
// variant stays (32 channels: 1.04 million ops).
TEST(CompileAuto, CandidatesAtClusterScale) {
  auto topoOf = [](int boxes) {
    std::string y =
        "schema: topocc/v1\n"
        "link_classes:\n"
        "  nv: { type: nvlink, bandwidth: 300 GB/s, latency: 1 us }\n"
        "  ib: { type: ib, bandwidth: 25 GB/s, latency: 2 us }\n"
        "node_templates:\n"
        "  box:\n"
        "    gpus: [ { name: \"g{i:0-7}\" } ]\n"
        "    nics: [ { name: \"n{i:0-7}\" } ]\n"
        "    switches: [ { name: nvs, kind: nvswitch },\n"
        "                { name: plx, kind: pcie-switch } ]\n"
        "    links:\n"
        "      - { from: \"g{i:0-7}\", to: nvs, class: nv }\n"
        "      - { from: \"g{i:0-7}\", to: plx, class: nv }\n"
        "      - { from: \"n{i:0-7}\", to: plx, class: nv }\n"
        "nodes:\n"
        "  - { name: \"b{b:0-" +
        std::to_string(boxes - 1) +
        "}\", template: box }\n"
        "fabric:\n"
        "  switches: [ { name: \"rail{r:0-7}\", kind: ib-switch } ]\n"
        "  links:\n"
        "    - { from: \"b{b:0-" +
        std::to_string(boxes - 1) +
        "}/n{r:0-7}\", to: \"rail{r}\", class: ib }\n";
    auto t = topo::parseTopology(y, "t.yaml");
    EXPECT_TRUE(static_cast<bool>(t)) << llvm::toString(t.takeError());
    return std::move(*t);
  };
  CompileRequest req;
  req.algorithm = Algorithm::Auto;
  req.collective = ir::Collective::AllReduce;
  req.channels = 0;
  auto flagsOf = [](const lowerings::AutoCandidate &c) {
    std::vector<std::string> f;
    for (const auto &v : c.variants)
      f.push_back(v.flags);
    return f;
  };

  // Ring variants carry their size (ranks x channels x 2 x 511 steps), which
  // selectAlgorithm holds against req.autoMaxVariantOps (2^21 by default:
  // --channels 8 and more are skipped at 512 ranks).
  topo::Topology big = topoOf(64);
  ASSERT_EQ(big.numRanks(), 512);
  lowerings::AutoContext ctx{big, req, true, {}};
  auto ring = lowerings::autoCandidate(Algorithm::Ring, ctx);
  ASSERT_TRUE(static_cast<bool>(ring)) << llvm::toString(ring.takeError());
  EXPECT_EQ(flagsOf(*ring), (std::vector<std::string>{
                                "--channels 2", "--channels 4", "--channels 8",
                                "--channels 16", "--channels 32"}));
  std::vector<int64_t> sizes;
  for (const auto &v : ring->variants)
    sizes.push_back(v.estimatedOps);
  EXPECT_EQ(sizes, (std::vector<int64_t>{1046528, 2093056, 4186112, 8372224,
                                         16744448}));
  EXPECT_LE(sizes[1], req.autoMaxVariantOps);
  EXPECT_GT(sizes[2], req.autoMaxVariantOps);
  EXPECT_TRUE(ring->lines.empty());
  auto trees = lowerings::autoCandidate(Algorithm::Trees, ctx);
  ASSERT_TRUE(static_cast<bool>(trees));
  EXPECT_FALSE(trees->request.has_value());
  ASSERT_EQ(trees->lines.size(), 1u);
  EXPECT_NE(trees->lines[0].find("trees not considered above 64 ranks"),
            std::string::npos);

  topo::Topology mid = topoOf(16);
  lowerings::AutoContext ctx2{mid, req, true, {}};
  auto ring2 = lowerings::autoCandidate(Algorithm::Ring, ctx2);
  ASSERT_TRUE(static_cast<bool>(ring2));
  EXPECT_EQ(flagsOf(*ring2), (std::vector<std::string>{
                                 "--channels 2", "--channels 4", "--channels 8",
                                 "--channels 16", "--channels 32"}));
  EXPECT_TRUE(ring2->lines.empty());
  auto trees2 = lowerings::autoCandidate(Algorithm::Trees, ctx2);
  ASSERT_TRUE(static_cast<bool>(trees2));
  EXPECT_FALSE(trees2->request.has_value()); // 128 ranks: above 64 too
}

namespace {

/// An all-reduce request for --algorithm auto with --channels auto.
CompileRequest autoAllReduce() {
  CompileRequest req;
  req.algorithm = Algorithm::Auto;
  req.collective = ir::Collective::AllReduce;
  req.channels = 0;
  return req;
}

/// The --explain lines of `r`, one per line.
std::string explainText(const CompileResult &r) {
  std::string out;
  for (const std::string &l : r.explain)
    out += l + "\n";
  return out;
}

} // namespace

// auto's one budget for variants (CompileRequest::autoMaxVariantOps): a
// variant whose estimated size exceeds it is not compiled and the explain
// says so with its flags; ring variants carry their own estimate, the
// hier-ring's are its base schedule's size times chunks x channels.
TEST(CompileAuto, VariantsOverTheBudgetAreNotCompiled) {
  topo::Topology t = topocc::testing::libraryTopology("dgx-a100x4.yaml");
  CompileRequest req = autoAllReduce();
  PassLogger quiet;
  auto all = compile(t, req, quiet);
  ASSERT_TRUE(static_cast<bool>(all)) << llvm::toString(all.takeError());
  auto skipped = [](const CompileResult &r) {
    std::vector<std::string> out;
    for (const std::string &l : r.explain)
      if (l.find("not considered (about") != std::string::npos)
        out.push_back(l);
    return out;
  };
  EXPECT_TRUE(skipped(*all).empty());
  // A budget of 3 times the base hier-ring (1 channel, 1 chunk) keeps its
  // --chunks 2 variant and drops --chunks 4 and 8 and --channels 2 --chunks
  // 4 (about 4, 8 and 8 times the base).
  CompileRequest base = req;
  base.algorithm = Algorithm::HierRing;
  base.channels = 1;
  base.verify = false;
  auto hierBase = compile(t, base, quiet);
  ASSERT_TRUE(static_cast<bool>(hierBase));
  int64_t baseOps = 0;
  for (const ir::RankProgram &rp : hierBase->schedule.ranks)
    baseOps += static_cast<int64_t>(rp.ops.size());
  req.autoMaxVariantOps = 3 * baseOps;
  auto small = compile(t, req, quiet);
  ASSERT_TRUE(static_cast<bool>(small)) << llvm::toString(small.takeError());
  std::vector<std::string> lines = skipped(*small);
  std::vector<std::string> hier;
  for (const std::string &l : lines)
    if (l.rfind("auto: hier-ring ", 0) == 0)
      hier.push_back(l.substr(0, l.find(" not considered")));
  const std::string all2 = explainText(*small);
  EXPECT_EQ(hier,
            (std::vector<std::string>{
                "auto: hier-ring --chunks 4", "auto: hier-ring --chunks 8",
                "auto: hier-ring --channels 2 --chunks 4"}))
      << all2;
  EXPECT_EQ(lines.front().find("auto: ring --channels "), 0u);
  EXPECT_NE(lines.front().find(" ops; auto compiles variants of up to " +
                               std::to_string(3 * baseOps) +
                               " ops; --algorithm ring --channels "),
            std::string::npos)
      << lines.front();
  for (const std::string &l : small->explain)
    EXPECT_EQ(l.find("auto: hier-ring --chunks 8 predicted"),
              std::string::npos);
}

// auto's budget for whole candidates (AutoCandidate::estimatedOps): a ring
// over it waits until the others are priced and is not compiled when one
// applies; the explain line gives its size and its chains' least time
// (analysis::leastChainTime), which the compiled ring does not beat. Where
// nothing else applies it is compiled all the same.
TEST(CompileAuto, LargeCandidatesWaitForTheOthers) {
  topo::Topology t = topocc::testing::libraryTopology("dgx-a100x4.yaml");
  CompileRequest req = autoAllReduce();
  // 32 ranks x 2 x 31 ring steps: 1984 ops on one channel at least.
  req.autoMaxVariantOps = 1983;
  PassLogger quiet;
  auto r = compile(t, req, quiet);
  ASSERT_TRUE(static_cast<bool>(r)) << llvm::toString(r.takeError());
  EXPECT_NE(r->algorithm, Algorithm::Ring);
  std::string explain = explainText(*r);
  // NVLink to the NVSwitch and on: 2 x 0.7 us per message, 62 messages,
  // 8.4 us of launch.
  const double floor =
      analysis::leastChainTime(t, 62, analysis::SimMode::Runtime);
  EXPECT_NEAR(floor, 8.4e-6 + 62 * 1.4e-6, 1e-12);
  EXPECT_NE(explain.find("auto: ring not considered (about 1984 ops; auto "
                         "compiles schedules of up to 1983 ops when another "
                         "applies; --algorithm ring builds it); its chunks "
                         "cross 62 messages in turn: at least 95.200 us in "
                         "the runtime model, against "),
            std::string::npos)
      << explain;
  EXPECT_EQ(explain.find("auto: ring predicted"), std::string::npos);
  EXPECT_EQ(explain.find("auto: ring --channels"), std::string::npos);

  // CERAR's policy compares it with the ring: without the ring's price it
  // is not considered, and says so.
  CompileRequest coded = req;
  coded.tolerance = 1e-2;
  auto withTolerance = compile(t, coded, quiet);
  ASSERT_TRUE(static_cast<bool>(withTolerance))
      << llvm::toString(withTolerance.takeError());
  EXPECT_NE(explainText(*withTolerance)
                .find("auto: cerar not considered (its policy compares it "
                      "with the ring, which was not priced)"),
            std::string::npos)
      << explainText(*withTolerance);

  // The ring itself takes longer than the bound on its chains.
  CompileRequest ring = req;
  ring.algorithm = Algorithm::Ring;
  auto ringResult = compile(t, ring, quiet);
  ASSERT_TRUE(static_cast<bool>(ringResult));
  auto sim = analysis::simulateRun(t, ringResult->schedule, req.bytes,
                                   analysis::SimMode::Runtime, std::nullopt);
  ASSERT_TRUE(static_cast<bool>(sim)) << llvm::toString(sim.takeError());
  EXPECT_GT(sim->time, floor);

  // 72 GPUs on one NVSwitch, all-gather: trees are not built above 64
  // ranks and nothing else but the ring applies, so the ring over the
  // budget is compiled.
  std::string y = "schema: topocc/v1\n"
                  "nodes:\n"
                  "  - name: rack\n"
                  "    gpus: [ { name: \"g{i:0-71}\" } ]\n"
                  "    switches: [ { name: nvs, kind: nvswitch } ]\n"
                  "    links:\n"
                  "      - { from: \"g{i:0-71}\", to: nvs, type: nvlink, "
                  "bandwidth: 450 GB/s, latency: 1 us }\n";
  auto rack = topo::parseTopology(y, "rack.yaml");
  ASSERT_TRUE(static_cast<bool>(rack)) << llvm::toString(rack.takeError());
  CompileRequest gather = req;
  gather.collective = ir::Collective::AllGather;
  gather.autoMaxVariantOps = 1;
  auto only = compile(*rack, gather, quiet);
  ASSERT_TRUE(static_cast<bool>(only)) << llvm::toString(only.takeError());
  EXPECT_EQ(only->algorithm, Algorithm::Ring);
  explain = explainText(*only);
  EXPECT_NE(explain.find("auto: ring predicted"), std::string::npos) << explain;
}
