//===- ir/Parser.cpp - Parse the textual schedule IR ----------------------===//
//
// A hand-written, non-recursive parser for the grammar in docs/ScheduleIR.md.
// Whitespace (newlines included) separates tokens; `//`, `#` and `;` start a
// comment that runs to the end of the line. The first error stops parsing and
// is reported as `file:line:col: error: ...` with the source line. Sizes that
// would make later stages allocate absurd amounts of memory are rejected here.
//
//===----------------------------------------------------------------------===//

#include "ir/Parser.h"

#include "support/Diagnostics.h"
#include "support/InputFile.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace topocc::ir {

namespace {

/// Limits on header values: anything above is certainly a typo or garbage,
/// and would make the verifier allocate per-rank or per-chunk state.
constexpr int64_t kMaxRanks = 1000000;
constexpr int64_t kMaxChunks = 1000000;
constexpr int64_t kMaxChannels = 1000000;

class Parser {
public:
  Parser(llvm::StringRef text, llvm::StringRef fileName)
      : text(text), fileName(fileName) {}

  llvm::Expected<Schedule> parse();

private:
  llvm::StringRef text;
  llvm::StringRef fileName;
  size_t pos = 0;
  unsigned line = 1;
  unsigned col = 1;

  // --- Characters and errors ---
  bool atEnd() const { return pos >= text.size(); }
  char peek(size_t ahead = 0) const {
    return pos + ahead < text.size() ? text[pos + ahead] : '\0';
  }
  void advance() {
    if (atEnd())
      return;
    if (text[pos] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
    ++pos;
  }
  void skipSpace();
  llvm::Error error(const llvm::Twine &msg) const {
    return makeDiagError(SourceLoc{fileName.str(), line, col}, msg,
                         sourceLineOf(text, line));
  }
  /// A printable description of what is at the cursor, for "got ..." parts.
  std::string describeHere() const;
  llvm::Error expected(const llvm::Twine &what) const {
    return error("expected " + what + ", got " + describeHere());
  }

  // --- Tokens ---
  bool tryChar(char c) {
    skipSpace();
    if (peek() != c)
      return false;
    advance();
    return true;
  }
  bool tryString(llvm::StringRef s) {
    skipSpace();
    if (!text.substr(pos).startswith(s))
      return false;
    for (size_t i = 0; i < s.size(); ++i)
      advance();
    return true;
  }
  llvm::Error expectChar(char c) {
    if (tryChar(c))
      return llvm::Error::success();
    return expected(llvm::Twine("'") + llvm::Twine(c) + "'");
  }
  /// [A-Za-z_][A-Za-z0-9_]*, or "" when none is at the cursor.
  llvm::StringRef peekIdent() {
    skipSpace();
    size_t e = pos;
    if (e < text.size() && (llvm::isAlpha(text[e]) || text[e] == '_')) {
      while (e < text.size() && (llvm::isAlnum(text[e]) || text[e] == '_'))
        ++e;
    }
    return text.slice(pos, e);
  }
  llvm::StringRef takeIdent() {
    llvm::StringRef id = peekIdent();
    for (size_t i = 0; i < id.size(); ++i)
      advance();
    return id;
  }
  /// Optional '-', then decimal digits; fits in int32_t.
  llvm::Error parseInt(int32_t &out, const llvm::Twine &what);
  llvm::Error parseDouble(double &out, const llvm::Twine &what);
  /// The attribute name `key` followed by '='.
  llvm::Error expectKeyword(llvm::StringRef kw);

  // --- Grammar ---
  llvm::Error parseHeader(Schedule &s);
  llvm::Error parseName(std::string &name);
  llvm::Error parseRank(Schedule &s, int32_t index);
  llvm::Error parseOp(Op &op);
  llvm::Error parseBufferRef(BufferRef &b);
  /// [coeff '*'] bufref.
  llvm::Error parseOperand(LinTerm &t, bool &hasCoeff);
  llvm::Error parsePeerMsg(RankId &peer, MsgId &msg);
  llvm::Error parseOpIdList(OpDeps &ids);
  llvm::Error parseTermList(std::vector<LinTerm> &terms);
};

void Parser::skipSpace() {
  while (!atEnd()) {
    char c = peek();
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      advance();
      continue;
    }
    if (c == '#' || c == ';' || (c == '/' && peek(1) == '/')) {
      while (!atEnd() && peek() != '\n')
        advance();
      continue;
    }
    break;
  }
}

std::string Parser::describeHere() const {
  if (atEnd())
    return "end of file";
  char c = peek();
  if (llvm::isAlnum(c) || c == '_') {
    size_t e = pos;
    while (e < text.size() && e - pos < 32 &&
           (llvm::isAlnum(text[e]) || text[e] == '_'))
      ++e;
    return ("'" + text.slice(pos, e) + "'").str();
  }
  if (c >= 0x20 && c < 0x7f)
    return std::string("'") + c + "'";
  std::string s = "byte 0x";
  s += llvm::hexdigit(static_cast<unsigned char>(c) >> 4, true);
  s += llvm::hexdigit(static_cast<unsigned char>(c) & 15, true);
  return s;
}

llvm::Error Parser::parseInt(int32_t &out, const llvm::Twine &what) {
  skipSpace();
  bool neg = peek() == '-';
  if (!llvm::isDigit(peek(neg ? 1 : 0)))
    return expected(what);
  if (neg)
    advance();
  int64_t v = 0;
  while (llvm::isDigit(peek())) {
    v = v * 10 + (peek() - '0');
    if (v > INT32_MAX)
      return error(what + " is out of range");
    advance();
  }
  out = static_cast<int32_t>(neg ? -v : v);
  return llvm::Error::success();
}

llvm::Error Parser::parseDouble(double &out, const llvm::Twine &what) {
  skipSpace();
  size_t e = pos;
  while (e < text.size() && e - pos < 64 &&
         (llvm::isAlnum(text[e]) || text[e] == '.' || text[e] == '-' ||
          text[e] == '+'))
    ++e;
  std::string tok = text.slice(pos, e).str();
  if (tok.empty())
    return expected(what);
  char *end = nullptr;
  errno = 0;
  double d = std::strtod(tok.c_str(), &end);
  if (end != tok.c_str() + tok.size() || tok.find_first_of("xX") !=
                                             std::string::npos)
    return error("invalid number '" + tok + "'");
  out = d;
  while (pos < e)
    advance();
  return llvm::Error::success();
}

llvm::Error Parser::expectKeyword(llvm::StringRef kw) {
  llvm::StringRef id = peekIdent();
  if (id != kw)
    return expected("'" + kw + "='");
  takeIdent();
  return expectChar('=');
}

llvm::Error Parser::parseName(std::string &name) {
  if (!tryChar('@'))
    return expected("'@' and the schedule name");
  if (peek() != '"') {
    size_t e = pos;
    while (e < text.size() && (llvm::isAlnum(text[e]) || text[e] == '_' ||
                               text[e] == '.' || text[e] == '-'))
      ++e;
    if (e == pos)
      return expected("a schedule name");
    name = text.slice(pos, e).str();
    while (pos < e)
      advance();
    return llvm::Error::success();
  }
  advance(); // the opening quote
  while (true) {
    if (atEnd() || peek() == '\n')
      return error("unterminated schedule name");
    char c = peek();
    if (c == '"') {
      advance();
      return llvm::Error::success();
    }
    if (c != '\\') {
      name += c;
      advance();
      continue;
    }
    advance();
    char e = peek();
    if (e == '"' || e == '\\') {
      name += e;
      advance();
      continue;
    }
    if (llvm::isHexDigit(e) && llvm::isHexDigit(peek(1))) {
      name += static_cast<char>(llvm::hexDigitValue(e) * 16 +
                                llvm::hexDigitValue(peek(1)));
      advance();
      advance();
      continue;
    }
    return error("invalid escape in schedule name");
  }
}

llvm::Error Parser::parseHeader(Schedule &s) {
  skipSpace();
  if (peekIdent() != "schedule")
    return expected("'schedule'");
  takeIdent();
  if (auto err = parseName(s.name))
    return err;
  bool seenColl = false, seenRanks = false, seenChunks = false;
  llvm::StringSet<> seen;
  while (true) {
    skipSpace();
    unsigned keyLine = line, keyCol = col;
    llvm::StringRef key = peekIdent();
    if (key.empty() || key == "rank")
      break;
    takeIdent();
    if (!seen.insert(key).second)
      return makeDiagError(SourceLoc{fileName.str(), keyLine, keyCol},
                           "duplicate attribute '" + key + "'",
                           sourceLineOf(text, keyLine));
    if (auto err = expectChar('='))
      return err;
    if (key == "collective") {
      skipSpace();
      llvm::StringRef v = peekIdent();
      auto c = collectiveFromName(v);
      if (!c) {
        if (v.empty())
          return expected("a collective name");
        std::string msg = ("unknown collective '" + v + "'").str();
        std::string near =
            nearestMatch(v, {"allreduce", "allgather", "reducescatter",
                             "broadcast", "reduce", "alltoall"});
        if (!near.empty())
          msg += "; did you mean '" + near + "'?";
        return error(msg);
      }
      takeIdent();
      s.collective = *c;
      seenColl = true;
    } else if (key == "stage") {
      skipSpace();
      llvm::StringRef v = peekIdent();
      auto st = stageFromName(v);
      if (!st) {
        if (v.empty())
          return expected("a stage name");
        std::string msg = ("unknown stage '" + v + "'").str();
        std::string near = nearestMatch(
            v, {"lowered", "fused", "channels", "threadblocks", "legalized"});
        if (!near.empty())
          msg += "; did you mean '" + near + "'?";
        return error(msg);
      }
      takeIdent();
      s.stage = *st;
    } else if (key == "ranks" || key == "chunks" || key == "channels") {
      unsigned vl = line, vc = col;
      int32_t v = 0;
      if (auto err = parseInt(v, "an integer"))
        return err;
      int64_t limit = key == "ranks"    ? kMaxRanks
                      : key == "chunks" ? kMaxChunks
                                        : kMaxChannels;
      if (v < 0 || v > limit)
        return makeDiagError(SourceLoc{fileName.str(), vl, vc},
                             llvm::Twine(key) + " must be between 0 and " +
                                 llvm::Twine(limit) + ", got " +
                                 llvm::Twine(v),
                             sourceLineOf(text, vl));
      if (key == "ranks") {
        s.numRanks = v;
        seenRanks = true;
      } else if (key == "chunks") {
        s.chunksPerLoop = v;
        seenChunks = true;
      } else {
        s.numChannels = v;
      }
    } else if (key == "inplace") {
      int32_t v = 0;
      if (auto err = parseInt(v, "0 or 1"))
        return err;
      if (v != 0 && v != 1)
        return error("inplace must be 0 or 1");
      s.inplace = v == 1;
    } else if (key == "root") {
      if (auto err = parseInt(s.root, "a rank"))
        return err;
    } else {
      return makeDiagError(SourceLoc{fileName.str(), keyLine, keyCol},
                           "unknown schedule attribute '" + key + "'",
                           sourceLineOf(text, keyLine));
    }
  }
  if (!seenColl)
    return expected("'collective='");
  if (!seenRanks)
    return expected("'ranks='");
  if (!seenChunks)
    return expected("'chunks='");
  return llvm::Error::success();
}

llvm::Error Parser::parseBufferRef(BufferRef &b) {
  skipSpace();
  llvm::StringRef name = peekIdent();
  if (name == "in")
    b.buffer = BufferKind::Input;
  else if (name == "out")
    b.buffer = BufferKind::Output;
  else if (name == "sc")
    b.buffer = BufferKind::Scratch;
  else
    return expected("a buffer ('in', 'out' or 'sc')");
  takeIdent();
  if (auto err = expectChar('['))
    return err;
  if (auto err = parseInt(b.chunk, "a chunk index"))
    return err;
  if (auto err = expectChar('+'))
    return err;
  if (auto err = parseInt(b.count, "a chunk count"))
    return err;
  return expectChar(']');
}

llvm::Error Parser::parseOperand(LinTerm &t, bool &hasCoeff) {
  skipSpace();
  llvm::StringRef id = peekIdent();
  // A buffer name directly followed by '[' is a plain operand; anything else
  // must be a coefficient (which may itself spell "inf" or "nan").
  size_t after = pos + id.size();
  bool isBuffer = (id == "in" || id == "out" || id == "sc") &&
                  after < text.size() && text[after] == '[';
  hasCoeff = !isBuffer;
  t.coeff = 1.0;
  if (hasCoeff) {
    char c = peek(), n = peek(1);
    bool numberStart = llvm::isDigit(c) || c == '.' || id == "inf" ||
                       id == "nan" ||
                       ((c == '-' || c == '+') &&
                        (llvm::isDigit(n) || n == '.' || n == 'i' || n == 'n'));
    if (!numberStart)
      return expected("a buffer ('in', 'out' or 'sc')");
    if (auto err = parseDouble(t.coeff, "an operand"))
      return err;
    if (auto err = expectChar('*'))
      return err;
  }
  return parseBufferRef(t.src);
}

llvm::Error Parser::parsePeerMsg(RankId &peer, MsgId &msg) {
  skipSpace();
  if (peek() != 'r')
    return expected("a peer rank 'rN'");
  advance();
  if (auto err = parseInt(peer, "a peer rank"))
    return err;
  if (auto err = expectKeyword("msg"))
    return err;
  return parseInt(msg, "a message id");
}

llvm::Error Parser::parseOpIdList(OpDeps &ids) {
  if (auto err = expectChar('('))
    return err;
  if (tryChar(')'))
    return llvm::Error::success();
  while (true) {
    if (auto err = expectChar('%'))
      return err;
    OpId id = 0;
    if (auto err = parseInt(id, "an op id"))
      return err;
    ids.push_back(id);
    if (tryChar(')'))
      return llvm::Error::success();
    if (auto err = expectChar(','))
      return err;
  }
}

llvm::Error Parser::parseTermList(std::vector<LinTerm> &terms) {
  if (auto err = expectChar('('))
    return err;
  if (tryChar(')'))
    return llvm::Error::success();
  while (true) {
    LinTerm t;
    bool hasCoeff = false;
    if (auto err = parseOperand(t, hasCoeff))
      return err;
    terms.push_back(t);
    if (tryChar(')'))
      return llvm::Error::success();
    if (auto err = expectChar(','))
      return err;
  }
}

llvm::Error Parser::parseOp(Op &op) {
  skipSpace();
  unsigned kindLine = line, kindCol = col;
  llvm::StringRef m = peekIdent();
  auto kind = opKindFromMnemonic(m);
  if (!kind) {
    if (m.empty())
      return expected("an op mnemonic");
    std::string msg = ("unknown op '" + m + "'").str();
    llvm::SmallVector<llvm::StringRef, 12> all;
    for (unsigned k = 0; k < kNumOpKinds; ++k)
      all.push_back(mnemonic(static_cast<OpKind>(k)));
    std::string near = nearestMatch(m, all);
    if (!near.empty())
      msg += "; did you mean '" + near + "'?";
    return makeDiagError(SourceLoc{fileName.str(), kindLine, kindCol}, msg,
                         sourceLineOf(text, kindLine));
  }
  takeIdent();
  op.kind = *kind;
  unsigned f = opFlags(op.kind);

  // Positional operands: dst (OF_WD), then src (OF_RS) or the lincomb terms.
  bool wantDst = f & OF_WD;
  bool wantSrc = (f & OF_RS) && !(f & OF_LC);
  bool wantTerms = f & OF_LC;
  unsigned required = (wantDst ? 1 : 0) + (wantSrc ? 1 : 0);
  for (unsigned i = 0;; ++i) {
    if (i >= required) {
      // Further operands are lincomb terms, each introduced by ','.
      if (!wantTerms || !tryChar(','))
        break;
    } else if (i > 0) {
      if (auto err = expectChar(','))
        return err;
    }
    skipSpace();
    unsigned opLine = line, opCol = col;
    LinTerm t;
    bool hasCoeff = false;
    if (auto err = parseOperand(t, hasCoeff))
      return err;
    bool isDst = wantDst && i == 0;
    bool isTerm = !isDst && wantTerms;
    if (hasCoeff && !isTerm)
      return makeDiagError(SourceLoc{fileName.str(), opLine, opCol},
                           "a coefficient is only allowed on lincomb terms",
                           sourceLineOf(text, opLine));
    if (isDst)
      op.dst = t.src;
    else if (isTerm)
      op.terms.push_back(t);
    else
      op.src = t.src;
  }

  if (tryString("<-"))
    if (auto err = parsePeerMsg(op.recvPeer, op.recvMsg))
      return err;
  if (tryString("->"))
    if (auto err = parsePeerMsg(op.sendPeer, op.sendMsg))
      return err;

  llvm::StringSet<> seen;
  while (true) {
    skipSpace();
    unsigned keyLine = line, keyCol = col;
    llvm::StringRef key = peekIdent();
    if (key.empty())
      break;
    auto keyError = [&](const llvm::Twine &msg) {
      return makeDiagError(SourceLoc{fileName.str(), keyLine, keyCol}, msg,
                           sourceLineOf(text, keyLine));
    };
    if (key != "lc" && key != "mc" && key != "src" && key != "dst" &&
        key != "terms" && key != "ch" && key != "tb" && key != "deps") {
      std::string msg = ("unknown op attribute '" + key + "'").str();
      std::string near = nearestMatch(
          key, {"lc", "mc", "src", "dst", "terms", "ch", "tb", "deps"});
      if (!near.empty())
        msg += "; did you mean '" + near + "'?";
      return keyError(msg);
    }
    if (!seen.insert(key).second)
      return keyError("duplicate attribute '" + key + "'");
    takeIdent();
    if (key == "deps") {
      if (auto err = parseOpIdList(op.deps))
        return err;
      continue;
    }
    if (key == "terms") {
      if (wantTerms)
        return keyError("lincomb terms are written as operands");
      if (auto err = parseTermList(op.terms))
        return err;
      continue;
    }
    if (auto err = expectChar('='))
      return err;
    if (key == "lc") {
      if (auto err = parseDouble(op.localCoeff, "a coefficient"))
        return err;
    } else if (key == "mc") {
      if (auto err = parseDouble(op.msgCoeff, "a coefficient"))
        return err;
    } else if (key == "src") {
      if (wantSrc)
        return keyError("the source operand of '" + m + "' is positional");
      if (auto err = parseBufferRef(op.src))
        return err;
    } else if (key == "dst") {
      if (wantDst)
        return keyError("the destination operand of '" + m +
                        "' is positional");
      if (auto err = parseBufferRef(op.dst))
        return err;
    } else if (key == "ch") {
      if (auto err = parseInt(op.channel, "a channel"))
        return err;
    } else if (key == "tb") {
      if (auto err = parseInt(op.threadblock, "a threadblock"))
        return err;
    }
  }
  return llvm::Error::success();
}

llvm::Error Parser::parseRank(Schedule &s, int32_t index) {
  // "rank" was peeked by the caller.
  takeIdent();
  unsigned numLine = line, numCol = col;
  int32_t r = 0;
  if (auto err = parseInt(r, "a rank number"))
    return err;
  if (r != index) {
    skipSpace();
    return makeDiagError(SourceLoc{fileName.str(), numLine, numCol},
                         "expected rank " + llvm::Twine(index) + ", got rank " +
                             llvm::Twine(r),
                         sourceLineOf(text, numLine));
  }
  RankProgram rp;
  llvm::StringSet<> seen;
  while (true) {
    skipSpace();
    unsigned keyLine = line, keyCol = col;
    llvm::StringRef key = peekIdent();
    if (key.empty())
      break;
    if (key != "in" && key != "out" && key != "sc")
      return makeDiagError(SourceLoc{fileName.str(), keyLine, keyCol},
                           "unknown rank attribute '" + key + "'",
                           sourceLineOf(text, keyLine));
    if (!seen.insert(key).second)
      return makeDiagError(SourceLoc{fileName.str(), keyLine, keyCol},
                           "duplicate attribute '" + key + "'",
                           sourceLineOf(text, keyLine));
    takeIdent();
    if (auto err = expectChar('='))
      return err;
    skipSpace();
    unsigned vl = line, vc = col;
    int32_t v = 0;
    if (auto err = parseInt(v, "a buffer size"))
      return err;
    if (v < 0 || v > kMaxChunks)
      return makeDiagError(SourceLoc{fileName.str(), vl, vc},
                           "buffer size must be between 0 and " +
                               llvm::Twine(kMaxChunks) + ", got " +
                               llvm::Twine(v),
                           sourceLineOf(text, vl));
    (key == "in" ? rp.inputChunks : key == "out" ? rp.outputChunks
                                                 : rp.scratchChunks) = v;
  }
  if (auto err = expectChar('{'))
    return err;
  while (true) {
    if (tryChar('}'))
      break;
    skipSpace();
    if (peek() != '%')
      return expected("'%' (an op) or '}'");
    advance();
    unsigned idLine = line, idCol = col;
    int32_t id = 0;
    if (auto err = parseInt(id, "an op id"))
      return err;
    if (static_cast<size_t>(id) != rp.ops.size() || id < 0)
      return makeDiagError(SourceLoc{fileName.str(), idLine, idCol},
                           "expected op %" + llvm::Twine(rp.ops.size()) +
                               ", got %" + llvm::Twine(id),
                           sourceLineOf(text, idLine));
    if (auto err = expectChar('='))
      return err;
    Op op;
    if (auto err = parseOp(op))
      return err;
    rp.ops.push_back(std::move(op));
  }
  s.ranks.push_back(std::move(rp));
  return llvm::Error::success();
}

llvm::Expected<Schedule> Parser::parse() {
  Schedule s;
  if (auto err = parseHeader(s))
    return err;
  while (true) {
    skipSpace();
    if (atEnd())
      break;
    if (peekIdent() != "rank")
      return expected("'rank' or end of file");
    if (s.ranks.size() >= static_cast<size_t>(s.numRanks))
      return error("more rank blocks than ranks=" + llvm::Twine(s.numRanks));
    if (auto err = parseRank(s, static_cast<int32_t>(s.ranks.size())))
      return err;
  }
  if (s.ranks.size() != static_cast<size_t>(s.numRanks))
    return error("expected " + llvm::Twine(s.numRanks) +
                 " rank blocks, found " + llvm::Twine(s.ranks.size()));
  return s;
}

} // namespace

llvm::Expected<Schedule> parseSchedule(llvm::StringRef text,
                                       llvm::StringRef fileName) {
  return Parser(text, fileName).parse();
}

llvm::Expected<Schedule> parseScheduleFile(llvm::StringRef path) {
  auto buf = readInputFile(path, InputKind::Schedule, "schedule",
                           /*allowStdin=*/true);
  if (!buf)
    return buf.takeError();
  return parseSchedule((*buf)->getBuffer(), path);
}

} // namespace topocc::ir
