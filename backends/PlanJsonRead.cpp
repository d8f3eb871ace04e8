//===- backends/PlanJsonRead.cpp - Loading the executable plan (JSON) -----===//
//
// A path-tracking validator over support/JsonDocument that collects every
// problem as "FILE:LINE:COL: error: $.programs[1].ops[3].send.peer:
// message", then re-verifies the schedule. The top-level "programs" (and a
// plan set's "variants") are parsed one element at a time, so the document
// holds one rank's program at a time. docs/PlanFormat.md, "Reading plans".
//
//===----------------------------------------------------------------------===//

#include "backends/PlanJson.h"

#include "ir/Printer.h"
#include "ir/Semantics.h"
#include "ir/Verifier.h"
#include "support/Diagnostics.h"
#include "support/Fnv1a.h"
#include "support/InputFile.h"
#include "support/JsonDocument.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>
#include <cstdio>
#include <limits>

namespace topocc::backends {

//===-- hashes ------------------------------------------------------------===//

uint64_t planContentHash(const ir::Schedule &s) {
  Fnv1aStream os;
  ir::printSchedule(s, os);
  return os.value();
}

std::string formatHash(uint64_t v) {
  char text[19];
  std::snprintf(text, sizeof(text), "0x%016llx",
                static_cast<unsigned long long>(v));
  return text;
}

llvm::Error verifyPlanSchedule(const ir::Schedule &s, double errorBound) {
  if (!(errorBound > 0))
    return ir::verifySchedule(s);
  ir::VerifyOptions structural;
  structural.checkSemantics = false;
  if (auto err = ir::verifySchedule(s, structural))
    return err;
  auto result = ir::execute(s);
  if (!result)
    return result.takeError();
  std::vector<double> error = ir::outputError(s, *result);
  for (size_t r = 0; r < error.size(); ++r)
    if (!(error[r] <= errorBound * (1 + 1e-9) + 1e-12))
      return makeUserError(llvm::formatv(
          "rank {0}'s output deviates from the exact {1} by {2:e} in a "
          "coefficient, above the plan's error bound {3:e}",
          r, ir::collectiveName(s.collective), error[r], errorBound));
  return llvm::Error::success();
}

//===-- reader ------------------------------------------------------------===//

namespace {

using JsonKind = JsonValue::Kind;

/// Validates JSON values against the plan schema; every problem is located
/// at the value it is about (line and column of the file) and named by its
/// JSON path.
class Reader {
public:
  Reader(llvm::StringRef fileName, llvm::StringRef text)
      : fileName(fileName.str()), text(text) {}

  void errorAt(size_t offset, const llvm::Twine &path, const llvm::Twine &msg) {
    if (diags.all().size() < kMaxProblems) {
      auto [line, col] = lineAndColumn(text, offset);
      diags.error(SourceLoc{fileName, line, col}, (path + ": " + msg).str(),
                  sourceLineOf(text, line));
    }
    failed = true;
  }
  void error(JsonValue at, const llvm::Twine &path, const llvm::Twine &msg) {
    errorAt(at.offset(), path, msg);
  }
  /// A syntax error: the text is not JSON.
  llvm::Error syntaxError(const JsonSyntaxError &e) {
    auto [line, col] = lineAndColumn(text, e.offset);
    return makeDiagError(SourceLoc{fileName, line, col},
                         "invalid JSON: " + e.message,
                         sourceLineOf(text, line));
  }
  bool ok() const { return !failed; }
  llvm::Error takeError() { return diags.takeError(); }

  std::optional<JsonValue> field(JsonValue o, llvm::StringRef path,
                                 llvm::StringRef key, bool required = true) {
    std::optional<JsonValue> v = o.get(key);
    if (!v && required)
      error(o, path, "missing field '" + key + "'");
    return v;
  }

  std::optional<int64_t> integer(JsonValue o, llvm::StringRef path,
                                 llvm::StringRef key, int64_t lo, int64_t hi,
                                 bool required = true) {
    std::optional<JsonValue> v = field(o, path, key, required);
    if (!v)
      return std::nullopt;
    return integerValue(*v, (path + "." + key).str(), lo, hi);
  }

  std::optional<int64_t> integerValue(JsonValue v, llvm::StringRef path,
                                      int64_t lo, int64_t hi) {
    std::optional<int64_t> i = v.asInteger();
    if (!i) {
      error(v, path, "expected an integer");
      return std::nullopt;
    }
    if (*i < lo || *i > hi) {
      error(v, path,
            llvm::formatv("expected an integer in [{0}, {1}], got {2}", lo, hi,
                          *i));
      return std::nullopt;
    }
    return i;
  }

  /// An optional number field (1.0 when absent).
  std::optional<double> number(JsonValue o, llvm::StringRef path,
                               llvm::StringRef key) {
    std::optional<JsonValue> v = field(o, path, key, false);
    if (!v)
      return 1.0;
    std::optional<double> d = v->asNumber();
    if (!d || !std::isfinite(*d)) {
      error(*v, path + "." + key, "expected a finite number");
      return std::nullopt;
    }
    return d;
  }

  std::optional<llvm::StringRef> string(JsonValue o, llvm::StringRef path,
                                        llvm::StringRef key,
                                        bool required = true) {
    std::optional<JsonValue> v = field(o, path, key, required);
    if (!v)
      return std::nullopt;
    std::optional<llvm::StringRef> s = v->asString();
    if (!s)
      error(*v, path + "." + key, "expected a string");
    return s;
  }

  std::optional<bool> boolean(JsonValue o, llvm::StringRef path,
                              llvm::StringRef key) {
    std::optional<JsonValue> v = field(o, path, key);
    if (!v)
      return std::nullopt;
    std::optional<bool> b = v->asBool();
    if (!b)
      error(*v, path + "." + key, "expected true or false");
    return b;
  }

  std::optional<JsonValue> object(std::optional<JsonValue> v,
                                  llvm::StringRef path) {
    if (!v)
      return std::nullopt;
    if (!v->isObject()) {
      error(*v, path, "expected an object");
      return std::nullopt;
    }
    return v;
  }

  /// An array, or a deferred one when \p deferred.
  std::optional<JsonValue> array(std::optional<JsonValue> v,
                                 llvm::StringRef path, bool deferred = false) {
    if (!v)
      return std::nullopt;
    if (v->kind() != (deferred ? JsonKind::Deferred : JsonKind::Array)) {
      error(*v, path, "expected an array");
      return std::nullopt;
    }
    return v;
  }

  /// Reports keys of `o` not in `known` (a misspelt optional field would
  /// otherwise be silently ignored).
  void noUnknownKeys(JsonValue o, llvm::StringRef path,
                     llvm::ArrayRef<llvm::StringRef> known) {
    for (size_t i = 0, e = o.size(); i < e; ++i) {
      llvm::StringRef k = o.keyAt(i);
      if (llvm::is_contained(known, k))
        continue;
      std::string hint = nearestMatch(k, known);
      errorAt(o.keyOffsetAt(i), path,
              "unknown field '" + k + "'" +
                  (hint.empty() ? "" : "; did you mean '" + hint + "'?"));
    }
  }

private:
  static constexpr size_t kMaxProblems = 20;
  std::string fileName;
  llvm::StringRef text;
  DiagnosticList diags;
  bool failed = false;
};

std::optional<ir::BufferRef>
readRef(Reader &rd, JsonValue op, llvm::StringRef opPath, llvm::StringRef key) {
  std::string path = (opPath + "." + key).str();
  std::optional<JsonValue> o = rd.object(rd.field(op, opPath, key), path);
  if (!o)
    return std::nullopt;
  rd.noUnknownKeys(*o, path, {"buffer", "chunk", "count"});
  ir::BufferRef ref;
  std::optional<llvm::StringRef> buf = rd.string(*o, path, "buffer");
  if (buf) {
    if (*buf == "in")
      ref.buffer = ir::BufferKind::Input;
    else if (*buf == "out")
      ref.buffer = ir::BufferKind::Output;
    else if (*buf == "sc")
      ref.buffer = ir::BufferKind::Scratch;
    else {
      rd.error(*o->get("buffer"), path + ".buffer",
               "expected 'in', 'out' or 'sc', got '" + *buf + "'");
      buf.reset();
    }
  }
  auto chunk = rd.integer(*o, path, "chunk", 0, INT32_MAX);
  auto count = rd.integer(*o, path, "count", 1, INT32_MAX);
  if (!buf || !chunk || !count)
    return std::nullopt;
  ref.chunk = static_cast<int32_t>(*chunk);
  ref.count = static_cast<int32_t>(*count);
  return ref;
}

/// {"peer": P, "msg": M}
bool readEnd(Reader &rd, JsonValue op, llvm::StringRef opPath,
             llvm::StringRef key, int32_t numRanks, int32_t numMessages,
             ir::RankId &peer, ir::MsgId &msg) {
  std::string path = (opPath + "." + key).str();
  std::optional<JsonValue> o = rd.object(rd.field(op, opPath, key), path);
  if (!o)
    return false;
  rd.noUnknownKeys(*o, path, {"peer", "msg"});
  auto p = rd.integer(*o, path, "peer", 0, numRanks - 1);
  auto m = rd.integer(*o, path, "msg", 0, std::max(0, numMessages - 1));
  if (!p || !m)
    return false;
  peer = static_cast<ir::RankId>(*p);
  msg = static_cast<ir::MsgId>(*m);
  return true;
}

void readOp(Reader &rd, JsonValue v, llvm::StringRef path, int32_t index,
            int32_t numOps, int32_t numRanks, int32_t numMessages, ir::Op &op) {
  std::optional<JsonValue> o = rd.object(v, path);
  if (!o)
    return;
  rd.noUnknownKeys(*o, path,
                   {"id", "kind", "src", "dst", "terms", "recv", "send",
                    "localCoeff", "msgCoeff", "deps", "channel",
                    "threadblock"});
  if (auto id = rd.integer(*o, path, "id", 0, INT32_MAX))
    if (*id != index)
      rd.error(*o->get("id"), path + ".id",
               llvm::formatv("expected {0} (ops are listed in id order), got "
                             "{1}",
                             index, *id));
  std::optional<llvm::StringRef> kind = rd.string(*o, path, "kind");
  if (!kind)
    return;
  std::optional<ir::OpKind> k = ir::opKindFromMnemonic(*kind);
  if (!k) {
    rd.error(*o->get("kind"), path + ".kind",
             "unknown op kind '" + *kind + "'");
    return;
  }
  op.kind = *k;
  unsigned flags = ir::opFlags(*k);
  auto forbid = [&](llvm::StringRef key) {
    if (std::optional<JsonValue> f = o->get(key))
      rd.error(*f, path + "." + key,
               "op kind '" + *kind + "' has no '" + key + "' field");
  };
  if (flags & ir::OF_RS) {
    if (auto r = readRef(rd, *o, path, "src"))
      op.src = *r;
  } else {
    forbid("src");
  }
  if (flags & ir::OF_WD) {
    if (auto r = readRef(rd, *o, path, "dst"))
      op.dst = *r;
  } else {
    forbid("dst");
  }
  if (flags & ir::OF_LC) {
    std::string tpath = (path + ".terms").str();
    if (std::optional<JsonValue> terms =
            rd.array(rd.field(*o, path, "terms"), tpath)) {
      if (terms->size() == 0)
        rd.error(*terms, tpath, "a lincomb needs at least one term");
      for (size_t i = 0; i < terms->size(); ++i) {
        std::string ipath = llvm::formatv("{0}[{1}]", tpath, i).str();
        std::optional<JsonValue> t = rd.object(terms->element(i), ipath);
        if (!t)
          continue;
        rd.noUnknownKeys(*t, ipath, {"coeff", "src"});
        ir::LinTerm term;
        if (auto c = rd.number(*t, ipath, "coeff"))
          term.coeff = *c;
        if (auto r = readRef(rd, *t, ipath, "src"))
          term.src = *r;
        op.terms.push_back(term);
      }
    }
  } else {
    forbid("terms");
  }
  if (flags & ir::OF_RV) {
    readEnd(rd, *o, path, "recv", numRanks, numMessages, op.recvPeer,
            op.recvMsg);
    if (auto c = rd.number(*o, path, "localCoeff"))
      op.localCoeff = *c;
    if (auto c = rd.number(*o, path, "msgCoeff"))
      op.msgCoeff = *c;
  } else {
    forbid("recv");
    forbid("localCoeff");
    forbid("msgCoeff");
  }
  if (flags & ir::OF_SN)
    readEnd(rd, *o, path, "send", numRanks, numMessages, op.sendPeer,
            op.sendMsg);
  else
    forbid("send");
  std::string dpath = (path + ".deps").str();
  if (std::optional<JsonValue> deps =
          rd.array(rd.field(*o, path, "deps"), dpath)) {
    for (size_t i = 0; i < deps->size(); ++i) {
      JsonValue dv = deps->element(i);
      std::optional<int64_t> d = dv.asInteger();
      std::string ipath = llvm::formatv("{0}[{1}]", dpath, i).str();
      if (!d || *d < 0 || *d >= numOps)
        rd.error(dv, ipath,
                 llvm::formatv("expected an op id in [0, {0}]", numOps - 1));
      else if (*d == index)
        rd.error(dv, ipath, "an op cannot depend on itself");
      else
        op.deps.push_back(static_cast<ir::OpId>(*d));
    }
  }
  if (auto c = rd.integer(*o, path, "channel", -1, INT32_MAX))
    op.channel = static_cast<ir::ChannelId>(*c);
  if (auto t = rd.integer(*o, path, "threadblock", -1, INT32_MAX))
    op.threadblock = static_cast<ir::TbId>(*t);
}

/// "$.version" must be the version this code reads.
void checkVersion(Reader &rd, JsonValue top, llvm::StringRef root) {
  if (auto v = rd.integer(top, root, "version", 0, INT32_MAX))
    if (*v != kPlanFormatVersion)
      rd.error(*top.get("version"), root + ".version",
               llvm::formatv("plan format version {0} is not supported (this "
                             "topocc reads version {1}); recompile the plan",
                             *v, kPlanFormatVersion));
}

/// Reads `path` ("-": stdin) and parses it with `parse`.
template <typename T>
llvm::Expected<T> parseFile(llvm::StringRef path,
                            llvm::Expected<T> (*parse)(llvm::StringRef,
                                                       llvm::StringRef)) {
  auto buf = readInputFile(path, InputKind::Schedule, "plan",
                           /*allowStdin=*/true);
  if (!buf)
    return buf.takeError();
  return parse((*buf)->getBuffer(), path);
}

/// "0x" and 16 hex digits.
std::optional<uint64_t> parseHash(llvm::StringRef h) {
  uint64_t value = 0;
  if (!h.startswith("0x") || h.size() != 18 ||
      h.drop_front(2).getAsInteger(16, value))
    return std::nullopt;
  return value;
}

/// One plan object: text[span) of the file \p text, the whole plan file
/// or (`window` given) a variant of a plan set, which also carries its
/// "minBytes" and "maxBytes". \p root is the object's JSON path. \p parsed:
/// that span already parsed with "programs" deferred, or null.
llvm::Expected<PlanFile> parsePlanObject(llvm::StringRef text, JsonSpan span,
                                         llvm::StringRef fileName,
                                         llvm::StringRef root,
                                         PlanWindow *window,
                                         const JsonDocument *parsed = nullptr) {
  Reader rd(fileName, text);
  JsonDocument own;
  if (!parsed) {
    if (auto e = own.parse(text, span.begin, span.end, {"programs"}))
      return rd.syntaxError(*e);
    parsed = &own;
  }
  const JsonDocument &doc = *parsed;
  PlanFile plan;
  ir::Schedule &s = plan.schedule;
  std::optional<JsonValue> topv = rd.object(doc.root(), root);
  if (!topv)
    return rd.takeError();
  JsonValue top = *topv;
  std::string at = root.str(); // "$" or "$.variants[i]"
  auto path = [&](llvm::StringRef key) { return at + "." + key.str(); };
  // The format and version decide how to read the rest: stop early on them.
  auto format = rd.string(top, at, "format");
  if (format && *format != "topocc-plan")
    rd.error(*top.get("format"), path("format"),
             "expected \"topocc-plan\", got \"" + *format + "\"");
  checkVersion(rd, top, at);
  if (!rd.ok())
    return rd.takeError();
  llvm::SmallVector<llvm::StringRef, 24> known = {
      "format",        "version",          "generator",    "topology",
      "algorithm",     "errorBound",       "roundoffGain", "name",
      "collective",    "inplace",          "root",         "dtypes",
      "redop",         "chunking",         "stage",        "ranks",
      "chunksPerLoop", "channels",         "messages",     "contentHash",
      "programs",      "roundoffGainWorst"};
  if (window) {
    known.push_back("minBytes");
    known.push_back("maxBytes");
    if (auto v = rd.integer(top, at, "minBytes", 0, INT64_MAX))
      window->minBytes = *v;
    if (auto v = rd.integer(top, at, "maxBytes", 0, INT64_MAX))
      window->maxBytes = *v;
  }
  rd.noUnknownKeys(top, at, known);

  if (auto g = rd.string(top, at, "generator"))
    plan.meta.generator = g->str();
  if (std::optional<JsonValue> t =
          rd.object(rd.field(top, at, "topology"), path("topology"))) {
    rd.noUnknownKeys(*t, path("topology"), {"name", "hash"});
    if (auto n = rd.string(*t, path("topology"), "name"))
      plan.meta.topologyName = n->str();
    if (auto h = rd.string(*t, path("topology"), "hash")) {
      if (auto value = parseHash(*h))
        plan.meta.topologyHash = *value;
      else
        rd.error(*t->get("hash"), path("topology") + ".hash",
                 "expected \"0x\" and 16 hex digits");
    }
  }
  if (auto a = rd.string(top, at, "algorithm"))
    plan.meta.algorithm = a->str();
  if (std::optional<JsonValue> ev = top.get("errorBound")) {
    std::optional<double> e = rd.number(top, at, "errorBound");
    if (e && !(*e > 0))
      rd.error(*ev, path("errorBound"),
               "expected a positive number (omit it for an exact plan)");
    else if (e)
      plan.meta.errorBound = *e;
  }
  // Per dtype ({"fp32": g, "fp16": g, "bf16": g}); one number applies to
  // every dtype.
  for (auto [key, field] :
       {std::pair{"roundoffGain", &plan.meta.roundoffGain},
        std::pair{"roundoffGainWorst", &plan.meta.roundoffGainWorst}}) {
    std::optional<JsonValue> v = top.get(key);
    if (!v)
      continue;
    const std::string gpath = path(key);
    auto check = [&](JsonValue o, llvm::StringRef opath, llvm::StringRef k,
                     double &out) {
      std::optional<double> g = rd.number(o, opath, k);
      if (g && !(*g >= 0 && std::isfinite(*g)))
        rd.error(*o.get(k), (opath + "." + k).str(),
                 "expected a non-negative number");
      else if (g)
        out = *g;
    };
    if (v->isObject()) {
      rd.noUnknownKeys(*v, gpath, {"fp32", "fp16", "bf16"});
      for (size_t d = 0; d < field->size(); ++d) {
        if (!v->get(kRoundoffDtypes[d]))
          rd.error(*v, gpath, "expected keys fp32, fp16 and bf16");
        else
          check(*v, gpath, kRoundoffDtypes[d], (*field)[d]);
      }
    } else {
      double g = 0;
      check(top, at, key, g);
      field->fill(g);
    }
  }
  if (auto n = rd.string(top, at, "name"))
    s.name = n->str();
  if (auto c = rd.string(top, at, "collective")) {
    if (auto coll = ir::collectiveFromName(*c))
      s.collective = *coll;
    else
      rd.error(*top.get("collective"), path("collective"),
               "unknown collective '" + *c + "'");
  }
  if (auto b = rd.boolean(top, at, "inplace"))
    s.inplace = *b;
  if (auto st = rd.string(top, at, "stage")) {
    if (auto stage = ir::stageFromName(*st))
      s.stage = *stage;
    else
      rd.error(*top.get("stage"), path("stage"), "unknown stage '" + *st + "'");
  }
  if (std::optional<JsonValue> dt =
          rd.array(rd.field(top, at, "dtypes"), path("dtypes"))) {
    for (size_t i = 0; i < dt->size(); ++i) {
      std::optional<llvm::StringRef> d = dt->element(i).asString();
      if (!d || (*d != "fp32" && *d != "fp16" && *d != "bf16"))
        rd.error(dt->element(i), llvm::formatv("{0}[{1}]", path("dtypes"), i),
                 "expected \"fp32\", \"fp16\" or \"bf16\"");
    }
  }
  if (auto r = rd.string(top, at, "redop"))
    if (*r != "sum")
      rd.error(*top.get("redop"), path("redop"),
               "expected \"sum\", got \"" + *r + "\"");
  if (auto c = rd.string(top, at, "chunking"))
    if (*c != "balanced")
      rd.error(*top.get("chunking"), path("chunking"),
               "expected \"balanced\", got \"" + *c + "\"");
  auto ranks = rd.integer(top, at, "ranks", 1, 1 << 20);
  auto cpl = rd.integer(top, at, "chunksPerLoop", 1, INT32_MAX);
  auto channels = rd.integer(top, at, "channels", 0, INT32_MAX);
  auto messages = rd.integer(top, at, "messages", 0, INT32_MAX);
  auto root2 = rd.integer(top, at, "root", -1, ranks ? *ranks - 1 : 0);
  std::optional<uint64_t> declaredHash;
  if (auto h = rd.string(top, at, "contentHash", /*required=*/false)) {
    declaredHash = parseHash(*h);
    if (!declaredHash)
      rd.error(*top.get("contentHash"), path("contentHash"),
               "expected \"0x\" and 16 hex digits");
  }
  if (!ranks || !cpl || !channels || !messages || !root2)
    return rd.takeError();
  s.numRanks = static_cast<int32_t>(*ranks);
  s.chunksPerLoop = static_cast<int32_t>(*cpl);
  s.numChannels = static_cast<int32_t>(*channels);
  s.root = static_cast<ir::RankId>(*root2);
  int32_t numMessages = static_cast<int32_t>(*messages);

  std::optional<JsonValue> programs = rd.array(
      rd.field(top, at, "programs"), path("programs"), /*deferred=*/true);
  if (!programs)
    return rd.takeError();
  llvm::ArrayRef<JsonSpan> programSpans = programs->deferredElements();
  if (programSpans.size() != static_cast<size_t>(s.numRanks)) {
    rd.error(*programs, path("programs"),
             llvm::formatv("expected {0} rank programs (\"ranks\"), got {1}",
                           s.numRanks, programSpans.size()));
    return rd.takeError();
  }
  s.ranks.resize(s.numRanks);
  JsonDocument progDoc; // one program at a time, its memory reused
  for (int32_t r = 0; r < s.numRanks; ++r) {
    std::string ppath = llvm::formatv("{0}[{1}]", path("programs"), r).str();
    if (auto e =
            progDoc.parse(text, programSpans[r].begin, programSpans[r].end))
      return rd.syntaxError(*e); // a key twice: the rest was checked
    std::optional<JsonValue> p = rd.object(progDoc.root(), ppath);
    if (!p)
      continue;
    rd.noUnknownKeys(*p, ppath, {"rank", "buffers", "ops"});
    if (auto rank = rd.integer(*p, ppath, "rank", 0, INT32_MAX))
      if (*rank != r)
        rd.error(*p->get("rank"), ppath + ".rank",
                 llvm::formatv("expected {0} (programs are listed in rank "
                               "order), got {1}",
                               r, *rank));
    ir::RankProgram &rp = s.ranks[r];
    std::string bpath = ppath + ".buffers";
    if (std::optional<JsonValue> b =
            rd.object(rd.field(*p, ppath, "buffers"), bpath)) {
      rd.noUnknownKeys(*b, bpath, {"input", "output", "scratch"});
      if (auto v = rd.integer(*b, bpath, "input", 0, INT32_MAX))
        rp.inputChunks = static_cast<int32_t>(*v);
      if (auto v = rd.integer(*b, bpath, "output", 0, INT32_MAX))
        rp.outputChunks = static_cast<int32_t>(*v);
      if (auto v = rd.integer(*b, bpath, "scratch", 0, INT32_MAX))
        rp.scratchChunks = static_cast<int32_t>(*v);
    }
    std::string opath = ppath + ".ops";
    std::optional<JsonValue> ops = rd.array(rd.field(*p, ppath, "ops"), opath);
    if (!ops)
      continue;
    size_t numOps = ops->size();
    rp.ops.resize(numOps);
    for (size_t i = 0; i < numOps; ++i)
      // Message ids are bounded by the declared count here; pairing is
      // checked by the verifier below.
      readOp(rd, ops->element(i), llvm::formatv("{0}[{1}]", opath, i).str(),
             static_cast<int32_t>(i), static_cast<int32_t>(numOps), s.numRanks,
             numMessages, rp.ops[i]);
  }
  if (!rd.ok())
    return rd.takeError();
  if (s.numMessages() != numMessages)
    rd.error(*top.get("messages"), path("messages"),
             llvm::formatv("declares {0} messages but the ops use {1}",
                           numMessages, s.numMessages()));
  plan.contentHash = planContentHash(s);
  if (declaredHash && *declaredHash != plan.contentHash)
    rd.error(*top.get("contentHash"), path("contentHash"),
             llvm::formatv("is {0} but the plan's ops hash to {1}; the file "
                           "was edited or damaged",
                           formatHash(*declaredHash),
                           formatHash(plan.contentHash)));
  if (!rd.ok())
    return rd.takeError();
  if (auto err = verifyPlanSchedule(s, plan.meta.errorBound)) {
    auto [line, col] = lineAndColumn(text, span.begin);
    return makeDiagError(SourceLoc{fileName.str(), line, col},
                         at + ": the plan's schedule fails verification:\n" +
                             llvm::toString(std::move(err)));
  }
  return plan;
}

} // namespace

llvm::Expected<PlanFile> parsePlanJson(llvm::StringRef text,
                                       llvm::StringRef fileName) {
  return parsePlanObject(text, JsonSpan{0, text.size()}, fileName, "$",
                         nullptr);
}

llvm::Expected<PlanFile> loadPlanFile(llvm::StringRef path) {
  return parseFile<PlanFile>(path, parsePlanJson);
}

//===-- plan sets ---------------------------------------------------------===//

namespace {

std::string windowText(const PlanWindow &w) {
  if (w.maxBytes == 0)
    return llvm::formatv("[{0}, no limit]", w.minBytes).str();
  return llvm::formatv("[{0}, {1}]", w.minBytes, w.maxBytes).str();
}

} // namespace

llvm::Error checkPlanVariantsAgree(llvm::ArrayRef<const ir::Schedule *> s) {
  for (size_t i = 1; i < s.size(); ++i)
    if (s[i]->collective != s[0]->collective ||
        s[i]->numRanks != s[0]->numRanks || s[i]->inplace != s[0]->inplace)
      return makeUserError(llvm::formatv(
          "variant {0} is a {1} over {2} ranks ({3}) but variant 0 a {4} over "
          "{5} ranks ({6}); the variants of a plan set run the same call",
          i, ir::collectiveName(s[i]->collective), s[i]->numRanks,
          s[i]->inplace ? "in place" : "out of place",
          ir::collectiveName(s[0]->collective), s[0]->numRanks,
          s[0]->inplace ? "in place" : "out of place"));
  return llvm::Error::success();
}

llvm::Error checkPlanWindows(llvm::ArrayRef<PlanWindow> windows) {
  if (windows.empty())
    return makeUserError("a plan set needs at least one variant");
  for (size_t i = 0; i < windows.size(); ++i) {
    const PlanWindow &w = windows[i];
    if (w.minBytes < 0 || w.maxBytes < 0 ||
        (w.maxBytes != 0 && w.minBytes > w.maxBytes))
      return makeUserError(llvm::formatv(
          "variant {0}: the window minBytes {1}, maxBytes {2} is empty "
          "(expected 0 <= minBytes <= maxBytes, or maxBytes 0 for no limit)",
          i, w.minBytes, w.maxBytes));
    if (i == 0)
      continue;
    const PlanWindow &prev = windows[i - 1];
    if (prev.maxBytes == 0 || w.minBytes <= prev.maxBytes)
      return makeUserError(llvm::formatv(
          "variants {0} {1} and {2} {3} overlap: a call of {4} bytes would "
          "match both (each window must start after the previous one's "
          "maxBytes)",
          i - 1, windowText(prev), i, windowText(w), w.minBytes));
    if (w.minBytes > prev.maxBytes + 1)
      return makeUserError(llvm::formatv(
          "variants {0} {1} and {2} {3} leave a gap: no variant serves calls "
          "of {4} to {5} bytes (each window must start at the previous one's "
          "maxBytes + 1)",
          i - 1, windowText(prev), i, windowText(w), prev.maxBytes + 1,
          w.minBytes - 1));
  }
  return llvm::Error::success();
}

llvm::Expected<PlanSetFile> parsePlanSetJson(llvm::StringRef text,
                                             llvm::StringRef fileName) {
  PlanSetFile set;
  Reader rd(fileName, text);
  JsonDocument doc;
  if (auto e = doc.parse(text, {"variants", "programs"}))
    return rd.syntaxError(*e);
  std::optional<JsonValue> variants;
  if (doc.root().isObject())
    variants = doc.root().get("variants");
  if (!variants) {
    // A plan file (or text that is neither: parsePlanObject says what), read
    // from the document at hand: its "programs" are deferred already.
    auto plan = parsePlanObject(text, JsonSpan{0, text.size()}, fileName, "$",
                                nullptr, &doc);
    if (!plan)
      return plan.takeError();
    set.variants.push_back({PlanWindow{}, std::move(*plan)});
    return set;
  }
  set.isSet = true;
  JsonValue top = doc.root();
  auto format = rd.string(top, "$", "format");
  if (format && *format != kPlanSetFormat)
    rd.error(*top.get("format"), "$.format",
             "a plan with \"variants\" is a plan set: expected "
             "\"topocc-plan-set\", got \"" +
                 *format + "\"");
  checkVersion(rd, top, "$");
  rd.noUnknownKeys(top, "$",
                   {"format", "version", "generator", "collective", "inplace",
                    "ranks", "variants"});
  auto coll = rd.string(top, "$", "collective");
  auto inplace = rd.boolean(top, "$", "inplace");
  auto ranks = rd.integer(top, "$", "ranks", 1, 1 << 20);
  (void)rd.string(top, "$", "generator");
  rd.array(variants, "$.variants", /*deferred=*/true);
  if (!rd.ok())
    return rd.takeError();
  std::vector<PlanWindow> windows;
  std::vector<const ir::Schedule *> schedules;
  llvm::ArrayRef<JsonSpan> spans = variants->deferredElements();
  for (size_t i = 0; i < spans.size(); ++i) {
    PlanWindow w;
    auto plan = parsePlanObject(text, spans[i], fileName,
                                llvm::formatv("$.variants[{0}]", i).str(), &w);
    if (!plan)
      return plan.takeError();
    windows.push_back(w);
    set.variants.push_back({w, std::move(*plan)});
  }
  for (const PlanVariant &v : set.variants)
    schedules.push_back(&v.plan.schedule);
  auto located = [&](llvm::Error err) {
    auto [line, col] = lineAndColumn(text, variants->offset());
    return makeDiagError(SourceLoc{fileName.str(), line, col},
                         "$.variants: " + llvm::toString(std::move(err)),
                         sourceLineOf(text, line));
  };
  if (auto err = checkPlanWindows(windows))
    return located(std::move(err));
  if (auto err = checkPlanVariantsAgree(schedules))
    return located(std::move(err));
  const ir::Schedule &first = *schedules[0];
  if (*coll != ir::collectiveName(first.collective) ||
      *inplace != first.inplace || *ranks != first.numRanks)
    return located(makeUserError(
        "the set's \"collective\", \"inplace\" and \"ranks\" are not its "
        "variants'"));
  return set;
}

llvm::Expected<PlanSetFile> loadPlanSetFile(llvm::StringRef path) {
  return parseFile<PlanSetFile>(path, parsePlanSetJson);
}

} // namespace topocc::backends
