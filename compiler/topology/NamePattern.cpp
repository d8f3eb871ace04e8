//===- compiler/topology/NamePattern.cpp - Name captures ------------------===//

#include "compiler/topology/NamePattern.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

namespace topocc::topo {

uint64_t saturatingMul(uint64_t a, uint64_t b) {
  if (a == 0 || b == 0)
    return 0;
  if (a >= kCountSaturation || b >= kCountSaturation ||
      a > kCountSaturation / b)
    return kCountSaturation;
  return a * b;
}

uint64_t saturatingAdd(uint64_t a, uint64_t b) {
  return a + b >= kCountSaturation || a >= kCountSaturation ||
                 b >= kCountSaturation
             ? kCountSaturation
             : a + b;
}

uint64_t PatternPart::length() const {
  uint64_t n = 0;
  for (const CaptureRange &r : ranges)
    n = saturatingAdd(n, r.hi - r.lo + 1);
  return n;
}

uint64_t PatternPart::number(uint64_t i) const {
  for (const CaptureRange &r : ranges) {
    uint64_t len = r.hi - r.lo + 1;
    if (i < len)
      return r.lo + i;
    i -= len;
  }
  return 0;
}

static std::string padded(uint64_t v, unsigned width) {
  std::string s = std::to_string(v);
  if (s.size() < width)
    s.insert(0, width - s.size(), '0');
  return s;
}

std::string PatternPart::value(uint64_t i) const {
  for (const CaptureRange &r : ranges) {
    uint64_t len = r.hi - r.lo + 1;
    if (i < len)
      return padded(r.lo + i, r.width);
    i -= len;
  }
  return {};
}

bool Pattern::hasCaptures() const {
  for (const PatternPart &p : parts)
    if (p.kind != PatternPart::Literal)
      return true;
  return false;
}

namespace {
constexpr size_t kMaxDigits = 9;

bool isIdentStart(char c) { return llvm::isAlpha(c) || c == '_'; }
bool isIdent(char c) { return llvm::isAlnum(c) || c == '_'; }

// Parses "lo-hi[,lo-hi...]" (a single number is a range of one).
bool parseRanges(llvm::StringRef s, std::vector<CaptureRange> &out,
                 std::string &why) {
  if (s.empty()) {
    why = "no range";
    return false;
  }
  llvm::SmallVector<llvm::StringRef, 4> items;
  s.split(items, ',');
  for (llvm::StringRef item : items) {
    auto [loText, hiText] = item.split('-');
    bool isRange = item.contains('-');
    if (!isRange)
      hiText = loText;
    auto digitsOk = [](llvm::StringRef d) {
      return !d.empty() && d.size() <= kMaxDigits &&
             llvm::all_of(d, llvm::isDigit);
    };
    if (!digitsOk(loText) || !digitsOk(hiText)) {
      if ((loText.size() > kMaxDigits || hiText.size() > kMaxDigits) &&
          llvm::all_of(loText, llvm::isDigit) &&
          llvm::all_of(hiText, llvm::isDigit))
        why = "number has more than 9 digits";
      else
        why = "expected a range 'lo-hi' of non-negative integers";
      return false;
    }
    CaptureRange r;
    loText.getAsInteger(10, r.lo);
    hiText.getAsInteger(10, r.hi);
    if (r.hi < r.lo) {
      why = "range " + item.str() + " is empty (end before start)";
      return false;
    }
    if (loText.size() > 1 && loText[0] == '0')
      r.width = loText.size();
    out.push_back(r);
  }
  return true;
}
} // namespace

bool parsePattern(llvm::StringRef text, Pattern &out, PatternError &err) {
  out.text = text.str();
  out.parts.clear();
  std::string literal;
  size_t literalStart = 0;
  auto flush = [&](size_t at) {
    if (!literal.empty()) {
      PatternPart p;
      p.kind = PatternPart::Literal;
      p.text = literal;
      p.offset = literalStart;
      out.parts.push_back(std::move(p));
      literal.clear();
    }
    literalStart = at;
  };
  size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (c == '}' || c == ']') {
      err = {llvm::formatv("unmatched '{0}' in name '{1}'", c, text).str(), i};
      return false;
    }
    if (c != '{' && c != '[') {
      if (literal.empty())
        literalStart = i;
      literal += c;
      ++i;
      continue;
    }
    char close = c == '{' ? '}' : ']';
    size_t end = text.find(close, i + 1);
    if (end == llvm::StringRef::npos) {
      err = {llvm::formatv("unterminated '{0}' in name '{1}'; expected '{2}'",
                           c, text, close)
                 .str(),
             i};
      return false;
    }
    llvm::StringRef whole = text.slice(i, end + 1);
    llvm::StringRef body = text.slice(i + 1, end);
    flush(i);
    PatternPart p;
    p.text = whole.str();
    p.offset = i;
    std::string why;
    if (c == '[') {
      p.kind = PatternPart::Capture;
      if (!parseRanges(body, p.ranges, why)) {
        err = {"malformed hostlist '" + whole.str() + "': " + why +
                   "; expected '[lo-hi]' or '[a,b,lo-hi]'",
               i};
        return false;
      }
    } else {
      size_t n = 0;
      while (n < body.size() && (n == 0 ? isIdentStart(body[n]) : isIdent(body[n])))
        ++n;
      llvm::StringRef name = body.take_front(n);
      llvm::StringRef rest = body.drop_front(n);
      if (name.empty()) {
        err = {"malformed capture '" + whole.str() +
                   "': expected '{name:lo-hi}' or a reference like '{name}'",
               i};
        return false;
      }
      p.var = name.str();
      if (rest.startswith(":")) {
        p.kind = PatternPart::Capture;
        if (!parseRanges(rest.drop_front(), p.ranges, why)) {
          err = {"malformed capture '" + whole.str() + "': " + why, i};
          return false;
        }
      } else {
        p.kind = PatternPart::Ref;
        if (!rest.empty()) {
          p.op = rest[0];
          llvm::StringRef num = rest.drop_front();
          if (!llvm::StringRef("/%+-*").contains(p.op) || num.empty() ||
              num.size() > kMaxDigits || !llvm::all_of(num, llvm::isDigit)) {
            err = {"malformed expression '" + whole.str() + "': expected '{" +
                       name.str() + "}', '{" + name.str() + "/2}', '{" +
                       name.str() + "%4}', '{" + name.str() + "+1}', '{" +
                       name.str() + "-1}' or '{" + name.str() + "*2}'",
                   i};
            return false;
          }
          num.getAsInteger(10, p.operand);
          if ((p.op == '/' || p.op == '%') && p.operand == 0) {
            err = {"division by zero in '" + whole.str() + "'", i};
            return false;
          }
        }
      }
    }
    out.parts.push_back(std::move(p));
    i = end + 1;
    literalStart = i;
  }
  flush(i);
  return true;
}

uint64_t Binding::count() const {
  uint64_t n = 1;
  for (const Var &v : vars)
    n = saturatingMul(n, v.length);
  return n;
}

int Binding::find(llvm::StringRef name) const {
  for (size_t i = 0; i < vars.size(); ++i)
    if (!vars[i].name.empty() && vars[i].name == name)
      return static_cast<int>(i);
  return -1;
}

void Binding::forEach(
    const std::function<bool(llvm::ArrayRef<uint64_t>)> &fn) const {
  for (const Var &v : vars)
    if (v.length == 0)
      return;
  std::vector<uint64_t> idx(vars.size(), 0);
  while (true) {
    if (!fn(idx))
      return;
    size_t k = vars.size();
    while (k > 0) {
      --k;
      if (++idx[k] < vars[k].length)
        break;
      idx[k] = 0;
      if (k == 0)
        return;
    }
    if (vars.empty())
      return;
  }
}

bool bindPatterns(llvm::ArrayRef<const Pattern *> patterns,
                  llvm::ArrayRef<llvm::StringRef> roles, Binding &out,
                  PatternError &err) {
  out.vars.clear();
  std::vector<int> firstPattern;
  for (size_t pi = 0; pi < patterns.size(); ++pi) {
    for (const PatternPart &p : patterns[pi]->parts) {
      if (p.kind != PatternPart::Capture)
        continue;
      int k = p.var.empty() ? -1 : out.find(p.var);
      if (k < 0) {
        out.vars.push_back({p.var, p.length(), &p});
        firstPattern.push_back(static_cast<int>(pi));
        continue;
      }
      const Binding::Var &v = out.vars[k];
      if (v.length != p.length()) {
        llvm::StringRef firstRole = roles[firstPattern[k]];
        llvm::StringRef role = roles[pi];
        std::string where =
            firstRole == role
                ? llvm::formatv("{0} values in '{1}' and {2} values in "
                                "another capture of '{1}'",
                                v.length, role, p.length())
                      .str()
                : llvm::formatv("{0} values in '{1}' but {2} values in '{3}'",
                                v.length, firstRole, p.length(), role)
                      .str();
        err = {"capture variable '" + p.var + "' has " + where +
                   "; paired ends must have equal length",
               p.offset, static_cast<int>(pi)};
        return false;
      }
    }
  }
  for (size_t pi = 0; pi < patterns.size(); ++pi) {
    for (const PatternPart &p : patterns[pi]->parts) {
      if (p.kind != PatternPart::Ref || out.find(p.var) >= 0)
        continue;
      std::string known;
      for (const Binding::Var &v : out.vars)
        if (!v.name.empty())
          known += (known.empty() ? "" : ", ") + v.name;
      err = {"unknown variable '" + p.var + "' in '" + p.text + "'; " +
                 (known.empty() ? std::string("no variable is captured here")
                                : "captured variables here: " + known),
             p.offset, static_cast<int>(pi)};
      return false;
    }
  }
  return true;
}

bool instantiate(const Pattern &pat, const Binding &b,
                 llvm::ArrayRef<uint64_t> idx, std::string &out,
                 PatternError &err) {
  out.clear();
  size_t anon = 0;
  // Anonymous captures are bound in order of appearance; find this
  // pattern's first anonymous var by matching the part pointer.
  for (const PatternPart &p : pat.parts) {
    switch (p.kind) {
    case PatternPart::Literal:
      out += p.text;
      break;
    case PatternPart::Capture: {
      int k = -1;
      if (p.var.empty()) {
        for (size_t i = 0; i < b.vars.size(); ++i)
          if (b.vars[i].primary == &p)
            k = static_cast<int>(i);
        ++anon;
      } else {
        k = b.find(p.var);
      }
      assert(k >= 0 && "capture not bound");
      out += p.value(idx[k]);
      break;
    }
    case PatternPart::Ref: {
      int k = b.find(p.var);
      assert(k >= 0 && "reference not bound");
      const PatternPart &prim = *b.vars[k].primary;
      if (p.op == 0) {
        out += prim.value(idx[k]);
        break;
      }
      int64_t v = static_cast<int64_t>(prim.number(idx[k]));
      int64_t r = 0;
      switch (p.op) {
      case '/':
        r = v / p.operand;
        break;
      case '%':
        r = v % p.operand;
        break;
      case '+':
        r = v + p.operand;
        break;
      case '-':
        r = v - p.operand;
        break;
      case '*':
        r = v * p.operand;
        break;
      }
      if (r < 0) {
        err = {llvm::formatv("expression '{0}' is negative ({1}) for {2}={3}",
                             p.text, r, p.var, prim.value(idx[k]))
                   .str(),
               p.offset};
        return false;
      }
      out += padded(static_cast<uint64_t>(r), prim.width());
      break;
    }
    }
  }
  (void)anon;
  return true;
}

} // namespace topocc::topo
