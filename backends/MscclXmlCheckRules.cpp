//===- backends/MscclXmlCheckRules.cpp - MSCCL XML rules 1-6, 9-11 --------===//
//
// The rules a conforming file keeps beyond what the executor checks
// (docs/MscclXmlFormat.md 2.10): lexical hygiene (rule 11), channels, connections,
// peers and ranks (rules 1-4), FIFO pairing (rule 5), positions and
// dependencies (rule 6), local operands and sizes (rules 9, 10) and the
// limits of 2.11.
//
//===----------------------------------------------------------------------===//

#include "backends/MscclXmlCheckImpl.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"

#include <climits>
#include <map>
#include <set>
#include <tuple>

namespace topocc::backends::mscclcheck {

namespace {

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

} // namespace

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
    err(MscclRule::Rule11, doc.locAt(first),
        llvm::formatv("rule 11: the file has {0} non-ASCII byte(s); use ASCII "
                      "only",
                      nonAscii),
        MscclConsequence::NonConforming);

  size_t extraSpaces = 0;
  SourceLoc firstExtraSpace;
  for (const XmlElement &el : doc.elements) {
    if (el.attrs.size() > kMscclMaxAttrs)
      err(MscclRule::Rule11, el.attrs[kMscclMaxAttrs].loc,
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
        err(MscclRule::Rule11, a.loc,
            "rule 11: attribute '" + a.key + "' of <" + el.name +
                "> has no value",
            MscclConsequence::NonConforming);
        continue;
      }
      if (!seen.insert(a.key).second)
        err(MscclRule::Rule11, a.loc,
            "rule 11: duplicate attribute '" + a.key + "' in <" + el.name +
                "> (the executor uses the first one)",
            MscclConsequence::NonConforming);
      if (a.value.size() > kMscclMaxValueLen)
        err(MscclRule::Rule11, a.valueLoc,
            llvm::formatv("rule 11: value of '{0}' has {1} characters; at "
                          "most {2} (longer values overflow the executor's "
                          "buffer)",
                          a.key, a.value.size(), kMscclMaxValueLen),
            MscclConsequence::RunsWrongly);
      if (a.singleQuoted)
        err(MscclRule::Rule11, a.valueLoc,
            "rule 11: value of '" + a.key +
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
          err(MscclRule::Rule11, a.valueLoc,
              llvm::formatv("rule 11: {0}=\"{1}\" is not a plain decimal "
                            "integer (the executor reads it with strtol as "
                            "{2})",
                            a.key, a.value,
                            a.key == "minBytes" || a.key == "maxBytes"
                                ? executorStrtoll(a.value)
                                : executorStrtol(a.value)),
              MscclConsequence::NonConforming);
        else if (!fits)
          err(MscclRule::Rule11, a.valueLoc,
              llvm::formatv("rule 11: {0}=\"{1}\" does not fit "
                            "the executor's integer type",
                            a.key, a.value),
              MscclConsequence::RunsWrongly);
      }
    }
  }
  if (extraSpaces)
    warn(MscclRule::Lexical, firstExtraSpace,
         llvm::formatv("lexical (2.1): {0} place(s) with two spaces between "
                       "attributes; each extra space is an empty attribute "
                       "slot, ignored but counted toward the 16-attribute "
                       "limit (the first is here)",
                       extraSpaces));
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
    warn(MscclRule::Other, g.el->loc,
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
      err(MscclRule::Rule1, at(tb.el, "chan"),
          llvm::formatv("rule 1: {0} uses chan {1} but nchannels is {2}", tw,
                        tb.chan, a.nchannels));
    // Rule 3.
    for (auto [peer, key] :
         {std::pair{tb.send, "send"}, std::pair{tb.recv, "recv"}})
      if (peer != -1 && (peer < 0 || peer >= a.ngpus))
        err(MscclRule::Rule3, at(tb.el, key),
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
        err(MscclRule::Rule2, at(tb.el, key),
            llvm::formatv("rule 2: tb {0} and tb {1} on rank {2} both use "
                          "the {3} connection to rank {4} on chan {5}; one "
                          "block per (chan, peer)",
                          it->second->id, tb.id, r, key, peer, tb.chan));
    }
    // Limits.
    if (tb.steps.size() > opts.maxSteps)
      err(MscclRule::Limit, tb.el->loc,
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
        err(MscclRule::Rule6, at(st.el, "s"),
            llvm::formatv("rule 6: {0} has s=\"{1}\"; s must equal the "
                          "0-based position in the block ({2}), nops "
                          "included",
                          sw, st.s, st.position),
            MscclConsequence::NonConforming);
      if (st.type == MscclStepType::Nop && st.depid < 0)
        err(MscclRule::Rule6, at(st.el, "depid"),
            llvm::formatv("rule 6: {0} is a nop without a dependency "
                          "(depid=\"{1}\"); the executor drops it and shifts "
                          "later positions",
                          sw, st.depid),
            MscclConsequence::RunsWrongly);
      if (st.depid < -1)
        err(MscclRule::Rule6, at(st.el, "depid"),
            llvm::formatv("rule 6: {0} has depid=\"{1}\"", sw, st.depid),
            MscclConsequence::NonConforming);
      if (st.depid == -1 && st.deps != -1)
        warn(
            MscclRule::Other, at(st.el, "deps"),
            llvm::formatv("{0} has deps=\"{1}\" without a depid", sw, st.deps));
      if (st.depid >= 0) {
        auto it = byId.find(st.depid);
        if (st.depid == tb.id) {
          err(MscclRule::Rule6, at(st.el, "depid"),
              llvm::formatv("rule 6: {0} depends on its own block (program "
                            "order already orders it)",
                            sw));
        } else if (it == byId.end()) {
          err(MscclRule::Rule6, at(st.el, "depid"),
              llvm::formatv("rule 6: {0} depends on tb {1}, which does not "
                            "exist on rank {2}",
                            sw, st.depid, r));
        } else {
          const MscclTb &t = *it->second;
          if (st.depid > kMscclMaxDependedBlock)
            err(MscclRule::Rule6, at(st.el, "depid"),
                llvm::formatv("rule 6: {0} depends on tb {1}; blocks others "
                              "depend on must have id <= {2} (8-bit depid)",
                              sw, st.depid, kMscclMaxDependedBlock),
                MscclConsequence::RunsWrongly);
          if (st.deps < 0 || st.deps >= int(t.steps.size())) {
            err(MscclRule::Rule6, at(st.el, "deps"),
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
              err(MscclRule::Rule6, at(st.el, "deps"),
                  llvm::formatv("rule 6: {0} depends on step {1} of tb {2}, "
                                "a nop (a nop never publishes){3}",
                                sw, st.deps, st.depid, then),
                  c);
            else if (ts.complete && ts.hasdep != 1)
              err(MscclRule::Rule6, at(st.el, "deps"),
                  llvm::formatv("rule 6: {0} depends on step {1} of tb {2}, "
                                "which has hasdep=\"{3}\"; the target must "
                                "publish (hasdep=\"1\"){4}",
                                sw, st.deps, st.depid, ts.hasdep, then),
                  c);
          }
        }
      }
      if (st.type == MscclStepType::Nop || !mscclStepOpKind(st.type))
        continue;
      MscclStepTraits tr = mscclStepTraits(st.type);
      // Rule 5 (local part): cnt >= 1 on transfers.
      if (st.cnt == 0)
        err(MscclRule::Rule5, at(st.el, "cnt"),
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
          err(MscclRule::Rule9, at(st.el, key),
              llvm::formatv("rule 9: {0} ({1}) uses {2} but it is -1", sw,
                            st.typeName, key));
          continue;
        }
        if (off < 0 || off + st.cnt > sizes[b])
          err(MscclRule::Rule10, at(st.el, key),
              llvm::formatv("rule 10: {0} addresses {1}[{2}..{3}) through "
                            "{5} but the buffer has {4} units ({1}_chunks)",
                            sw, *buf, off, off + st.cnt, sizes[b], key));
      }
      // The msccl-tools quirk (section 4) puts the sender's slot in src.
      // A local operand at another offset than dst is suspicious, except
      // the out-of-place reducescatter form i[r*N/g + c] -> o[c].
      bool rsOutOfPlace =
          a.coll == "reducescatter" && st.srcbuf == "i" && st.dstbuf == "o" &&
          a.ngpus >= 1 &&
          st.srcoff == r * (a.nchunksperloop / a.ngpus) + st.dstoff;
      if ((st.type == MscclStepType::RecvReduceCopy ||
           st.type == MscclStepType::RecvReduceCopySend) &&
          st.srcoff != st.dstoff && !rsOutOfPlace)
        warn(MscclRule::Rule9, st.el->loc,
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
      err(MscclRule::Rule10, at(g.el, key),
          llvm::formatv("rule 10: rank {0} has {1}=\"{2}\"", r, key, val),
          MscclConsequence::NonConforming);
    else if (nom >= 0 && val != nom && !(val == 0 && !used))
      err(MscclRule::Rule10, at(g.el, key),
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
        if (!mscclStepOpKind(st.type))
          continue;
        MscclStepTraits tr = mscclStepTraits(st.type);
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
        err(MscclRule::Rule5, rv[k].st->el->loc,
            llvm::formatv("rule 5: receive number {0} from rank {1} to rank "
                          "{2} on chan {3} has cnt {4} but the matching send "
                          "(rank {1} tb {5} step {6}) has cnt {7}",
                          k, A, B, c, rv[k].st->cnt, s[k].tb, s[k].st->position,
                          s[k].st->cnt));
        break;
      }
    if (s.size() > rv.size()) {
      const End &e = s[rv.size()];
      err(MscclRule::Rule5, e.st->el->loc,
          llvm::formatv("rule 5: rank {0} sends {1} message(s) to rank {2} on "
                        "chan {3} but rank {2} receives {4}; this send (tb {5} "
                        "step {6}) has no matching receive",
                        A, s.size(), B, c, rv.size(), e.tb, e.st->position));
    } else if (rv.size() > s.size()) {
      const End &e = rv[s.size()];
      err(MscclRule::Rule5, e.st->el->loc,
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
      err(MscclRule::Rule4, at(g.el, "id"),
          llvm::formatv("rule 4: <gpu id=\"{0}\"> is not a rank of ngpus={1}; "
                        "the executor never parses it",
                        g.id, a.ngpus),
          MscclConsequence::NonConforming);
    else if (!seen.emplace(g.id, &g).second)
      err(MscclRule::Rule4, at(g.el, "id"),
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
      err(MscclRule::Rule4, a.el->loc,
          llvm::formatv("rule 4: rank {0} has no <gpu>; it would launch an "
                        "empty grid",
                        r));
    } else {
      more =
          int64_t(a.ngpus) - r - std::distance(seen.lower_bound(r), seen.end());
      break;
    }
  }
  if (more > 0)
    err(MscclRule::Rule4, a.el->loc,
        llvm::formatv("rule 4: {0} more ranks have no "
                      "<gpu> (ngpus={1})",
                      more, a.ngpus));
  for (const MscclGpu &g : a.gpus)
    checkGpuRules(a, g);
  checkFifo(a);
}

} // namespace topocc::backends::mscclcheck
