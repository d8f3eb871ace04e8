//===- backends/MscclXmlImport.cpp - MSCCL XML to schedule IR -------------===//
//
// Mapping (docs/MscclXmlFormat.md 2.8, 2.9):
//   <gpu id=r>            -> ranks[r], sizes from i_chunks/o_chunks/s_chunks
//   <tb id send recv chan>-> threadblock id, channel chan; ops in tb-id order
//   <step type=...>       -> one op; src only where the type reads it (the
//                            local operand of rrs/rrc/rrcs), dst only where it
//                            writes; unused fields are ignored
//   k-th send of A's block (send=B, chan=c) <-> k-th receive of B's block
//                            (recv=A, chan=c): one message id
//   depid/deps            -> a dep on the first step at position >= deps of
//                            block depid that publishes (hasdep=1), which is
//                            when the executor releases the wait
//   nop with a dependency -> Nop op with that one dep; nops without one and
//                            nops at the end of a block are dropped (the
//                            executor drops them)
//   re fusion             -> sequential re ops; a nop between two fused re
//                            members is moved after the fused run, where the
//                            executor waits for it
//
//===----------------------------------------------------------------------===//

#include "backends/MscclXmlImport.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

#include <map>
#include <set>
#include <tuple>

namespace topocc::backends {

using namespace topocc::ir;

namespace {

std::optional<BufferKind> bufferFromName(llvm::StringRef s) {
  if (s == "i")
    return BufferKind::Input;
  if (s == "o")
    return BufferKind::Output;
  if (s == "s")
    return BufferKind::Scratch;
  return std::nullopt;
}

class Importer {
public:
  Importer(const XmlDocument &doc, const MscclAlgo &algo,
           const MscclImportOptions &opts, std::vector<MscclRuleTag> *tags)
      : doc(doc), algo(algo), opts(opts), tags(tags) {}

  llvm::Expected<MscclImport> run();

private:
  /// An error of `rule` (MscclRule::Import where the file breaks no
  /// numbered rule but cannot be imported).
  void error(MscclRule rule, const SourceLoc &loc, std::string msg) {
    diags.add(doc.diag(Severity::Error, loc, "import: " + std::move(msg)));
    if (tags)
      tags->push_back({rule, std::nullopt});
  }
  void warning(const SourceLoc &loc, std::string msg) {
    result.warnings.push_back(
        doc.diag(Severity::Warning, loc, "import: " + std::move(msg)));
  }
  SourceLoc withFile(SourceLoc l) const {
    l.file = doc.fileName;
    return l;
  }
  static SourceLoc attrLoc(const XmlElement *el, llvm::StringRef key) {
    if (const XmlAttr *a = el->find(key))
      return a->loc;
    return el->loc;
  }

  void importRank(RankId r, const MscclGpu &gpu);
  void pairMessages();

  const XmlDocument &doc;
  const MscclAlgo &algo;
  const MscclImportOptions &opts;
  std::vector<MscclRuleTag> *tags;
  DiagnosticList diags;
  MscclImport result;

  /// A dependency to resolve once all ops of a rank exist.
  struct PendingDep {
    OpId op;
    int depid, deps;
    SourceLoc loc;
  };
  /// (sender, receiver, channel) -> ops in FIFO order.
  std::map<std::tuple<int, int, int>, std::vector<std::pair<RankId, OpId>>>
      sendsOf, recvsOf;
};

void Importer::importRank(RankId r, const MscclGpu &gpu) {
  RankProgram &rp = result.schedule.ranks[r];
  std::vector<SourceLoc> &locs = result.opLocs[r];
  rp.inputChunks = gpu.iChunks;
  rp.outputChunks = gpu.oChunks;
  rp.scratchChunks = gpu.sChunks;

  // Blocks in id order; dependencies name blocks by id.
  std::map<int, const MscclTb *> tbById;
  std::map<std::pair<int, int>, const MscclTb *> sendConn, recvConn;
  for (const MscclTb &tb : gpu.tbs) {
    if (!tb.complete)
      continue;
    if (!tbById.emplace(tb.id, &tb).second) {
      error(
          MscclRule::Import, attrLoc(tb.el, "id"),
          llvm::formatv("duplicate thread block id {0} on rank {1}", tb.id, r));
      continue;
    }
    for (auto [peer, conn, what] : {std::tuple{tb.send, &sendConn, "send"},
                                    std::tuple{tb.recv, &recvConn, "recv"}}) {
      if (peer == -1)
        continue;
      if (peer < 0 || peer >= algo.ngpus || peer == r) {
        error(MscclRule::Rule3, attrLoc(tb.el, what),
              llvm::formatv("rule 3: tb {0} on rank {1} has {2} peer {3}, "
                            "not a rank other than {1}",
                            tb.id, r, what, peer));
        continue;
      }
      auto [it, fresh] = conn->emplace(std::pair{tb.chan, peer}, &tb);
      if (!fresh)
        error(MscclRule::Rule2, attrLoc(tb.el, what),
              llvm::formatv("rule 2: tb {0} and tb {1} on rank {2} share the "
                            "{3} connection to rank {4} on chan {5}",
                            it->second->id, tb.id, r, what, peer, tb.chan));
    }
  }

  // position -> op id, per block (kNone where the step made no op).
  std::map<int, std::vector<OpId>> opOfStep;
  std::vector<PendingDep> pending;

  for (auto &[id, tbp] : tbById) {
    const MscclTb &tb = *tbp;
    std::vector<OpId> &stepOps = opOfStep[id];
    stepOps.assign(tb.steps.size(), kNone);
    // Nops wait on behalf of the next transfer that is not a continuation of
    // a fused re run; keep them until that transfer.
    std::vector<const MscclStep *> heldNops;
    int runDstBuf = -1, runDstOff = -1, runSrcBuf = -1, numReductions = 0;
    auto emit = [&](const MscclStep &st, OpKind kind) {
      Op op;
      op.kind = kind;
      unsigned flags = opFlags(kind);
      if (flags & OF_RS)
        op.src = BufferRef{*bufferFromName(st.srcbuf), st.srcoff, st.cnt};
      if (flags & OF_WD)
        op.dst = BufferRef{*bufferFromName(st.dstbuf), st.dstoff, st.cnt};
      if (flags & OF_SN)
        op.sendPeer = tb.send;
      if (flags & OF_RV)
        op.recvPeer = tb.recv;
      op.channel = tb.chan;
      op.threadblock = tb.id;
      OpId opId = static_cast<OpId>(rp.ops.size());
      if (st.depid >= 0)
        pending.push_back({opId, st.depid, st.deps, attrLoc(st.el, "depid")});
      if (flags & OF_SN)
        sendsOf[{r, tb.send, tb.chan}].push_back({r, opId});
      if (flags & OF_RV)
        recvsOf[{tb.recv, r, tb.chan}].push_back({r, opId});
      rp.ops.push_back(std::move(op));
      locs.push_back(withFile(st.el->loc));
      stepOps[st.position] = opId;
    };

    for (const MscclStep &st : tb.steps) {
      if (!st.complete)
        continue;
      std::optional<OpKind> kind = mscclStepOpKind(st.type);
      if (!kind) {
        error(MscclRule::Import, attrLoc(st.el, "type"),
              llvm::formatv("step type \"{0}\" {1}", st.typeName,
                            st.type == MscclStepType::RecvAdd
                                ? "(legacy recv-add) is not executable on "
                                  "the msccl-executor-nccl runtime"
                                : "is not supported"));
        continue;
      }
      if (*kind == OpKind::Nop) {
        if (st.depid >= 0)
          heldNops.push_back(&st);
        continue;
      }
      MscclStepTraits tr = mscclStepTraits(st.type);
      bool bad = false;
      if (tr.readsSrc && !bufferFromName(st.srcbuf)) {
        error(MscclRule::Import, attrLoc(st.el, "srcbuf"),
              "type of buffer is not supported: " + st.srcbuf);
        bad = true;
      }
      if ((tr.writesDst || st.type == MscclStepType::Reduce) &&
          !bufferFromName(st.dstbuf)) {
        error(MscclRule::Import, attrLoc(st.el, "dstbuf"),
              "type of buffer is not supported: " + st.dstbuf);
        bad = true;
      }
      if ((tr.sends && tb.send < 0) || (tr.receives && tb.recv < 0)) {
        error(MscclRule::Import, st.el->loc,
              llvm::formatv("step {0} of tb {1} on rank {2} {3} but the block "
                            "has no {4} peer",
                            st.position, tb.id, r,
                            tr.sends && tb.send < 0 ? "sends" : "receives",
                            tr.sends && tb.send < 0 ? "send" : "recv"));
        bad = true;
      }
      if (bad)
        continue;
      // re fusion, as the executor's parser decides it.
      bool isRe = st.type == MscclStepType::Reduce;
      int srcB = isRe ? int(*bufferFromName(st.srcbuf)) : -1;
      int dstB = isRe ? int(*bufferFromName(st.dstbuf)) : -1;
      bool continuation = st.type == MscclStepType::Reduce &&
                          runDstBuf == dstB && runDstOff == st.dstoff &&
                          runSrcBuf == srcB && st.depid == -1;
      if (!continuation) {
        for (const MscclStep *n : heldNops) {
          Op op;
          op.kind = OpKind::Nop;
          op.channel = tb.chan;
          op.threadblock = tb.id;
          OpId opId = static_cast<OpId>(rp.ops.size());
          pending.push_back({opId, n->depid, n->deps, attrLoc(n->el, "depid")});
          rp.ops.push_back(std::move(op));
          locs.push_back(withFile(n->el->loc));
          stepOps[n->position] = opId;
        }
        heldNops.clear();
      }
      emit(st, *kind);
      if (st.type != MscclStepType::Reduce) {
        runDstBuf = runDstOff = runSrcBuf = -1;
      } else {
        ++numReductions;
        if (st.hasdep || numReductions == kMscclMaxReduceFusion) {
          runDstBuf = runDstOff = -1;
        } else {
          runDstBuf = dstB;
          runDstOff = st.dstoff;
          runSrcBuf = srcB;
        }
      }
    }
    // Nops left at the end of the block are dropped with their waits.
  }

  // Resolve dependencies: the executor releases a wait on (b, k) when block
  // b publishes progress >= k, i.e. after its first step at position >= k
  // with hasdep="1".
  for (const PendingDep &d : pending) {
    auto it = tbById.find(d.depid);
    if (it == tbById.end()) {
      error(MscclRule::Rule6, d.loc,
            llvm::formatv("rule 6: dependency on tb {0}, which does "
                          "not exist on rank {1}",
                          d.depid, r));
      continue;
    }
    const MscclTb &target = *it->second;
    const std::vector<OpId> &stepOps = opOfStep[d.depid];
    OpId found = kNone;
    for (size_t p = std::max(0, d.deps); p < target.steps.size(); ++p) {
      const MscclStep &ts = target.steps[p];
      if (ts.complete && ts.type != MscclStepType::Nop && ts.hasdep == 1 &&
          stepOps[p] != kNone) {
        found = stepOps[p];
        break;
      }
    }
    if (found == kNone) {
      error(MscclRule::Rule6, d.loc,
            llvm::formatv("rule 6: dependency on tb {0} step {1} of rank {2} "
                          "is never released (no step at or after it "
                          "publishes with hasdep=\"1\")",
                          d.depid, d.deps, r));
      continue;
    }
    rp.ops[d.op].deps.push_back(found);
  }
}

void Importer::pairMessages() {
  // Deterministic ids: keys in (sender, receiver, channel) order.
  std::set<std::tuple<int, int, int>> keys;
  for (auto &kv : sendsOf)
    keys.insert(kv.first);
  for (auto &kv : recvsOf)
    keys.insert(kv.first);
  MsgId next = 0;
  for (const auto &key : keys) {
    const auto &s = sendsOf[key];
    const auto &v = recvsOf[key];
    size_t n = std::max(s.size(), v.size());
    for (size_t k = 0; k < n; ++k) {
      MsgId id = next++;
      if (k < s.size())
        result.schedule.ranks[s[k].first].ops[s[k].second].sendMsg = id;
      if (k < v.size())
        result.schedule.ranks[v[k].first].ops[v[k].second].recvMsg = id;
    }
  }
}

llvm::Expected<MscclImport> Importer::run() {
  Schedule &s = result.schedule;
  const XmlElement *ael = algo.el;
  s.name =
      algo.name.empty() ? llvm::sys::path::stem(doc.fileName).str() : algo.name;
  std::string coll = algo.coll;
  if (coll == "reduce_scatter") {
    warning(attrLoc(ael, "coll"),
            "legacy spelling coll=\"reduce_scatter\" read as reducescatter");
    coll = "reducescatter";
  }
  std::optional<Collective> c = collectiveFromName(coll);
  if (!c) {
    error(MscclRule::Import, attrLoc(ael, "coll"),
          "coll=\"" + algo.coll +
              "\" cannot be imported (the schedule IR has allreduce, "
              "allgather, reducescatter, alltoall, broadcast, reduce)");
    return diags.takeError();
  }
  s.collective = *c;
  if (algo.ngpus < 1 || algo.ngpus > 4096) {
    error(MscclRule::Import, attrLoc(ael, "ngpus"),
          llvm::formatv("ngpus={0} is out of range", algo.ngpus));
    return diags.takeError();
  }
  if (algo.nchunksperloop < 1) {
    error(MscclRule::Rule10, attrLoc(ael, "nchunksperloop"),
          llvm::formatv("rule 10: nchunksperloop={0} must be at least 1",
                        algo.nchunksperloop));
    return diags.takeError();
  }
  s.numRanks = algo.ngpus;
  s.chunksPerLoop = algo.nchunksperloop;
  s.inplace = opts.inplace ? *opts.inplace : algo.inplace == 1;
  s.stage = Stage::Legalized;
  s.numChannels = algo.nchannels;
  s.ranks.assign(algo.ngpus, RankProgram());
  result.opLocs.assign(algo.ngpus, {});
  if (algo.legacyOutofplace)
    warning(ael->loc, "outofplace is missing (legacy dialect): taken as 1 - "
                      "inplace");

  std::vector<const MscclGpu *> byRank(algo.ngpus, nullptr);
  for (const MscclGpu &g : algo.gpus) {
    if (!g.complete)
      continue;
    if (g.id < 0 || g.id >= algo.ngpus) {
      error(MscclRule::Rule4, attrLoc(g.el, "id"),
            llvm::formatv("rule 4: <gpu id=\"{0}\"> is not a rank of "
                          "ngpus={1}",
                          g.id, algo.ngpus));
      continue;
    }
    if (byRank[g.id]) {
      error(MscclRule::Rule4, attrLoc(g.el, "id"),
            llvm::formatv("rule 4: rank {0} has more than one <gpu>", g.id));
      continue;
    }
    byRank[g.id] = &g;
  }
  for (int r = 0; r < algo.ngpus; ++r) {
    if (!byRank[r]) {
      error(MscclRule::Rule4, ael->loc,
            llvm::formatv("rule 4: rank {0} has no <gpu>", r));
      continue;
    }
    importRank(r, *byRank[r]);
  }
  if (diags.hasErrors())
    return diags.takeError();
  pairMessages();

  // Root of broadcast and reduce: the file does not name it.
  if (s.collective == Collective::Broadcast ||
      s.collective == Collective::Reduce) {
    if (opts.root) {
      s.root = *opts.root;
    } else {
      bool bcast = s.collective == Collective::Broadcast;
      std::vector<RankId> cands;
      for (RankId r = 0; r < s.numRanks; ++r) {
        bool any = false;
        for (const Op &op : s.ranks[r].ops)
          any |= bcast ? receives(op.kind) : sends(op.kind);
        if (!any)
          cands.push_back(r);
      }
      s.root = cands.size() == 1 ? cands[0] : 0;
      if (cands.size() != 1)
        warning(ael->loc, "cannot infer the root of this " + coll +
                              " (the file does not name it); using rank 0");
    }
  } else {
    s.root = kNone;
  }
  return std::move(result);
}

} // namespace

llvm::Expected<MscclImport>
importMscclAlgo(const XmlDocument &doc, const MscclAlgo &algo,
                const MscclImportOptions &opts,
                std::vector<MscclRuleTag> *errorTags) {
  if (errorTags)
    errorTags->clear();
  return Importer(doc, algo, opts, errorTags).run();
}

llvm::Expected<MscclImport>
importMscclXmlDetailed(llvm::StringRef text, llvm::StringRef fileName,
                       const MscclImportOptions &opts) {
  llvm::Expected<XmlDocument> doc = readMscclXmlDocument(text, fileName);
  if (!doc)
    return doc.takeError();
  DiagnosticList diags;
  MscclViewOptions vopts;
  vopts.legacy = true;
  std::optional<MscclAlgo> algo = buildMscclView(*doc, diags, vopts);
  if (!algo || diags.hasErrors())
    return diags.takeError();
  llvm::Expected<MscclImport> imp = importMscclAlgo(*doc, *algo, opts);
  if (!imp)
    return imp.takeError();
  return imp;
}

llvm::Expected<Schedule> importMscclXml(llvm::StringRef text,
                                        llvm::StringRef fileName,
                                        const MscclImportOptions &opts) {
  llvm::Expected<MscclImport> imp =
      importMscclXmlDetailed(text, fileName, opts);
  if (!imp)
    return imp.takeError();
  return std::move(imp->schedule);
}

} // namespace topocc::backends
