//===- ir/Printer.cpp - Textual form of the schedule IR -------------------===//
//
// Prints the stable textual form described in docs/ScheduleIR.md. Every field
// of an Op is printed whenever it differs from its default, also fields the
// op kind does not use, so that the printed form shows exactly what is in
// memory and print -> parse -> print is byte-identical.
//
//===----------------------------------------------------------------------===//

#include "ir/Printer.h"

#include "ir/PrinterUtil.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace topocc::ir {

std::string formatDouble(double d) {
  if (std::isnan(d))
    return "nan";
  if (std::isinf(d))
    return d < 0 ? "-inf" : "inf";
  char buf[64];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof(buf), "%.*g", prec, d);
    if (std::strtod(buf, nullptr) == d)
      break;
  }
  return buf;
}

void printBufferRef(const BufferRef &b, llvm::raw_ostream &os) {
  os << bufferName(b.buffer) << '[' << b.chunk << '+' << b.count << ']';
}

static bool isPlainNameChar(char c) {
  return llvm::isAlnum(c) || c == '_' || c == '.' || c == '-';
}

static void printName(llvm::StringRef name, llvm::raw_ostream &os) {
  os << '@';
  if (!name.empty() && llvm::all_of(name, isPlainNameChar)) {
    os << name;
    return;
  }
  os << '"';
  for (unsigned char c : name) {
    if (c == '"' || c == '\\')
      os << '\\' << c;
    else if (c >= 0x20 && c < 0x7f)
      os << c;
    else
      os << '\\' << llvm::hexdigit(c >> 4) << llvm::hexdigit(c & 15);
  }
  os << '"';
}

static void printTerm(const LinTerm &t, llvm::raw_ostream &os) {
  if (t.coeff != 1.0)
    os << formatDouble(t.coeff) << '*';
  printBufferRef(t.src, os);
}

/// Everything after the mnemonic: positional operands, the receive and send
/// parts, then the attributes.
static void printOpOperands(const Op &op, llvm::raw_ostream &os) {
  unsigned f = opFlags(op.kind);
  std::string body;
  llvm::raw_string_ostream bs(body);
  bool first = true;
  auto sep = [&] {
    if (!first)
      bs << ", ";
    first = false;
  };
  bool dstPositional = f & OF_WD;
  bool srcPositional = (f & OF_RS) && !(f & OF_LC);
  bool termsPositional = f & OF_LC;
  if (dstPositional) {
    sep();
    printBufferRef(op.dst, bs);
  }
  if (srcPositional) {
    sep();
    printBufferRef(op.src, bs);
  }
  if (termsPositional)
    for (const LinTerm &t : op.terms) {
      sep();
      printTerm(t, bs);
    }
  bool hasRecv = (f & OF_RV) || op.recvPeer != kNone || op.recvMsg != kNone;
  bool hasSend = (f & OF_SN) || op.sendPeer != kNone || op.sendMsg != kNone;
  if (hasRecv) {
    if (!first)
      bs << ' ';
    first = false;
    bs << "<- r" << op.recvPeer << " msg=" << op.recvMsg;
  }
  bs.flush();
  os << body;
  if (hasSend) {
    // Align "->" of sends in one column when the operands are short.
    if (!body.empty())
      os.indent(std::max<int>(1, 20 - static_cast<int>(body.size())));
    os << "-> r" << op.sendPeer << " msg=" << op.sendMsg;
  }
  bool needSpace = !body.empty() || hasSend;
  auto attr = [&]() -> llvm::raw_ostream & {
    if (needSpace)
      os << ' ';
    needSpace = true;
    return os;
  };
  if (op.localCoeff != 1.0)
    attr() << "lc=" << formatDouble(op.localCoeff);
  if (op.msgCoeff != 1.0)
    attr() << "mc=" << formatDouble(op.msgCoeff);
  if (!dstPositional && op.dst != BufferRef()) {
    attr() << "dst=";
    printBufferRef(op.dst, os);
  }
  if (!srcPositional && op.src != BufferRef()) {
    attr() << "src=";
    printBufferRef(op.src, os);
  }
  if (!termsPositional && !op.terms.empty()) {
    attr() << "terms(";
    for (size_t i = 0; i < op.terms.size(); ++i) {
      if (i)
        os << ", ";
      printTerm(op.terms[i], os);
    }
    os << ')';
  }
  if (op.channel != kNone)
    attr() << "ch=" << op.channel;
  if (op.threadblock != kNone)
    attr() << "tb=" << op.threadblock;
  if (!op.deps.empty()) {
    attr() << "deps(";
    for (size_t i = 0; i < op.deps.size(); ++i) {
      if (i)
        os << ", ";
      os << '%' << op.deps[i];
    }
    os << ')';
  }
}

void printOp(const Op &op, OpId id, llvm::raw_ostream &os) {
  os << '%' << id << " = " << mnemonic(op.kind);
  std::string rest;
  llvm::raw_string_ostream rs(rest);
  printOpOperands(op, rs);
  rs.flush();
  if (rest.empty())
    return;
  // Align operands after the longest common mnemonic ("send  in[...]").
  os.indent(std::max<int>(1, 6 - static_cast<int>(mnemonic(op.kind).size())));
  os << rest;
}

void printSchedule(const Schedule &s, llvm::raw_ostream &os) {
  os << "schedule ";
  printName(s.name, os);
  os << " collective=" << collectiveName(s.collective)
     << " ranks=" << s.numRanks << " chunks=" << s.chunksPerLoop
     << " inplace=" << (s.inplace ? 1 : 0) << " stage=" << stageName(s.stage);
  if (s.root != kNone)
    os << " root=" << s.root;
  if (s.numChannels != 0)
    os << " channels=" << s.numChannels;
  os << '\n';
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    const RankProgram &rp = s.ranks[r];
    os << "rank " << r << " in=" << rp.inputChunks << " out=" << rp.outputChunks
       << " sc=" << rp.scratchChunks << " {\n";
    for (size_t i = 0; i < rp.ops.size(); ++i) {
      os << "  ";
      printOp(rp.ops[i], static_cast<OpId>(i), os);
      os << '\n';
    }
    os << "}\n";
  }
}

std::string scheduleToString(const Schedule &s) {
  std::string out;
  llvm::raw_string_ostream os(out);
  printSchedule(s, os);
  os.flush();
  return out;
}

} // namespace topocc::ir
