//===- backends/MscclXmlReader.cpp - MSCCL XML reader ---------------------===//
//
// A character-level reader that accepts exactly what the executor's parser
// (msccl_parser.cc, copied from NCCL's topology parser) accepts, and the
// typed view over its DOM.
//
//===----------------------------------------------------------------------===//

#include "backends/MscclXmlReader.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <array>
#include <climits>
#include <string_view>

namespace topocc::backends {

//===----------------------------------------------------------------------===//
// Small helpers
//===----------------------------------------------------------------------===//

std::string escapeChar(char c) {
  switch (c) {
  case '\n':
    return "\\n";
  case '\r':
    return "\\r";
  case '\t':
    return "\\t";
  case '\0':
    return "\\0";
  default:
    break;
  }
  unsigned char u = static_cast<unsigned char>(c);
  if (u < 0x20 || u >= 0x7f)
    return llvm::formatv("\\x{0:x-2}", unsigned(u)).str();
  return std::string(1, c);
}

static int64_t strtolImpl(llvm::StringRef v, int64_t lo, int64_t hi) {
  size_t i = 0;
  auto isSpace = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' ||
           c == '\r';
  };
  while (i < v.size() && isSpace(v[i]))
    ++i;
  bool neg = false;
  if (i < v.size() && (v[i] == '+' || v[i] == '-')) {
    neg = v[i] == '-';
    ++i;
  }
  unsigned base = 10;
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9')
      return c - '0';
    if (c >= 'a' && c <= 'z')
      return c - 'a' + 10;
    if (c >= 'A' && c <= 'Z')
      return c - 'A' + 10;
    return 99;
  };
  if (i < v.size() && v[i] == '0') {
    if (i + 2 < v.size() + 0 && (v[i + 1] == 'x' || v[i + 1] == 'X') &&
        digit(v[i + 2]) < 16) {
      base = 16;
      i += 2;
    } else {
      base = 8;
    }
  }
  // Accumulate as unsigned magnitude, clamp like strtol on overflow.
  uint64_t mag = 0;
  bool overflow = false;
  uint64_t limit = neg ? uint64_t(-(lo + 1)) + 1 : uint64_t(hi);
  for (; i < v.size(); ++i) {
    int d = digit(v[i]);
    if (d >= int(base))
      break;
    if (!overflow) {
      if (mag > (limit - d) / base)
        overflow = true;
      else
        mag = mag * base + d;
    }
  }
  if (overflow)
    return neg ? lo : hi;
  return neg ? -int64_t(mag - 1) - 1 : int64_t(mag);
}

int32_t executorStrtol(llvm::StringRef value) {
  // long is 64 bits on the executor's platforms; the result is stored in an
  // int, which keeps the low 32 bits.
  int64_t v = strtolImpl(value, LLONG_MIN, LLONG_MAX);
  return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v)));
}

int64_t executorStrtoll(llvm::StringRef value) {
  return strtolImpl(value, LLONG_MIN, LLONG_MAX);
}

bool isPlainDecimal(llvm::StringRef value) {
  llvm::StringRef v = value;
  if (v.startswith("-"))
    v = v.drop_front();
  if (v.empty() || v.size() > 19)
    return false;
  if (!llvm::all_of(v, [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  return v == "0" || v[0] != '0';
}

const XmlAttr *XmlElement::find(llvm::StringRef key) const {
  // A slot without '=' keeps its key with an empty value in the executor; it
  // matches by name too.
  size_t n = std::min<size_t>(attrs.size(), kMscclMaxAttrs);
  for (size_t i = 0; i < n; ++i)
    if (attrs[i].key == key)
      return &attrs[i];
  return nullptr;
}

SourceLoc XmlDocument::locAt(size_t offset, bool withFile) const {
  auto it = std::upper_bound(lineStarts.begin(), lineStarts.end(), offset);
  size_t line = it - lineStarts.begin(); // 1-based
  size_t start = line ? lineStarts[line - 1] : 0;
  return SourceLoc{withFile ? fileName : std::string(),
                   unsigned(line ? line : 1), unsigned(offset - start + 1)};
}

std::string XmlDocument::lineOf(const SourceLoc &loc) const {
  if (loc.line == 0 || loc.line > lineStarts.size())
    return {};
  size_t start = lineStarts[loc.line - 1];
  size_t end =
      loc.line < lineStarts.size() ? lineStarts[loc.line] : text.size();
  llvm::StringRef l(text.data() + start, end - start);
  l = l.rtrim("\r\n");
  return l.str();
}

Diagnostic XmlDocument::diag(Severity sev, const SourceLoc &loc,
                             std::string message) const {
  SourceLoc full = loc;
  if (full.file.empty())
    full.file = fileName;
  return Diagnostic{sev, std::move(full), std::move(message), lineOf(loc)};
}

//===----------------------------------------------------------------------===//
// The lexer (mimics mscclXmlGetNode and friends)
//===----------------------------------------------------------------------===//

namespace {

enum class NodeType { None, Open, Close, Single };

struct RawNode {
  NodeType type = NodeType::None;
  std::string name;
  size_t start = 0;
  std::vector<XmlAttr> attrs;
};

class Lexer {
public:
  explicit Lexer(XmlDocument &doc) : doc(doc), t(doc.text) {}

  /// False on error (see `error`).
  bool getNode(RawNode &node);
  std::optional<Diagnostic> error;

private:
  bool getChar(char &c) {
    if (pos >= t.size()) {
      fail(t.size(), "XML Parse : Unexpected EOF");
      return false;
    }
    c = t[pos++];
    return true;
  }
  void fail(size_t offset, std::string msg) {
    if (!error)
      error = doc.diag(Severity::Error, doc.locAt(offset),
                       "XML lexical rule (2.1): " + msg);
  }
  bool getToken(std::string &name, XmlAttr *attr, char &last);
  bool getValue(XmlAttr &attr, char &last);
  bool skipComment(llvm::StringRef start, char next);

  XmlDocument &doc;
  llvm::StringRef t;
  size_t pos = 0;
};

bool Lexer::getValue(XmlAttr &attr, char &last) {
  char c;
  size_t at = pos;
  if (!getChar(c))
    return false;
  if (c != '"' && c != '\'') {
    fail(at, "XML Parse : Expected (double) quote.");
    return false;
  }
  attr.singleQuoted = c == '\'';
  attr.hasValue = true;
  attr.valueLoc = doc.locAt(pos, false);
  while (true) {
    if (!getChar(c))
      return false;
    if (c == '"')
      break;
    attr.value.push_back(c);
  }
  return getChar(last);
}

bool Lexer::getToken(std::string &name, XmlAttr *attr, char &last) {
  name.clear();
  char c;
  do {
    size_t at = pos;
    if (!getChar(c))
      return false;
    if (c == '=') {
      if (!attr) {
        fail(at, "XML Parse : Unexpected value with name " + name);
        return false;
      }
      return getValue(*attr, last);
    }
    name.push_back(c);
    if (name.size() == kMscclMaxNameLen + 1) {
      name.pop_back();
      fail(at, llvm::formatv("Error : name {0} too long (max {1})", name,
                             kMscclMaxNameLen + 1)
                   .str());
      return false;
    }
  } while (c != ' ' && c != '>' && c != '/' && c != '\n' && c != '\r');
  name.pop_back();
  last = c;
  return true;
}

bool Lexer::skipComment(llvm::StringRef start, char next) {
  char end[3] = {'.', '.', '.'};
  auto shift = [&](char c) {
    end[0] = end[1];
    end[1] = end[2];
    end[2] = c;
  };
  auto done = [&] { return end[0] == '-' && end[1] == '-' && end[2] == '>'; };
  for (char c : start)
    shift(c);
  shift(next);
  while (!done()) {
    if (pos >= t.size()) {
      fail(t.size(), "XML Parse error : unterminated comment");
      return false;
    }
    shift(t[pos++]);
  }
  return true;
}

bool Lexer::getNode(RawNode &node) {
  while (true) {
    node = RawNode();
    char c = ' ';
    while (c == ' ' || c == '\n' || c == '\r') {
      if (pos >= t.size())
        return true; // NodeType::None
      c = t[pos++];
    }
    if (c != '<') {
      fail(pos - 1,
           "XML Parse error : expecting '<', got '" + escapeChar(c) + "'");
      return false;
    }
    node.start = pos - 1;
    if (!getToken(node.name, nullptr, c))
      return false;
    if (llvm::StringRef(node.name).startswith("!--")) {
      if (!skipComment(llvm::StringRef(node.name).drop_front(3), c))
        return false;
      continue; // the executor recurses into the next node
    }
    if (node.name.empty() && c == '/') {
      node.type = NodeType::Close;
      if (!getToken(node.name, nullptr, c))
        return false;
      if (c != '>') {
        fail(pos - 1, "XML Parse error : unexpected trailing " + escapeChar(c) +
                          " in closing tag " + node.name);
        return false;
      }
      return true;
    }
    node.type = NodeType::Open;
    node.attrs.reserve(12);
    while (c == ' ') {
      XmlAttr a;
      a.loc = doc.locAt(pos, false);
      if (!getToken(a.key, &a, c))
        return false;
      node.attrs.push_back(std::move(a));
    }
    if (c == '/') {
      node.type = NodeType::Single;
      std::string rest;
      if (!getToken(rest, nullptr, c))
        return false;
    }
    if (c != '>') {
      fail(pos - 1, "XML Parse : expected >, got '" + escapeChar(c) + "'");
      return false;
    }
    return true;
  }
}

} // namespace

llvm::Expected<XmlDocument> readMscclXmlDocument(llvm::StringRef text,
                                                 llvm::StringRef fileName) {
  return readMscclXmlDocument(text, fileName, nullptr);
}

llvm::Expected<XmlDocument> readMscclXmlDocument(llvm::StringRef text,
                                                 llvm::StringRef fileName,
                                                 size_t *elementsBeforeError) {
  XmlDocument doc;
  doc.fileName = fileName.str();
  doc.text = text.str();
  doc.lineStarts.push_back(0);
  for (size_t i = 0; i < doc.text.size(); ++i)
    if (doc.text[i] == '\n' && i + 1 <= doc.text.size())
      doc.lineStarts.push_back(i + 1);

  Lexer lex(doc);
  std::vector<unsigned> stack;
  RawNode node;
  auto failWith = [&](Diagnostic d) -> llvm::Error {
    if (elementsBeforeError)
      *elementsBeforeError = doc.elements.size();
    return llvm::make_error<DiagnosticError>(std::vector<Diagnostic>{d});
  };
  while (true) {
    if (!lex.getNode(node))
      return failWith(*lex.error);
    if (node.type == NodeType::None) {
      if (!stack.empty()) {
        const XmlElement &open = doc.elements[stack.back()];
        return failWith(doc.diag(Severity::Error, open.loc,
                                 "XML lexical rule (2.1): XML Parse : "
                                 "unterminated " +
                                     open.name));
      }
      break;
    }
    if (node.type == NodeType::Close) {
      if (stack.empty())
        return failWith(doc.diag(
            Severity::Error, doc.locAt(node.start),
            "XML lexical rule (2.1): closing tag </" + node.name +
                "> without an open element (the executor reads it as an "
                "unterminated element)"));
      XmlElement &open = doc.elements[stack.back()];
      open.closeName = node.name;
      open.closeLoc = doc.locAt(node.start, false);
      stack.pop_back();
      continue;
    }
    XmlElement el;
    el.name = node.name;
    el.loc = doc.locAt(node.start, false);
    el.attrs = std::move(node.attrs);
    el.selfClosing = node.type == NodeType::Single;
    el.parent = stack.empty() ? -1 : int(stack.back());
    unsigned idx = doc.elements.size();
    doc.elements.push_back(std::move(el));
    if (stack.empty())
      doc.roots.push_back(idx);
    else
      doc.elements[stack.back()].children.push_back(idx);
    if (node.type == NodeType::Open)
      stack.push_back(idx);
  }
  return doc;
}

//===----------------------------------------------------------------------===//
// Step types
//===----------------------------------------------------------------------===//

namespace {

using ir::OpKind;

// The IR kinds keep their values.
#define TOPOCC_OP(Enum, Mnemonic, Code, Flags)                                 \
  static_assert(unsigned(MscclStepType::Enum) == unsigned(OpKind::Enum));
#include "ir/OpKinds.def"

/// The executor's bounds checks of each IR kind (false for the kinds
/// without an MSCCL code).
struct BoundsChecks {
  bool src = false, dst = false;
};
constexpr std::array<BoundsChecks, ir::kNumOpKinds> kIrChecks = [] {
  std::array<BoundsChecks, ir::kNumOpKinds> t{};
#define TOPOCC_OP(Enum, Mnemonic, Code, Flags)
#define TOPOCC_MSCCL_CHECKS(Enum, CheckSrc, CheckDst)                          \
  t[unsigned(OpKind::Enum)] = {CheckSrc != 0, CheckDst != 0};
#include "ir/OpKinds.def"
  return t;
}();

/// Every IR kind with an MSCCL code has a TOPOCC_MSCCL_CHECKS row, and only
/// those.
constexpr bool checksCoverMscclKinds() {
  bool hasCode[] = {
#define TOPOCC_OP(Enum, Mnemonic, Code, Flags) !std::string_view(Code).empty(),
#include "ir/OpKinds.def"
  };
  unsigned rows[ir::kNumOpKinds] = {};
#define TOPOCC_OP(Enum, Mnemonic, Code, Flags)
#define TOPOCC_MSCCL_CHECKS(Enum, CheckSrc, CheckDst)                          \
  ++rows[unsigned(OpKind::Enum)];
#include "ir/OpKinds.def"
  for (unsigned i = 0; i < ir::kNumOpKinds; ++i)
    if (rows[i] != (hasCode[i] ? 1u : 0u))
      return false;
  return true;
}
static_assert(checksCoverMscclKinds(),
              "ir/OpKinds.def: one TOPOCC_MSCCL_CHECKS row per MSCCL kind");

/// The legacy step types, in MscclStepType order after the IR kinds.
struct LegacyStep {
  llvm::StringLiteral name;
  unsigned flags;
  BoundsChecks checks;
};
constexpr unsigned kNumLegacySteps = 0
#define TOPOCC_OP(Enum, Mnemonic, Code, Flags)
#define TOPOCC_MSCCL_LEGACY_STEP(Enum, Code, Flags, CheckSrc, CheckDst) +1
#include "ir/OpKinds.def"
    ;
constexpr std::array<LegacyStep, kNumLegacySteps> kLegacySteps = [] {
  using namespace ir; // the OF_* flags of the rows
  return std::array<LegacyStep, kNumLegacySteps>{{
#define TOPOCC_OP(Enum, Mnemonic, Code, Flags)
#define TOPOCC_MSCCL_LEGACY_STEP(Enum, Code, Flags, CheckSrc, CheckDst)        \
  {llvm::StringLiteral(Code), (Flags), {CheckSrc != 0, CheckDst != 0}},
#include "ir/OpKinds.def"
  }};
}();
static_assert(unsigned(MscclStepType::Unknown) ==
                  ir::kNumOpKinds + kNumLegacySteps,
              "step types and ir/OpKinds.def disagree");

const LegacyStep *legacyStep(MscclStepType t) {
  unsigned i = unsigned(t);
  if (i < ir::kNumOpKinds || i >= ir::kNumOpKinds + kNumLegacySteps)
    return nullptr;
  return &kLegacySteps[i - ir::kNumOpKinds];
}

} // namespace

MscclStepType mscclStepTypeFromName(llvm::StringRef s) {
  if (std::optional<OpKind> k = ir::opKindFromMscclCode(s))
    return mscclStepType(*k);
  for (unsigned i = 0; i < kNumLegacySteps; ++i)
    if (kLegacySteps[i].name == s)
      return MscclStepType(ir::kNumOpKinds + i);
  return MscclStepType::Unknown;
}

llvm::StringRef mscclStepTypeName(MscclStepType t) {
  if (std::optional<OpKind> k = mscclStepOpKind(t))
    return ir::mscclCode(*k);
  if (const LegacyStep *l = legacyStep(t))
    return l->name;
  return "?";
}

MscclStepType mscclStepType(OpKind k) { return MscclStepType(unsigned(k)); }

std::optional<OpKind> mscclStepOpKind(MscclStepType t) {
  if (unsigned(t) < ir::kNumOpKinds)
    return OpKind(unsigned(t));
  return std::nullopt;
}

MscclStepTraits mscclStepTraits(MscclStepType t) {
  unsigned flags = 0;
  BoundsChecks checks;
  if (std::optional<OpKind> k = mscclStepOpKind(t)) {
    flags = ir::opFlags(*k);
    checks = kIrChecks[unsigned(*k)];
  } else if (const LegacyStep *l = legacyStep(t)) {
    flags = l->flags;
    checks = l->checks;
  }
  return {(flags & ir::OF_SN) != 0,
          (flags & ir::OF_RV) != 0,
          (flags & ir::OF_RS) != 0,
          (flags & ir::OF_WD) != 0,
          checks.src,
          checks.dst};
}

//===----------------------------------------------------------------------===//
// Typed view
//===----------------------------------------------------------------------===//

namespace {

/// The <algo> attributes the executor's directory scan reads (the others
/// are read when a communicator loads the file).
bool scanReads(const XmlElement &el, llvm::StringRef key) {
  if (el.name != "algo")
    return false;
  for (llvm::StringRef k : {"nchunksperloop", "nchannels", "ngpus", "coll",
                            "minBytes", "maxBytes", "inplace", "outofplace"})
    if (k == key)
      return true;
  return false;
}

class ViewBuilder {
public:
  ViewBuilder(const XmlDocument &doc, DiagnosticList &diags,
              std::vector<MscclRuleTag> *tags)
      : doc(doc), diags(diags), tags(tags) {}

  /// Looks up a mandatory attribute; reports it when missing.
  const XmlAttr *need(const XmlElement &el, llvm::StringRef key, bool &ok) {
    const XmlAttr *a = el.find(key);
    if (!a) {
      diags.add(doc.diag(Severity::Error, el.loc,
                         llvm::formatv("mandatory attribute (2.3-2.6): "
                                       "Attribute {0} of node {1} not found",
                                       key, el.name)
                             .str()));
      if (tags)
        tags->push_back({MscclRule::Attribute,
                         scanReads(el, key)
                             ? std::optional(MscclConsequence::RejectedAtScan)
                             : std::nullopt});
      ok = false;
    }
    return a;
  }
  int needInt(const XmlElement &el, llvm::StringRef key, bool &ok,
              int dflt = 0) {
    const XmlAttr *a = need(el, key, ok);
    return a ? executorStrtol(a->value) : dflt;
  }
  std::string needStr(const XmlElement &el, llvm::StringRef key, bool &ok) {
    const XmlAttr *a = need(el, key, ok);
    return a ? a->value : std::string();
  }

  const XmlDocument &doc;
  DiagnosticList &diags;
  std::vector<MscclRuleTag> *tags;
};

} // namespace

std::optional<MscclAlgo> buildMscclView(const XmlDocument &doc,
                                        DiagnosticList &diags,
                                        const MscclViewOptions &opts,
                                        std::vector<MscclRuleTag> *tags) {
  const XmlElement *algoEl = nullptr;
  for (unsigned r : doc.roots)
    if (doc.elements[r].name == "algo") {
      algoEl = &doc.elements[r];
      break;
    }
  if (!algoEl) {
    diags.add(doc.diag(Severity::Error, doc.locAt(0),
                       "structure (2.2): the file has no <algo> element"));
    if (tags)
      tags->push_back({MscclRule::Structure, std::nullopt});
    return std::nullopt;
  }
  ViewBuilder vb(doc, diags, tags);
  MscclAlgo algo;
  algo.el = algoEl;
  bool ok = true;
  if (const XmlAttr *a = algoEl->find("name"))
    algo.name = a->value;
  algo.nchunksperloop = vb.needInt(*algoEl, "nchunksperloop", ok);
  algo.nchannels = vb.needInt(*algoEl, "nchannels", ok);
  algo.ngpus = vb.needInt(*algoEl, "ngpus", ok);
  algo.proto = vb.needStr(*algoEl, "proto", ok);
  algo.coll = vb.needStr(*algoEl, "coll", ok);
  auto optional64 = [&](llvm::StringRef key, int64_t dflt) -> int64_t {
    if (const XmlAttr *a = algoEl->find(key))
      return executorStrtoll(a->value);
    if (opts.legacy)
      return dflt;
    vb.need(*algoEl, key, ok);
    return 0;
  };
  algo.minBytes = optional64("minBytes", 0);
  algo.maxBytes = optional64("maxBytes", int64_t(128) << 20);
  algo.inplace = vb.needInt(*algoEl, "inplace", ok);
  if (const XmlAttr *a = algoEl->find("outofplace")) {
    algo.outofplace = executorStrtol(a->value);
  } else if (opts.legacy) {
    algo.outofplace = 1 - (algo.inplace ? 1 : 0);
    algo.legacyOutofplace = true;
  } else {
    vb.need(*algoEl, "outofplace", ok);
  }
  algo.complete = ok;

  for (unsigned gi : algoEl->children) {
    const XmlElement &gel = doc.elements[gi];
    if (gel.name != "gpu")
      continue;
    MscclGpu gpu;
    gpu.el = &gel;
    bool gok = true;
    gpu.hasId = gel.find("id") != nullptr;
    gpu.id = vb.needInt(gel, "id", gok);
    gpu.iChunks = vb.needInt(gel, "i_chunks", gok);
    gpu.oChunks = vb.needInt(gel, "o_chunks", gok);
    gpu.sChunks = vb.needInt(gel, "s_chunks", gok);
    gpu.complete = gok;
    for (unsigned ti : gel.children) {
      const XmlElement &tel = doc.elements[ti];
      if (tel.name != "tb")
        continue;
      MscclTb tb;
      tb.el = &tel;
      bool tok = true;
      tb.id = vb.needInt(tel, "id", tok);
      tb.recv = vb.needInt(tel, "recv", tok, -1);
      tb.send = vb.needInt(tel, "send", tok, -1);
      tb.chan = vb.needInt(tel, "chan", tok);
      tb.complete = tok;
      int position = 0;
      for (unsigned si : tel.children) {
        const XmlElement &sel = doc.elements[si];
        if (sel.name != "step")
          continue;
        MscclStep st;
        st.el = &sel;
        st.position = position++;
        bool sok = true;
        st.s = vb.needInt(sel, "s", sok);
        st.srcoff = vb.needInt(sel, "srcoff", sok);
        st.srcbuf = vb.needStr(sel, "srcbuf", sok);
        st.dstoff = vb.needInt(sel, "dstoff", sok);
        st.dstbuf = vb.needStr(sel, "dstbuf", sok);
        st.cnt = vb.needInt(sel, "cnt", sok);
        st.typeName = vb.needStr(sel, "type", sok);
        st.depid = vb.needInt(sel, "depid", sok, -1);
        st.deps = vb.needInt(sel, "deps", sok, -1);
        st.hasdep = vb.needInt(sel, "hasdep", sok);
        st.type = mscclStepTypeFromName(st.typeName);
        st.complete = sok;
        tb.steps.push_back(std::move(st));
      }
      gpu.tbs.push_back(std::move(tb));
    }
    algo.gpus.push_back(std::move(gpu));
  }
  return algo;
}

} // namespace topocc::backends
