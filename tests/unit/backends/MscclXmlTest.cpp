//===- tests/unit/backends/MscclXmlTest.cpp - MSCCL XML emitter -----------===//

#include "backends/MscclXml.h"

#include "backends/MscclXmlCheck.h"

#include "compiler/Pipeline.h"
#include "ir/Printer.h"
#include "support/Diagnostics.h"

#include "gtest/gtest.h"

using namespace topocc;
using namespace topocc::ir;

namespace {

std::string message(llvm::Error e) { return errorMessages(std::move(e), ""); }

Schedule compiled(Collective c, int n, int channels, int chunks, bool inplace,
                  const std::string &name = "") {
  CompileRequest req;
  req.collective = c;
  req.channels = channels;
  req.chunks = chunks;
  req.inplace = inplace;
  req.name = name;
  PassLogger log;
  auto plan = compile(n, req, log);
  EXPECT_TRUE(bool(plan));
  return plan ? std::move(plan->schedule) : Schedule();
}

/// The reference ring of docs/MscclXmlFormat.md 2.2
/// (msccl_generated/allreduce_ring_simple_4gpu_1inst.xml), ranks 0 and 1.
constexpr const char *kReferenceHead =
    R"(<algo name="allreduce_ring_inplace" proto="Simple" nchannels="1" nchunksperloop="4" ngpus="4" coll="allreduce" inplace="1" outofplace="0" minBytes="0" maxBytes="0">
  <gpu id="0" i_chunks="4" o_chunks="0" s_chunks="0">
    <tb id="0" send="1" recv="3" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0" />
      <step s="1" type="rrs" srcbuf="i" srcoff="3" dstbuf="i" dstoff="3" cnt="1" depid="-1" deps="-1" hasdep="0" />
      <step s="2" type="rrs" srcbuf="i" srcoff="2" dstbuf="i" dstoff="2" cnt="1" depid="-1" deps="-1" hasdep="0" />
      <step s="3" type="rrcs" srcbuf="i" srcoff="1" dstbuf="i" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0" />
      <step s="4" type="rcs" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0" />
      <step s="5" type="rcs" srcbuf="i" srcoff="3" dstbuf="i" dstoff="3" cnt="1" depid="-1" deps="-1" hasdep="0" />
      <step s="6" type="r" srcbuf="i" srcoff="2" dstbuf="i" dstoff="2" cnt="1" depid="-1" deps="-1" hasdep="0" />
    </tb>
  </gpu>
  <gpu id="1" i_chunks="4" o_chunks="0" s_chunks="0">
    <tb id="0" send="2" recv="0" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="1" dstbuf="i" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0" />
      <step s="1" type="rrs" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0" />
      <step s="2" type="rrs" srcbuf="i" srcoff="3" dstbuf="i" dstoff="3" cnt="1" depid="-1" deps="-1" hasdep="0" />
      <step s="3" type="rrcs" srcbuf="i" srcoff="2" dstbuf="i" dstoff="2" cnt="1" depid="-1" deps="-1" hasdep="0" />
      <step s="4" type="rcs" srcbuf="i" srcoff="1" dstbuf="i" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0" />
      <step s="5" type="rcs" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0" />
      <step s="6" type="r" srcbuf="i" srcoff="3" dstbuf="i" dstoff="3" cnt="1" depid="-1" deps="-1" hasdep="0" />
    </tb>
  </gpu>
)";

TEST(MscclXmlTest, RingAllReduceMatchesTheReferenceFile) {
  Schedule s =
      compiled(Collective::AllReduce, 4, 1, 1, true, "allreduce_ring_inplace");
  auto xml = backends::mscclXmlToString(s);
  ASSERT_TRUE(bool(xml)) << message(xml.takeError());
  EXPECT_EQ(xml->substr(0, std::string(kReferenceHead).size()), kReferenceHead);
  // Ranks 2 and 3 "follow the same pattern": send to (r+1)%4, receive from
  // (r+3)%4.
  EXPECT_NE(xml->find(R"(<gpu id="2" i_chunks="4" o_chunks="0" s_chunks="0">
    <tb id="0" send="3" recv="1" chan="0">)"),
            std::string::npos);
  EXPECT_NE(xml->find(R"(<gpu id="3" i_chunks="4" o_chunks="0" s_chunks="0">
    <tb id="0" send="0" recv="2" chan="0">)"),
            std::string::npos);
  EXPECT_EQ(xml->substr(xml->size() - 17), "  </gpu>\n</algo>\n");
}

TEST(MscclXmlTest, CanonicalText) {
  Schedule s = compiled(Collective::AllGather, 5, 3, 2, false);
  backends::MscclXmlOptions opts;
  opts.proto = "LL128";
  opts.minBytes = 1024;
  opts.maxBytes = 1 << 20;
  auto xml = backends::mscclXmlToString(s, opts);
  ASSERT_TRUE(bool(xml)) << message(xml.takeError());
  EXPECT_EQ(xml->find("<?xml"), std::string::npos);
  EXPECT_EQ(xml->find('\t'), std::string::npos);
  EXPECT_EQ(xml->find('\r'), std::string::npos);
  EXPECT_EQ(xml->find('\''), std::string::npos);
  EXPECT_EQ(xml->back(), '\n');
  EXPECT_EQ(
      xml->rfind("<algo name=\"ring5_allgather_c3_k2_outofplace\" "
                 "proto=\"LL128\" nchannels=\"3\" nchunksperloop=\"30\" "
                 "ngpus=\"5\" coll=\"allgather\" inplace=\"0\" "
                 "outofplace=\"1\" minBytes=\"1024\" maxBytes=\"1048576\">\n",
                 0),
      0u);
  EXPECT_NE(xml->find("  <gpu id=\"4\" i_chunks=\"6\" o_chunks=\"30\" "
                      "s_chunks=\"0\">\n    <tb id=\"0\" send=\"0\" recv=\"3\" "
                      "chan=\"0\">\n"),
            std::string::npos);
  EXPECT_NE(xml->find("    <tb id=\"2\" send=\"0\" recv=\"3\" chan=\"2\">\n"),
            std::string::npos);
  // Every step has all ten attributes, in order; no -1 in a used field.
  size_t steps = 0;
  llvm::StringRef text(*xml);
  while (!text.empty()) {
    auto [line, rest] = text.split('\n');
    text = rest;
    if (!line.contains("<step "))
      continue;
    ++steps;
    size_t at = 0;
    for (const char *attr : {"s=", "type=", "srcbuf=", "srcoff=", "dstbuf=",
                             "dstoff=", "cnt=", "depid=", "deps=", "hasdep="}) {
      size_t pos = line.find(std::string(" ") + attr);
      ASSERT_NE(pos, std::string::npos) << line.str();
      EXPECT_GT(pos, at) << line.str();
      at = pos;
    }
    EXPECT_FALSE(line.contains("off=\"-1\"")) << line.str();
    EXPECT_TRUE(line.startswith("      <step s=\"")) << line.str();
    EXPECT_TRUE(line.endswith("\" />")) << line.str();
  }
  EXPECT_EQ(steps, size_t(5 * 3 * (2 * 5 + 1)));
}

/// One rank, two threadblocks: tb 1 waits for two steps of tb 0 -> the
/// latest is kept (earlier ones are implied by program order).
Schedule crossThreadblockSchedule() {
  Schedule s;
  s.name = "deps";
  s.collective = Collective::AllReduce;
  s.numRanks = 1;
  s.chunksPerLoop = 4;
  s.stage = Stage::Legalized;
  s.numChannels = 1;
  s.ranks.resize(1);
  RankProgram &rp = s.ranks[0];
  rp.inputChunks = 4;
  rp.outputChunks = 4;
  auto copy = [](int32_t c, TbId tb, std::vector<OpId> deps) {
    Op op;
    op.kind = OpKind::Copy;
    op.src = {BufferKind::Input, c, 1};
    op.dst = {BufferKind::Output, c, 1};
    op.channel = 0;
    op.threadblock = tb;
    op.deps.assign(deps.begin(), deps.end());
    return op;
  };
  Op nop;
  nop.kind = OpKind::Nop;
  nop.channel = 0;
  nop.threadblock = 2;
  nop.deps = {1};
  rp.ops = {copy(0, 0, {}), copy(1, 1, {}), nop, copy(2, 2, {0}),
            copy(3, 2, {})};
  return s;
}

TEST(MscclXmlTest, NopsAndHasdep) {
  auto xml = backends::mscclXmlToString(crossThreadblockSchedule());
  ASSERT_TRUE(bool(xml)) << message(xml.takeError());
  EXPECT_NE(xml->find(R"(    <tb id="0" send="-1" recv="-1" chan="0">
      <step s="0" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="1" />
    </tb>
    <tb id="1" send="-1" recv="-1" chan="0">
      <step s="0" type="cpy" srcbuf="i" srcoff="1" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="1" />
    </tb>
    <tb id="2" send="-1" recv="-1" chan="0">
      <step s="0" type="nop" srcbuf="i" srcoff="-1" dstbuf="o" dstoff="-1" cnt="0" depid="1" deps="0" hasdep="0" />
      <step s="1" type="cpy" srcbuf="i" srcoff="2" dstbuf="o" dstoff="2" cnt="1" depid="0" deps="0" hasdep="0" />
      <step s="2" type="cpy" srcbuf="i" srcoff="3" dstbuf="o" dstoff="3" cnt="1" depid="-1" deps="-1" hasdep="0" />
    </tb>
)"),
            std::string::npos)
      << *xml;
}

TEST(MscclXmlTest, NotExpressible) {
  Schedule lowered = crossThreadblockSchedule();
  lowered.stage = Stage::ThreadblocksAssigned;
  auto xml = backends::mscclXmlToString(lowered);
  ASSERT_FALSE(bool(xml));
  EXPECT_EQ(message(xml.takeError()),
            "cannot emit MSCCL XML: the schedule is at stage 'threadblocks', "
            "expected 'legalized'");

  Schedule lc = crossThreadblockSchedule();
  lc.ranks[0].ops[4].kind = OpKind::LinComb;
  lc.ranks[0].ops[4].terms = {{2.0, {BufferKind::Input, 3, 1}}};
  xml = backends::mscclXmlToString(lc);
  ASSERT_FALSE(bool(xml));
  EXPECT_EQ(
      message(xml.takeError()),
      "cannot emit MSCCL XML: rank 0 %4: 'lincomb' has no MSCCL step type");

  Schedule coeff = compiled(Collective::AllReduce, 3, 1, 1, false);
  for (Op &op : coeff.ranks[1].ops)
    if (op.kind == OpKind::RecvReduceCopySend)
      op.msgCoeff = 0.5;
  xml = backends::mscclXmlToString(coeff);
  ASSERT_FALSE(bool(xml));
  EXPECT_EQ(message(xml.takeError()),
            "cannot emit MSCCL XML: rank 1 %2: MSCCL steps cannot scale by a "
            "coefficient");

  Schedule big = crossThreadblockSchedule();
  big.chunksPerLoop = 100;
  big.ranks[0].inputChunks = big.ranks[0].outputChunks = 100;
  big.ranks[0].ops[4].src.count = big.ranks[0].ops[4].dst.count = 72;
  xml = backends::mscclXmlToString(big);
  ASSERT_FALSE(bool(xml));
  EXPECT_EQ(message(xml.takeError()),
            "cannot emit MSCCL XML: rank 0 %4: cnt 72 is outside 1..71 "
            "(MSCCL_MAX_COUNT); use more chunks so each step moves fewer "
            "units");

  Schedule gap = crossThreadblockSchedule();
  gap.ranks[0].ops[1].threadblock = 3;
  gap.ranks[0].ops[2].deps = {0};
  gap.ranks[0].ops[3].deps = {};
  xml = backends::mscclXmlToString(gap);
  ASSERT_FALSE(bool(xml));
  EXPECT_EQ(message(xml.takeError()),
            "cannot emit MSCCL XML: rank 0 has no threadblock 1, but MSCCL "
            "threadblock ids must be dense from 0");

  Schedule two = crossThreadblockSchedule();
  two.ranks[0].ops[3].deps = {0, 1};
  xml = backends::mscclXmlToString(two);
  ASSERT_FALSE(bool(xml));
  EXPECT_EQ(message(xml.takeError()),
            "cannot emit MSCCL XML: rank 0 %3: more than one dependency; the "
            "schedule is not legalized");
}

TEST(MscclXmlTest, StepLimit) {
  Schedule s = compiled(Collective::AllReduce, 4, 1, 1, true);
  backends::MscclXmlOptions opts;
  opts.maxSteps = 6;
  auto xml = backends::mscclXmlToString(s, opts);
  ASSERT_FALSE(bool(xml));
  EXPECT_EQ(message(xml.takeError()),
            "cannot emit MSCCL XML: rank 0 threadblock 0 has 7 steps, more "
            "than the limit of 6 (MSCCL_MAX_NUM_STEPS)");
}

TEST(MscclXmlTest, Deterministic) {
  auto a = backends::mscclXmlToString(
      compiled(Collective::ReduceScatter, 6, 2, 3, true));
  auto b = backends::mscclXmlToString(
      compiled(Collective::ReduceScatter, 6, 2, 3, true));
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*a, *b);
}

/// Every emitted ring file passes the independent conformance checker
/// (executor rules, rules 1-11, deadlock, races, postcondition).
TEST(MscclXmlTest, EmittedRingsPassTheConformanceChecker) {
  const Collective colls[] = {Collective::AllReduce, Collective::AllGather,
                              Collective::ReduceScatter};
  int checked = 0;
  for (int n : {2, 3, 4, 8})
    for (Collective c : colls)
      for (int inplace = 0; inplace < 2; ++inplace)
        for (int channels : {1, 2})
          for (int chunks : {1, 3}) {
            Schedule s = compiled(c, n, channels, chunks, inplace);
            auto xml = backends::mscclXmlToString(s);
            ASSERT_TRUE(bool(xml)) << message(xml.takeError());
            backends::MscclCheckResult r =
                backends::checkMscclXml(*xml, s.name + ".xml");
            std::string errors;
            llvm::raw_string_ostream os(errors);
            for (const Diagnostic &d : r.errors)
              d.print(os);
            os.flush();
            EXPECT_TRUE(r.ok()) << s.name << ":\n" << errors;
            ++checked;
          }
  EXPECT_EQ(checked, 4 * 3 * 2 * 2 * 2);
}

} // namespace
