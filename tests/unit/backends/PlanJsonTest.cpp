//===- tests/unit/backends/PlanJsonTest.cpp -------------------------------===//
//
// backends/PlanJson: compiled ring plans round-trip exactly through JSON
// (the printed IR is byte-identical), output is deterministic, the topology
// hash is content-based, and malformed plans are rejected with the file,
// the JSON path of the bad field and the exact message.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/RuntimeTestUtil.h"

#include "backends/PlanJson.h"
#include "backends/TopologyHash.h"
#include "compiler/topology/Scenario.h"
#include "compiler/topology/TopologyParser.h"
#include "ir/Printer.h"
#include "support/Diagnostics.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <algorithm>

using namespace topocc;
using namespace topocc::backends;
using namespace topocc::runtime::test;

namespace {

std::string emit(const ir::Schedule &s) {
  PlanMeta meta;
  meta.generator = "topocc test";
  meta.algorithm = "ring";
  auto text = planToJson(s, meta);
  if (!text) {
    ADD_FAILURE() << llvm::toString(text.takeError());
    return "";
  }
  return *text;
}

/// The error text of loading `text` as "p.json".
std::string loadError(llvm::StringRef text) {
  auto plan = parsePlanJson(text, "p.json");
  if (plan)
    return "(loaded)";
  return llvm::toString(plan.takeError());
}

/// Each diagnostic of loading `text` as "p.json", one per line as
/// "FILE:LINE:COL: message" (without the source excerpt).
std::string loadDiags(llvm::StringRef text) {
  auto plan = parsePlanJson(text, "p.json");
  if (plan)
    return "(loaded)";
  std::string out;
  llvm::handleAllErrors(
      plan.takeError(),
      [&](const DiagnosticError &e) {
        for (const Diagnostic &d : e.diagnostics())
          out += llvm::formatv("{0}:{1}:{2}: {3}\n", d.loc.file, d.loc.line,
                               d.loc.col, d.message)
                     .str();
      },
      [&](const llvm::ErrorInfoBase &e) { out += e.message() + "\n"; });
  return out;
}

std::string replaceOnce(std::string text, llvm::StringRef from,
                        llvm::StringRef to) {
  size_t at = text.find(from.str());
  EXPECT_NE(at, std::string::npos) << "'" << from.str() << "' not in plan";
  if (at != std::string::npos)
    text.replace(at, from.size(), to.str());
  return text;
}

TEST(PlanJson, CompiledRingsRoundTrip) {
  for (ir::Collective c : {ir::Collective::AllReduce, ir::Collective::AllGather,
                           ir::Collective::ReduceScatter})
    for (int ranks : {2, 3, 8})
      for (bool inplace : {false, true}) {
        ir::Schedule s = compileRing(c, ranks, 2, 2, inplace);
        std::string text = emit(s);
        EXPECT_EQ(text, emit(s)); // deterministic
        auto back = parsePlanJson(text, "p.json");
        ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
        EXPECT_EQ(ir::scheduleToString(back->schedule),
                  ir::scheduleToString(s));
        EXPECT_EQ(back->contentHash, planContentHash(s));
        EXPECT_EQ(back->meta.generator, "topocc test");
        EXPECT_EQ(back->meta.algorithm, "ring");
        EXPECT_EQ(emit(back->schedule), text);
        // Printed straight to a stream (compile writes plans so), the
        // same bytes.
        PlanMeta meta;
        meta.generator = "topocc test";
        meta.algorithm = "ring";
        ASSERT_FALSE(bool(checkPlan(s, meta)));
        std::string streamed;
        llvm::raw_string_ostream os(streamed);
        printPlanJson(os, s, meta);
        EXPECT_EQ(os.str(), text);
      }
}

TEST(PlanJson, FirstLines) {
  std::string text = emit(compileRing(ir::Collective::AllReduce, 2));
  llvm::SmallVector<llvm::StringRef, 32> lines;
  llvm::StringRef(text).split(lines, '\n');
  ASSERT_GT(lines.size(), 21u);
  EXPECT_EQ(lines[1], "  \"format\": \"topocc-plan\",");
  EXPECT_EQ(lines[2], "  \"version\": 1,");
  EXPECT_EQ(lines[8], "  \"inplace\": false,");
  EXPECT_EQ(lines[14], "  \"ranks\": 2,");
  EXPECT_EQ(lines[20].substr(0, 33), "    {\"rank\": 0, \"buffers\": {\"inpu");
  // An op: kind-dependent fields only.
  EXPECT_EQ(lines[21],
            "      {\"id\":0,\"kind\":\"send\",\"src\":{\"buffer\":\"in\","
            "\"chunk\":0,\"count\":1},\"send\":{\"msg\":0,\"peer\":1},"
            "\"deps\":[],\"channel\":0,\"threadblock\":0},");
}

TEST(PlanJson, TopologyHashIsContentBased) {
  std::string dir = TOPOCC_SOURCE_DIR "/topologies/";
  auto a = topo::loadTopologyFile(dir + "dgx-a100.yaml");
  auto b = topo::loadTopologyFile(dir + "dgx-a100.yaml");
  auto c = topo::loadTopologyFile(dir + "ndv2.yaml");
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(topologyHash(*a), topologyHash(*b));
  EXPECT_NE(topologyHash(*a), topologyHash(*c));
  // Halving one link's bandwidth changes the hash.
  topo::Topology d = *a;
  d.mutableLinks()[0].bandwidth[0] /= 2;
  EXPECT_NE(topologyHash(*a), topologyHash(d));
  EXPECT_EQ(formatHash(0x1f), "0x000000000000001f");
}

TEST(PlanJson, InvalidJsonPointsAtTheByte) {
  EXPECT_EQ(loadError("{\n  \"format\": \"topocc-plan\",\n  \"version\" 1\n}"),
            "p.json:3:13: error: invalid JSON: expected ':' after an object "
            "key\n"
            "  \"version\" 1\n"
            "            ^\n");
}

TEST(PlanJson, BadFieldsNameTheirPathLineAndColumn) {
  std::string good = emit(compileRing(ir::Collective::AllReduce, 2));
  EXPECT_EQ(loadError(replaceOnce(good, "\"version\": 1", "\"version\": 7")),
            "p.json:3:14: error: $.version: plan format version 7 is not "
            "supported (this topocc reads version 1); recompile the plan\n"
            "  \"version\": 7,\n"
            "             ^\n");
  // Each problem at the value it is about; line 22 is rank 0's first op.
  EXPECT_EQ(loadDiags(replaceOnce(good, "\"peer\":1", "\"peer\":5")),
            "p.json:22:94: $.programs[0].ops[0].send.peer: expected an "
            "integer in [0, 1], got 5\n");
  EXPECT_EQ(
      loadDiags(replaceOnce(good, "\"kind\":\"send\"", "\"kind\":\"sned\"")),
      "p.json:22:22: $.programs[0].ops[0].kind: unknown op kind "
      "'sned'\n");
  // An unknown key at the key; a missing one at its object.
  EXPECT_EQ(
      loadDiags(replaceOnce(good, "\"chunksPerLoop\"", "\"chunksPerLop\"")),
      "p.json:16:3: $: unknown field 'chunksPerLop'; did you mean "
      "'chunksPerLoop'?\n"
      "p.json:1:1: $: missing field 'chunksPerLoop'\n");
  EXPECT_EQ(
      loadDiags(replaceOnce(good, "\"buffer\":\"in\"", "\"buffer\":\"input\"")),
      "p.json:22:45: $.programs[0].ops[0].src.buffer: expected 'in', "
      "'out' or 'sc', got 'input'\n");
  EXPECT_EQ(
      loadDiags(replaceOnce(good, "\"inplace\": false", "\"inplace\": 0")),
      "p.json:9:14: $.inplace: expected true or false\n");
  EXPECT_EQ(loadDiags(replaceOnce(good, "\"deps\":[]", "\"deps\":[0]")),
            "p.json:22:105: $.programs[0].ops[0].deps[0]: an op cannot "
            "depend on itself\n");
  // A field the op kind does not have.
  EXPECT_EQ(
      loadDiags(replaceOnce(good, "\"send\":{\"msg\":0,\"peer\":1},",
                            "\"send\":{\"msg\":0,\"peer\":1},\"dst\":{},")),
      "p.json:22:103: $.programs[0].ops[0].dst: op kind 'send' has no 'dst' "
      "field\n");
  // Integral numbers in any notation are integers; others are not.
  EXPECT_EQ(loadDiags(replaceOnce(good, "\"peer\":1", "\"peer\":1.0e0")),
            "(loaded)");
  EXPECT_EQ(loadDiags(replaceOnce(good, "\"peer\":1", "\"peer\":1.5")),
            "p.json:22:94: $.programs[0].ops[0].send.peer: expected an "
            "integer\n");
}

TEST(PlanJson, HugeDeclaredBuffersAreRefused) {
  // Was std::bad_alloc (the race check sized its state by the header).
  std::string good = emit(compileRing(ir::Collective::AllReduce, 2));
  size_t at = good.find("  \"contentHash\"");
  std::string noHash = good.substr(0, at) + good.substr(good.find('\n', at) + 1);
  EXPECT_EQ(loadError(replaceOnce(noHash, "\"scratch\": 0",
                                  "\"scratch\": 2000000000")),
            "p.json:1:1: error: $: the plan's schedule fails verification:\n"
            "error: schedule @ring2_allreduce_c1_k1_outofplace (stage "
            "legalized) is invalid:\n"
            "  the buffers declare 2000000008 chunks over all ranks; the "
            "verifier checks schedules of at most 67108864\n\n");
}

TEST(PlanJson, EditedOpsFailTheContentHash) {
  std::string good = emit(compileRing(ir::Collective::AllReduce, 2, 2));
  std::string bad = replaceOnce(good, "\"chunk\":0,\"count\":1",
                                "\"chunk\":1,\"count\":1");
  std::string err = loadError(bad);
  EXPECT_NE(err.find("p.json:19:18: error: $.contentHash: is 0x"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("the file was edited or damaged"), std::string::npos)
      << err;
}

TEST(PlanJson, LoadReverifiesTheSchedule) {
  // Without a content hash, an edit reaches the verifier.
  std::string good = emit(compileRing(ir::Collective::AllReduce, 2));
  size_t at = good.find("  \"contentHash\"");
  size_t end = good.find('\n', at);
  std::string noHash = good.substr(0, at) + good.substr(end + 1);
  ASSERT_TRUE(bool(parsePlanJson(noHash, "p.json")));
  std::string bad = replaceOnce(noHash, "\"recv\":{\"msg\":1,\"peer\":1}",
                                "\"recv\":{\"msg\":0,\"peer\":1}");
  std::string err = loadError(bad);
  EXPECT_EQ(err.rfind("p.json:1:1: error: $: the plan's schedule fails "
                      "verification:\n",
                      0),
            0u)
      << err;
}

// The loader parses each program and each op on its own (a whole-file DOM
// costs ~100 bytes per input byte); these pin down that it reads exactly
// what one DOM would.
std::string printedIr(llvm::StringRef text) {
  auto plan = parsePlanJson(text, "p.json");
  if (!plan)
    return "error: " + llvm::toString(plan.takeError());
  return ir::scheduleToString(plan->schedule);
}

TEST(PlanJson, SplitParsingReadsAnyLayout) {
  std::string good = emit(compileRing(ir::Collective::AllReduce, 3, 2));
  std::string want = printedIr(good);
  ASSERT_EQ(want.rfind("error", 0), std::string::npos) << want;
  // Compact (one line), and pretty-printed with other indentation.
  auto dom = llvm::json::parse(good);
  ASSERT_TRUE(bool(dom));
  std::string compact, pretty;
  llvm::raw_string_ostream(compact) << *dom;
  llvm::raw_string_ostream(pretty) << llvm::formatv("{0:3}", *dom);
  EXPECT_EQ(printedIr(compact), want);
  EXPECT_EQ(printedIr(pretty), want);
  // Brackets, braces and escaped quotes inside strings, tabs and CRLF.
  std::string tricky = replaceOnce(good, "\"generator\": \"topocc test\"",
                                   "\"generator\":\t\"t [ { \\\" ] } \\\\\"");
  tricky = replaceOnce(tricky, "\n  \"programs\"", "\r\n  \"programs\"");
  EXPECT_EQ(printedIr(tricky), want);
}

TEST(PlanJson, SyntaxErrorsInsideOpsPointAtTheFile) {
  std::string good = emit(compileRing(ir::Collective::AllReduce, 2));
  // A missing ':' in rank 1's first op: the line and column of the file.
  std::string bad = replaceOnce(good, "\"kind\":\"recv\"", "\"kind\" \"recv\"");
  size_t at = bad.find("\"kind\" \"recv\"");
  size_t lineStart = bad.rfind('\n', at) + 1;
  unsigned line = 1 + unsigned(std::count(bad.begin(), bad.begin() + at, '\n'));
  unsigned col = unsigned(at - lineStart) + 8; // after "kind" and the space
  std::string err = loadError(bad);
  EXPECT_EQ(err.rfind(llvm::formatv("p.json:{0}:{1}: error: invalid JSON: "
                                    "expected ':' after an object key\n",
                                    line, col)
                          .str(),
                      0),
            0u)
      << err;
  // A truncated file, and a programs member that is not an array.
  EXPECT_NE(loadError(good.substr(0, good.size() / 2)).find("invalid JSON"),
            std::string::npos);
  std::string notArray = good.substr(0, good.find("\"programs\"")) +
                         "\"programs\": 5\n}\n";
  EXPECT_EQ(loadDiags(notArray),
            "p.json:20:15: $.programs: expected an array\n");
  // Two programs members: refused (llvm::json let the last one win).
  std::string twice = replaceOnce(good, "\"programs\": [",
                                  "\"programs\": [], \"programs\": [");
  EXPECT_EQ(loadDiags(twice), "p.json:20:19: invalid JSON: the key "
                              "\"programs\" appears twice in one object\n");
}

TEST(PlanJson, MissingFile) {
  auto plan = loadPlanFile("/nonexistent/p.json");
  ASSERT_FALSE(bool(plan));
  EXPECT_EQ(llvm::toString(plan.takeError()),
            "error: cannot read plan '/nonexistent/p.json': No such file or "
            "directory\n");
}

TEST(PlanJson, RefusesUnverifiedSchedules) {
  ir::Schedule s = compileRing(ir::Collective::AllReduce, 2);
  s.ranks[0].ops[0].sendPeer = 0; // a send to itself, unmatched
  auto text = planToJson(s, {});
  ASSERT_FALSE(bool(text));
  EXPECT_NE(llvm::toString(text.takeError())
                .find("cannot write a plan for a schedule that fails "
                      "verification"),
            std::string::npos);
  // The check compile runs before it opens the file says the same.
  llvm::Error err = checkPlan(s, {});
  ASSERT_TRUE(bool(err));
  EXPECT_NE(llvm::toString(std::move(err))
                .find("cannot write a plan for a schedule that fails "
                      "verification"),
            std::string::npos);
  // A plan compile has verified is not checked again.
  EXPECT_FALSE(bool(checkPlan(compileRing(ir::Collective::AllReduce, 2), {},
                              PlanCheck::VerifiedByCompile)));
}

} // namespace
