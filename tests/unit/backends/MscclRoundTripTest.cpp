//===- tests/unit/backends/MscclRoundTripTest.cpp -------------------------===//
//
// `topocc compile --emit msccl-xml` output round-trips through the importer:
// ring allreduce, allgather and reducescatter compiled by topocc::compile for
// several rank counts, channels, chunks and both modes are emitted, imported
// back and compared with the compiled schedule (same ops per rank and
// threadblock in program order, same message pairing, same dependency sets
// once nop chains are folded as the executor folds them); the import
// verifies and the conformance checker accepts the file.
//
//===----------------------------------------------------------------------===//

#include "backends/MscclXml.h"
#include "backends/MscclXmlCheck.h"
#include "backends/MscclXmlImport.h"
#include "compiler/Pipeline.h"
#include "ir/Printer.h"
#include "ir/Schedule.h"
#include "ir/Verifier.h"

#include "llvm/Support/FormatVariadic.h"

#include "gtest/gtest.h"

#include <functional>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

using namespace topocc;
using namespace topocc::ir;

namespace {

/// An op's place: (threadblock, index among that block's non-nop ops).
using Place = std::pair<int, int>;

/// One non-nop op in a comparable form.
struct NormOp {
  OpKind kind;
  BufferRef src, dst;
  RankId sendPeer, recvPeer;
  ChannelId channel;
  std::set<Place> deps; ///< nop deps folded in, as the executor waits

  friend bool operator==(const NormOp &, const NormOp &) = default;
};

struct NormRank {
  std::map<int, std::vector<NormOp>> blocks;
  int32_t in = 0, out = 0, scratch = 0;
};

struct Norm {
  std::vector<NormRank> ranks;
  /// (sender rank, place) -> (receiver rank, place).
  std::map<std::pair<int, Place>, std::pair<int, Place>> pairs;
};

/// Folds nop chains into the next op of the block and names ops by place.
/// A dependency on a nop resolves to that nop's own dependencies.
Norm normalize(const Schedule &s) {
  Norm n;
  n.ranks.resize(s.numRanks);
  std::map<MsgId, std::pair<int, Place>> sendOf, recvOf;
  for (RankId r = 0; r < s.numRanks; ++r) {
    const RankProgram &rp = s.ranks[r];
    NormRank &nr = n.ranks[r];
    nr.in = rp.inputChunks;
    nr.out = rp.outputChunks;
    nr.scratch = rp.scratchChunks;
    std::vector<Place> placeOf(rp.ops.size(), Place{-1, -1});
    std::map<int, int> nextIndex;
    for (size_t i = 0; i < rp.ops.size(); ++i)
      if (rp.ops[i].kind != OpKind::Nop)
        placeOf[i] = {rp.ops[i].threadblock, nextIndex[rp.ops[i].threadblock]++};
    // Resolves a dep to places (through nops).
    std::function<void(OpId, std::set<Place> &)> resolve =
        [&](OpId d, std::set<Place> &out) {
          if (rp.ops[d].kind != OpKind::Nop) {
            out.insert(placeOf[d]);
            return;
          }
          for (OpId dd : rp.ops[d].deps)
            resolve(dd, out);
        };
    std::map<int, std::set<Place>> pending; // held nop deps per block
    for (size_t i = 0; i < rp.ops.size(); ++i) {
      const Op &op = rp.ops[i];
      std::set<Place> &held = pending[op.threadblock];
      if (op.kind == OpKind::Nop) {
        for (OpId d : op.deps)
          resolve(d, held);
        continue;
      }
      NormOp no{op.kind, op.src, op.dst, op.sendPeer,
                op.recvPeer, op.channel, std::move(held)};
      held.clear();
      for (OpId d : op.deps)
        resolve(d, no.deps);
      nr.blocks[op.threadblock].push_back(std::move(no));
      if (sends(op.kind))
        sendOf[op.sendMsg] = {r, placeOf[i]};
      if (receives(op.kind))
        recvOf[op.recvMsg] = {r, placeOf[i]};
    }
  }
  for (auto &[msg, from] : sendOf) {
    auto it = recvOf.find(msg);
    n.pairs[from] = it == recvOf.end() ? std::pair{-1, Place{-1, -1}}
                                       : it->second;
  }
  return n;
}

std::string describe(const NormOp &o) {
  std::string deps;
  for (const Place &p : o.deps)
    deps += llvm::formatv(" tb{0}#{1}", p.first, p.second).str();
  return llvm::formatv("kind {0} src={1}:{2}+{3} dst={4}:{5}+{6} send={7} "
                       "recv={8} ch={9} deps={{{10} }",
                       int(o.kind), int(o.src.buffer), o.src.chunk,
                       o.src.count, int(o.dst.buffer), o.dst.chunk,
                       o.dst.count, o.sendPeer, o.recvPeer, o.channel, deps)
      .str();
}

/// Asserts that `b` is equivalent to `a`.
void expectEquivalent(const Schedule &a, const Schedule &b) {
  ASSERT_EQ(a.numRanks, b.numRanks);
  EXPECT_EQ(a.collective, b.collective);
  EXPECT_EQ(a.chunksPerLoop, b.chunksPerLoop);
  EXPECT_EQ(a.inplace, b.inplace);
  Norm na = normalize(a), nb = normalize(b);
  for (RankId r = 0; r < a.numRanks; ++r) {
    const NormRank &x = na.ranks[r], &y = nb.ranks[r];
    EXPECT_EQ(x.in, y.in) << "rank " << r << " input chunks";
    EXPECT_EQ(x.out, y.out) << "rank " << r << " output chunks";
    EXPECT_EQ(x.scratch, y.scratch) << "rank " << r << " scratch chunks";
    ASSERT_EQ(x.blocks.size(), y.blocks.size()) << "rank " << r;
    for (auto &[tb, ops] : x.blocks) {
      auto it = y.blocks.find(tb);
      ASSERT_NE(it, y.blocks.end()) << "rank " << r << " tb " << tb;
      ASSERT_EQ(ops.size(), it->second.size())
          << "rank " << r << " tb " << tb;
      for (size_t i = 0; i < ops.size(); ++i)
        EXPECT_EQ(ops[i], it->second[i])
            << "rank " << r << " tb " << tb << " op " << i
            << "\ncompiled: " << describe(ops[i])
            << "\nimported: " << describe(it->second[i]);
    }
  }
  EXPECT_EQ(na.pairs, nb.pairs) << "message pairing differs";
}

struct Case {
  Collective coll;
  int ranks, channels, chunks;
  bool inplace;
};

std::string caseName(const Case &c) {
  return llvm::formatv("{0} n={1} ch={2} chunks={3} {4}",
                       collectiveName(c.coll), c.ranks, c.channels, c.chunks,
                       c.inplace ? "in-place" : "out-of-place")
      .str();
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (Collective coll : {Collective::AllReduce, Collective::AllGather,
                          Collective::ReduceScatter})
    for (int ranks : {2, 3, 4, 8})
      for (int channels : {1, 2})
        for (int chunks : {1, 2})
          for (bool inplace : {false, true})
            out.push_back({coll, ranks, channels, chunks, inplace});
  return out;
}

TEST(MscclRoundTripTest, CompiledRingsImportToAnEquivalentSchedule) {
  unsigned compiled = 0;
  for (const Case &c : cases()) {
    SCOPED_TRACE(caseName(c));
    CompileRequest req;
    req.collective = c.coll;
    req.channels = c.channels;
    req.chunks = c.chunks;
    req.inplace = c.inplace;
    PassLogger log;
    auto plan = compile(c.ranks, req, log);
    if (!plan) {
      // A request the pipeline refuses (a limit) is not a round-trip case.
      std::string msg = llvm::toString(plan.takeError());
      ADD_FAILURE() << "compile failed: " << msg;
      continue;
    }
    ++compiled;
    auto xml = backends::mscclXmlToString(plan->schedule);
    ASSERT_TRUE(static_cast<bool>(xml)) << llvm::toString(xml.takeError());
    auto imported = backends::importMscclXml(*xml, "roundtrip.xml");
    ASSERT_TRUE(static_cast<bool>(imported))
        << llvm::toString(imported.takeError()) << "\n"
        << *xml;
    EXPECT_EQ(imported->stage, Stage::Legalized);
    expectEquivalent(plan->schedule, *imported);
    llvm::Error verr = verifySchedule(*imported);
    EXPECT_FALSE(static_cast<bool>(verr)) << llvm::toString(std::move(verr));
    backends::MscclVerdict v = backends::verifyMscclXml(*xml, "roundtrip.xml");
    EXPECT_TRUE(v.accepted());
    for (const backends::MscclFinding &f : v.findings)
      ADD_FAILURE() << f.diag.message;
  }
  EXPECT_EQ(compiled, cases().size());
}

TEST(MscclRoundTripTest, ComparisonSeesDifferences) {
  // Negative control for normalize(): a dropped dependency, a changed
  // operand and a re-paired message are all differences.
  CompileRequest req;
  req.collective = Collective::AllReduce;
  req.channels = 2;
  PassLogger log;
  auto plan = compile(4, req, log);
  ASSERT_TRUE(static_cast<bool>(plan)) << llvm::toString(plan.takeError());
  Norm base = normalize(plan->schedule);
  size_t nOps = 0;
  for (const NormRank &r : base.ranks)
    for (auto &[tb, ops] : r.blocks)
      nOps += ops.size();
  EXPECT_GT(nOps, 0u);
  EXPECT_FALSE(base.pairs.empty());

  Schedule changed = plan->schedule;
  for (Op &op : changed.ranks[0].ops)
    if (op.kind != OpKind::Nop) {
      op.src.chunk ^= 1;
      break;
    }
  EXPECT_FALSE(normalize(changed).ranks[0].blocks ==
               base.ranks[0].blocks);

  changed = plan->schedule;
  for (Op &op : changed.ranks[1].ops)
    if (sends(op.kind)) {
      op.sendMsg = op.sendMsg == 0 ? 1 : 0;
      break;
    }
  EXPECT_NE(normalize(changed).pairs, base.pairs);
}

TEST(MscclRoundTripTest, EmittingTheImportReproducesTheFile) {
  // emit(import(emit(s))) == emit(s): the importer loses nothing the
  // emitter writes.
  for (Collective coll : {Collective::AllReduce, Collective::AllGather,
                          Collective::ReduceScatter}) {
    CompileRequest req;
    req.collective = coll;
    req.channels = 2;
    req.chunks = 2;
    PassLogger log;
    auto plan = compile(4, req, log);
    ASSERT_TRUE(static_cast<bool>(plan)) << llvm::toString(plan.takeError());
    auto xml = backends::mscclXmlToString(plan->schedule);
    ASSERT_TRUE(static_cast<bool>(xml)) << llvm::toString(xml.takeError());
    auto imported = backends::importMscclXml(*xml, "roundtrip.xml");
    ASSERT_TRUE(static_cast<bool>(imported))
        << llvm::toString(imported.takeError());
    backends::MscclXmlOptions o;
    o.name = plan->schedule.name;
    auto again = backends::mscclXmlToString(*imported, o);
    ASSERT_TRUE(static_cast<bool>(again)) << llvm::toString(again.takeError());
    EXPECT_EQ(*xml, *again) << collectiveName(coll).str();
  }
}

} // namespace
