//===- compiler/topology/TopologyParser.cpp - Read topology YAML ----------===//
//
// yaml-cpp is used here and only here; its exceptions are caught in
// parseTopology. The parser reads YAML into declarations (TopologyDecl.h),
// lets the Expander count them (size limits before any expansion) and expand
// them, then reads ranks and scenarios and checks connectivity.
//
//===----------------------------------------------------------------------===//

#include "compiler/topology/TopologyParser.h"

#include "compiler/topology/NamePattern.h"
#include "compiler/topology/Scenario.h"
#include "compiler/topology/TopologyDecl.h"
#include "support/InputFile.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdlib>
#include <map>

namespace topocc::topo {

namespace {

constexpr size_t kMaxErrors = 50;

struct Entry {
  std::string key;
  YAML::Node keyNode;
  YAML::Node value;
};
using Entries = std::vector<Entry>;

class Parser : public ErrorSink {
public:
  ParseLimits limits;
  Parser(llvm::StringRef text, llvm::StringRef fileName)
      : file(fileName.str()),
        source(std::make_shared<std::string>(text.str())) {
    topo.setSource(source);
  }

  llvm::Expected<Topology> run();

private:
  // --- diagnostics ---
  SourceLoc locOf(const YAML::Mark &m) const {
    if (m.line < 0)
      return SourceLoc{file, 0, 0};
    return SourceLoc{file, static_cast<unsigned>(m.line + 1),
                     static_cast<unsigned>(m.column + 1)};
  }
  SourceLoc locOf(const YAML::Node &n) const { return locOf(n.Mark()); }
  /// Location of the first character of a scalar's text (inside quotes).
  SourceLoc textLoc(const YAML::Node &n) {
    SourceLoc l = locOf(n);
    if (l.line && n.IsScalar() && n.Tag() == "!") {
      llvm::StringRef line = lineText(l.line);
      if (l.col <= line.size() &&
          (line[l.col - 1] == '"' || line[l.col - 1] == '\''))
        ++l.col;
    }
    return l;
  }
  /// Line `line` (1-based) of the source, without its terminator.
  llvm::StringRef lineText(unsigned line) {
    if (lineStarts.empty()) {
      lineStarts.push_back(0);
      for (size_t i = 0; i < source->size(); ++i)
        if ((*source)[i] == '\n')
          lineStarts.push_back(i + 1);
    }
    if (line == 0 || line > lineStarts.size())
      return {};
    llvm::StringRef rest = llvm::StringRef(*source).substr(lineStarts[line - 1]);
    return rest.take_until([](char c) { return c == '\n'; }).rtrim("\r");
  }
  /// The first tab in the leading whitespace of lines 1..`upTo`, skipping
  /// lines that are blank or comments (where YAML allows them).
  std::optional<SourceLoc> indentationTab(unsigned upTo) {
    for (unsigned line = 1; line <= upTo; ++line) {
      llvm::StringRef text = lineText(line);
      size_t lead = text.find_first_not_of(" \t");
      if (lead == llvm::StringRef::npos || text[lead] == '#')
        continue;
      size_t tab = text.take_front(lead).find('\t');
      if (tab != llvm::StringRef::npos)
        return SourceLoc{file, line, static_cast<unsigned>(tab + 1)};
    }
    return std::nullopt;
  }
  void error(SourceLoc loc, const llvm::Twine &msg) override {
    if (errorCount++ >= kMaxErrors)
      return;
    diags.add(topo.diag(loc, msg.str()));
  }
  void error(const YAML::Node &n, const llvm::Twine &msg) {
    error(locOf(n), msg);
  }
  bool tooManyErrors() const override { return errorCount >= kMaxErrors; }

  // --- YAML helpers ---
  static llvm::StringRef kindOf(const YAML::Node &n) {
    switch (n.Type()) {
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Sequence:
      return "a sequence";
    case YAML::NodeType::Scalar:
      return "a scalar";
    default:
      return "nothing";
    }
  }
  bool asMap(const YAML::Node &n, const llvm::Twine &what, Entries &out,
             llvm::ArrayRef<llvm::StringRef> allowed, bool checkKeys = true);
  bool asSeq(const YAML::Node &n, const llvm::Twine &what,
             std::vector<YAML::Node> &out);
  bool asScalar(const YAML::Node &n, const llvm::Twine &what, std::string &out);
  static const YAML::Node *get(const Entries &e, llvm::StringRef key) {
    for (const Entry &x : e)
      if (x.key == key)
        return &x.value;
    return nullptr;
  }
  bool required(const Entries &e, const YAML::Node &at, llvm::StringRef key,
                llvm::StringRef what) {
    if (get(e, key))
      return true;
    error(at, "missing required key '" + key + "' in " + what);
    return false;
  }
  bool quantity(const YAML::Node &n, QuantityKind kind, llvm::StringRef what,
                Quantity &out, bool allowDelta = false);
  bool pattern(const YAML::Node &n, llvm::StringRef what, PatternAt &out);

  // --- sections ---
  void parseClasses(const YAML::Node &n);
  bool parseLinkAttrs(const Entries &e, LinkAttrs &attrs,
                      const YAML::Node &entryNode);
  void parseBody(const Entries &e, Body &body, bool fabric);
  void parseDevices(const YAML::Node &n, DeviceKind kind, Body &body);
  void parseLinks(const YAML::Node &n, Body &body);
  void parseTemplates(const YAML::Node &n);
  void parseNodes(const YAML::Node &n);
  void parseRanks(const YAML::Node *n);
  void parseScenarios(const YAML::Node &n);
  void parseGenerate(const YAML::Node &n);
  bool positiveInt(const YAML::Node &n, llvm::StringRef what, uint64_t &out);
  bool parseScenarioOp(const YAML::Node &n, ScenarioOp &op);


  std::string file;
  std::shared_ptr<std::string> source;
  std::vector<size_t> lineStarts;
  DiagnosticList diags;
  size_t errorCount = 0;
  Topology topo;

  std::map<std::string, LinkAttrs, std::less<>> classes;
  std::map<std::string, SourceLoc, std::less<>> classLocs;
  TemplateMap templates;
  std::vector<std::string> templateOrder;
  std::vector<std::unique_ptr<NodeDecl>> nodeDecls;
  std::unique_ptr<Body> fabric;
  GeneratorDecl generator;
};

bool Parser::asMap(const YAML::Node &n, const llvm::Twine &what, Entries &out,
                   llvm::ArrayRef<llvm::StringRef> allowed, bool checkKeys) {
  out.clear();
  if (!n.IsMap()) {
    error(n, "expected a mapping for " + what + ", got " + kindOf(n));
    return false;
  }
  llvm::StringSet<> seen;
  for (auto it = n.begin(); it != n.end(); ++it) {
    YAML::Node k = it->first;
    YAML::Node v = it->second;
    if (!k.IsScalar()) {
      error(k, "expected a string key in " + what + ", got " + kindOf(k));
      continue;
    }
    std::string key = k.Scalar();
    if (key == "<<" && k.Tag() == "?") {
      error(k, "YAML merge keys ('<<') are not supported; use 'template:' "
               "instead");
      continue;
    }
    if (!seen.insert(key).second) {
      error(k, "duplicate key '" + key + "' in " + what);
      continue;
    }
    if (checkKeys && !llvm::is_contained(allowed, key)) {
      std::string near = nearestMatch(key, allowed);
      std::string msg = "unknown key '" + key + "' in " + what.str();
      if (!near.empty()) {
        msg += "; did you mean '" + near + "'?";
      } else {
        msg += "; expected one of: ";
        for (size_t i = 0; i < allowed.size(); ++i)
          msg += (i ? ", " : "") + allowed[i].str();
      }
      error(k, msg);
      continue;
    }
    out.push_back({key, k, v});
  }
  return true;
}

bool Parser::asSeq(const YAML::Node &n, const llvm::Twine &what,
                   std::vector<YAML::Node> &out) {
  out.clear();
  if (!n.IsSequence()) {
    error(n, "expected a sequence for " + what + ", got " + kindOf(n));
    return false;
  }
  for (auto it = n.begin(); it != n.end(); ++it)
    out.push_back(*it);
  return true;
}

bool Parser::asScalar(const YAML::Node &n, const llvm::Twine &what,
                      std::string &out) {
  if (!n.IsScalar()) {
    error(n, "expected a string for " + what + ", got " + kindOf(n));
    return false;
  }
  out = n.Scalar();
  return true;
}

bool Parser::quantity(const YAML::Node &n, QuantityKind kind,
                      llvm::StringRef what, Quantity &out, bool allowDelta) {
  std::string text;
  if (!asScalar(n, what, text))
    return false;
  auto q = parseQuantity(text, kind, what);
  if (!q) {
    error(textLoc(n), llvm::toString(q.takeError()));
    return false;
  }
  if (q->hasSign && !allowDelta && q->number < 0) {
    // Fall through to the range checks below.
  } else if (q->hasSign && !allowDelta && kind != QuantityKind::Factor) {
    error(textLoc(n), "a signed " + what + " ('" + text +
                          "') is a delta, allowed only inside 'set'");
    return false;
  }
  if (!(allowDelta && q->hasSign)) {
    if (kind == QuantityKind::Time && q->value < 0) {
      error(textLoc(n), what + " must not be negative, got '" + text + "'");
      return false;
    }
    if (kind != QuantityKind::Time && q->value <= 0) {
      error(textLoc(n), what + " must be positive, got '" + text + "'");
      return false;
    }
  }
  out = *q;
  return true;
}

bool Parser::pattern(const YAML::Node &n, llvm::StringRef what,
                     PatternAt &out) {
  std::string text;
  if (!asScalar(n, what, text))
    return false;
  out.base = textLoc(n);
  PatternError e;
  if (!parsePattern(text, out.pattern, e)) {
    patternError(out, e);
    return false;
  }
  if (text.empty()) {
    error(n, what + " is empty");
    return false;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Sections
//===----------------------------------------------------------------------===//

const llvm::StringRef kLinkAttrKeys[] = {"type",     "bandwidth",  "latency",
                                         "duplex",   "efficiency", "count"};

bool Parser::parseLinkAttrs(const Entries &e, LinkAttrs &a,
                            const YAML::Node &entryNode) {
  bool ok = true;
  if (const YAML::Node *n = get(e, "type")) {
    std::string s;
    if (asScalar(*n, "link type", s)) {
      if (auto t = parseLinkType(s)) {
        a.type = *t;
      } else {
        std::string near = nearestMatch(s, linkTypeNames());
        std::string msg = "unknown link type '" + s + "'";
        if (!near.empty())
          msg += "; did you mean '" + near + "'?";
        else
          msg += "; expected one of: " + llvm::join(linkTypeNames(), ", ");
        error(textLoc(*n), msg);
        ok = false;
      }
    } else {
      ok = false;
    }
  }
  if (const YAML::Node *n = get(e, "bandwidth")) {
    if (n->IsMap()) {
      Entries bw;
      const llvm::StringRef keys[] = {"fwd", "rev"};
      if (asMap(*n, "bandwidth", bw, keys)) {
        for (int dir = 0; dir < 2; ++dir) {
          if (!required(bw, *n, keys[dir], "bandwidth")) {
            ok = false;
            continue;
          }
          Quantity q;
          if (quantity(*get(bw, keys[dir]), QuantityKind::Bandwidth,
                       "bandwidth", q))
            a.bandwidth[dir] = q;
          else
            ok = false;
        }
      } else {
        ok = false;
      }
    } else {
      Quantity q;
      if (quantity(*n, QuantityKind::Bandwidth, "bandwidth", q))
        a.bandwidth[0] = a.bandwidth[1] = q;
      else
        ok = false;
    }
  }
  if (const YAML::Node *n = get(e, "latency")) {
    Quantity q;
    if (quantity(*n, QuantityKind::Time, "latency", q))
      a.latency = q;
    else
      ok = false;
  }
  if (const YAML::Node *n = get(e, "count")) {
    std::string s;
    int v = 0;
    if (asScalar(*n, "count", s)) {
      if (llvm::StringRef(s).getAsInteger(10, v) || v < 1 || v > 1000000) {
        error(textLoc(*n),
              "count must be a positive integer (at most 1000000), got '" + s +
                  "'");
        ok = false;
      } else {
        a.count = v;
      }
    } else {
      ok = false;
    }
  }
  if (const YAML::Node *n = get(e, "duplex")) {
    std::string s;
    if (asScalar(*n, "duplex", s)) {
      if (s == "full")
        a.duplex = Duplex::Full;
      else if (s == "half")
        a.duplex = Duplex::Half;
      else {
        error(textLoc(*n),
              "unknown duplex '" + s + "'; expected 'full' or 'half'");
        ok = false;
      }
    } else {
      ok = false;
    }
  }
  if (const YAML::Node *n = get(e, "efficiency")) {
    std::string s;
    if (asScalar(*n, "efficiency", s)) {
      char *end = nullptr;
      double v = std::strtod(s.c_str(), &end);
      bool numeric = !s.empty() && end && *end == '\0' &&
                     (llvm::isDigit(s[0]) || s[0] == '.');
      if (!numeric || !(v > 0 && v <= 1)) {
        error(textLoc(*n),
              "efficiency must be a number in (0, 1], got '" + s + "'");
        ok = false;
      } else {
        a.efficiency = v;
      }
    } else {
      ok = false;
    }
  }
  (void)entryNode;
  return ok;
}

void Parser::parseClasses(const YAML::Node &n) {
  Entries classEntries;
  if (!asMap(n, "link_classes", classEntries, {}, /*checkKeys=*/false))
    return;
  for (const Entry &c : classEntries) {
    Entries e;
    size_t errorsBefore = errorCount;
    if (!asMap(c.value, "link class '" + c.key + "'", e, kLinkAttrKeys)) {
      classes[c.key] = LinkAttrs();
      continue;
    }
    LinkAttrs a;
    bool ok = parseLinkAttrs(e, a, c.value);
    // Unknown or merged keys were reported: no "missing key" cascade.
    ok &= errorCount == errorsBefore;
    if (!get(e, "bandwidth") && ok) {
      error(c.value, "missing required key 'bandwidth' in link class '" +
                         c.key + "'");
      ok = false;
    }
    if (!get(e, "type") && ok) {
      error(c.value,
            "missing required key 'type' in link class '" + c.key + "'");
      ok = false;
    }
    if (ok) {
      classes[c.key] = a;
      classLocs[c.key] = locOf(c.keyNode);
    } else {
      classes[c.key] = LinkAttrs(); // known name, no cascade errors
    }
  }
}

void Parser::parseDevices(const YAML::Node &n, DeviceKind kind, Body &body) {
  llvm::StringRef section = kind == DeviceKind::Gpu   ? "gpus"
                            : kind == DeviceKind::Nic ? "nics"
                                                      : "switches";
  llvm::StringRef what = kind == DeviceKind::Gpu   ? "gpu"
                         : kind == DeviceKind::Nic ? "nic"
                                                   : "switch";
  std::vector<YAML::Node> items;
  if (!asSeq(n, "'" + section + "'", items))
    return;
  for (const YAML::Node &item : items) {
    auto d = std::make_unique<DeviceDecl>();
    d->kind = kind;
    d->loc = locOf(item);
    if (item.IsScalar() && kind != DeviceKind::Switch) {
      if (!pattern(item, "device name", d->name))
        continue;
    } else {
      Entries e;
      static const llvm::StringRef gpuKeys[] = {"name", "model"};
      static const llvm::StringRef switchKeys[] = {"name", "kind"};
      if (!asMap(item, what, e,
                 kind == DeviceKind::Switch
                     ? llvm::ArrayRef<llvm::StringRef>(switchKeys)
                     : llvm::ArrayRef<llvm::StringRef>(gpuKeys)))
        continue;
      if (!required(e, item, "name", what))
        continue;
      if (!pattern(*get(e, "name"), "device name", d->name))
        continue;
      if (const YAML::Node *m = get(e, "model"))
        if (!asScalar(*m, "model", d->model))
          continue;
      if (kind == DeviceKind::Switch) {
        if (!required(e, item, "kind", "switch"))
          continue;
        std::string k;
        if (!asScalar(*get(e, "kind"), "switch kind", k))
          continue;
        auto sk = parseSwitchKind(k);
        if (!sk) {
          std::string near = nearestMatch(k, switchKindNames());
          std::string msg = "unknown switch kind '" + k + "'";
          if (!near.empty())
            msg += "; did you mean '" + near + "'?";
          else
            msg += "; expected one of: " + llvm::join(switchKindNames(), ", ");
          error(textLoc(*get(e, "kind")), msg);
          continue;
        }
        d->switchKind = *sk;
      }
    }
    PatternError pe;
    const Pattern *p = &d->name.pattern;
    llvm::StringRef role = "name";
    if (!bindPatterns(llvm::ArrayRef<const Pattern *>(p),
                      llvm::ArrayRef<llvm::StringRef>(role), d->binding, pe)) {
      patternError(d->name, pe);
      continue;
    }
    d->ok = true;
    body.devices.push_back(std::move(d));
  }
}

void Parser::parseLinks(const YAML::Node &n, Body &body) {
  std::vector<YAML::Node> items;
  if (!asSeq(n, "'links'", items))
    return;
  static const llvm::StringRef keys[] = {"from",    "to",     "class",
                                         "type",    "bandwidth", "latency",
                                         "count",   "duplex", "efficiency"};
  for (const YAML::Node &item : items) {
    Entries e;
    if (!asMap(item, "link", e, keys))
      continue;
    auto l = std::make_unique<LinkDecl>();
    l->loc = locOf(item);
    bool ok = required(e, item, "from", "link");
    ok &= required(e, item, "to", "link");
    if (!ok)
      continue;
    ok &= pattern(*get(e, "from"), "link 'from'", l->from);
    ok &= pattern(*get(e, "to"), "link 'to'", l->to);
    LinkAttrs inlineAttrs;
    ok &= parseLinkAttrs(e, inlineAttrs, item);
    LinkAttrs attrs;
    if (const YAML::Node *c = get(e, "class")) {
      if (!asScalar(*c, "link class", l->className)) {
        ok = false;
      } else if (auto it = classes.find(l->className); it != classes.end()) {
        attrs = it->second;
      } else {
        std::vector<llvm::StringRef> names;
        for (const auto &kv : classes)
          names.push_back(kv.first);
        std::string near = nearestMatch(l->className, names);
        std::string msg = "unknown link class '" + l->className + "'";
        if (!near.empty())
          msg += "; did you mean '" + near + "'?";
        else if (names.empty())
          msg += "; no 'link_classes' are defined";
        else
          msg += "; defined classes: " + llvm::join(names, ", ");
        error(textLoc(*c), msg);
        ok = false;
      }
    }
    if (!ok)
      continue;
    attrs.overrideWith(inlineAttrs);
    // An unknown class was already reported; a known but broken class too.
    bool brokenClass =
        !l->className.empty() && !classLocs.count(l->className);
    if (brokenClass)
      continue;
    if (!attrs.bandwidth[0]) {
      error(item, "link has no bandwidth; give 'class' or 'bandwidth'");
      continue;
    }
    if (!attrs.type) {
      error(item, "link has no type; give 'class' or 'type'");
      continue;
    }
    if (attrs.duplex == Duplex::Half &&
        attrs.bandwidth[0]->value != attrs.bandwidth[1]->value) {
      error(item, "a 'duplex: half' link shares one capacity between both "
                  "directions; give one bandwidth, not {fwd, rev}");
      continue;
    }
    l->attrs = attrs;
    PatternError pe;
    const Pattern *pats[] = {&l->from.pattern, &l->to.pattern};
    const llvm::StringRef roles[] = {"from", "to"};
    if (!bindPatterns(pats, roles, l->binding, pe)) {
      patternError(pe.pattern == 0 ? l->from : l->to, pe);
      continue;
    }
    l->ok = true;
    body.links.push_back(std::move(l));
  }
}

void Parser::parseBody(const Entries &e, Body &body, bool fabric) {
  if (const YAML::Node *n = get(e, "gpus"))
    parseDevices(*n, DeviceKind::Gpu, body);
  if (const YAML::Node *n = get(e, "nics"))
    parseDevices(*n, DeviceKind::Nic, body);
  if (const YAML::Node *n = get(e, "switches"))
    parseDevices(*n, DeviceKind::Switch, body);
  if (const YAML::Node *n = get(e, "links"))
    parseLinks(*n, body);
  (void)fabric;
}

bool Parser::positiveInt(const YAML::Node &n, llvm::StringRef what,
                         uint64_t &out) {
  std::string s;
  if (!asScalar(n, what, s))
    return false;
  if (llvm::StringRef(s).getAsInteger(10, out) || out < 1 || out > 1000000) {
    error(textLoc(n), what +
                          " must be a positive integer (at most 1000000), "
                          "got '" +
                          s + "'");
    return false;
  }
  return true;
}

void Parser::parseGenerate(const YAML::Node &n) {
  static const llvm::StringRef keys[] = {
      "torus", "mesh",  "dimensions", "bandwidth", "latency",
      "type",  "count", "efficiency", "model",     "prefix"};
  static const llvm::StringRef dimKeys[] = {
      "kind", "size",  "bandwidth",  "latency",
      "type", "count", "efficiency", "switch_kind"};
  static const llvm::StringRef kindNames[] = {"ring", "line", "fully-connected",
                                              "switch"};
  Entries e;
  generator.loc = locOf(n);
  if (!asMap(n, "'generate'", e, keys))
    return;
  bool ok = true;
  const char *shapes[] = {"torus", "mesh", "dimensions"};
  int given = 0;
  for (const char *k : shapes)
    given += get(e, k) != nullptr;
  if (given != 1) {
    error(n, given ? "'generate' takes one of 'torus', 'mesh' and "
                     "'dimensions', not several"
                   : "'generate' needs 'torus: [sizes]', 'mesh: [sizes]' or "
                     "'dimensions: [...]'");
    return;
  }
  if (const YAML::Node *m = get(e, "model"))
    ok &= asScalar(*m, "model", generator.gpu.model);
  if (const YAML::Node *p = get(e, "prefix")) {
    ok &= asScalar(*p, "prefix", generator.prefix);
    llvm::StringRef pre = generator.prefix;
    if (pre.empty() || !llvm::all_of(pre, [](char c) {
          return llvm::isAlpha(c) || c == '_';
        })) {
      error(textLoc(*p),
            "prefix must be letters or '_', got '" + generator.prefix + "'");
      ok = false;
    }
  }
  generator.gpu.kind = DeviceKind::Gpu;
  generator.gpu.loc = locOf(n);
  generator.gpu.name.base = locOf(n);
  generator.gpu.ok = true;

  // Defaults for every dimension: scalars here, or one value per dimension.
  Entries defaults;
  std::vector<YAML::Node> perDim[2]; // bandwidth, latency lists
  const char *listKeys[] = {"bandwidth", "latency"};
  for (const Entry &x : e) {
    bool listed = false;
    for (int i = 0; i < 2; ++i)
      if (x.key == listKeys[i] && x.value.IsSequence()) {
        asSeq(x.value, x.key, perDim[i]);
        listed = true;
      }
    if (!listed && llvm::is_contained(kLinkAttrKeys, x.key))
      defaults.push_back(x);
  }
  LinkAttrs base;
  ok &= parseLinkAttrs(defaults, base, n);

  struct DimIn {
    GridDim::Kind kind = GridDim::Ring;
    uint64_t size = 0;
    Entries own; // the dimension's own attributes
    YAML::Node node;
  };
  std::vector<DimIn> ins;
  for (int shape = 0; shape < 2; ++shape) {
    const YAML::Node *list = get(e, shapes[shape]);
    if (!list)
      continue;
    std::vector<YAML::Node> sizes;
    if (!asSeq(*list, std::string("'") + shapes[shape] + "'", sizes))
      return;
    for (const YAML::Node &sz : sizes) {
      DimIn d;
      d.kind = shape == 0 ? GridDim::Ring : GridDim::Line;
      d.node = sz;
      ok &= positiveInt(sz, "a dimension's size", d.size);
      ins.push_back(std::move(d));
    }
  }
  if (const YAML::Node *list = get(e, "dimensions")) {
    std::vector<YAML::Node> items;
    if (!asSeq(*list, "'dimensions'", items))
      return;
    for (const YAML::Node &item : items) {
      DimIn d;
      d.node = item;
      if (!asMap(item, "dimension", d.own, dimKeys)) {
        ok = false;
        continue;
      }
      if (!required(d.own, item, "kind", "dimension") ||
          !required(d.own, item, "size", "dimension")) {
        ok = false;
        continue;
      }
      std::string kind;
      const YAML::Node &kn = *get(d.own, "kind");
      if (asScalar(kn, "dimension kind", kind)) {
        const auto *it = llvm::find(kindNames, llvm::StringRef(kind).lower());
        if (it == std::end(kindNames)) {
          std::string near = nearestMatch(kind, kindNames);
          error(textLoc(kn),
                "unknown dimension kind '" + kind + "'; " +
                    (near.empty()
                         ? "expected one of: " +
                               llvm::join(llvm::ArrayRef(kindNames), ", ")
                         : "did you mean '" + near + "'?"));
          ok = false;
        } else {
          d.kind = static_cast<GridDim::Kind>(it - std::begin(kindNames));
        }
      } else {
        ok = false;
      }
      ok &= positiveInt(*get(d.own, "size"), "a dimension's size", d.size);
      ins.push_back(std::move(d));
    }
  }
  if (ins.empty()) {
    error(n, "'generate' needs at least one dimension");
    return;
  }
  if (ins.size() > kMaxGridDims) {
    error(ins[kMaxGridDims].node,
          llvm::formatv("'generate' takes at most {0} dimensions, got {1}",
                        kMaxGridDims, ins.size()));
    return;
  }
  for (int i = 0; i < 2; ++i)
    if (!perDim[i].empty() && perDim[i].size() != ins.size()) {
      error(perDim[i].front(),
            llvm::formatv("{0} lists {1} values for {2} dimensions; give one "
                          "value, or one per dimension",
                          listKeys[i], perDim[i].size(), ins.size()));
      ok = false;
      perDim[i].clear();
    }

  for (size_t i = 0; i < ins.size(); ++i) {
    DimIn &in = ins[i];
    GenDimension dim;
    dim.kind = in.kind;
    dim.size = in.size;
    LinkAttrs a = base;
    for (int k = 0; k < 2; ++k) {
      if (perDim[k].empty())
        continue;
      Quantity q;
      if (!quantity(perDim[k][i],
                    k ? QuantityKind::Time : QuantityKind::Bandwidth,
                    listKeys[k], q)) {
        ok = false;
        continue;
      }
      if (k)
        a.latency = q;
      else
        a.bandwidth[0] = a.bandwidth[1] = q;
    }
    LinkAttrs own;
    bool ownOk = parseLinkAttrs(in.own, own, in.node);
    ok &= ownOk;
    if (in.kind != GridDim::Switch && get(in.own, "switch_kind")) {
      error(*get(in.own, "switch_kind"),
            "'switch_kind' is only for dimensions of kind 'switch'");
      ok = false;
    }
    a.overrideWith(own);
    if (!a.type)
      a.type = LinkType::Custom;
    if (!a.bandwidth[0]) {
      if (ownOk) // else its bandwidth was malformed and said so
        error(in.node, llvm::formatv("dimension {0} has no bandwidth; give "
                                     "'bandwidth' here or in 'generate'",
                                     i));
      ok = false;
      continue;
    }
    dim.link.attrs = a;
    dim.link.loc = locOf(in.node);
    dim.link.ok = true;
    if (dim.kind == GridDim::Switch) {
      SwitchKind sk;
      switch (*a.type) {
      case LinkType::NvLink:
        sk = SwitchKind::NvSwitch;
        break;
      case LinkType::Pcie:
        sk = SwitchKind::PcieSwitch;
        break;
      case LinkType::Ethernet:
        sk = SwitchKind::EthSwitch;
        break;
      case LinkType::Roce:
        sk = SwitchKind::RoceSwitch;
        break;
      default:
        sk = SwitchKind::IbSwitch;
      }
      if (const YAML::Node *skn = get(in.own, "switch_kind")) {
        std::string text;
        if (asScalar(*skn, "switch_kind", text)) {
          if (auto parsed = parseSwitchKind(text)) {
            sk = *parsed;
          } else {
            error(textLoc(*skn), "unknown switch kind '" + text +
                                     "'; expected one of: " +
                                     llvm::join(switchKindNames(), ", "));
            ok = false;
          }
        }
      }
      dim.switchDecl.kind = DeviceKind::Switch;
      dim.switchDecl.switchKind = sk;
      dim.switchDecl.loc = locOf(in.node);
      dim.switchDecl.name.base = locOf(in.node);
      dim.switchDecl.ok = true;
    }
    generator.dims.push_back(std::move(dim));
  }
  generator.ok = ok;
}

void Parser::parseTemplates(const YAML::Node &n) {
  Entries entries;
  if (!asMap(n, "node_templates", entries, {}, /*checkKeys=*/false))
    return;
  static const llvm::StringRef keys[] = {"gpus", "nics", "switches", "links"};
  for (const Entry &t : entries) {
    auto body = std::make_unique<Body>();
    body->name = t.key;
    body->loc = locOf(t.keyNode);
    Entries e;
    if (asMap(t.value, "node template '" + t.key + "'", e, keys))
      parseBody(e, *body, false);
    else
      body->ok = false;
    templateOrder.push_back(t.key);
    templates[t.key] = std::move(body);
  }
}

void Parser::parseNodes(const YAML::Node &n) {
  std::vector<YAML::Node> items;
  if (!asSeq(n, "'nodes'", items))
    return;
  static const llvm::StringRef keys[] = {"name", "template", "gpus",
                                         "nics", "switches", "links"};
  for (const YAML::Node &item : items) {
    Entries e;
    if (!asMap(item, "node", e, keys))
      continue;
    auto nd = std::make_unique<NodeDecl>();
    nd->loc = locOf(item);
    if (!required(e, item, "name", "node"))
      continue;
    if (!pattern(*get(e, "name"), "node name", nd->name))
      continue;
    bool ok = true;
    if (const YAML::Node *t = get(e, "template")) {
      if (asScalar(*t, "template", nd->templateName)) {
        nd->templateLoc = textLoc(*t);
        auto it = templates.find(nd->templateName);
        if (it == templates.end()) {
          std::vector<llvm::StringRef> names(templateOrder.begin(),
                                             templateOrder.end());
          std::string near = nearestMatch(nd->templateName, names);
          std::string msg = "unknown template '" + nd->templateName + "'";
          if (!near.empty())
            msg += "; did you mean '" + near + "'?";
          else if (names.empty())
            msg += "; no 'node_templates' are defined";
          else
            msg += "; defined templates: " + llvm::join(names, ", ");
          error(nd->templateLoc, msg);
          ok = false;
        } else {
          nd->tmpl = it->second.get();
        }
      } else {
        ok = false;
      }
    }
    if (get(e, "gpus") || get(e, "nics") || get(e, "switches") ||
        get(e, "links")) {
      nd->inlineBody = std::make_unique<Body>();
      nd->inlineBody->loc = nd->loc;
      parseBody(e, *nd->inlineBody, false);
    } else if (!get(e, "template")) {
      error(item, "node has neither 'template' nor devices");
      ok = false;
    }
    PatternError pe;
    const Pattern *p = &nd->name.pattern;
    llvm::StringRef role = "name";
    if (!bindPatterns(llvm::ArrayRef<const Pattern *>(p),
                      llvm::ArrayRef<llvm::StringRef>(role), nd->binding,
                      pe)) {
      patternError(nd->name, pe);
      ok = false;
    }
    nd->ok = ok;
    nodeDecls.push_back(std::move(nd));
  }
}

void Parser::parseRanks(const YAML::Node *n) {
  std::vector<int> gpus;
  // Node-major: nodes in declaration order, GPUs in template order; fabric
  // GPUs last.
  for (const Node &node : topo.nodes())
    for (int d : node.devices)
      if (topo.device(d).kind == DeviceKind::Gpu)
        gpus.push_back(d);
  for (size_t d = 0; d < topo.devices().size(); ++d)
    if (topo.device(d).kind == DeviceKind::Gpu && topo.device(d).nodeIndex < 0)
      gpus.push_back(static_cast<int>(d));
  if (!n) {
    topo.setRanks(gpus, false);
    return;
  }
  Entries e;
  static const llvm::StringRef keys[] = {"order", "list"};
  if (!asMap(*n, "'ranks'", e, keys))
    return;
  if (get(e, "order") && get(e, "list")) {
    error(*n, "'ranks' takes either 'order' or 'list', not both");
    return;
  }
  if (const YAML::Node *o = get(e, "order")) {
    std::string s;
    if (!asScalar(*o, "ranks.order", s))
      return;
    if (s != "node-major") {
      error(textLoc(*o), "unknown rank order '" + s +
                             "'; expected 'node-major' (or give 'list')");
      return;
    }
    topo.setRanks(gpus, false);
    return;
  }
  const YAML::Node *l = get(e, "list");
  if (!l) {
    topo.setRanks(gpus, false);
    return;
  }
  std::vector<YAML::Node> items;
  if (!asSeq(*l, "ranks.list", items))
    return;
  std::vector<int> order;
  std::vector<int> seenAt(topo.devices().size(), -1);
  bool ok = true;
  for (const YAML::Node &item : items) {
    std::string name;
    if (!asScalar(item, "rank entry", name)) {
      ok = false;
      continue;
    }
    int d = topo.findDevice(name);
    if (d < 0) {
      error(textLoc(item), "ranks.list is not a permutation of the GPUs: '" +
                               name + "' is not a device");
      ok = false;
      continue;
    }
    if (topo.device(d).kind != DeviceKind::Gpu) {
      error(textLoc(item), "ranks.list is not a permutation of the GPUs: '" +
                               name + "' is a " +
                               deviceKindName(topo.device(d).kind) +
                               ", not a GPU");
      ok = false;
      continue;
    }
    if (seenAt[d] >= 0) {
      error(textLoc(item),
            llvm::formatv("ranks.list is not a permutation of the GPUs: '{0}' "
                          "appears twice (also rank {1})",
                          name, seenAt[d])
                .str());
      ok = false;
      continue;
    }
    seenAt[d] = static_cast<int>(order.size());
    order.push_back(d);
  }
  std::vector<int> missing;
  for (int g : gpus)
    if (seenAt[g] < 0)
      missing.push_back(g);
  if (ok && !missing.empty()) {
    std::string names;
    for (size_t i = 0; i < missing.size() && i < 16; ++i)
      names += (i ? ", " : "") + topo.device(missing[i]).name;
    if (missing.size() > 16)
      names += llvm::formatv(" and {0} more", missing.size() - 16).str();
    error(*l, llvm::formatv("ranks.list is not a permutation of the GPUs: "
                            "{0} GPU{1} missing: {2}",
                            missing.size(), missing.size() == 1 ? " is" : "s are",
                            names)
                  .str());
    ok = false;
  }
  topo.setRanks(ok ? order : gpus, ok);
}

//===----------------------------------------------------------------------===//
// Scenarios
//===----------------------------------------------------------------------===//

bool Parser::parseScenarioOp(const YAML::Node &n, ScenarioOp &op) {
  static const llvm::StringRef opKeys[] = {"fail", "scale", "set", "sweep",
                                           "extends"};
  Entries e;
  if (!asMap(n, "scenario operation", e, opKeys))
    return false;
  op.loc = {locOf(n), lineText(locOf(n).line).str()};
  if (e.size() != 1) {
    if (!e.empty())
      error(n, "a scenario operation has exactly one of 'fail', 'scale', "
               "'set', 'sweep', 'extends'");
    else if (n.size() == 0)
      error(n, "empty scenario operation; expected one of 'fail', 'scale', "
               "'set', 'sweep', 'extends'");
    return false;
  }
  const Entry &x = e[0];
  auto located = [&](const YAML::Node &v) {
    SourceLoc l = textLoc(v);
    return Located{l, lineText(l.line).str()};
  };
  if (x.key == "fail") {
    op.kind = ScenarioOp::Fail;
    if (!asScalar(x.value, "fail selector", op.selector))
      return false;
    op.selectorLoc = located(x.value);
    if (auto err = checkSelectorSyntax(op.selector, /*isFail=*/true)) {
      error(op.selectorLoc.loc, *err);
      return false;
    }
    return true;
  }
  if (x.key == "extends") {
    op.kind = ScenarioOp::Extends;
    std::vector<YAML::Node> items;
    if (x.value.IsScalar())
      items.push_back(x.value);
    else if (!asSeq(x.value, "'extends'", items))
      return false;
    for (const YAML::Node &i : items) {
      std::string s;
      if (!asScalar(i, "scenario name", s))
        return false;
      op.extends.push_back(s);
      op.extendsLocs.push_back(located(i));
    }
    return true;
  }
  static const llvm::StringRef scaleKeys[] = {"links", "bandwidth", "latency"};
  Entries f;
  if (!asMap(x.value, "'" + x.key + "'", f, scaleKeys))
    return false;
  if (!required(f, x.value, "links", "'" + x.key + "'"))
    return false;
  if (!asScalar(*get(f, "links"), "links selector", op.selector))
    return false;
  op.selectorLoc = located(*get(f, "links"));
  if (auto err = checkSelectorSyntax(op.selector, /*isFail=*/false)) {
    error(op.selectorLoc.loc, *err);
    return false;
  }
  const YAML::Node *bw = get(f, "bandwidth");
  const YAML::Node *lat = get(f, "latency");
  if (x.key == "sweep") {
    op.kind = ScenarioOp::Sweep;
    if (lat) {
      error(*lat, "'sweep' varies 'bandwidth' only");
      return false;
    }
    if (!required(f, x.value, "bandwidth", "'sweep'"))
      return false;
    std::vector<YAML::Node> items;
    if (!asSeq(*bw, "sweep bandwidth values", items))
      return false;
    bool ok = true;
    for (const YAML::Node &i : items) {
      Quantity q;
      if (quantity(i, QuantityKind::Bandwidth, "bandwidth", q))
        op.sweepValues.push_back(q);
      else
        ok = false;
    }
    if (ok && op.sweepValues.empty()) {
      error(*bw, "'sweep' needs at least one bandwidth value");
      ok = false;
    }
    op.bandwidthLoc = located(*bw);
    return ok;
  }
  if (!bw && !lat) {
    error(x.value, "'" + x.key + "' needs 'bandwidth' or 'latency'");
    return false;
  }
  bool isScale = x.key == "scale";
  op.kind = isScale ? ScenarioOp::Scale : ScenarioOp::Set;
  bool ok = true;
  if (bw) {
    Quantity q;
    if (quantity(*bw, isScale ? QuantityKind::Factor : QuantityKind::Bandwidth,
                 isScale ? "bandwidth factor" : "bandwidth", q, !isScale))
      op.bandwidth = q;
    else
      ok = false;
    op.bandwidthLoc = located(*bw);
  }
  if (lat) {
    Quantity q;
    if (isScale) {
      // A latency factor may be zero.
      std::string s;
      if (asScalar(*lat, "latency factor", s)) {
        auto pq = parseQuantity(s, QuantityKind::Factor, "latency factor");
        if (!pq) {
          error(textLoc(*lat), llvm::toString(pq.takeError()));
          ok = false;
        } else if (pq->value < 0) {
          error(textLoc(*lat),
                "latency factor must not be negative, got '" + s + "'");
          ok = false;
        } else {
          op.latency = *pq;
        }
      } else {
        ok = false;
      }
    } else if (quantity(*lat, QuantityKind::Time, "latency", q, true)) {
      op.latency = q;
    } else {
      ok = false;
    }
    op.latencyLoc = located(*lat);
  }
  return ok;
}

void Parser::parseScenarios(const YAML::Node &n) {
  Entries entries;
  if (!asMap(n, "'scenarios'", entries, {}, /*checkKeys=*/false))
    return;
  auto &defs = topo.mutableScenarios();
  for (const Entry &s : entries) {
    ScenarioDef def;
    def.name = s.key;
    def.loc = {locOf(s.keyNode), lineText(locOf(s.keyNode).line).str()};
    std::vector<YAML::Node> ops;
    if (s.value.IsMap()) {
      Entries e;
      static const llvm::StringRef keys[] = {"extends", "ops"};
      if (!asMap(s.value, "scenario '" + s.key + "'", e, keys))
        continue;
      bool ok = true;
      if (const YAML::Node *ext = get(e, "extends")) {
        ScenarioOp op;
        YAML::Node wrapper;
        op.kind = ScenarioOp::Extends;
        op.loc = {locOf(*ext), lineText(locOf(*ext).line).str()};
        std::vector<YAML::Node> items;
        if (ext->IsScalar())
          items.push_back(*ext);
        else if (!asSeq(*ext, "'extends'", items))
          ok = false;
        for (const YAML::Node &i : items) {
          std::string name;
          if (!asScalar(i, "scenario name", name)) {
            ok = false;
            continue;
          }
          op.extends.push_back(name);
          SourceLoc l = textLoc(i);
          op.extendsLocs.push_back({l, lineText(l.line).str()});
        }
        def.ops.push_back(op);
      }
      if (const YAML::Node *o = get(e, "ops")) {
        if (!asSeq(*o, "'ops'", ops))
          ok = false;
      }
      if (!ok)
        continue;
    } else if (!asSeq(s.value, "scenario '" + s.key + "'", ops)) {
      continue;
    }
    bool ok = true;
    for (const YAML::Node &o : ops) {
      ScenarioOp op;
      if (parseScenarioOp(o, op))
        def.ops.push_back(std::move(op));
      else
        ok = false;
    }
    if (ok)
      defs.push_back(std::move(def));
  }
  // References between scenarios: names exist, no cycles.
  std::vector<llvm::StringRef> names;
  for (const Entry &s : entries)
    names.push_back(s.key);
  for (const ScenarioDef &d : defs)
    for (const ScenarioOp &op : d.ops)
      for (size_t i = 0; i < op.extends.size(); ++i)
        if (!llvm::is_contained(names, op.extends[i])) {
          std::string near = nearestMatch(op.extends[i], names);
          error(op.extendsLocs[i].loc,
                "unknown scenario '" + op.extends[i] + "' in 'extends'" +
                    (near.empty() ? std::string()
                                  : "; did you mean '" + near + "'?"));
        }
  if (auto cyc = findExtendsCycle(topo))
    error(cyc->first, cyc->second);
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

llvm::Expected<Topology> Parser::run() {
  YAML::Node root;
  try {
    root = YAML::Load(*source);
  } catch (const YAML::Exception &e) {
    SourceLoc l = locOf(e.mark);
    if (!l.line)
      l = {file, 1, 1};
    // yaml-cpp reports a tab in the indentation as "illegal map value" or
    // the like, somewhere after it: name the tab itself.
    if (std::optional<SourceLoc> tab = indentationTab(l.line)) {
      error(*tab, "YAML forbids tabs in indentation; indent with spaces "
                  "(the YAML parser said: " + e.msg + ")");
      return diags.takeError();
    }
    error(l, "YAML syntax error: " + e.msg);
    return diags.takeError();
  }
  if (!root.IsMap()) {
    error(SourceLoc{file, 1, 1},
          "expected a mapping at the top of the topology file (starting with "
          "'schema: topocc/v1'), got " +
              kindOf(root));
    return diags.takeError();
  }
  static const llvm::StringRef keys[] = {
      "schema", "name",   "description", "link_classes", "node_templates",
      "nodes",  "fabric", "generate",    "ranks",        "scenarios"};
  Entries e;
  asMap(root, "the topology", e, keys);
  std::string schema, name, description;
  if (const YAML::Node *s = get(e, "schema")) {
    if (asScalar(*s, "schema", schema) && schema != kSchemaV1)
      error(textLoc(*s), "unknown schema '" + schema + "'; expected '" +
                             kSchemaV1 + "'");
  } else {
    error(SourceLoc{file, 1, 1},
          "missing 'schema' key; expected 'schema: topocc/v1' at the top of "
          "the file");
  }
  if (const YAML::Node *n = get(e, "name"))
    asScalar(*n, "name", name);
  if (const YAML::Node *n = get(e, "description"))
    asScalar(*n, "description", description);
  topo.setHeader(schema, name, description, file);

  if (const YAML::Node *n = get(e, "link_classes"))
    parseClasses(*n);
  if (const YAML::Node *n = get(e, "node_templates"))
    parseTemplates(*n);
  if (const YAML::Node *n = get(e, "nodes"))
    parseNodes(*n);
  if (const YAML::Node *n = get(e, "fabric")) {
    Entries f;
    static const llvm::StringRef fabricKeys[] = {"gpus", "nics", "switches",
                                                 "links"};
    fabric = std::make_unique<Body>();
    fabric->loc = locOf(*n);
    if (asMap(*n, "'fabric'", f, fabricKeys))
      parseBody(f, *fabric, true);
  }
  if (const YAML::Node *n = get(e, "generate"))
    parseGenerate(*n);
  if (const YAML::Node *n = get(e, "scenarios"))
    parseScenarios(*n);

  Expander expander(*this, topo, file, templates, templateOrder, nodeDecls,
                    fabric, &generator);
  expander.maxDevices = limits.maxDevices;
  expander.maxLinks = limits.maxLinks;
  if (!expander.checkSizes())
    return diags.takeError();
  expander.expandAll();
  parseRanks(get(e, "ranks"));
  if (!diags.hasErrors()) {
    if (topo.numRanks() == 0)
      error(SourceLoc{file, 1, 1}, "the topology has no GPUs");
    else
      checkConnectivity(topo, diags);
  }
  if (errorCount > kMaxErrors)
    diags.add(topo.diag(SourceLoc{file, 0, 0},
                        llvm::formatv("too many errors ({0}); only the first "
                                      "{1} are shown",
                                      errorCount, kMaxErrors)
                            .str()));
  if (auto err = diags.takeError())
    return err;
  return std::move(topo);
}

} // namespace

llvm::Expected<Topology> parseTopology(llvm::StringRef text,
                                       llvm::StringRef fileName) {
  return parseTopology(text, fileName, ParseLimits());
}

llvm::Expected<Topology> parseTopology(llvm::StringRef text,
                                       llvm::StringRef fileName,
                                       const ParseLimits &limits) {
  try {
    Parser p(text, fileName);
    p.limits = limits;
    return p.run();
  } catch (const YAML::Exception &e) {
    SourceLoc l{fileName.str(),
                e.mark.line >= 0 ? static_cast<unsigned>(e.mark.line + 1) : 0,
                e.mark.column >= 0 ? static_cast<unsigned>(e.mark.column + 1)
                                   : 0};
    return makeDiagError(l, "YAML error: " + e.msg,
                         sourceLineOf(text, l.line));
  }
}

llvm::Expected<Topology> loadTopologyFile(llvm::StringRef path) {
  auto buf = readInputFile(path, InputKind::Topology, "topology file");
  if (!buf)
    return buf.takeError();
  return parseTopology((*buf)->getBuffer(), path);
}

} // namespace topocc::topo
