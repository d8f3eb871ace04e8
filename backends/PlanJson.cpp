//===- backends/PlanJson.cpp - The executable plan (JSON) -----------------===//
//
// Writer: top-level fields one per line, each op one compact JSON object per
// line (diff-friendly, deterministic). Reader: a small path-tracking
// validator over llvm::json that collects every problem as
// "FILE: error: $.ranks[1].ops[3].send.peer: message".
//
//===----------------------------------------------------------------------===//

#include "backends/PlanJson.h"

#include "ir/Printer.h"
#include "ir/Semantics.h"
#include "ir/Verifier.h"
#include "support/Diagnostics.h"
#include "support/Fnv1a.h"
#include "support/InputFile.h"
#include "support/JsonSpans.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>
#include <limits>

namespace topocc::backends {

namespace json = llvm::json;

//===-- hashes ------------------------------------------------------------===//

uint64_t planContentHash(const ir::Schedule &s) {
  Fnv1a h;
  h.bytes(ir::scheduleToString(s));
  return h.value();
}

std::string formatHash(uint64_t v) {
  char text[19];
  std::snprintf(text, sizeof(text), "0x%016llx",
                static_cast<unsigned long long>(v));
  return text;
}

//===-- writer ------------------------------------------------------------===//

namespace {

json::Value refJson(const ir::BufferRef &r) {
  return json::Object{{"buffer", ir::bufferName(r.buffer)},
                      {"chunk", r.chunk},
                      {"count", r.count}};
}

/// One op as a compact JSON object, keys in a fixed order.
std::string opJson(const ir::Op &op, int32_t id) {
  std::string text;
  llvm::raw_string_ostream os(text);
  json::OStream j(os);
  unsigned flags = ir::opFlags(op.kind);
  j.object([&] {
    j.attribute("id", id);
    j.attribute("kind", ir::mnemonic(op.kind));
    if (flags & ir::OF_RS)
      j.attribute("src", refJson(op.src));
    if (flags & ir::OF_WD)
      j.attribute("dst", refJson(op.dst));
    if (flags & ir::OF_LC)
      j.attributeArray("terms", [&] {
        for (const ir::LinTerm &t : op.terms)
          j.object([&] {
            j.attribute("coeff", t.coeff);
            j.attribute("src", refJson(t.src));
          });
      });
    if (flags & ir::OF_RV)
      j.attribute("recv", json::Object{{"peer", op.recvPeer},
                                       {"msg", op.recvMsg}});
    if (flags & ir::OF_SN)
      j.attribute("send", json::Object{{"peer", op.sendPeer},
                                       {"msg", op.sendMsg}});
    if (flags & ir::OF_RV) {
      if (op.localCoeff != 1.0)
        j.attribute("localCoeff", op.localCoeff);
      if (op.msgCoeff != 1.0)
        j.attribute("msgCoeff", op.msgCoeff);
    }
    j.attributeArray("deps", [&] {
      for (ir::OpId d : op.deps)
        j.value(d);
    });
    j.attribute("channel", op.channel);
    j.attribute("threadblock", op.threadblock);
  });
  return os.str();
}

std::string quoted(llvm::StringRef s) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << json::Value(s);
  return os.str();
}

} // namespace

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

llvm::Expected<std::string> planToJson(const ir::Schedule &s,
                                       const PlanMeta &meta, PlanCheck check) {
  if (check == PlanCheck::VerifiedByCompile && meta.errorBound == 0)
    ; // compile() verified it in full
  else if (auto err = verifyPlanSchedule(s, meta.errorBound))
    return makeUserError("cannot write a plan for a schedule that fails "
                         "verification:\n" +
                         llvm::toString(std::move(err)));
  std::string text;
  llvm::raw_string_ostream os(text);
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
    for (size_t i = 0; i < rp.ops.size(); ++i)
      os << (i ? "," : "") << "\n      "
         << opJson(rp.ops[i], static_cast<int32_t>(i));
    os << (rp.ops.empty() ? "]}" : "\n    ]}");
  }
  os << (s.ranks.empty() ? "]\n" : "\n  ]\n");
  os << "}\n";
  return os.str();
}

//===-- reader ------------------------------------------------------------===//

namespace {

/// llvm::json (LLVM 14) answers llvm::Optional; our code uses std::optional.
template <typename T> std::optional<T> opt(const llvm::Optional<T> &o) {
  if (o)
    return *o;
  return std::nullopt;
}

/// Validates JSON values against the plan schema, remembering the path of
/// the value being read; collects every problem.
class Reader {
public:
  explicit Reader(llvm::StringRef fileName) : fileName(fileName.str()) {}

  void error(const llvm::Twine &path, const llvm::Twine &msg) {
    if (diags.all().size() < kMaxProblems)
      diags.error(SourceLoc{fileName, 0, 0}, (path + ": " + msg).str());
    failed = true;
  }
  bool ok() const { return !failed; }
  llvm::Error takeError() { return diags.takeError(); }

  const json::Value *field(const json::Object &o, llvm::StringRef path,
                           llvm::StringRef key, bool required = true) {
    const json::Value *v = o.get(key);
    if (!v && required)
      error(path, "missing field '" + key + "'");
    return v;
  }

  std::optional<int64_t> integer(const json::Object &o, llvm::StringRef path,
                                 llvm::StringRef key, int64_t lo, int64_t hi,
                                 bool required = true) {
    const json::Value *v = field(o, path, key, required);
    if (!v)
      return std::nullopt;
    std::string p = (path + "." + key).str();
    std::optional<int64_t> i = opt(v->getAsInteger());
    if (!i) {
      error(p, "expected an integer");
      return std::nullopt;
    }
    if (*i < lo || *i > hi) {
      error(p, llvm::formatv("expected an integer in [{0}, {1}], got {2}", lo,
                             hi, *i));
      return std::nullopt;
    }
    return i;
  }

  std::optional<double> number(const json::Object &o, llvm::StringRef path,
                               llvm::StringRef key) {
    const json::Value *v = field(o, path, key, false);
    if (!v)
      return 1.0;
    std::optional<double> d = opt(v->getAsNumber());
    if (!d || !std::isfinite(*d)) {
      error((path + "." + key).str(), "expected a finite number");
      return std::nullopt;
    }
    return d;
  }

  std::optional<llvm::StringRef> string(const json::Object &o,
                                        llvm::StringRef path,
                                        llvm::StringRef key,
                                        bool required = true) {
    const json::Value *v = field(o, path, key, required);
    if (!v)
      return std::nullopt;
    std::optional<llvm::StringRef> s = opt(v->getAsString());
    if (!s)
      error((path + "." + key).str(), "expected a string");
    return s;
  }

  std::optional<bool> boolean(const json::Object &o, llvm::StringRef path,
                              llvm::StringRef key) {
    const json::Value *v = field(o, path, key);
    if (!v)
      return std::nullopt;
    std::optional<bool> b = opt(v->getAsBoolean());
    if (!b)
      error((path + "." + key).str(), "expected true or false");
    return b;
  }

  const json::Object *object(const json::Value *v, llvm::StringRef path) {
    if (!v)
      return nullptr;
    const json::Object *o = v->getAsObject();
    if (!o)
      error(path, "expected an object");
    return o;
  }

  const json::Array *array(const json::Value *v, llvm::StringRef path) {
    if (!v)
      return nullptr;
    const json::Array *a = v->getAsArray();
    if (!a)
      error(path, "expected an array");
    return a;
  }

  /// Reports keys of `o` not in `known` (a misspelt optional field would
  /// otherwise be silently ignored).
  void noUnknownKeys(const json::Object &o, llvm::StringRef path,
                     llvm::ArrayRef<llvm::StringRef> known) {
    std::vector<std::string> keys;
    for (const auto &kv : o)
      keys.push_back(kv.first.str());
    llvm::sort(keys);
    for (const std::string &k : keys)
      if (!llvm::is_contained(known, k)) {
        std::string hint = nearestMatch(k, known);
        error(path, "unknown field '" + k + "'" +
                        (hint.empty() ? "" : "; did you mean '" + hint + "'?"));
      }
  }

private:
  static constexpr size_t kMaxProblems = 20;
  std::string fileName;
  DiagnosticList diags;
  bool failed = false;
};

std::optional<ir::BufferRef> readRef(Reader &rd, const json::Object &op,
                                     llvm::StringRef opPath,
                                     llvm::StringRef key,
                                     const json::Value *v = nullptr) {
  std::string path = (opPath + "." + key).str();
  if (!v)
    v = rd.field(op, opPath, key);
  const json::Object *o = rd.object(v, path);
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
      rd.error(path + ".buffer",
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
bool readEnd(Reader &rd, const json::Object &op, llvm::StringRef opPath,
             llvm::StringRef key, int32_t numRanks, int32_t numMessages,
             ir::RankId &peer, ir::MsgId &msg) {
  std::string path = (opPath + "." + key).str();
  const json::Object *o = rd.object(rd.field(op, opPath, key), path);
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

void readOp(Reader &rd, const json::Value &v, llvm::StringRef path,
            int32_t index, int32_t numOps, int32_t numRanks,
            int32_t numMessages, ir::Op &op) {
  const json::Object *o = rd.object(&v, path);
  if (!o)
    return;
  rd.noUnknownKeys(*o, path,
                   {"id", "kind", "src", "dst", "terms", "recv", "send",
                    "localCoeff", "msgCoeff", "deps", "channel",
                    "threadblock"});
  if (auto id = rd.integer(*o, path, "id", 0, INT32_MAX))
    if (*id != index)
      rd.error(path + ".id", llvm::formatv("expected {0} (ops are listed in "
                                           "id order), got {1}",
                                           index, *id));
  std::optional<llvm::StringRef> kind = rd.string(*o, path, "kind");
  if (!kind)
    return;
  std::optional<ir::OpKind> k = ir::opKindFromMnemonic(*kind);
  if (!k) {
    rd.error(path + ".kind", "unknown op kind '" + *kind + "'");
    return;
  }
  op.kind = *k;
  unsigned flags = ir::opFlags(*k);
  auto forbid = [&](llvm::StringRef key) {
    if (o->get(key))
      rd.error(path + "." + key,
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
    if (const json::Array *terms =
            rd.array(rd.field(*o, path, "terms"), tpath)) {
      if (terms->empty())
        rd.error(tpath, "a lincomb needs at least one term");
      for (size_t i = 0; i < terms->size(); ++i) {
        std::string ipath = llvm::formatv("{0}[{1}]", tpath, i).str();
        const json::Object *t = rd.object(&(*terms)[i], ipath);
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
  if (const json::Array *deps = rd.array(rd.field(*o, path, "deps"), dpath)) {
    for (size_t i = 0; i < deps->size(); ++i) {
      std::optional<int64_t> d = opt((*deps)[i].getAsInteger());
      std::string ipath = llvm::formatv("{0}[{1}]", dpath, i).str();
      if (!d || *d < 0 || *d >= numOps)
        rd.error(ipath, llvm::formatv("expected an op id in [0, {0}]",
                                      numOps - 1));
      else if (*d == index)
        rd.error(ipath, "an op cannot depend on itself");
      else
        op.deps.push_back(static_cast<ir::OpId>(*d));
    }
  }
  if (auto c = rd.integer(*o, path, "channel", -1, INT32_MAX))
    op.channel = static_cast<ir::ChannelId>(*c);
  if (auto t = rd.integer(*o, path, "threadblock", -1, INT32_MAX))
    op.threadblock = static_cast<ir::TbId>(*t);
}

} // namespace

namespace {

/// llvm::json's parse error as a located diagnostic.
llvm::Error jsonSyntaxError(llvm::Error err, llvm::StringRef text,
                            llvm::StringRef fileName) {
  std::string msg = llvm::toString(std::move(err));
  // llvm::json::ParseError logs "[LINE:COL, byte=N]: message".
  llvm::SmallVector<llvm::StringRef, 4> m;
  llvm::Regex re("^\\[([0-9]+):([0-9]+), byte=[0-9]+\\]: (.*)$");
  if (re.match(msg, &m)) {
    unsigned line = 0, col = 0;
    m[1].getAsInteger(10, line);
    m[2].getAsInteger(10, col);
    return makeDiagError(SourceLoc{fileName.str(), line, col},
                         "invalid JSON: " + m[3], sourceLineOf(text, line));
  }
  return makeDiagError(SourceLoc{fileName.str(), 0, 0}, "invalid JSON: " + msg);
}

/// \p text parsed with the array member \p key of its top-level object
/// emptied ("key": []) and the array's elements kept as text, to be parsed
/// one at a time with element() (support/JsonSpans.h). Where the text
/// cannot be split that way, root() is the whole text's DOM and isSplit() is
/// false: the caller indexes the array in it. Nothing on a syntax error (the
/// caller re-parses the whole file for the location).
class SplitParse {
public:
  static std::optional<SplitParse> parse(llvm::StringRef text,
                                         llvm::StringRef key) {
    SplitParse sp;
    if (std::optional<JsonArraySpans> spans = findTopLevelArray(text, key)) {
      std::string rest =
          (text.take_front(spans->begin) + "[]" + text.drop_front(spans->end))
              .str();
      if (llvm::Expected<json::Value> v = json::parse(rest)) {
        sp.rest = std::move(*v);
        for (auto [b, e] : spans->elements)
          sp.texts.push_back(text.slice(b, e));
        sp.split = true;
        return sp;
      } else {
        llvm::consumeError(v.takeError());
      }
    }
    llvm::Expected<json::Value> v = json::parse(text);
    if (!v) {
      llvm::consumeError(v.takeError());
      return std::nullopt;
    }
    sp.rest = std::move(*v);
    return sp;
  }

  const json::Value &root() const { return rest; }
  /// Whether the array was split out (root() then holds an empty array).
  bool isSplit() const { return split; }
  size_t size() const { return texts.size(); }
  llvm::StringRef elementText(size_t i) const { return texts[i]; }
  /// Element \p i parsed (valid until the next call), or null on a syntax
  /// error.
  const json::Value *element(size_t i) {
    llvm::Expected<json::Value> v = json::parse(texts[i]);
    if (!v) {
      llvm::consumeError(v.takeError());
      return nullptr;
    }
    current = std::move(*v);
    return &current;
  }

private:
  json::Value rest = nullptr, current = nullptr;
  std::vector<llvm::StringRef> texts;
  bool split = false;
};

} // namespace

namespace {

/// "$.version" must be the version this code reads.
void checkVersion(Reader &rd, const json::Object &top) {
  if (auto v = rd.integer(top, "$", "version", 0, INT32_MAX))
    if (*v != kPlanFormatVersion)
      rd.error("$.version",
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

/// One plan object: a plan file, or (`window` given) a variant of a plan
/// set, which also carries its "minBytes" and "maxBytes".
llvm::Expected<PlanFile> parsePlanObject(llvm::StringRef text,
                                         llvm::StringRef fileName,
                                         PlanWindow *window) {
  // The programs and their ops are parsed one at a time (SplitParse). A
  // syntax error anywhere re-parses the whole text, for llvm::json's line
  // and column.
  auto syntaxError = [&]() -> llvm::Error {
    llvm::Expected<json::Value> whole = json::parse(text);
    if (!whole)
      return jsonSyntaxError(whole.takeError(), text, fileName);
    return makeDiagError(SourceLoc{fileName.str(), 0, 0}, "invalid JSON");
  };
  std::optional<SplitParse> file = SplitParse::parse(text, "programs");
  if (!file)
    return syntaxError();

  Reader rd(fileName);
  PlanFile plan;
  ir::Schedule &s = plan.schedule;
  const json::Object *top = rd.object(&file->root(), "$");
  if (!top)
    return rd.takeError();
  // The format and version decide how to read the rest: stop early on them.
  auto format = rd.string(*top, "$", "format");
  if (format && *format != "topocc-plan")
    rd.error("$.format", "expected \"topocc-plan\", got \"" + *format + "\"");
  checkVersion(rd, *top);
  if (!rd.ok())
    return rd.takeError();
  llvm::SmallVector<llvm::StringRef, 24> known = {
      "format",     "version",       "generator", "topology",   "algorithm",
      "errorBound", "roundoffGain",  "name",      "collective", "inplace",
      "root",       "dtypes",        "redop",     "chunking",   "stage",
      "ranks",      "chunksPerLoop", "channels",  "messages",   "contentHash",
      "programs",   "roundoffGainWorst"};
  if (window) {
    known.push_back("minBytes");
    known.push_back("maxBytes");
    if (auto v = rd.integer(*top, "$", "minBytes", 0, INT64_MAX))
      window->minBytes = *v;
    if (auto v = rd.integer(*top, "$", "maxBytes", 0, INT64_MAX))
      window->maxBytes = *v;
  }
  rd.noUnknownKeys(*top, "$", known);

  if (auto g = rd.string(*top, "$", "generator"))
    plan.meta.generator = g->str();
  if (const json::Object *t =
          rd.object(rd.field(*top, "$", "topology"), "$.topology")) {
    rd.noUnknownKeys(*t, "$.topology", {"name", "hash"});
    if (auto n = rd.string(*t, "$.topology", "name"))
      plan.meta.topologyName = n->str();
    if (auto h = rd.string(*t, "$.topology", "hash")) {
      uint64_t value = 0;
      if (!h->startswith("0x") || h->size() != 18 ||
          h->drop_front(2).getAsInteger(16, value))
        rd.error("$.topology.hash", "expected \"0x\" and 16 hex digits");
      plan.meta.topologyHash = value;
    }
  }
  if (auto a = rd.string(*top, "$", "algorithm"))
    plan.meta.algorithm = a->str();
  if (top->get("errorBound")) {
    std::optional<double> e = rd.number(*top, "$", "errorBound");
    if (e && !(*e > 0))
      rd.error("$.errorBound", "expected a positive number (omit it for an "
                               "exact plan)");
    else if (e)
      plan.meta.errorBound = *e;
  }
  // Per dtype ({"fp32": g, "fp16": g, "bf16": g}); one number applies to
  // every dtype.
  for (auto [key, field] :
       {std::pair{"roundoffGain", &plan.meta.roundoffGain},
        std::pair{"roundoffGainWorst", &plan.meta.roundoffGainWorst}}) {
    const json::Value *v = top->get(key);
    if (!v)
      continue;
    const std::string path = std::string("$.") + key;
    auto check = [&](const json::Object &o, llvm::StringRef at,
                     llvm::StringRef k, double &out) {
      std::optional<double> g = rd.number(o, at, k);
      if (g && !(*g >= 0 && std::isfinite(*g)))
        rd.error((at + "." + k).str(), "expected a non-negative number");
      else if (g)
        out = *g;
    };
    if (v->getAsObject()) {
      const json::Object &o = *v->getAsObject();
      rd.noUnknownKeys(o, path, {"fp32", "fp16", "bf16"});
      for (size_t d = 0; d < field->size(); ++d) {
        if (!o.get(kRoundoffDtypes[d]))
          rd.error(path, "expected keys fp32, fp16 and bf16");
        else
          check(o, path, kRoundoffDtypes[d], (*field)[d]);
      }
    } else {
      double g = 0;
      check(*top, "$", key, g);
      field->fill(g);
    }
  }
  if (auto n = rd.string(*top, "$", "name"))
    s.name = n->str();
  if (auto c = rd.string(*top, "$", "collective")) {
    if (auto coll = ir::collectiveFromName(*c))
      s.collective = *coll;
    else
      rd.error("$.collective", "unknown collective '" + *c + "'");
  }
  if (auto b = rd.boolean(*top, "$", "inplace"))
    s.inplace = *b;
  if (auto st = rd.string(*top, "$", "stage")) {
    if (auto stage = ir::stageFromName(*st))
      s.stage = *stage;
    else
      rd.error("$.stage", "unknown stage '" + *st + "'");
  }
  if (const json::Array *dt =
          rd.array(rd.field(*top, "$", "dtypes"), "$.dtypes")) {
    for (size_t i = 0; i < dt->size(); ++i) {
      std::optional<llvm::StringRef> d = opt((*dt)[i].getAsString());
      if (!d || (*d != "fp32" && *d != "fp16" && *d != "bf16"))
        rd.error(llvm::formatv("$.dtypes[{0}]", i).str(),
                 "expected \"fp32\", \"fp16\" or \"bf16\"");
    }
  }
  if (auto r = rd.string(*top, "$", "redop"))
    if (*r != "sum")
      rd.error("$.redop", "expected \"sum\", got \"" + *r + "\"");
  if (auto c = rd.string(*top, "$", "chunking"))
    if (*c != "balanced")
      rd.error("$.chunking", "expected \"balanced\", got \"" + *c + "\"");
  auto ranks = rd.integer(*top, "$", "ranks", 1, 1 << 20);
  auto cpl = rd.integer(*top, "$", "chunksPerLoop", 1, INT32_MAX);
  auto channels = rd.integer(*top, "$", "channels", 0, INT32_MAX);
  auto messages = rd.integer(*top, "$", "messages", 0, INT32_MAX);
  auto root2 = rd.integer(*top, "$", "root", -1, ranks ? *ranks - 1 : 0);
  std::optional<uint64_t> declaredHash;
  if (auto h = rd.string(*top, "$", "contentHash", /*required=*/false)) {
    uint64_t value = 0;
    if (!h->startswith("0x") || h->size() != 18 ||
        h->drop_front(2).getAsInteger(16, value))
      rd.error("$.contentHash", "expected \"0x\" and 16 hex digits");
    else
      declaredHash = value;
  }
  if (!ranks || !cpl || !channels || !messages || !root2)
    return rd.takeError();
  s.numRanks = static_cast<int32_t>(*ranks);
  s.chunksPerLoop = static_cast<int32_t>(*cpl);
  s.numChannels = static_cast<int32_t>(*channels);
  s.root = static_cast<ir::RankId>(*root2);
  int32_t numMessages = static_cast<int32_t>(*messages);

  const json::Array *programs =
      rd.array(rd.field(*top, "$", "programs"), "$.programs");
  if (!programs)
    return rd.takeError();
  size_t numPrograms = file->isSplit() ? file->size() : programs->size();
  if (numPrograms != static_cast<size_t>(s.numRanks)) {
    rd.error("$.programs",
             llvm::formatv("expected {0} rank programs (\"ranks\"), got {1}",
                           s.numRanks, numPrograms));
    return rd.takeError();
  }
  s.ranks.resize(s.numRanks);
  for (int32_t r = 0; r < s.numRanks; ++r) {
    std::string path = llvm::formatv("$.programs[{0}]", r).str();
    std::optional<SplitParse> prog; // this program with its ops as text
    if (file->isSplit() &&
        !(prog = SplitParse::parse(file->elementText(size_t(r)), "ops")))
      return syntaxError();
    const json::Object *p =
        rd.object(prog ? &prog->root() : &(*programs)[r], path);
    if (!p)
      continue;
    rd.noUnknownKeys(*p, path, {"rank", "buffers", "ops"});
    if (auto rank = rd.integer(*p, path, "rank", 0, INT32_MAX))
      if (*rank != r)
        rd.error(path + ".rank",
                 llvm::formatv("expected {0} (programs are listed in rank "
                               "order), got {1}",
                               r, *rank));
    ir::RankProgram &rp = s.ranks[r];
    std::string bpath = path + ".buffers";
    if (const json::Object *b = rd.object(rd.field(*p, path, "buffers"),
                                          bpath)) {
      rd.noUnknownKeys(*b, bpath, {"input", "output", "scratch"});
      if (auto v = rd.integer(*b, bpath, "input", 0, INT32_MAX))
        rp.inputChunks = static_cast<int32_t>(*v);
      if (auto v = rd.integer(*b, bpath, "output", 0, INT32_MAX))
        rp.outputChunks = static_cast<int32_t>(*v);
      if (auto v = rd.integer(*b, bpath, "scratch", 0, INT32_MAX))
        rp.scratchChunks = static_cast<int32_t>(*v);
    }
    std::string opath = path + ".ops";
    const json::Array *ops = rd.array(rd.field(*p, path, "ops"), opath);
    if (!ops)
      continue;
    bool opsSplit = prog && prog->isSplit();
    size_t numOps = opsSplit ? prog->size() : ops->size();
    rp.ops.resize(numOps);
    for (size_t i = 0; i < numOps; ++i) {
      const json::Value *ov = opsSplit ? prog->element(i) : &(*ops)[i];
      if (!ov)
        return syntaxError();
      // Message ids are bounded by the declared count here; pairing is
      // checked by the verifier below.
      readOp(rd, *ov, llvm::formatv("{0}[{1}]", opath, i).str(),
             static_cast<int32_t>(i), static_cast<int32_t>(numOps),
             s.numRanks, numMessages, rp.ops[i]);
    }
  }
  if (!rd.ok())
    return rd.takeError();
  if (s.numMessages() != numMessages)
    rd.error("$.messages",
             llvm::formatv("declares {0} messages but the ops use {1}",
                           numMessages, s.numMessages()));
  plan.contentHash = planContentHash(s);
  if (declaredHash && *declaredHash != plan.contentHash)
    rd.error("$.contentHash",
             llvm::formatv("is {0} but the plan's ops hash to {1}; the file "
                           "was edited or damaged",
                           formatHash(*declaredHash),
                           formatHash(plan.contentHash)));
  if (!rd.ok())
    return rd.takeError();
  if (auto err = verifyPlanSchedule(s, plan.meta.errorBound))
    return makeDiagError(SourceLoc{fileName.str(), 0, 0},
                         "the plan's schedule fails verification:\n" +
                             llvm::toString(std::move(err)));
  return plan;
}

} // namespace

llvm::Expected<PlanFile> parsePlanJson(llvm::StringRef text,
                                       llvm::StringRef fileName) {
  return parsePlanObject(text, fileName, nullptr);
}

llvm::Expected<PlanFile> loadPlanFile(llvm::StringRef path) {
  return parseFile<PlanFile>(path, parsePlanJson);
}

//===-- plan sets ---------------------------------------------------------===//

namespace {

constexpr llvm::StringLiteral kPlanSetFormat = "topocc-plan-set";

std::string windowText(const PlanWindow &w) {
  if (w.maxBytes == 0)
    return llvm::formatv("[{0}, no limit]", w.minBytes).str();
  return llvm::formatv("[{0}, {1}]", w.minBytes, w.maxBytes).str();
}

/// User error unless every plan is of the first's collective, rank count
/// and in-place mode.
llvm::Error checkVariantsAgree(llvm::ArrayRef<const ir::Schedule *> s) {
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

} // namespace

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

llvm::Expected<std::string>
planSetToJson(llvm::ArrayRef<PlanWindow> windows,
              llvm::ArrayRef<const ir::Schedule *> schedules,
              llvm::ArrayRef<PlanMeta> metas) {
  if (windows.size() != schedules.size() || windows.size() != metas.size())
    return makeInternalError("planSetToJson: one window, schedule and meta "
                             "per variant");
  if (auto err = checkPlanWindows(windows))
    return err;
  if (auto err = checkVariantsAgree(schedules))
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

llvm::Expected<PlanSetFile> parsePlanSetJson(llvm::StringRef text,
                                             llvm::StringRef fileName) {
  PlanSetFile set;
  std::optional<JsonArraySpans> spans = findTopLevelArray(text, "variants");
  if (!spans) {
    // A plan file (or text that is neither: parsePlanJson says what).
    auto plan = parsePlanJson(text, fileName);
    if (!plan)
      return plan.takeError();
    set.variants.push_back({PlanWindow{}, std::move(*plan)});
    return set;
  }
  set.isSet = true;
  std::string rest =
      (text.take_front(spans->begin) + "[]" + text.drop_front(spans->end))
          .str();
  llvm::Expected<json::Value> header = json::parse(rest);
  if (!header) {
    llvm::consumeError(header.takeError());
    llvm::Expected<json::Value> whole = json::parse(text);
    if (!whole)
      return jsonSyntaxError(whole.takeError(), text, fileName);
    return makeDiagError(SourceLoc{fileName.str(), 0, 0}, "invalid JSON");
  }
  Reader rd(fileName);
  const json::Object *top = rd.object(&*header, "$");
  if (!top)
    return rd.takeError();
  auto format = rd.string(*top, "$", "format");
  if (format && *format != kPlanSetFormat)
    rd.error("$.format", "a plan with \"variants\" is a plan set: expected "
                         "\"topocc-plan-set\", got \"" +
                             *format + "\"");
  checkVersion(rd, *top);
  rd.noUnknownKeys(*top, "$",
                   {"format", "version", "generator", "collective", "inplace",
                    "ranks", "variants"});
  auto coll = rd.string(*top, "$", "collective");
  auto inplace = rd.boolean(*top, "$", "inplace");
  auto ranks = rd.integer(*top, "$", "ranks", 1, 1 << 20);
  (void)rd.string(*top, "$", "generator");
  if (!rd.ok())
    return rd.takeError();
  std::vector<PlanWindow> windows;
  std::vector<const ir::Schedule *> schedules;
  for (size_t i = 0; i < spans->elements.size(); ++i) {
    auto [b, e] = spans->elements[i];
    PlanWindow w;
    auto plan = parsePlanObject(
        text.slice(b, e),
        (fileName + llvm::formatv(" $.variants[{0}]", i).str()).str(), &w);
    if (!plan)
      return plan.takeError();
    windows.push_back(w);
    set.variants.push_back({w, std::move(*plan)});
  }
  for (const PlanVariant &v : set.variants)
    schedules.push_back(&v.plan.schedule);
  auto located = [&](llvm::Error err) {
    return makeDiagError(SourceLoc{fileName.str(), 0, 0},
                         "$.variants: " + llvm::toString(std::move(err)));
  };
  if (auto err = checkPlanWindows(windows))
    return located(std::move(err));
  if (auto err = checkVariantsAgree(schedules))
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
