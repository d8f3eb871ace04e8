//===- backends/PlanJson.cpp - Writing the executable plan (JSON) ---------===//
//
// Top-level fields one per line, each op one compact JSON object per line
// (diff-friendly, deterministic). The reader is backends/PlanJsonRead.cpp,
// which does not use llvm::json (so that the clang fuzz build compiles it).
//
//===----------------------------------------------------------------------===//

#include "backends/PlanJson.h"

#include "ir/Printer.h"
#include "support/Diagnostics.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

namespace topocc::backends {

namespace json = llvm::json;

//===-- writer ------------------------------------------------------------===//

namespace {

// The op writer prints its JSON directly (what llvm::json::OStream printed
// before, byte for byte: compact, nested objects' keys sorted): a plan of a
// 1024-rank schedule has millions of ops, and building a json::Object per
// operand took most of the writing time.

void writeRef(llvm::raw_ostream &os, const ir::BufferRef &r) {
  os << "{\"buffer\":\"" << ir::bufferName(r.buffer)
     << "\",\"chunk\":" << r.chunk << ",\"count\":" << r.count << '}';
}

void writePeer(llvm::raw_ostream &os, llvm::StringRef key, ir::RankId peer,
               ir::MsgId msg) {
  os << ",\"" << key << "\":{\"msg\":" << msg << ",\"peer\":" << peer << '}';
}

/// One op as a compact JSON object, keys in a fixed order.
void writeOp(llvm::raw_ostream &os, const ir::Op &op, int32_t id) {
  unsigned flags = ir::opFlags(op.kind);
  os << "{\"id\":" << id << ",\"kind\":\"" << ir::mnemonic(op.kind) << '"';
  if (flags & ir::OF_RS) {
    os << ",\"src\":";
    writeRef(os, op.src);
  }
  if (flags & ir::OF_WD) {
    os << ",\"dst\":";
    writeRef(os, op.dst);
  }
  if (flags & ir::OF_LC) {
    os << ",\"terms\":[";
    for (size_t i = 0; i < op.terms.size(); ++i) {
      os << (i ? ",{\"coeff\":" : "{\"coeff\":")
         << json::Value(op.terms[i].coeff) << ",\"src\":";
      writeRef(os, op.terms[i].src);
      os << '}';
    }
    os << ']';
  }
  if (flags & ir::OF_RV)
    writePeer(os, "recv", op.recvPeer, op.recvMsg);
  if (flags & ir::OF_SN)
    writePeer(os, "send", op.sendPeer, op.sendMsg);
  if (flags & ir::OF_RV) {
    if (op.localCoeff != 1.0)
      os << ",\"localCoeff\":" << json::Value(op.localCoeff);
    if (op.msgCoeff != 1.0)
      os << ",\"msgCoeff\":" << json::Value(op.msgCoeff);
  }
  os << ",\"deps\":[";
  for (size_t i = 0; i < op.deps.size(); ++i)
    os << (i ? "," : "") << op.deps[i];
  os << "],\"channel\":" << op.channel << ",\"threadblock\":" << op.threadblock
     << '}';
}

std::string quoted(llvm::StringRef s) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << json::Value(s);
  return os.str();
}

} // namespace

llvm::Error checkPlan(const ir::Schedule &s, const PlanMeta &meta,
                      PlanCheck check) {
  if (check == PlanCheck::VerifiedByCompile && meta.errorBound == 0)
    return llvm::Error::success(); // compile() verified it in full
  if (auto err = verifyPlanSchedule(s, meta.errorBound))
    return makeUserError("cannot write a plan for a schedule that fails "
                         "verification:\n" +
                         llvm::toString(std::move(err)));
  return llvm::Error::success();
}

llvm::Expected<std::string> planToJson(const ir::Schedule &s,
                                       const PlanMeta &meta, PlanCheck check) {
  if (auto err = checkPlan(s, meta, check))
    return err;
  std::string text;
  // About 200 bytes per op: one allocation instead of a doubling string's
  // copies.
  size_t ops = 0;
  for (const ir::RankProgram &rp : s.ranks)
    ops += rp.ops.size();
  text.reserve(4096 + ops * 200);
  llvm::raw_string_ostream os(text);
  printPlanJson(os, s, meta);
  os.flush();
  return text; // moved (C++20), not a copy of gigabytes
}

void printPlanJson(llvm::raw_ostream &os, const ir::Schedule &s,
                   const PlanMeta &meta) {
  os << "{\n";
  os << "  \"format\": \"topocc-plan\",\n";
  os << "  \"version\": " << kPlanFormatVersion << ",\n";
  os << "  \"generator\": " << quoted(meta.generator) << ",\n";
  os << "  \"topology\": {\"name\": " << quoted(meta.topologyName)
     << ", \"hash\": " << quoted(formatHash(meta.topologyHash)) << "},\n";
  os << "  \"algorithm\": " << quoted(meta.algorithm) << ",\n";
  if (meta.errorBound > 0)
    os << "  \"errorBound\": " << json::Value(meta.errorBound) << ",\n";
  for (auto [key, gains] :
       {std::pair{"roundoffGain", &meta.roundoffGain},
        std::pair{"roundoffGainWorst", &meta.roundoffGainWorst}}) {
    if (!(*std::max_element(gains->begin(), gains->end()) > 0))
      continue;
    os << "  " << quoted(key) << ": {";
    for (size_t d = 0; d < gains->size(); ++d)
      os << (d ? ", " : "") << quoted(kRoundoffDtypes[d]) << ": "
         << json::Value((*gains)[d]);
    os << "},\n";
  }
  os << "  \"name\": " << quoted(s.name) << ",\n";
  os << "  \"collective\": " << quoted(ir::collectiveName(s.collective))
     << ",\n";
  os << "  \"inplace\": " << (s.inplace ? "true" : "false") << ",\n";
  os << "  \"root\": " << s.root << ",\n";
  os << "  \"dtypes\": [\"fp32\", \"fp16\", \"bf16\"],\n";
  os << "  \"redop\": \"sum\",\n";
  os << "  \"chunking\": \"balanced\",\n";
  os << "  \"stage\": " << quoted(ir::stageName(s.stage)) << ",\n";
  os << "  \"ranks\": " << s.numRanks << ",\n";
  os << "  \"chunksPerLoop\": " << s.chunksPerLoop << ",\n";
  os << "  \"channels\": " << s.numChannels << ",\n";
  os << "  \"messages\": " << s.numMessages() << ",\n";
  os << "  \"contentHash\": " << quoted(formatHash(planContentHash(s)))
     << ",\n";
  os << "  \"programs\": [";
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    const ir::RankProgram &rp = s.ranks[r];
    os << (r ? "," : "") << "\n    {\"rank\": " << r
       << ", \"buffers\": {\"input\": " << rp.inputChunks
       << ", \"output\": " << rp.outputChunks
       << ", \"scratch\": " << rp.scratchChunks << "}, \"ops\": [";
    for (size_t i = 0; i < rp.ops.size(); ++i) {
      os << (i ? ",\n      " : "\n      ");
      writeOp(os, rp.ops[i], static_cast<int32_t>(i));
    }
    os << (rp.ops.empty() ? "]}" : "\n    ]}");
  }
  os << (s.ranks.empty() ? "]\n" : "\n  ]\n");
  os << "}\n";
}

//===-- plan sets ---------------------------------------------------------===//

llvm::Expected<std::string>
planSetToJson(llvm::ArrayRef<PlanWindow> windows,
              llvm::ArrayRef<const ir::Schedule *> schedules,
              llvm::ArrayRef<PlanMeta> metas) {
  if (windows.size() != schedules.size() || windows.size() != metas.size())
    return makeInternalError("planSetToJson: one window, schedule and meta "
                             "per variant");
  if (auto err = checkPlanWindows(windows))
    return err;
  if (auto err = checkPlanVariantsAgree(schedules))
    return err;
  const ir::Schedule &first = *schedules[0];
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "{\n";
  os << "  \"format\": " << quoted(kPlanSetFormat) << ",\n";
  os << "  \"version\": " << kPlanFormatVersion << ",\n";
  os << "  \"generator\": " << quoted(metas[0].generator) << ",\n";
  os << "  \"collective\": " << quoted(ir::collectiveName(first.collective))
     << ",\n";
  os << "  \"inplace\": " << (first.inplace ? "true" : "false") << ",\n";
  os << "  \"ranks\": " << first.numRanks << ",\n";
  os << "  \"variants\": [";
  for (size_t i = 0; i < windows.size(); ++i) {
    auto plan = planToJson(*schedules[i], metas[i]);
    if (!plan)
      return plan.takeError();
    // The variant is the plan object with its window first.
    llvm::StringRef body = llvm::StringRef(*plan).trim();
    body = body.drop_front(); // "{"
    os << (i ? "," : "") << "\n{\n  \"minBytes\": " << windows[i].minBytes
       << ",\n  \"maxBytes\": " << windows[i].maxBytes << "," << body;
  }
  os << "\n  ]\n}\n";
  return os.str();
}

} // namespace topocc::backends
