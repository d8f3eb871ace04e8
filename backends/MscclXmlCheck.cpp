//===- backends/MscclXmlCheck.cpp - MSCCL XML conformance checker ---------===//
//
// Phases: (1) lexical read (the executor's rules, first error stops);
// (2) lexical hygiene, rule 11; (3) document structure and the scan stage
// (the first element as <algo>); (4) the load stage as every rank runs it
// (MSCCL_XML.md 2.10 "checked by the executor", messages quoted);
// (5) rules 1-6, 9, 10 and limits; (6) import into the IR and rules 7, 8 and
// the postcondition through ir/Verifier.h, once per declared mode.
//
//===----------------------------------------------------------------------===//

#include "backends/MscclXmlCheck.h"

#include "backends/MscclXmlImport.h"
#include "backends/MscclXmlReader.h"
#include "ir/Semantics.h"
#include "ir/Verifier.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"

#include <climits>
#include <map>
#include <set>

namespace topocc::backends {

namespace {

bool oneOf(std::initializer_list<llvm::StringRef> set, llvm::StringRef x) {
  for (llvm::StringRef e : set)
    if (e == x)
      return true;
  return false;
}

bool isNewColl(llvm::StringRef c) {
  return oneOf({"allreduce", "allgather", "reducescatter", "alltoall",
                "alltoallv", "broadcast", "reduce", "send", "recv", "gather",
                "scatter"},
               c);
}

/// Integer attributes per element name (the executor reads them with strtol).
bool isIntAttr(llvm::StringRef elem, llvm::StringRef key) {
  if (elem == "algo")
    return oneOf({"nchunksperloop", "nchannels", "ngpus", "minBytes",
                  "maxBytes", "inplace", "outofplace", "nthreads"},
                 key);
  if (elem == "gpu")
    return oneOf({"id", "i_chunks", "o_chunks", "s_chunks"}, key);
  if (elem == "tb")
    return oneOf({"id", "send", "recv", "chan"}, key);
  if (elem == "step")
    return oneOf({"s", "srcoff", "dstoff", "cnt", "depid", "deps", "hasdep"},
                 key);
  return false;
}

/// The rule a message names (its prefix) and the consequence that rule has
/// on the executor unless the finding says otherwise. Messages start with
/// "<rule>: " (see the file banner and docs/Verify.md).
std::pair<std::string, MscclConsequence>
classifyMessage(llvm::StringRef msg) {
  using C = MscclConsequence;
  if (msg.consume_front("import: "))
    if (!msg.startswith("rule "))
      return {"import", C::NonConforming};
  if (msg.startswith("XML lexical rule") || msg.startswith("lexical"))
    return {"lexical", C::RejectedAtLoad};
  if (msg.startswith("mandatory attribute")) {
    // The scan reads these <algo> attributes; everything else is read at
    // load.
    for (llvm::StringRef k :
         {"nchunksperloop", "nchannels", "ngpus", "coll", "minBytes",
          "maxBytes", "inplace", "outofplace"})
      if (msg.contains(("Attribute " + k + " of node algo ").str()))
        return {"attribute", C::RejectedAtScan};
    return {"attribute", C::RejectedAtLoad};
  }
  if (msg.startswith("structure"))
    return {"structure", C::RejectedAtScan};
  if (msg.startswith("executor scan"))
    return {"scan", C::RejectedAtScan};
  if (msg.startswith("executor load"))
    return {"load", C::RejectedAtLoad};
  if (msg.startswith("limit"))
    return {"limit", C::RejectedAtLoad};
  if (msg.startswith("postcondition"))
    return {"postcondition", C::RunsWrongly};
  if (msg.startswith("rules 5, 6, 10"))
    return {"rule 5", C::RunsWrongly};
  if (msg.consume_front("rule ")) {
    unsigned n = 0;
    if (msg.consumeInteger(10, n) || n < 1 || n > 11)
      return {"rule ?", C::RunsWrongly};
    static const C kDefault[12] = {
        C::RunsWrongly,   C::Hangs, // 1: unconnected channel
        C::Hangs,                   // 2: shared FIFO
        C::Hangs,                   // 3: no such peer
        C::Hangs,                   // 4: missing rank
        C::Hangs,                   // 5: FIFO mismatch
        C::Hangs,                   // 6: dependency never released
        C::Hangs,                   // 7: deadlock
        C::RunsWrongly,             // 8: race
        C::RunsWrongly,             // 9: wrong local operand
        C::RunsWrongly,             // 10: out of bounds
        C::NonConforming};          // 11: lexical hygiene
    return {"rule " + std::to_string(n), kDefault[n]};
  }
  return {"other", C::RunsWrongly};
}

/// Rank, block id and step position of every element, and the element at
/// each element or attribute location.
class ElementContext {
public:
  explicit ElementContext(const XmlDocument &doc) {
    ctx.assign(doc.elements.size(), Ctx());
    for (size_t i = 0; i < doc.elements.size(); ++i) {
      const XmlElement &el = doc.elements[i];
      byLoc.emplace(std::pair{el.loc.line, el.loc.col}, i);
      if (el.closeLoc.isValid())
        byLoc.emplace(std::pair{el.closeLoc.line, el.closeLoc.col}, i);
      for (const XmlAttr &a : el.attrs) {
        byLoc.emplace(std::pair{a.loc.line, a.loc.col}, i);
        if (a.hasValue)
          byLoc.emplace(std::pair{a.valueLoc.line, a.valueLoc.col}, i);
      }
    }
    // Parents precede children in `elements`.
    for (size_t i = 0; i < doc.elements.size(); ++i) {
      const XmlElement &el = doc.elements[i];
      Ctx c = el.parent >= 0 ? ctx[el.parent] : Ctx();
      auto idOf = [&]() {
        const XmlAttr *a = el.find("id");
        return a ? executorStrtol(a->value) : -1;
      };
      if (el.name == "gpu") {
        c.rank = idOf();
      } else if (el.name == "tb") {
        c.tb = idOf();
      } else if (el.name == "step" && el.parent >= 0) {
        int pos = 0;
        for (unsigned sib : doc.elements[el.parent].children) {
          if (sib == i)
            break;
          pos += doc.elements[sib].name == "step";
        }
        c.step = pos;
      }
      ctx[i] = c;
    }
  }

  void fill(MscclFinding &f) const {
    auto it = byLoc.find({f.diag.loc.line, f.diag.loc.col});
    if (it == byLoc.end())
      return;
    const Ctx &c = ctx[it->second];
    f.rank = c.rank;
    f.tb = c.tb;
    f.step = c.step;
  }

private:
  struct Ctx {
    int rank = -1, tb = -1, step = -1;
  };
  std::vector<Ctx> ctx;
  std::map<std::pair<unsigned, unsigned>, size_t> byLoc;
};

class Checker {
public:
  Checker(const XmlDocument &doc, const MscclCheckOptions &opts,
          MscclVerdict &v)
      : doc(doc), opts(opts), v(v) {}

  void run();

private:
  /// An error; `c` overrides the consequence its rule implies (see
  /// classifyMessage()).
  void err(const SourceLoc &loc, std::string msg,
           std::optional<MscclConsequence> c = std::nullopt) {
    if (c)
      overrides[v.problems.size()] = *c;
    v.problems.push_back(doc.diag(Severity::Error, loc, std::move(msg)));
  }
  void warn(const SourceLoc &loc, std::string msg,
            std::optional<MscclConsequence> c = std::nullopt) {
    if (c)
      warningConsequences[v.warnings.size()] = *c;
    v.warnings.push_back(doc.diag(Severity::Warning, loc, std::move(msg)));
  }
  static SourceLoc at(const XmlElement *el, llvm::StringRef key) {
    if (const XmlAttr *a = el->find(key))
      return a->loc;
    return el->loc;
  }

  void checkHygiene();
  bool checkTopLevel();
  void checkScan(const MscclAlgo &a);
  void checkLoadAlgo(const MscclAlgo &a);
  void checkStoredElements(const MscclAlgo &a);
  void checkGpuLoad(const MscclAlgo &a, const MscclGpu &g);
  void checkRules(const MscclAlgo &a);
  void checkGpuRules(const MscclAlgo &a, const MscclGpu &g);
  void checkFifo(const MscclAlgo &a);
  void checkExecution(const MscclAlgo &a);
  bool executionIsBounded(const MscclAlgo &a);

public:
  void classifyFindings();

private:
  const XmlDocument &doc;
  const MscclCheckOptions &opts;
  MscclVerdict &v;
  /// Consequences that differ from the rule's default, by problem index.
  std::map<size_t, MscclConsequence> overrides;
  std::map<size_t, MscclConsequence> warningConsequences;
};

//===----------------------------------------------------------------------===//
// Rule 11: lexical hygiene
//===----------------------------------------------------------------------===//

void Checker::checkHygiene() {
  // ASCII only.
  size_t nonAscii = 0, first = 0;
  for (size_t i = 0; i < doc.text.size(); ++i)
    if (static_cast<unsigned char>(doc.text[i]) >= 0x80) {
      if (!nonAscii++)
        first = i;
    }
  if (nonAscii)
    err(doc.locAt(first),
        llvm::formatv("rule 11: the file has {0} non-ASCII byte(s); use ASCII "
                      "only",
                      nonAscii),
        MscclConsequence::NonConforming);

  size_t extraSpaces = 0;
  SourceLoc firstExtraSpace;
  for (const XmlElement &el : doc.elements) {
    if (el.attrs.size() > kMscclMaxAttrs)
      err(el.attrs[kMscclMaxAttrs].loc,
          llvm::formatv("rule 11: <{0}> has {1} attribute slots (empty slots "
                        "from extra spaces included); the executor keeps the "
                        "first {2} and ignores the rest",
                        el.name, el.attrs.size(), kMscclMaxAttrs),
          MscclConsequence::NonConforming);
    llvm::StringSet<> seen;
    for (const XmlAttr &a : el.attrs) {
      if (a.key.empty() && !a.hasValue) {
        // " />" and " >" (ElementTree output) are fine; warn on two spaces
        // between attributes.
        if (&a != &el.attrs.back() && !extraSpaces++)
          firstExtraSpace = a.loc;
        continue;
      }
      if (!a.hasValue) {
        err(a.loc,
            "rule 11: attribute '" + a.key + "' of <" + el.name +
                "> has no value",
            MscclConsequence::NonConforming);
        continue;
      }
      if (!seen.insert(a.key).second)
        err(a.loc, "rule 11: duplicate attribute '" + a.key + "' in <" +
                       el.name + "> (the executor uses the first one)",
            MscclConsequence::NonConforming);
      if (a.value.size() > kMscclMaxValueLen)
        err(a.valueLoc,
            llvm::formatv("rule 11: value of '{0}' has {1} characters; at "
                          "most {2} (longer values overflow the executor's "
                          "buffer)",
                          a.key, a.value.size(), kMscclMaxValueLen),
            MscclConsequence::RunsWrongly);
      if (a.singleQuoted)
        err(a.valueLoc, "rule 11: value of '" + a.key +
                            "' opens with a single quote; only a double "
                            "quote ends a value",
            MscclConsequence::NonConforming);
      if (isIntAttr(el.name, a.key)) {
        bool plain = isPlainDecimal(a.value);
        bool fits = false;
        if (plain) {
          long long x = 0;
          fits =
              !llvm::StringRef(a.value).getAsInteger(10, x) &&
              (el.name == "algo" && (a.key == "minBytes" || a.key == "maxBytes")
                   ? true
                   : (x >= INT32_MIN && x <= INT32_MAX));
        }
        if (!plain)
          err(a.valueLoc,
              llvm::formatv("rule 11: {0}=\"{1}\" is not a plain decimal "
                            "integer (the executor reads it with strtol as "
                            "{2})",
                            a.key, a.value,
                            a.key == "minBytes" || a.key == "maxBytes"
                                ? executorStrtoll(a.value)
                                : executorStrtol(a.value)),
              MscclConsequence::NonConforming);
        else if (!fits)
          err(a.valueLoc, llvm::formatv("rule 11: {0}=\"{1}\" does not fit "
                                        "the executor's integer type",
                                        a.key, a.value),
              MscclConsequence::RunsWrongly);
      }
    }
  }
  if (extraSpaces)
    warn(firstExtraSpace,
         llvm::formatv("lexical (2.1): {0} place(s) with two spaces between "
                       "attributes; each extra space is an empty attribute "
                       "slot, ignored but counted toward the 16-attribute "
                       "limit (the first is here)",
                       extraSpaces));
}

//===----------------------------------------------------------------------===//
// Document structure and the scan stage
//===----------------------------------------------------------------------===//

bool Checker::checkTopLevel() {
  if (doc.roots.empty()) {
    err(doc.locAt(0), "structure (2.2): the file has no element; the "
                      "executor's scan finds no <algo>");
    return false;
  }
  const XmlElement &first = doc.elements[doc.roots.front()];
  if (first.name != "algo") {
    err(first.loc, "structure (2.2): the first element is <" + first.name +
                       ">; the executor's scan reads the first element as "
                       "<algo>");
    return false;
  }
  for (size_t i = 1; i < doc.roots.size(); ++i) {
    const XmlElement &el = doc.elements[doc.roots[i]];
    err(el.loc, "structure (2.2): <" + el.name +
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
    err(at(el, "coll"),
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
    err(at(el, "proto"),
        "executor load: \"MSCCL: protocol " + a.proto +
            " is not supported.\" (Simple, LL or LL128, case-sensitive)");
  if (!a.complete)
    return;
  if (a.nchannels < 1 || a.nchannels > kMscclMaxChannelsCheck)
    err(at(el, "nchannels"),
        llvm::formatv("rule 1: nchannels={0} must lie in 1..32", a.nchannels),
        a.nchannels > kMscclMaxChannelsCheck ? MscclConsequence::RejectedAtLoad : MscclConsequence::Hangs);
  if (a.ngpus < 1)
    err(at(el, "ngpus"),
        llvm::formatv("rule 4: ngpus={0} must be at least 1", a.ngpus),
        MscclConsequence::NonConforming);
  if (a.nchunksperloop < 1)
    err(at(el, "nchunksperloop"),
        llvm::formatv("rule 10: nchunksperloop={0} must be at least 1",
                      a.nchunksperloop));
  bool multByG = a.coll == "allgather" || a.coll == "reducescatter" ||
                 a.coll == "alltoall";
  if (multByG && a.ngpus >= 1 && a.nchunksperloop >= 1 &&
      a.nchunksperloop % a.ngpus != 0)
    err(at(el, "nchunksperloop"),
        llvm::formatv("rule 10: nchunksperloop={0} must be a multiple of "
                      "ngpus={1} for {2}",
                      a.nchunksperloop, a.ngpus, a.coll));
  for (llvm::StringRef key : {"inplace", "outofplace"}) {
    int val = key == "inplace" ? a.inplace : a.outofplace;
    if (val != 0 && val != 1)
      err(at(el, key),
          llvm::formatv("rule 10: {0}={1} must be 0 or 1", key, val), MscclConsequence::NonConforming);
  }
  if (a.inplace == 0 && a.outofplace == 0)
    warn(el->loc, "inplace=\"0\" and outofplace=\"0\": the file is never "
                  "selected (1.3)");
  if (a.minBytes < 0)
    err(at(el, "minBytes"),
        llvm::formatv("rule 10: minBytes={0} is negative", a.minBytes), MscclConsequence::NonConforming);
  if (a.maxBytes != 0 && a.maxBytes < a.minBytes)
    warn(at(el, "maxBytes"),
         llvm::formatv("maxBytes={0} is below minBytes={1}: the file is "
                       "never selected (1.3)",
                       a.maxBytes, a.minBytes));
  if (oneOf({"broadcast", "reduce", "send", "recv"}, a.coll))
    warn(at(el, "coll"),
         "coll=\"" + a.coll +
             "\": the executor matches neither root nor peer, so the file "
             "serves every root or peer (1.3)");
  else if (oneOf({"gather", "scatter", "alltoallv"}, a.coll))
    warn(at(el, "coll"), "coll=\"" + a.coll +
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
      err(el.closeLoc, "XML lexical rule (2.1): XML Mismatch : " + el.name +
                           " / " + el.closeName);
  };
  auto checkSubs = [&](const XmlElement &el, llvm::StringRef childName) {
    size_t n = 0;
    for (unsigned c : el.children)
      n += doc.elements[c].name == childName;
    if (n > kMscclMaxSubs)
      err(el.loc, llvm::formatv("limit (2.11): <{0}> has {1} <{2}> children; "
                                "the executor stores at most {3} (overflow)",
                                el.name, n, childName, kMscclMaxSubs),
          MscclConsequence::RunsWrongly);
  };
  checkClose(*algoEl);
  checkSubs(*algoEl, "gpu");
  for (unsigned gi : algoEl->children) {
    const XmlElement &g = doc.elements[gi];
    if (g.name != "gpu") {
      warn(g.loc, "structure (2.2): <" + g.name +
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
        warn(t.loc, "structure (2.2): <" + t.name +
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
          warn(s.loc, "structure (2.2): <" + s.name +
                          "> inside <tb> is ignored by the executor");
          continue;
        }
        ++cnt;
        lastOfRank[id] = &s;
        if (parsedByRank) {
          checkClose(s);
          if (!s.children.empty())
            err(doc.elements[s.children.front()].loc,
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
      err(lastOfRank[id] ? lastOfRank[id]->loc : algoEl->loc,
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
    err(at(g.el, "s_chunks"),
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
      err(at(tb.el, "id"),
          llvm::formatv("executor load: \"MSCCL: bid must be not negative. "
                        "bid: {0}\"",
                        tb.id));
      continue;
    }
    if (tb.id >= kMscclMaxBlocks) {
      err(at(tb.el, "id"),
          llvm::formatv("executor load: \"MSCCL: too many thread blocks are "
                        "requested. Max thread blocks: {0}\"",
                        kMscclMaxBlocks));
      continue;
    }
    if (exists[tb.id])
      err(at(tb.el, "id"),
          llvm::formatv("executor load: \"MSCCL: duplicate thread block id "
                        "{0} for MSCCL\" (rank {1})",
                        tb.id, id));
    exists[tb.id] = 1;
    if (tb.recv == id || tb.send == id)
      err(tb.el->loc,
          llvm::formatv("executor load: \"MSCCL: peer ({0},{1}) and gpu id "
                        "({2}) must be different\" ({3})",
                        tb.recv, tb.send, id, where(tb)));
    if (tb.recv < -1 || tb.send < -1)
      err(tb.el->loc,
          llvm::formatv("executor load: \"MSCCL: wrong recvPeer ({0}) or "
                        "sendPeer ({1}) in thread block {2} on gpu {3}\"",
                        tb.recv, tb.send, tb.id, id));
    if (tb.chan < 0 || tb.chan > kMscclMaxChannelsCheck) {
      err(at(tb.el, "chan"),
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
        err(at(st.el, "s"),
            llvm::formatv("executor load: \"MSCCL: too many steps are "
                          "requested. Max number of steps: {0}, requested: "
                          "{1}\" ({2})",
                          opts.maxSteps, st.s + 1, sw));
        continue;
      }
      if (st.s < 0) {
        err(at(st.el, "s"),
            llvm::formatv("executor load: \"MSCCL: step must be positive: "
                          "step {0}\" ({1})",
                          st.s, sw));
        continue;
      }
      if (st.type == MscclStepType::Unknown || st.type == MscclStepType::Ra) {
        err(at(st.el, "type"),
            "executor load: \"MSCCL: type of transfer is not supported: " +
                st.typeName + "\" (" + sw +
                (st.type == MscclStepType::Ra
                     ? "; ra is legacy-only)"
                     : "; valid: s r rcs rrs rrc rrcs cpy re nop)"));
        continue;
      }
      if (st.depid >= 0)
        ++numDependencies;
      int srcB = bufId(st.srcbuf), dstB = bufId(st.dstbuf);
      bool badBuf = false;
      for (auto [b, name, key] : {std::tuple{srcB, &st.srcbuf, "srcbuf"},
                                  std::tuple{dstB, &st.dstbuf, "dstbuf"}})
        if (b < 0) {
          err(at(st.el, key), "executor load: \"type of buffer is not "
                              "supported: " +
                                  *name + "\" (" + sw + ")");
          badBuf = true;
        }
      if (badBuf)
        continue;
      bool isRe = st.type == MscclStepType::Re;
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
        err(at(st.el, "cnt"),
            llvm::formatv("executor load: \"MSCCL: count ({0}) must be "
                          "positive and less than {1}\" ({2})",
                          st.cnt, kMscclMaxCount, sw));
      if (tr.sends) {
        if (tb.send < 0)
          err(st.el->loc,
              llvm::formatv("executor load: \"MSCCL: there is a send in "
                            "thread block {0} on GPU {1} without a "
                            "sendPeer.\"",
                            tb.id, id));
        else if (nSendPeers[tb.chan] >= kMscclMaxBlocksPerChannel)
          err(st.el->loc,
              llvm::formatv("executor load: \"MSCCL: too many sends per "
                            "channel. Max allowed {0}\" ({1}, chan {2})",
                            kMscclMaxBlocksPerChannel, where(tb), tb.chan));
      }
      if (tr.receives) {
        if (tb.recv < 0)
          err(st.el->loc,
              llvm::formatv("executor load: \"MSCCL: there is a recv in "
                            "thread block {0} on GPU {1} without a "
                            "recvPeer.\"",
                            tb.id, id));
        else if (nRecvPeers[tb.chan] >= kMscclMaxBlocksPerChannel)
          err(st.el->loc,
              llvm::formatv("executor load: \"MSCCL: too many recvs per "
                            "channel. Max allowed {0}\" ({1}, chan {2})",
                            kMscclMaxBlocksPerChannel, where(tb), tb.chan));
      }
      auto bounds = [&](int b, int off, const char *key) {
        static const char *names[] = {"input", "output", "scratch"};
        int n = b == 0 ? g.iChunks : b == 1 ? g.oChunks : g.sChunks;
        if (off < -1 || off >= n)
          err(at(st.el, key),
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
          err(st.el->loc,
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
          warn(st.el->loc,
               llvm::formatv("{0}: a nop dependency between fused re steps "
                             "is waited for only after the whole fused "
                             "reduction (2.8); put the dependency on the re "
                             "that needs it",
                             sw));
        if (st.cnt != runCnt)
          err(at(st.el, "cnt"),
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
        err(at(st.el, "hasdep"),
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
      err(at(el, "id"),
          llvm::formatv("executor load: \"MSCCL: thread block {0} is "
                        "missing\" (rank {1}: tb ids must be dense from 0; "
                        "tb {2} is absent)",
                        i, id, i - 1));
      break;
    }
}

//===----------------------------------------------------------------------===//
// Rules 1-6, 9, 10 and the limits
//===----------------------------------------------------------------------===//

void Checker::checkGpuRules(const MscclAlgo &a, const MscclGpu &g) {
  if (!g.complete)
    return;
  int r = g.id;
  std::map<int, const MscclTb *> byId;
  std::map<std::pair<int, int>, const MscclTb *> sendConn, recvConn;
  for (const MscclTb &tb : g.tbs)
    if (tb.complete)
      byId.emplace(tb.id, &tb);
  if (opts.smCount && byId.size() > opts.smCount)
    warn(g.el->loc,
         llvm::formatv("rank {0} launches {1} thread blocks, more than the "
                       "{2} SMs of the target: blocks spin-wait on each "
                       "other and must be co-resident (2.7)",
                       r, byId.size(), opts.smCount),
         MscclConsequence::Hangs);

  // Buffer usage, for the i_chunks/o_chunks rule.
  bool usesBuf[3] = {false, false, false};
  auto bufIdx = [](llvm::StringRef b) {
    return b == "i" ? 0 : b == "o" ? 1 : b == "s" ? 2 : -1;
  };
  int sizes[3] = {g.iChunks, g.oChunks, g.sChunks};

  for (const MscclTb &tb : g.tbs) {
    if (!tb.complete)
      continue;
    std::string tw = llvm::formatv("tb {0} on rank {1}", tb.id, r).str();
    // Rule 1.
    if (a.nchannels >= 1 && tb.chan >= a.nchannels && tb.chan >= 0)
      err(at(tb.el, "chan"),
          llvm::formatv("rule 1: {0} uses chan {1} but nchannels is {2}", tw,
                        tb.chan, a.nchannels));
    // Rule 3.
    for (auto [peer, key] :
         {std::pair{tb.send, "send"}, std::pair{tb.recv, "recv"}})
      if (peer != -1 && (peer < 0 || peer >= a.ngpus))
        err(at(tb.el, key),
            llvm::formatv("rule 3: {0} has {1}=\"{2}\"; peers are -1 or "
                          "below ngpus={3}",
                          tw, key, peer, a.ngpus));
    // Rule 2.
    for (auto [peer, conn, key] : {std::tuple{tb.send, &sendConn, "send"},
                                   std::tuple{tb.recv, &recvConn, "recv"}}) {
      if (peer < 0)
        continue;
      auto [it, fresh] = conn->emplace(std::pair{tb.chan, peer}, &tb);
      if (!fresh)
        err(at(tb.el, key),
            llvm::formatv("rule 2: tb {0} and tb {1} on rank {2} both use "
                          "the {3} connection to rank {4} on chan {5}; one "
                          "block per (chan, peer)",
                          it->second->id, tb.id, r, key, peer, tb.chan));
    }
    // Limits.
    if (tb.steps.size() > opts.maxSteps)
      err(tb.el->loc,
          llvm::formatv("limit (2.11): {0} has {1} steps; at most {2} "
                        "(MSCCL_MAX_NUM_STEPS)",
                        tw, tb.steps.size(), opts.maxSteps),
          llvm::any_of(tb.steps,
                       [&](const MscclStep &st) {
                         return st.complete && st.s >= int(opts.maxSteps);
                       })
              ? MscclConsequence::RejectedAtLoad
              : MscclConsequence::RunsWrongly);
    for (const MscclStep &st : tb.steps) {
      if (!st.complete)
        continue;
      std::string sw = llvm::formatv("{0} step {1}", tw, st.position).str();
      // Rule 6: positions and dependency targets.
      if (st.s != st.position)
        err(at(st.el, "s"),
            llvm::formatv("rule 6: {0} has s=\"{1}\"; s must equal the "
                          "0-based position in the block ({2}), nops "
                          "included",
                          sw, st.s, st.position),
            MscclConsequence::NonConforming);
      if (st.type == MscclStepType::Nop && st.depid < 0)
        err(at(st.el, "depid"),
            llvm::formatv("rule 6: {0} is a nop without a dependency "
                          "(depid=\"{1}\"); the executor drops it and shifts "
                          "later positions",
                          sw, st.depid),
            MscclConsequence::RunsWrongly);
      if (st.depid < -1)
        err(at(st.el, "depid"),
            llvm::formatv("rule 6: {0} has depid=\"{1}\"", sw, st.depid),
            MscclConsequence::NonConforming);
      if (st.depid == -1 && st.deps != -1)
        warn(
            at(st.el, "deps"),
            llvm::formatv("{0} has deps=\"{1}\" without a depid", sw, st.deps));
      if (st.depid >= 0) {
        auto it = byId.find(st.depid);
        if (st.depid == tb.id) {
          err(at(st.el, "depid"),
              llvm::formatv("rule 6: {0} depends on its own block (program "
                            "order already orders it)",
                            sw));
        } else if (it == byId.end()) {
          err(at(st.el, "depid"),
              llvm::formatv("rule 6: {0} depends on tb {1}, which does not "
                            "exist on rank {2}",
                            sw, st.depid, r));
        } else {
          const MscclTb &t = *it->second;
          if (st.depid > kMscclMaxDependedBlock)
            err(at(st.el, "depid"),
                llvm::formatv("rule 6: {0} depends on tb {1}; blocks others "
                              "depend on must have id <= {2} (8-bit depid)",
                              sw, st.depid, kMscclMaxDependedBlock),
                MscclConsequence::RunsWrongly);
          if (st.deps < 0 || st.deps >= int(t.steps.size())) {
            err(at(st.el, "deps"),
                llvm::formatv("rule 6: {0} depends on step {1} of tb {2}, "
                              "which has {3} steps",
                              sw, st.deps, st.depid, t.steps.size()));
          } else {
            const MscclStep &ts = t.steps[st.deps];
            // The wait ends when any step at or after the target publishes.
            bool later = false;
            for (size_t p = st.deps + 1; p < t.steps.size(); ++p)
              later |= t.steps[p].complete &&
                       t.steps[p].type != MscclStepType::Nop &&
                       t.steps[p].hasdep == 1;
            std::string then =
                later ? "; a later step of that block publishes, so the wait "
                        "ends later than written"
                      : "; no later step of that block publishes, so the "
                        "wait never ends";
            MscclConsequence c = later ? MscclConsequence::NonConforming
                                       : MscclConsequence::Hangs;
            if (ts.complete && ts.type == MscclStepType::Nop)
              err(at(st.el, "deps"),
                  llvm::formatv("rule 6: {0} depends on step {1} of tb {2}, "
                                "a nop (a nop never publishes){3}",
                                sw, st.deps, st.depid, then),
                  c);
            else if (ts.complete && ts.hasdep != 1)
              err(at(st.el, "deps"),
                  llvm::formatv("rule 6: {0} depends on step {1} of tb {2}, "
                                "which has hasdep=\"{3}\"; the target must "
                                "publish (hasdep=\"1\"){4}",
                                sw, st.deps, st.depid, ts.hasdep, then),
                  c);
          }
        }
      }
      if (st.type == MscclStepType::Nop || st.type == MscclStepType::Unknown ||
          st.type == MscclStepType::Ra)
        continue;
      MscclStepTraits tr = mscclStepTraits(st.type);
      // Rule 5 (local part): cnt >= 1 on transfers.
      if (st.cnt == 0)
        err(at(st.el, "cnt"),
            llvm::formatv("rule 5: {0} has cnt=\"0\" and moves nothing; use "
                          "cnt >= 1",
                          sw),
            MscclConsequence::NonConforming);
      // Rules 9 and 10: used operands.
      for (auto [used, buf, off, key] :
           {std::tuple{tr.readsSrc, &st.srcbuf, st.srcoff, "srcoff"},
            std::tuple{tr.writesDst, &st.dstbuf, st.dstoff, "dstoff"}}) {
        if (!used)
          continue;
        int b = bufIdx(*buf);
        if (b < 0)
          continue; // reported by the load checks
        usesBuf[b] = true;
        if (off == -1) {
          err(at(st.el, key),
              llvm::formatv("rule 9: {0} ({1}) uses {2} but it is -1", sw,
                            st.typeName, key));
          continue;
        }
        if (off < 0 || off + st.cnt > sizes[b])
          err(at(st.el, key),
              llvm::formatv("rule 10: {0} addresses {1}[{2}..{3}) through "
                            "{5} but the buffer has {4} units ({1}_chunks)",
                            sw, *buf, off, off + st.cnt, sizes[b], key));
      }
      // The msccl-tools quirk (section 4) puts the sender's slot in src.
      // A local operand at another offset than dst is suspicious, except
      // the out-of-place reducescatter form i[r*N/g + c] -> o[c].
      bool rsOutOfPlace = a.coll == "reducescatter" && st.srcbuf == "i" &&
                          st.dstbuf == "o" && a.ngpus >= 1 &&
                          st.srcoff == r * (a.nchunksperloop / a.ngpus) +
                                           st.dstoff;
      if ((st.type == MscclStepType::Rrc || st.type == MscclStepType::Rrcs) &&
          st.srcoff != st.dstoff && !rsOutOfPlace)
        warn(st.el->loc,
             llvm::formatv("rule 9: {0} ({1}) reduces into {2}[{3}] from the "
                           "local operand {4}[{5}]; msccl-tools writes the "
                           "sender's slot here by mistake (section 4)",
                           sw, st.typeName, st.dstbuf, st.dstoff, st.srcbuf,
                           st.srcoff),
             MscclConsequence::RunsWrongly);
    }
  }

  // Rule 10: nominal sizes.
  int N = a.nchunksperloop, G = a.ngpus;
  int nomI = -1, nomO = -1;
  if (N >= 1 && G >= 1) {
    if (a.coll == "allreduce" || a.coll == "alltoall" ||
        a.coll == "broadcast" || a.coll == "reduce") {
      nomI = nomO = N;
    } else if (a.coll == "allgather") {
      nomI = N / G;
      nomO = N;
    } else if (a.coll == "reducescatter") {
      nomI = N;
      nomO = N / G;
    }
  }
  for (auto [val, nom, used, key] :
       {std::tuple{g.iChunks, nomI, usesBuf[0], "i_chunks"},
        std::tuple{g.oChunks, nomO, usesBuf[1], "o_chunks"}}) {
    if (val < 0)
      err(at(g.el, key),
          llvm::formatv("rule 10: rank {0} has {1}=\"{2}\"", r, key, val),
          MscclConsequence::NonConforming);
    else if (nom >= 0 && val != nom && !(val == 0 && !used))
      err(at(g.el, key),
          llvm::formatv("rule 10: rank {0} has {1}=\"{2}\"; {3} needs {4} "
                        "(or 0 for a buffer the rank never addresses)",
                        r, key, val, a.coll, nom),
          MscclConsequence::NonConforming);
  }
}

void Checker::checkFifo(const MscclAlgo &a) {
  // Rule 5: per (sender, receiver, chan), sends and receives pair in
  // document order with equal cnt.
  struct End {
    const MscclStep *st;
    int rank, tb;
  };
  std::map<std::tuple<int, int, int>, std::vector<End>> sendsOf, recvsOf;
  std::set<int> seenRank;
  for (const MscclGpu &g : a.gpus) {
    if (!g.complete || g.id < 0 || g.id >= a.ngpus ||
        !seenRank.insert(g.id).second)
      continue;
    for (const MscclTb &tb : g.tbs) {
      if (!tb.complete)
        continue;
      for (const MscclStep &st : tb.steps) {
        if (!st.complete)
          continue;
        MscclStepTraits tr = mscclStepTraits(st.type);
        if (st.type == MscclStepType::Ra || st.type == MscclStepType::Unknown)
          continue;
        if (tr.sends && tb.send >= 0)
          sendsOf[{g.id, tb.send, tb.chan}].push_back({&st, g.id, tb.id});
        if (tr.receives && tb.recv >= 0)
          recvsOf[{tb.recv, g.id, tb.chan}].push_back({&st, g.id, tb.id});
      }
    }
  }
  std::set<std::tuple<int, int, int>> keys;
  for (auto &kv : sendsOf)
    keys.insert(kv.first);
  for (auto &kv : recvsOf)
    keys.insert(kv.first);
  for (const auto &key : keys) {
    auto [A, B, c] = key;
    const std::vector<End> &s = sendsOf[key];
    const std::vector<End> &rv = recvsOf[key];
    size_t n = std::min(s.size(), rv.size());
    for (size_t k = 0; k < n; ++k)
      if (s[k].st->cnt != rv[k].st->cnt) {
        err(rv[k].st->el->loc,
            llvm::formatv("rule 5: receive number {0} from rank {1} to rank "
                          "{2} on chan {3} has cnt {4} but the matching send "
                          "(rank {1} tb {5} step {6}) has cnt {7}",
                          k, A, B, c, rv[k].st->cnt, s[k].tb, s[k].st->position,
                          s[k].st->cnt));
        break;
      }
    if (s.size() > rv.size()) {
      const End &e = s[rv.size()];
      err(e.st->el->loc,
          llvm::formatv("rule 5: rank {0} sends {1} message(s) to rank {2} on "
                        "chan {3} but rank {2} receives {4}; this send (tb {5} "
                        "step {6}) has no matching receive",
                        A, s.size(), B, c, rv.size(), e.tb, e.st->position));
    } else if (rv.size() > s.size()) {
      const End &e = rv[s.size()];
      err(e.st->el->loc,
          llvm::formatv("rule 5: rank {0} receives {1} message(s) from rank "
                        "{2} on chan {3} but rank {2} sends {4}; this receive "
                        "(tb {5} step {6}) has no matching send",
                        B, rv.size(), A, c, s.size(), e.tb, e.st->position));
    }
  }
}

void Checker::checkRules(const MscclAlgo &a) {
  // Rule 4: one <gpu> per rank.
  std::map<int, const MscclGpu *> seen;
  for (const MscclGpu &g : a.gpus) {
    if (!g.complete)
      continue;
    if (g.id < 0 || g.id >= a.ngpus)
      err(at(g.el, "id"),
          llvm::formatv("rule 4: <gpu id=\"{0}\"> is not a rank of ngpus={1}; "
                        "the executor never parses it",
                        g.id, a.ngpus),
          MscclConsequence::NonConforming);
    else if (!seen.emplace(g.id, &g).second)
      err(at(g.el, "id"),
          llvm::formatv("rule 4: rank {0} has more than one <gpu>; the "
                        "executor parses both and counts their channels "
                        "twice",
                        g.id),
          MscclConsequence::RunsWrongly);
  }
  // Name the first few missing ranks, then count the rest (bounded work
  // for a huge ngpus).
  constexpr int kNamedMissing = 8;
  int missing = 0;
  int64_t more = 0;
  for (int r = 0; r < a.ngpus; ++r) {
    if (seen.count(r))
      continue;
    if (missing++ < kNamedMissing) {
      err(a.el->loc,
          llvm::formatv("rule 4: rank {0} has no <gpu>; it would launch an "
                        "empty grid",
                        r));
    } else {
      more = int64_t(a.ngpus) - r -
             std::distance(seen.lower_bound(r), seen.end());
      break;
    }
  }
  if (more > 0)
    err(a.el->loc, llvm::formatv("rule 4: {0} more ranks have no "
                                 "<gpu> (ngpus={1})",
                                 more, a.ngpus));
  for (const MscclGpu &g : a.gpus)
    checkGpuRules(a, g);
  checkFifo(a);
}

//===----------------------------------------------------------------------===//
// Execution: import, IR verifier, semantics
//===----------------------------------------------------------------------===//

void Checker::checkExecution(const MscclAlgo &a) {
  std::vector<bool> modes;
  if (a.inplace == 1)
    modes.push_back(true);
  if (a.outofplace == 1)
    modes.push_back(false);
  if (modes.empty())
    modes.push_back(false);
  bool hadFormatErrors = !v.problems.empty();
  bool dl = true, race = true, sem = true;
  for (bool inplace : modes) {
    std::string mode = modes.size() > 1 ? (inplace ? " (in-place mode)"
                                                   : " (out-of-place "
                                                     "mode)")
                                        : "";
    MscclImportOptions io;
    io.inplace = inplace;
    llvm::Expected<MscclImport> imp = importMscclAlgo(doc, a, io);
    if (!imp) {
      llvm::Error e = imp.takeError();
      if (!hadFormatErrors) {
        llvm::handleAllErrors(
            std::move(e),
            [&](const DiagnosticError &de) {
              for (const Diagnostic &d : de.diagnostics())
                v.problems.push_back(d);
            },
            [&](const llvm::ErrorInfoBase &eb) {
              err(a.el->loc, "import: " + eb.message());
            });
      } else {
        llvm::consumeError(std::move(e));
      }
      dl = race = sem = false;
      continue;
    }
    const ir::Schedule &s = imp->schedule;
    auto locOf = [&](const ir::VerifyProblem &p) {
      if (p.rank >= 0 && size_t(p.rank) < imp->opLocs.size() && p.op >= 0 &&
          size_t(p.op) < imp->opLocs[p.rank].size())
        return imp->opLocs[p.rank][p.op];
      return a.el->loc;
    };
    auto describe = [&](const ir::VerifyProblem &p) {
      std::string w;
      if (p.rank >= 0)
        w += llvm::formatv("rank {0}", p.rank).str();
      if (p.rank >= 0 && p.op >= 0 && size_t(p.op) < s.ranks[p.rank].ops.size())
        w += llvm::formatv(" tb {0} op %{1}",
                           s.ranks[p.rank].ops[p.op].threadblock, p.op)
                 .str();
      return w.empty() ? p.message : w + ": " + p.message;
    };
    ir::VerifyOptions so;
    so.checkDeadlock = so.checkRaces = so.checkSemantics = false;
    std::vector<ir::VerifyProblem> ps = ir::findProblems(s, so);
    if (!ps.empty()) {
      if (!hadFormatErrors)
        for (const ir::VerifyProblem &p : ps)
          err(locOf(p),
              "rules 5, 6, 10 (IR structure)" + mode + ": " + describe(p));
      dl = race = sem = false;
      continue;
    }
    ir::VerifyOptions dopt;
    dopt.checkStructure = false;
    dopt.checkRaces = dopt.checkSemantics = false;
    ps = ir::findProblems(s, dopt);
    if (!ps.empty()) {
      for (const ir::VerifyProblem &p : ps)
        err(locOf(p), "rule 7 (deadlock)" + mode + ": " + describe(p));
      dl = race = sem = false;
      continue;
    }
    ir::VerifyOptions ropt;
    ropt.checkStructure = false;
    ropt.checkSemantics = false;
    ps = ir::findProblems(s, ropt);
    if (!ps.empty()) {
      for (const ir::VerifyProblem &p : ps)
        err(locOf(p), "rule 8 (data race)" + mode + ": " + describe(p));
      race = false;
    }
    llvm::Expected<ir::SymbolicResult> res = ir::execute(s);
    if (!res) {
      err(a.el->loc, "postcondition" + mode + ": symbolic execution failed: " +
                         llvm::toString(res.takeError()));
      sem = false;
      continue;
    }
    std::vector<ir::WrongOutput> wrong = ir::findWrongOutputs(s, *res);
    if (!wrong.empty()) {
      sem = false;
      std::string msg = llvm::formatv("postcondition{0}: the schedule does "
                                      "not compute {1} ({2} wrong output "
                                      "chunk(s)); first: {3}",
                                      mode, a.coll, wrong.size(),
                                      ir::describeWrongOutput(wrong.front()))
                            .str();
      err(at(a.el, "coll"), msg);
    }
  }
  v.deadlockFree = dl;
  v.raceFree = dl && race;
  v.computesCollective = dl && sem;
}

void Checker::classifyFindings() {
  ElementContext ctx(doc);
  v.findings.clear();
  v.warningFindings.clear();
  for (size_t i = 0; i < v.problems.size(); ++i) {
    MscclFinding f;
    f.diag = v.problems[i];
    auto [rule, c] = classifyMessage(f.diag.message);
    f.rule = rule;
    auto o = overrides.find(i);
    f.consequence = o != overrides.end() ? o->second : c;
    ctx.fill(f);
    v.findings.push_back(std::move(f));
  }
  for (size_t i = 0; i < v.warnings.size(); ++i) {
    MscclFinding f;
    f.diag = v.warnings[i];
    f.rule = classifyMessage(f.diag.message).first;
    auto o = warningConsequences.find(i);
    if (o != warningConsequences.end())
      f.consequence = o->second;
    ctx.fill(f);
    v.warningFindings.push_back(std::move(f));
  }
}

bool Checker::executionIsBounded(const MscclAlgo &a) {
  // The symbolic execution is linear in ranks x chunks and in the buffer
  // sizes; a file beyond any real one (16-bit offsets, 8 KiB-class files)
  // is reported instead of simulated.
  constexpr int64_t kMaxWork = int64_t(1) << 22;
  int64_t work = int64_t(a.ngpus) * a.nchunksperloop;
  for (const MscclGpu &g : a.gpus) {
    work += std::abs(int64_t(g.iChunks)) + std::abs(int64_t(g.oChunks)) +
            std::abs(int64_t(g.sChunks));
    for (const MscclTb &tb : g.tbs)
      for (const MscclStep &st : tb.steps)
        work += std::abs(int64_t(st.cnt)) + 1;
  }
  if (work <= kMaxWork)
    return true;
  err(a.el->loc,
      llvm::formatv("limit (verifier): ngpus x nchunksperloop plus the buffer "
                    "sizes is {0}, above the {1} the symbolic check "
                    "handles; deadlock, races and the result are not "
                    "checked",
                    work, kMaxWork),
      MscclConsequence::NonConforming);
  return false;
}

void Checker::run() {
  checkHygiene();
  if (!checkTopLevel()) {
    v.formatOk = false;
    return;
  }
  DiagnosticList viewDiags;
  MscclViewOptions vo;
  vo.legacy = opts.legacy;
  std::optional<MscclAlgo> algo = buildMscclView(doc, viewDiags, vo);
  for (const Diagnostic &d : viewDiags.all())
    v.problems.push_back(d);
  if (!algo)
    return;
  if (opts.legacy) {
    if (algo->coll == "reduce_scatter") {
      warn(at(algo->el, "coll"), "legacy dialect (section 3): "
                                 "coll=\"reduce_scatter\" read as "
                                 "reducescatter; the new executor rejects "
                                 "this spelling at the scan");
      algo->coll = "reducescatter";
    }
    if (algo->legacyOutofplace)
      warn(algo->el->loc, "legacy dialect (section 3): outofplace is "
                          "missing and taken as 1 - inplace; the new "
                          "executor rejects the file at the scan");
    for (llvm::StringRef k : {"minBytes", "maxBytes"})
      if (!algo->el->find(k))
        warn(algo->el->loc, "legacy dialect (section 3): " + k.str() +
                                " is missing and takes the legacy default; "
                                "the new executor rejects the file at the "
                                "scan");
  }
  {
    MscclAlgoInfo info;
    MscclAlgoMeta &m = info.meta;
    m.fileName = doc.fileName;
    m.coll = algo->coll;
    m.ngpus = algo->ngpus;
    m.inplace = algo->inplace == 1;
    m.outofplace = algo->outofplace == 1;
    m.minBytes = algo->minBytes;
    m.maxBytes = algo->maxBytes;
    info.name = algo->name;
    info.proto = algo->proto;
    info.nchannels = algo->nchannels;
    info.nchunksperloop = algo->nchunksperloop;
    v.algo = std::move(info);
  }
  checkScan(*algo);
  checkLoadAlgo(*algo);
  if (algo->complete && algo->ngpus >= 1)
    checkStoredElements(*algo);
  for (const MscclGpu &g : algo->gpus)
    checkGpuLoad(*algo, g);
  if (algo->complete && algo->ngpus >= 1)
    checkRules(*algo);
  v.formatOk = v.problems.empty();
  if (opts.checkExecution && algo->complete && algo->ngpus >= 1 &&
      algo->nchunksperloop >= 1 && isNewColl(algo->coll) &&
      executionIsBounded(*algo))
    checkExecution(*algo);
}

} // namespace

MscclVerdict verifyMscclXml(llvm::StringRef text, llvm::StringRef fileName,
                            const MscclCheckOptions &opts) {
  MscclVerdict v;
  size_t elementsBeforeError = 0;
  llvm::Expected<XmlDocument> doc =
      readMscclXmlDocument(text, fileName, &elementsBeforeError);
  if (!doc) {
    llvm::handleAllErrors(
        doc.takeError(),
        [&](const DiagnosticError &de) {
          for (const Diagnostic &d : de.diagnostics())
            v.problems.push_back(d);
        },
        [&](const llvm::ErrorInfoBase &eb) {
          v.problems.push_back(Diagnostic{Severity::Error,
                                          SourceLoc{fileName.str(), 0, 0},
                                          eb.message(), ""});
        });
    // The scan reads the first element: an error in or before it already
    // fails there.
    for (const Diagnostic &d : v.problems) {
      MscclFinding f;
      f.diag = d;
      f.rule = "lexical";
      f.consequence = elementsBeforeError == 0
                          ? MscclConsequence::RejectedAtScan
                          : MscclConsequence::RejectedAtLoad;
      v.findings.push_back(std::move(f));
    }
    return v;
  }
  Checker checker(*doc, opts, v);
  checker.run();
  checker.classifyFindings();
  return v;
}

MscclCheckResult checkMscclXml(llvm::StringRef text, llvm::StringRef fileName,
                               const MscclCheckOptions &opts) {
  MscclVerdict v = verifyMscclXml(text, fileName, opts);
  MscclCheckResult r;
  r.errors = std::move(v.problems);
  r.warnings = std::move(v.warnings);
  return r;
}

llvm::StringRef mscclConsequenceText(MscclConsequence c) {
  switch (c) {
  case MscclConsequence::RejectedAtScan:
    return "rejected by the executor (scan)";
  case MscclConsequence::RejectedAtLoad:
    return "rejected by the executor (load)";
  case MscclConsequence::Hangs:
    return "hangs";
  case MscclConsequence::RunsWrongly:
    return "runs wrongly";
  case MscclConsequence::NonConforming:
    return "non-conforming";
  }
  return "?";
}

llvm::StringRef mscclConsequenceKey(MscclConsequence c) {
  switch (c) {
  case MscclConsequence::RejectedAtScan:
    return "rejected-scan";
  case MscclConsequence::RejectedAtLoad:
    return "rejected-load";
  case MscclConsequence::Hangs:
    return "hangs";
  case MscclConsequence::RunsWrongly:
    return "runs-wrongly";
  case MscclConsequence::NonConforming:
    return "non-conforming";
  }
  return "?";
}

std::vector<Diagnostic>
checkMscclWindowOverlaps(llvm::ArrayRef<MscclAlgoMeta> files) {
  std::vector<Diagnostic> out;
  auto hi = [](const MscclAlgoMeta &m) {
    return m.maxBytes == 0 ? LLONG_MAX : m.maxBytes;
  };
  for (size_t i = 0; i < files.size(); ++i)
    for (size_t j = i + 1; j < files.size(); ++j) {
      const MscclAlgoMeta &x = files[i], &y = files[j];
      if (x.coll != y.coll || x.ngpus != y.ngpus)
        continue;
      for (bool inplaceMode : {true, false}) {
        bool xs = inplaceMode ? x.inplace : x.outofplace;
        bool ys = inplaceMode ? y.inplace : y.outofplace;
        if (!xs || !ys)
          continue;
        long long lo = std::max(x.minBytes, y.minBytes);
        long long up = std::min(hi(x), hi(y));
        if (lo > up)
          continue;
        const MscclAlgoMeta &win = x.fileName < y.fileName ? x : y;
        out.push_back(Diagnostic{
            Severity::Warning, SourceLoc{x.fileName, 0, 0},
            llvm::formatv("size windows of {0} and {1} ({2}, {3} ranks, {4}) "
                          "overlap on {5}..{6} bytes; the executor picks {7} "
                          "(smaller path) (1.3)",
                          x.fileName, y.fileName, x.coll, x.ngpus,
                          inplaceMode ? "in-place" : "out-of-place", lo,
                          up == LLONG_MAX ? std::string("(no upper bound)")
                                          : std::to_string(up),
                          win.fileName)
                .str(),
            ""});
      }
    }
  return out;
}

} // namespace topocc::backends
