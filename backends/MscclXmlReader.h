//===- backends/MscclXmlReader.h - MSCCL XML reader ------------*- C++ -*-===//
//
// Reads MSCCL algorithm XML the way the msccl-executor-nccl hand-written
// parser does (docs/MscclXmlFormat.md 2.1) into a small DOM that keeps the line and
// column of every element and attribute, then gives a typed view of the
// <algo>/<gpu>/<tb>/<step> tree. Stage: back end (import and verification).
// Lexical errors are reported with the executor's message text.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_BACKENDS_MSCCLXMLREADER_H
#define TOPOCC_BACKENDS_MSCCLXMLREADER_H

#include "backends/MscclXmlRules.h"
#include "ir/Schedule.h"
#include "support/Diagnostics.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace topocc::backends {

/// Executor limits (msccl_struct.h, msccl_parser.h).
constexpr unsigned kMscclMaxAttrs = 16;       ///< MAX_ATTR_COUNT
constexpr unsigned kMscclMaxNameLen = 254;    ///< names must be shorter
constexpr unsigned kMscclMaxValueLen = 255;   ///< longer values overflow
constexpr unsigned kMscclMaxNodes = 4096;     ///< stored elements per rank
constexpr unsigned kMscclMaxSubs = 1024;      ///< children per element
constexpr int kMscclMaxBlocks = 1024;         ///< tb ids 0..1023
constexpr int kMscclMaxChannelsCheck = 32;    ///< executor: 0 <= chan <= 32
constexpr int kMscclMaxCount = 72;            ///< cnt must be < 72
constexpr int kMscclMaxBlocksPerChannel = 32; ///< send (recv) blocks/channel
constexpr int kMscclMaxReduceFusion = 16;     ///< sources of one fused re
constexpr int kMscclMaxDependedBlock = 127;   ///< 8-bit depid

/// One attribute slot of a start tag. An extra space between attributes
/// produces an empty slot (no key, no value), as in the executor.
struct XmlAttr {
  std::string key;
  std::string value;
  bool hasValue = false;     ///< key="value" (false for an empty slot)
  bool singleQuoted = false; ///< value opened with ' (closed by ")
  SourceLoc loc;             ///< first character of the key (no file name)
  SourceLoc valueLoc;        ///< first character of the value (no file name)
};

/// One element. Close tags always close the innermost open element (the
/// executor compares names only for elements it stores; the checker does
/// that comparison).
struct XmlElement {
  std::string name;
  SourceLoc loc; ///< the '<' (no file name; XmlDocument::diag adds it)
  std::vector<XmlAttr> attrs;
  std::vector<unsigned> children; ///< indices into XmlDocument::elements
  int parent = -1;
  bool selfClosing = false;
  std::string closeName; ///< name in the closing tag (not self-closing)
  SourceLoc closeLoc;

  /// The executor's lookup: exact key among the first kMscclMaxAttrs slots,
  /// first occurrence wins. Null when absent.
  const XmlAttr *find(llvm::StringRef key) const;
};

struct XmlDocument {
  std::string fileName;
  std::string text;
  std::vector<XmlElement> elements;
  std::vector<unsigned> roots; ///< top-level elements (comments are dropped)

  /// Line and column of `offset`; the file name only when `withFile` (the
  /// DOM stores locations without it, diag() adds it).
  SourceLoc locAt(size_t offset, bool withFile = true) const;
  std::string lineOf(const SourceLoc &loc) const;
  /// A diagnostic at `loc` (file name filled in) with the source line.
  Diagnostic diag(Severity sev, const SourceLoc &loc,
                  std::string message) const;

  std::vector<size_t> lineStarts; ///< offsets of line starts (internal)
};

/// Reads `text` with the executor's lexical rules. Fails with a
/// DiagnosticError holding the first lexical error (the executor stops there
/// too), e.g. "XML Parse : expected >, got '\n'" (control characters are
/// written as C escapes).
llvm::Expected<XmlDocument> readMscclXmlDocument(llvm::StringRef text,
                                                 llvm::StringRef fileName);
/// The same; on a lexical error `*elementsBeforeError` is the number of
/// start tags read completely before it. 0 means the error lies in or before
/// the first element, which the executor's directory scan reads, so the scan
/// already fails; otherwise only the load fails.
llvm::Expected<XmlDocument> readMscclXmlDocument(llvm::StringRef text,
                                                 llvm::StringRef fileName,
                                                 size_t *elementsBeforeError);

/// C strtol(value, NULL, 0) as the executor reads integers (base prefixes,
/// octal on a leading 0, trailing garbage ignored, non-numbers are 0),
/// truncated to int like the executor's `int` variables.
int32_t executorStrtol(llvm::StringRef value);
/// The same with strtoll (minBytes, maxBytes).
int64_t executorStrtoll(llvm::StringRef value);
/// Plain decimal integer: optional '-', no leading zeros, no other text.
bool isPlainDecimal(llvm::StringRef value);

/// Escapes control characters as C escapes ("\n", "\t", "\x01").
std::string escapeChar(char c);

//===----------------------------------------------------------------------===//
// Typed view of the algorithm tree.
//===----------------------------------------------------------------------===//

/// The type of a <step>, from ir/OpKinds.def: first every IR op kind, with
/// the value of its ir::OpKind (kinds without an MSCCL code, such as
/// lincomb, are step types no file names), then the legacy step types of
/// that file (TOPOCC_MSCCL_LEGACY_STEP), then Unknown (any other name).
enum class MscclStepType : uint8_t {
#define TOPOCC_OP(Enum, Mnemonic, MscclCode, Flags) Enum,
#define TOPOCC_MSCCL_LEGACY_STEP(Enum, Code, Flags, CheckSrc, CheckDst) Enum,
#include "ir/OpKinds.def"
  Unknown
};
/// The step type named `s` ("s", "rrcs", "ra", ...); Unknown for any other.
MscclStepType mscclStepTypeFromName(llvm::StringRef s);
/// The MSCCL name of `t`; "" for an op kind MSCCL cannot express, "?" for
/// Unknown.
llvm::StringRef mscclStepTypeName(MscclStepType t);
/// The step type of an IR op kind.
MscclStepType mscclStepType(ir::OpKind k);
/// The IR op kind of `t`; none for legacy step types and Unknown (which the
/// executor does not run).
std::optional<ir::OpKind> mscclStepOpKind(MscclStepType t);

/// What the executor does with a step type (docs/MscclXmlFormat.md 2.8): the effect
/// flags of ir/OpKinds.def and the executor's bounds checks.
struct MscclStepTraits {
  bool sends, receives;
  bool readsSrc, writesDst; ///< semantic use of the operands
  bool checkSrc, checkDst;  ///< executor bounds-checks these offsets
};
MscclStepTraits mscclStepTraits(MscclStepType t);

struct MscclStep {
  const XmlElement *el = nullptr;
  int position = 0; ///< 0-based index among the block's <step> children
  int s = 0, srcoff = 0, dstoff = 0, cnt = 0, depid = -1, deps = -1, hasdep = 0;
  std::string typeName, srcbuf, dstbuf;
  MscclStepType type = MscclStepType::Unknown;
  bool complete = false; ///< every mandatory attribute present
};

struct MscclTb {
  const XmlElement *el = nullptr;
  int id = 0, send = -1, recv = -1, chan = 0;
  bool complete = false;
  std::vector<MscclStep> steps;
};

struct MscclGpu {
  const XmlElement *el = nullptr;
  int id = 0, iChunks = 0, oChunks = 0, sChunks = 0;
  bool hasId = false, complete = false;
  std::vector<MscclTb> tbs;
};

struct MscclAlgo {
  const XmlElement *el = nullptr;
  std::string name, proto, coll;
  int nchannels = 0, nchunksperloop = 0, ngpus = 0, inplace = 0, outofplace = 0;
  int64_t minBytes = 0, maxBytes = 0;
  bool complete = false;         ///< every mandatory <algo> attribute present
  bool legacyOutofplace = false; ///< outofplace missing, derived (legacy)
  std::vector<MscclGpu> gpus;
};

struct MscclViewOptions {
  /// Accept the legacy microsoft/msccl dialect (docs/MscclXmlFormat.md 3):
  /// outofplace, minBytes, maxBytes optional.
  bool legacy = false;
};

/// Builds the typed view with the executor's attribute lookup and integer
/// conversion. Missing mandatory attributes are reported into `diags` as
/// "Attribute X of node Y not found" (the executor's message); the element
/// is then marked incomplete. Does not check values. When `tags` is given,
/// it receives the rule of each diagnostic added to `diags`, in order:
/// MscclRule::Attribute (rejected at the scan for the <algo> attributes the
/// scan reads), or MscclRule::Structure when there is no <algo>.
/// REQUIRES: `doc` outlives the view (elements are referenced).
std::optional<MscclAlgo>
buildMscclView(const XmlDocument &doc, DiagnosticList &diags,
               const MscclViewOptions &opts = {},
               std::vector<MscclRuleTag> *tags = nullptr);

} // namespace topocc::backends

#endif // TOPOCC_BACKENDS_MSCCLXMLREADER_H
