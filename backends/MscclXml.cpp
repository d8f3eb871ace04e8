//===- backends/MscclXml.cpp - Emit MSCCL algorithm XML -------------------===//
//
// Two phases: check that every rank is expressible and within the limits
// (collecting the step positions), then print into a string. Unused operand
// fields are filled with the op's local slot (src of a send, dst of a
// receive), never -1; nops use the msccl-tools canonical form.
//
//===----------------------------------------------------------------------===//

#include "backends/MscclXml.h"

#include "ir/Target.h"

#include "support/Diagnostics.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <map>
#include <set>

namespace topocc::backends {

using namespace ir;

namespace {

constexpr int32_t kMaxCount = ir::kMscclMaxStepCount + 1; // MSCCL_MAX_COUNT
constexpr int32_t kMaxDepTarget = 127; // depid is 8 bits
constexpr int32_t kMaxThreadblocks = 1024;

char bufferChar(BufferKind b) {
  switch (b) {
  case BufferKind::Input:
    return 'i';
  case BufferKind::Output:
    return 'o';
  case BufferKind::Scratch:
    return 's';
  }
  llvm_unreachable("unknown buffer kind");
}

struct TbInfo {
  ChannelId channel = kNone;
  RankId sendPeer = kNone;
  RankId recvPeer = kNone;
  std::vector<OpId> ops; ///< program order
};

/// Threadblocks and step positions of one rank, checked against the limits.
struct RankLayout {
  std::vector<TbInfo> tbs;
  std::vector<int32_t> position; ///< per op: its step index in its tb
  std::set<OpId> depTargets;
};

llvm::Error notExpressible(RankId r, OpId i, const llvm::Twine &why) {
  return makeUserError("cannot emit MSCCL XML: rank " + llvm::Twine(r) + " %" +
                       llvm::Twine(i) + ": " + why);
}

/// Number of units a step moves (cnt).
int32_t stepCount(const Op &op) {
  if (sends(op.kind) || receives(op.kind))
    return op.wireCount();
  return op.src.isUsed() ? op.src.count : op.dst.count;
}

llvm::Expected<RankLayout> layoutRank(const Schedule &s, RankId r,
                                      const MscclXmlOptions &opts) {
  const RankProgram &rp = s.ranks[r];
  RankLayout l;
  l.position.assign(rp.ops.size(), kNone);
  for (OpId i = 0; i < static_cast<OpId>(rp.ops.size()); ++i) {
    const Op &op = rp.ops[i];
    if (mscclCode(op.kind).empty())
      return notExpressible(
          r, i, "'" + mnemonic(op.kind) + "' has no MSCCL step type");
    if (op.localCoeff != 1.0 || op.msgCoeff != 1.0)
      return notExpressible(r, i, "MSCCL steps cannot scale by a coefficient");
    if (op.threadblock < 0 || op.channel < 0)
      return notExpressible(r, i, "no threadblock or channel assigned");
    if (op.threadblock >= kMaxThreadblocks)
      return notExpressible(r, i,
                            llvm::formatv("threadblock id {0} is above "
                                          "the MSCCL limit of {1}",
                                          op.threadblock,
                                          kMaxThreadblocks - 1));
    if (op.kind != OpKind::Nop) {
      int32_t cnt = stepCount(op);
      if (cnt < 1 || cnt >= kMaxCount)
        return notExpressible(
            r, i,
            llvm::formatv("cnt {0} is outside 1..{1} (MSCCL_MAX_COUNT); "
                          "use more chunks so each step moves fewer "
                          "units",
                          cnt, kMaxCount - 1));
    }
    if (static_cast<size_t>(op.threadblock) >= l.tbs.size())
      l.tbs.resize(op.threadblock + 1);
    TbInfo &tb = l.tbs[op.threadblock];
    if (tb.channel != kNone && tb.channel != op.channel)
      return notExpressible(r, i,
                            "threadblock " + llvm::Twine(op.threadblock) +
                                " spans two channels");
    tb.channel = op.channel;
    if (sends(op.kind)) {
      if (tb.sendPeer != kNone && tb.sendPeer != op.sendPeer)
        return notExpressible(r, i,
                              "threadblock " + llvm::Twine(op.threadblock) +
                                  " sends to two peers");
      tb.sendPeer = op.sendPeer;
    }
    if (receives(op.kind)) {
      if (tb.recvPeer != kNone && tb.recvPeer != op.recvPeer)
        return notExpressible(r, i,
                              "threadblock " + llvm::Twine(op.threadblock) +
                                  " receives from two peers");
      tb.recvPeer = op.recvPeer;
    }
    l.position[i] = static_cast<int32_t>(tb.ops.size());
    tb.ops.push_back(i);
    if (op.deps.size() > 1)
      return notExpressible(r, i,
                            "more than one dependency; the schedule is "
                            "not legalized");
    if (op.kind == OpKind::Nop && op.deps.empty())
      return notExpressible(r, i, "a nop without a dependency");
    for (OpId d : op.deps) {
      if (d < 0 || d >= i)
        return notExpressible(r, i, "a dependency on a later op");
      const Op &target = rp.ops[d];
      if (target.threadblock == op.threadblock)
        return notExpressible(r, i, "a dependency inside its own threadblock");
      if (target.kind == OpKind::Nop)
        return notExpressible(r, i, "a dependency on a nop");
      if (target.threadblock > kMaxDepTarget)
        return notExpressible(
            r, i,
            llvm::formatv("depends on threadblock {0}, but MSCCL stores "
                          "dependency targets in 8 bits (0..{1})",
                          target.threadblock, kMaxDepTarget));
      l.depTargets.insert(d);
    }
  }
  for (TbId t = 0; t < static_cast<TbId>(l.tbs.size()); ++t) {
    if (l.tbs[t].ops.empty())
      return makeUserError(llvm::formatv(
          "cannot emit MSCCL XML: rank {0} has no threadblock {1}, but MSCCL "
          "threadblock ids must be dense from 0",
          r, t));
    if (static_cast<int32_t>(l.tbs[t].ops.size()) > opts.maxSteps)
      return makeUserError(llvm::formatv(
          "cannot emit MSCCL XML: rank {0} threadblock {1} has {2} steps, more "
          "than the limit of {3} (MSCCL_MAX_NUM_STEPS)",
          r, t, l.tbs[t].ops.size(), opts.maxSteps));
  }
  return l;
}

/// <algo name>: short, and free of characters the executor cannot read.
std::string algoName(const Schedule &s, const MscclXmlOptions &opts) {
  std::string name = opts.name.empty() ? s.name : opts.name;
  for (char &c : name)
    if (!llvm::isAlnum(c) && c != '_' && c != '-' && c != '.')
      c = '_';
  if (name.size() > 200)
    name.resize(200);
  return name.empty() ? "topocc" : name;
}

void printStep(const Schedule &s, RankId r, const RankLayout &l, OpId i,
               llvm::raw_ostream &os) {
  const Op &op = s.ranks[r].ops[i];
  os << "      <step s=\"" << l.position[i] << "\" type=\""
     << mscclCode(op.kind) << "\" ";
  if (op.kind == OpKind::Nop) {
    os << "srcbuf=\"i\" srcoff=\"-1\" dstbuf=\"o\" dstoff=\"-1\" cnt=\"0\"";
  } else {
    unsigned f = opFlags(op.kind);
    // Unused operands repeat the local slot the step does use.
    BufferRef src = (f & OF_RS) ? op.src : op.dst;
    BufferRef dst = (f & OF_WD) ? op.dst : op.src;
    os << "srcbuf=\"" << bufferChar(src.buffer) << "\" srcoff=\"" << src.chunk
       << "\" dstbuf=\"" << bufferChar(dst.buffer) << "\" dstoff=\""
       << dst.chunk << "\" cnt=\"" << stepCount(op) << '"';
  }
  int32_t depid = -1, deps = -1;
  if (!op.deps.empty()) {
    depid = s.ranks[r].ops[op.deps[0]].threadblock;
    deps = l.position[op.deps[0]];
  }
  bool hasdep = op.kind != OpKind::Nop && l.depTargets.count(i);
  os << " depid=\"" << depid << "\" deps=\"" << deps << "\" hasdep=\""
     << (hasdep ? 1 : 0) << "\" />\n";
}

} // namespace

llvm::Expected<std::string> mscclXmlToString(const Schedule &s,
                                             const MscclXmlOptions &opts) {
  if (s.stage != Stage::Legalized)
    return makeUserError("cannot emit MSCCL XML: the schedule is at stage '" +
                         stageName(s.stage) + "', expected 'legalized'");
  if (opts.proto != "Simple" && opts.proto != "LL" && opts.proto != "LL128")
    return makeUserError("cannot emit MSCCL XML: unknown protocol '" +
                         opts.proto + "'; expected Simple, LL or LL128");
  llvm::StringRef coll = collectiveName(s.collective);
  std::vector<RankLayout> layouts;
  ChannelId maxChannel = -1;
  for (RankId r = 0; r < static_cast<RankId>(s.ranks.size()); ++r) {
    auto l = layoutRank(s, r, opts);
    if (!l)
      return l.takeError();
    for (const TbInfo &tb : l->tbs)
      maxChannel = std::max(maxChannel, tb.channel);
    layouts.push_back(std::move(*l));
  }
  int32_t nchannels = std::max(s.numChannels, maxChannel + 1);
  if (nchannels < 1 || nchannels > 32)
    return makeUserError(llvm::formatv(
        "cannot emit MSCCL XML: {0} channels, MSCCL allows 1..32", nchannels));

  std::string text;
  llvm::raw_string_ostream os(text);
  os << "<algo name=\"" << algoName(s, opts) << "\" proto=\"" << opts.proto
     << "\" nchannels=\"" << nchannels << "\" nchunksperloop=\""
     << s.chunksPerLoop << "\" ngpus=\"" << s.numRanks << "\" coll=\"" << coll
     << "\" inplace=\"" << (s.inplace ? 1 : 0) << "\" outofplace=\""
     << (s.inplace ? 0 : 1) << "\" minBytes=\"" << opts.minBytes
     << "\" maxBytes=\"" << opts.maxBytes << "\">\n";
  for (RankId r = 0; r < static_cast<RankId>(s.ranks.size()); ++r) {
    const RankProgram &rp = s.ranks[r];
    os << "  <gpu id=\"" << r << "\" i_chunks=\"" << rp.inputChunks
       << "\" o_chunks=\"" << rp.outputChunks << "\" s_chunks=\""
       << rp.scratchChunks << "\">\n";
    const RankLayout &l = layouts[r];
    for (TbId t = 0; t < static_cast<TbId>(l.tbs.size()); ++t) {
      const TbInfo &tb = l.tbs[t];
      os << "    <tb id=\"" << t << "\" send=\"" << tb.sendPeer << "\" recv=\""
         << tb.recvPeer << "\" chan=\"" << tb.channel << "\">\n";
      for (OpId i : tb.ops)
        printStep(s, r, l, i, os);
      os << "    </tb>\n";
    }
    os << "  </gpu>\n";
  }
  os << "</algo>\n";
  os.flush();
  return text;
}

llvm::Error emitMscclXml(const Schedule &s, const MscclXmlOptions &opts,
                         llvm::raw_ostream &os) {
  auto text = mscclXmlToString(s, opts);
  if (!text)
    return text.takeError();
  os << *text;
  return llvm::Error::success();
}

} // namespace topocc::backends
