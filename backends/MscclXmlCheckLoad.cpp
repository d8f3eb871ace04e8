//===- backends/MscclXmlCheckLoad.cpp - MSCCL XML executor checks ---------===//
//
// What the executor checks, with its messages quoted (docs/MscclXmlFormat.md 2.10
// "checked by the executor"): the document structure and the scan of the
// first element as <algo>, the attributes of <algo> at load, the parser's
// per-rank storage (MAX_NODES, closing tags, children) and the step loop of
// every <gpu> as the parser runs it.
//
//===----------------------------------------------------------------------===//

#include "backends/MscclXmlCheckImpl.h"
#include "backends/ServedSizes.h"

#include "llvm/Support/FormatVariadic.h"

#include <map>
#include <tuple>

namespace topocc::backends::mscclcheck {

namespace {

/// The MSCCL names of the step types the executor runs, in ir/OpKinds.def
/// order: "s r rcs rrs rrc rrcs cpy re nop".
std::string executableStepNames() {
  std::string names;
  for (unsigned i = 0; i < ir::kNumOpKinds; ++i) {
    llvm::StringRef code = ir::mscclCode(ir::OpKind(i));
    if (code.empty())
      continue;
    if (!names.empty())
      names += ' ';
    names += code.str();
  }
  return names;
}

} // namespace

//===----------------------------------------------------------------------===//
// Document structure and the scan stage
//===----------------------------------------------------------------------===//

bool Checker::checkTopLevel() {
  if (doc.roots.empty()) {
    err(MscclRule::Structure, doc.locAt(0),
        "structure (2.2): the file has no element; the "
        "executor's scan finds no <algo>");
    return false;
  }
  const XmlElement &first = doc.elements[doc.roots.front()];
  if (first.name != "algo") {
    err(MscclRule::Structure, first.loc,
        "structure (2.2): the first element is <" + first.name +
            ">; the executor's scan reads the first element as "
            "<algo>");
    return false;
  }
  for (size_t i = 1; i < doc.roots.size(); ++i) {
    const XmlElement &el = doc.elements[doc.roots[i]];
    err(MscclRule::Structure, el.loc,
        "structure (2.2): <" + el.name +
            "> after <algo>: a file holds exactly one <algo> and "
            "nothing else",
        MscclConsequence::NonConforming);
  }
  return true;
}

void Checker::checkScan(const MscclAlgo &a) {
  const XmlElement *el = a.el;
  if (!el->find("coll"))
    return; // reported as a missing attribute
  if (!isNewColl(a.coll)) {
    std::string why;
    if (a.coll == "reduce_scatter")
      why = " (legacy microsoft/msccl spelling; write \"reducescatter\")";
    else if (a.coll == "custom")
      why = " (legacy microsoft/msccl collective, not executable here)";
    err(MscclRule::Scan, at(el, "coll"),
        "executor scan: unsupported collective \"" + a.coll +
            "\"; the <algo> reader rejects it without a message (at load: "
            "\"MSCCL: unsupported collective: " +
            a.coll + "\")" + why);
  }
}

void Checker::checkLoadAlgo(const MscclAlgo &a) {
  const XmlElement *el = a.el;
  if (el->find("proto") && a.proto != "Simple" && a.proto != "LL" &&
      a.proto != "LL128")
    err(MscclRule::Load, at(el, "proto"),
        "executor load: \"MSCCL: protocol " + a.proto +
            " is not supported.\" (Simple, LL or LL128, case-sensitive)");
  if (!a.complete)
    return;
  if (a.nchannels < 1 || a.nchannels > kMscclMaxChannelsCheck)
    err(MscclRule::Rule1, at(el, "nchannels"),
        llvm::formatv("rule 1: nchannels={0} must lie in 1..32", a.nchannels),
        a.nchannels > kMscclMaxChannelsCheck ? MscclConsequence::RejectedAtLoad
                                             : MscclConsequence::Hangs);
  if (a.ngpus < 1)
    err(MscclRule::Rule4, at(el, "ngpus"),
        llvm::formatv("rule 4: ngpus={0} must be at least 1", a.ngpus),
        MscclConsequence::NonConforming);
  if (a.nchunksperloop < 1)
    err(MscclRule::Rule10, at(el, "nchunksperloop"),
        llvm::formatv("rule 10: nchunksperloop={0} must be at least 1",
                      a.nchunksperloop));
  bool multByG = a.coll == "allgather" || a.coll == "reducescatter" ||
                 a.coll == "alltoall";
  if (multByG && a.ngpus >= 1 && a.nchunksperloop >= 1 &&
      a.nchunksperloop % a.ngpus != 0)
    err(MscclRule::Rule10, at(el, "nchunksperloop"),
        llvm::formatv("rule 10: nchunksperloop={0} must be a multiple of "
                      "ngpus={1} for {2}",
                      a.nchunksperloop, a.ngpus, a.coll));
  // Selection (backends/ServedSizes.h): a call uses the file only when its
  // size in elements (count times m, m = ngpus for allgather,
  // reducescatter and alltoall, else 1) is a multiple of L = lcm
  // (nchunksperloop, m). People call with power-of-two counts, so the
  // sizes that matter are m 2^j elements: some of them are served exactly
  // when the odd part of L divides the odd part of m. A file none of them
  // selects is unused where it was meant to run.
  auto oddPart = [](int64_t x) {
    while (x > 0 && x % 2 == 0)
      x /= 2;
    return x;
  };
  if (a.ngpus >= 1 && a.nchunksperloop >= 1)
    if (std::optional<ir::Collective> coll = ir::collectiveFromName(a.coll)) {
      ServedSizes served = servedSizes(*coll, a.ngpus, a.nchunksperloop,
                                       a.minBytes, a.maxBytes);
      const int64_t m = multByG ? a.ngpus : 1;
      if (oddPart(m) % oddPart(served.elementMultiple) != 0)
        warn(MscclRule::Other, at(el, "nchunksperloop"),
             llvm::formatv("nchunksperloop={0}: the runtimes select this "
                           "file only for calls whose size in elements "
                           "(nBytes over the type's size) is a multiple of "
                           "{1}, so it serves {2}: no call with a "
                           "power-of-two count{3} selects it. Every other "
                           "call silently runs the runtime's own algorithm",
                           a.nchunksperloop, served.elementMultiple,
                           describeServedSizes(served),
                           multByG ? " per rank" : ""));
    }
  for (llvm::StringRef key : {"inplace", "outofplace"}) {
    int val = key == "inplace" ? a.inplace : a.outofplace;
    if (val != 0 && val != 1)
      err(MscclRule::Rule10, at(el, key),
          llvm::formatv("rule 10: {0}={1} must be 0 or 1", key, val),
          MscclConsequence::NonConforming);
  }
  if (a.inplace == 0 && a.outofplace == 0)
    warn(MscclRule::Other, el->loc,
         "inplace=\"0\" and outofplace=\"0\": the file is never "
         "selected (1.3)");
  if (a.minBytes < 0)
    err(MscclRule::Rule10, at(el, "minBytes"),
        llvm::formatv("rule 10: minBytes={0} is negative", a.minBytes),
        MscclConsequence::NonConforming);
  if (a.maxBytes != 0 && a.maxBytes < a.minBytes)
    warn(MscclRule::Other, at(el, "maxBytes"),
         llvm::formatv("maxBytes={0} is below minBytes={1}: the file is "
                       "never selected (1.3)",
                       a.maxBytes, a.minBytes));
  if (oneOf({"broadcast", "reduce", "send", "recv"}, a.coll))
    warn(MscclRule::Other, at(el, "coll"),
         "coll=\"" + a.coll +
             "\": the executor matches neither root nor peer, so the file "
             "serves every root or peer (1.3)");
  else if (oneOf({"gather", "scatter", "alltoallv"}, a.coll))
    warn(MscclRule::Other, at(el, "coll"),
         "coll=\"" + a.coll +
             "\" is reachable only through mscclRunAlgo "
             "(1.3)");
}

//===----------------------------------------------------------------------===//
// The parser's per-rank storage: MAX_NODES, closing tags, children
//===----------------------------------------------------------------------===//

void Checker::checkStoredElements(const MscclAlgo &a) {
  const XmlElement *algoEl = a.el;
  // Elements the executor stores for every rank: every top-level <algo>
  // and its <gpu> children.
  size_t common = 0;
  for (unsigned r : doc.roots)
    if (doc.elements[r].name == "algo") {
      ++common;
      for (unsigned c : doc.elements[r].children)
        common += doc.elements[c].name == "gpu";
    }
  // Per rank: the <tb> children of its <gpu>s and their <step> children.
  std::map<int, size_t> perRank;
  std::map<int, const XmlElement *> lastOfRank;
  auto checkClose = [&](const XmlElement &el) {
    if (!el.selfClosing && el.closeName != el.name)
      err(MscclRule::Lexical, el.closeLoc,
          "XML lexical rule (2.1): XML Mismatch : " + el.name + " / " +
              el.closeName);
  };
  auto checkSubs = [&](const XmlElement &el, llvm::StringRef childName) {
    size_t n = 0;
    for (unsigned c : el.children)
      n += doc.elements[c].name == childName;
    if (n > kMscclMaxSubs)
      err(MscclRule::Limit, el.loc,
          llvm::formatv("limit (2.11): <{0}> has {1} <{2}> children; "
                        "the executor stores at most {3} (overflow)",
                        el.name, n, childName, kMscclMaxSubs),
          MscclConsequence::RunsWrongly);
  };
  checkClose(*algoEl);
  checkSubs(*algoEl, "gpu");
  for (unsigned gi : algoEl->children) {
    const XmlElement &g = doc.elements[gi];
    if (g.name != "gpu") {
      warn(MscclRule::Structure, g.loc,
           "structure (2.2): <" + g.name +
               "> inside <algo> is ignored by the executor");
      continue;
    }
    checkClose(g);
    checkSubs(g, "tb");
    const XmlAttr *idA = g.find("id");
    int id = idA ? executorStrtol(idA->value) : -1;
    bool parsedByRank = idA && id >= 0 && id < a.ngpus;
    size_t &cnt = perRank[id];
    for (unsigned ti : g.children) {
      const XmlElement &t = doc.elements[ti];
      if (t.name != "tb") {
        warn(MscclRule::Structure, t.loc,
             "structure (2.2): <" + t.name +
                 "> inside <gpu> is ignored by the executor");
        continue;
      }
      ++cnt;
      lastOfRank[id] = &t;
      if (parsedByRank) {
        checkClose(t);
        checkSubs(t, "step");
      }
      for (unsigned si : t.children) {
        const XmlElement &s = doc.elements[si];
        if (s.name != "step") {
          warn(MscclRule::Structure, s.loc,
               "structure (2.2): <" + s.name +
                   "> inside <tb> is ignored by the executor");
          continue;
        }
        ++cnt;
        lastOfRank[id] = &s;
        if (parsedByRank) {
          checkClose(s);
          if (!s.children.empty())
            err(MscclRule::Structure, doc.elements[s.children.front()].loc,
                "structure (2.2): <step> has a child element; the "
                "executor's parser dereferences a null handler table here "
                "(crash)",
                MscclConsequence::RunsWrongly);
        }
      }
    }
  }
  for (auto &[id, n] : perRank)
    if (id >= 0 && id < a.ngpus && common + n >= kMscclMaxNodes)
      err(MscclRule::Limit, lastOfRank[id] ? lastOfRank[id]->loc : algoEl->loc,
          llvm::formatv("limit (2.11): rank {0} stores {1} elements; the "
                        "executor stores fewer than {2}: \"Error : XML "
                        "parser is limited to 1024 nodes\"",
                        id, common + n, kMscclMaxNodes));
}

//===----------------------------------------------------------------------===//
// The executor's load-stage checks, per <gpu>
//===----------------------------------------------------------------------===//

void Checker::checkGpuLoad(const MscclAlgo &a, const MscclGpu &g) {
  if (!g.complete)
    return;
  int id = g.id;
  auto where = [&](const MscclTb &tb) {
    return llvm::formatv("rank {0} tb {1}", id, tb.id).str();
  };
  if (g.sChunks < 0)
    err(MscclRule::Load, at(g.el, "s_chunks"),
        llvm::formatv("executor load: \"MSCCL: nScratchChunks must be not "
                      "negative. nScratchChunks: {0}\"",
                      g.sChunks));
  std::vector<char> exists(kMscclMaxBlocks, 0);
  int nSendPeers[kMscclMaxChannelsCheck + 1] = {};
  int nRecvPeers[kMscclMaxChannelsCheck + 1] = {};
  for (const MscclTb &tb : g.tbs) {
    if (!tb.complete)
      continue;
    if (tb.id < 0) {
      err(MscclRule::Load, at(tb.el, "id"),
          llvm::formatv("executor load: \"MSCCL: bid must be not negative. "
                        "bid: {0}\"",
                        tb.id));
      continue;
    }
    if (tb.id >= kMscclMaxBlocks) {
      err(MscclRule::Load, at(tb.el, "id"),
          llvm::formatv("executor load: \"MSCCL: too many thread blocks are "
                        "requested. Max thread blocks: {0}\"",
                        kMscclMaxBlocks));
      continue;
    }
    if (exists[tb.id])
      err(MscclRule::Load, at(tb.el, "id"),
          llvm::formatv("executor load: \"MSCCL: duplicate thread block id "
                        "{0} for MSCCL\" (rank {1})",
                        tb.id, id));
    exists[tb.id] = 1;
    if (tb.recv == id || tb.send == id)
      err(MscclRule::Load, tb.el->loc,
          llvm::formatv("executor load: \"MSCCL: peer ({0},{1}) and gpu id "
                        "({2}) must be different\" ({3})",
                        tb.recv, tb.send, id, where(tb)));
    if (tb.recv < -1 || tb.send < -1)
      err(MscclRule::Load, tb.el->loc,
          llvm::formatv("executor load: \"MSCCL: wrong recvPeer ({0}) or "
                        "sendPeer ({1}) in thread block {2} on gpu {3}\"",
                        tb.recv, tb.send, tb.id, id));
    if (tb.chan < 0 || tb.chan > kMscclMaxChannelsCheck) {
      err(MscclRule::Load, at(tb.el, "chan"),
          llvm::formatv("executor load: \"MSCCL: threadblock {0} on GPU {1} "
                        "has an invalid channel {2}\"",
                        tb.id, id, tb.chan));
      continue;
    }
    // The step loop, as the parser runs it.
    int numDependencies = 0, oldDependencePointer = 0, numReductions = 0;
    int oldRedDstBuf = -1, oldRedDstOff = -1, oldRedSrcBuf = -1;
    int runCnt = -1;
    bool heldNopDep = false;
    auto bufId = [](llvm::StringRef b) {
      return b == "i" ? 0 : b == "o" ? 1 : b == "s" ? 2 : -1;
    };
    for (const MscclStep &st : tb.steps) {
      if (!st.complete)
        continue;
      std::string sw = llvm::formatv("{0} step {1}", where(tb), st.position);
      if (st.s >= int(opts.maxSteps)) {
        err(MscclRule::Load, at(st.el, "s"),
            llvm::formatv("executor load: \"MSCCL: too many steps are "
                          "requested. Max number of steps: {0}, requested: "
                          "{1}\" ({2})",
                          opts.maxSteps, st.s + 1, sw));
        continue;
      }
      if (st.s < 0) {
        err(MscclRule::Load, at(st.el, "s"),
            llvm::formatv("executor load: \"MSCCL: step must be positive: "
                          "step {0}\" ({1})",
                          st.s, sw));
        continue;
      }
      if (!mscclStepOpKind(st.type)) { // legacy or unknown
        err(MscclRule::Load, at(st.el, "type"),
            "executor load: \"MSCCL: type of transfer is not supported: " +
                st.typeName + "\" (" + sw +
                (st.type != MscclStepType::Unknown
                     ? "; " + mscclStepTypeName(st.type).str() +
                           " is legacy-only)"
                     : "; valid: " + executableStepNames() + ")"));
        continue;
      }
      if (st.depid >= 0)
        ++numDependencies;
      int srcB = bufId(st.srcbuf), dstB = bufId(st.dstbuf);
      bool badBuf = false;
      for (auto [b, name, key] : {std::tuple{srcB, &st.srcbuf, "srcbuf"},
                                  std::tuple{dstB, &st.dstbuf, "dstbuf"}})
        if (b < 0) {
          err(MscclRule::Load, at(st.el, key),
              "executor load: \"type of buffer is not "
              "supported: " +
                  *name + "\" (" + sw + ")");
          badBuf = true;
        }
      if (badBuf)
        continue;
      bool isRe = st.type == MscclStepType::Reduce;
      bool continuation = false;
      if (isRe) {
        if (oldRedDstBuf == dstB && oldRedDstOff == st.dstoff &&
            oldRedSrcBuf == srcB && st.depid == -1) {
          continuation = true;
        } else {
          oldRedDstBuf = oldRedDstOff = -1;
        }
      }
      if (st.type == MscclStepType::Nop) {
        if (st.depid >= 0 && oldRedDstBuf != -1)
          heldNopDep = true;
        continue;
      }
      MscclStepTraits tr = mscclStepTraits(st.type);
      if (st.cnt < 0 || st.cnt >= kMscclMaxCount)
        err(MscclRule::Load, at(st.el, "cnt"),
            llvm::formatv("executor load: \"MSCCL: count ({0}) must be "
                          "positive and less than {1}\" ({2})",
                          st.cnt, kMscclMaxCount, sw));
      if (tr.sends) {
        if (tb.send < 0)
          err(MscclRule::Load, st.el->loc,
              llvm::formatv("executor load: \"MSCCL: there is a send in "
                            "thread block {0} on GPU {1} without a "
                            "sendPeer.\"",
                            tb.id, id));
        else if (nSendPeers[tb.chan] >= kMscclMaxBlocksPerChannel)
          err(MscclRule::Load, st.el->loc,
              llvm::formatv("executor load: \"MSCCL: too many sends per "
                            "channel. Max allowed {0}\" ({1}, chan {2})",
                            kMscclMaxBlocksPerChannel, where(tb), tb.chan));
      }
      if (tr.receives) {
        if (tb.recv < 0)
          err(MscclRule::Load, st.el->loc,
              llvm::formatv("executor load: \"MSCCL: there is a recv in "
                            "thread block {0} on GPU {1} without a "
                            "recvPeer.\"",
                            tb.id, id));
        else if (nRecvPeers[tb.chan] >= kMscclMaxBlocksPerChannel)
          err(MscclRule::Load, st.el->loc,
              llvm::formatv("executor load: \"MSCCL: too many recvs per "
                            "channel. Max allowed {0}\" ({1}, chan {2})",
                            kMscclMaxBlocksPerChannel, where(tb), tb.chan));
      }
      auto bounds = [&](int b, int off, const char *key) {
        static const char *names[] = {"input", "output", "scratch"};
        int n = b == 0 ? g.iChunks : b == 1 ? g.oChunks : g.sChunks;
        if (off < -1 || off >= n)
          err(MscclRule::Load, at(st.el, key),
              llvm::formatv("executor load: \"Incorrect offset set for {0} "
                            "buffer: offset: {1} maximum allowed: {2}\" ({3})",
                            names[b], off, n, sw));
      };
      if (tr.checkSrc)
        bounds(srcB, st.srcoff, "srcoff");
      if (tr.checkDst)
        bounds(dstB, st.dstoff, "dstoff");
      if (!continuation) {
        if (numDependencies - oldDependencePointer > 0 && st.depid < 0)
          err(MscclRule::Load, st.el->loc,
              llvm::formatv(
                  "executor load: \"MSCCL: when there is a chain of "
                  "dependencies, the last reduction must be a part of the "
                  "first immediate instruction. Detected for GPU {0}, thread "
                  "block {1}, and step {2}. XML will be ignored.\" (the step "
                  "after dependency-carrying nops must carry a dependency "
                  "itself, 2.9)",
                  id, tb.id, st.s));
        oldDependencePointer = numDependencies;
        heldNopDep = false;
        runCnt = st.cnt;
      } else {
        if (heldNopDep)
          warn(MscclRule::Other, st.el->loc,
               llvm::formatv("{0}: a nop dependency between fused re steps "
                             "is waited for only after the whole fused "
                             "reduction (2.8); put the dependency on the re "
                             "that needs it",
                             sw));
        if (st.cnt != runCnt)
          err(MscclRule::Rule10, at(st.el, "cnt"),
              llvm::formatv("rule 10: {0}: fused re members must have equal "
                            "cnt ({1} here, {2} before); the executor uses "
                            "the last member's cnt for all",
                            sw, st.cnt, runCnt));
      }
      if (!isRe) {
        oldRedDstBuf = oldRedDstOff = oldRedSrcBuf = -1;
      } else {
        ++numReductions;
        if (st.hasdep || numReductions == kMscclMaxReduceFusion) {
          oldRedDstBuf = oldRedDstOff = -1;
        } else {
          oldRedDstBuf = dstB;
          oldRedDstOff = st.dstoff;
          oldRedSrcBuf = srcB;
        }
      }
      if (st.hasdep != 0 && st.hasdep != 1)
        err(MscclRule::Load, at(st.el, "hasdep"),
            llvm::formatv("executor load: \"MSCCL: hasDependence needs to be "
                          "0 or 1, but it was {0}\" ({1})",
                          st.hasdep, sw));
    }
    if (tb.send >= 0)
      ++nSendPeers[tb.chan];
    if (tb.recv >= 0)
      ++nRecvPeers[tb.chan];
  }
  for (int i = 1; i < kMscclMaxBlocks; ++i)
    if (exists[i] && !exists[i - 1]) {
      const XmlElement *el = g.el;
      for (const MscclTb &tb : g.tbs)
        if (tb.complete && tb.id == i)
          el = tb.el;
      err(MscclRule::Load, at(el, "id"),
          llvm::formatv("executor load: \"MSCCL: thread block {0} is "
                        "missing\" (rank {1}: tb ids must be dense from 0; "
                        "tb {2} is absent)",
                        i, id, i - 1));
      break;
    }
}

} // namespace topocc::backends::mscclcheck
