//===- backends/MscclXmlCheck.cpp - MSCCL XML conformance checker ---------===//
//
// The driver: Checker::run() runs the phases in order and
// classifyFindings() turns every diagnostic and the rule its maker named
// into a finding. Phases: (1) lexical read (the executor's rules, first
// error stops); (2) lexical hygiene, rule 11; (3) document structure and the
// scan stage (the first element as <algo>); (4) the load stage as every rank
// runs it (docs/MscclXmlFormat.md 2.10, "What the executor checks", messages quoted);
// (5) rules 1-6, 9, 10 and limits; (6) import into the IR and rules 7, 8 and
// the postcondition through ir/Verifier.h, once per declared mode. Phases
// 3 and 4 are in MscclXmlCheckLoad.cpp, 2 and 5 in MscclXmlCheckRules.cpp,
// 6 in MscclXmlCheckSemantics.cpp.
//
//===----------------------------------------------------------------------===//

#include "backends/MscclXmlCheck.h"

#include "backends/MscclXmlCheckImpl.h"
#include "backends/MscclXmlReader.h"

#include "llvm/Support/FormatVariadic.h"

#include <cassert>
#include <climits>
#include <map>

namespace topocc::backends {

namespace mscclcheck {

namespace {

/// Rank, block id and step position of every element, and the element at
/// each element or attribute location.
class ElementContext {
public:
  explicit ElementContext(const XmlDocument &doc) {
    ctx.assign(doc.elements.size(), Ctx());
    for (size_t i = 0; i < doc.elements.size(); ++i) {
      const XmlElement &el = doc.elements[i];
      byLoc.emplace(std::pair{el.loc.line, el.loc.col}, i);
      if (el.closeLoc.isValid())
        byLoc.emplace(std::pair{el.closeLoc.line, el.closeLoc.col}, i);
      for (const XmlAttr &a : el.attrs) {
        byLoc.emplace(std::pair{a.loc.line, a.loc.col}, i);
        if (a.hasValue)
          byLoc.emplace(std::pair{a.valueLoc.line, a.valueLoc.col}, i);
      }
    }
    // Parents precede children in `elements`.
    for (size_t i = 0; i < doc.elements.size(); ++i) {
      const XmlElement &el = doc.elements[i];
      Ctx c = el.parent >= 0 ? ctx[el.parent] : Ctx();
      auto idOf = [&]() {
        const XmlAttr *a = el.find("id");
        return a ? executorStrtol(a->value) : -1;
      };
      if (el.name == "gpu") {
        c.rank = idOf();
      } else if (el.name == "tb") {
        c.tb = idOf();
      } else if (el.name == "step" && el.parent >= 0) {
        int pos = 0;
        for (unsigned sib : doc.elements[el.parent].children) {
          if (sib == i)
            break;
          pos += doc.elements[sib].name == "step";
        }
        c.step = pos;
      }
      ctx[i] = c;
    }
  }

  void fill(MscclFinding &f) const {
    auto it = byLoc.find({f.diag.loc.line, f.diag.loc.col});
    if (it == byLoc.end())
      return;
    const Ctx &c = ctx[it->second];
    f.rank = c.rank;
    f.tb = c.tb;
    f.step = c.step;
  }

private:
  struct Ctx {
    int rank = -1, tb = -1, step = -1;
  };
  std::vector<Ctx> ctx;
  std::map<std::pair<unsigned, unsigned>, size_t> byLoc;
};

} // namespace

void Checker::classifyFindings() {
  assert(problemTags.size() == v.problems.size() &&
         warningTags.size() == v.warnings.size());
  ElementContext ctx(doc);
  v.findings.clear();
  v.warningFindings.clear();
  for (size_t i = 0; i < v.problems.size(); ++i) {
    const MscclRuleTag &t = problemTags[i];
    MscclFinding f;
    f.diag = v.problems[i];
    f.ruleId = t.rule;
    f.rule = mscclRuleName(t.rule).str();
    f.consequence =
        t.consequence ? *t.consequence : mscclRuleConsequence(t.rule);
    ctx.fill(f);
    v.findings.push_back(std::move(f));
  }
  for (size_t i = 0; i < v.warnings.size(); ++i) {
    const MscclRuleTag &t = warningTags[i];
    MscclFinding f;
    f.diag = v.warnings[i];
    f.ruleId = t.rule;
    f.rule = mscclRuleName(t.rule).str();
    f.consequence = t.consequence;
    ctx.fill(f);
    v.warningFindings.push_back(std::move(f));
  }
}

void Checker::run() {
  checkHygiene();
  if (!checkTopLevel()) {
    v.formatOk = false;
    return;
  }
  DiagnosticList viewDiags;
  MscclViewOptions vo;
  vo.legacy = opts.legacy;
  std::vector<MscclRuleTag> viewTags;
  std::optional<MscclAlgo> algo = buildMscclView(doc, viewDiags, vo, &viewTags);
  assert(viewTags.size() == viewDiags.all().size());
  for (size_t i = 0; i < viewTags.size(); ++i)
    addProblem(viewDiags.all()[i], viewTags[i]);
  if (!algo)
    return;
  if (opts.legacy) {
    if (algo->coll == "reduce_scatter") {
      warn(MscclRule::Other, at(algo->el, "coll"),
           "legacy dialect (section 3): "
           "coll=\"reduce_scatter\" read as "
           "reducescatter; the new executor rejects "
           "this spelling at the scan");
      algo->coll = "reducescatter";
    }
    if (algo->legacyOutofplace)
      warn(MscclRule::Other, algo->el->loc,
           "legacy dialect (section 3): outofplace is "
           "missing and taken as 1 - inplace; the new "
           "executor rejects the file at the scan");
    for (llvm::StringRef k : {"minBytes", "maxBytes"})
      if (!algo->el->find(k))
        warn(MscclRule::Other, algo->el->loc,
             "legacy dialect (section 3): " + k.str() +
                 " is missing and takes the legacy default; "
                 "the new executor rejects the file at the "
                 "scan");
  }
  {
    MscclAlgoInfo info;
    MscclAlgoMeta &m = info.meta;
    m.fileName = doc.fileName;
    m.coll = algo->coll;
    m.ngpus = algo->ngpus;
    m.inplace = algo->inplace == 1;
    m.outofplace = algo->outofplace == 1;
    m.minBytes = algo->minBytes;
    m.maxBytes = algo->maxBytes;
    info.name = algo->name;
    info.proto = algo->proto;
    info.nchannels = algo->nchannels;
    info.nchunksperloop = algo->nchunksperloop;
    v.algo = std::move(info);
  }
  checkScan(*algo);
  checkLoadAlgo(*algo);
  if (algo->complete && algo->ngpus >= 1)
    checkStoredElements(*algo);
  for (const MscclGpu &g : algo->gpus)
    checkGpuLoad(*algo, g);
  if (algo->complete && algo->ngpus >= 1)
    checkRules(*algo);
  v.formatOk = v.problems.empty();
  if (opts.checkExecution && algo->complete && algo->ngpus >= 1 &&
      algo->nchunksperloop >= 1 && isNewColl(algo->coll) &&
      executionIsBounded(*algo))
    checkExecution(*algo);
}

} // namespace mscclcheck

using mscclcheck::Checker;

MscclVerdict verifyMscclXml(llvm::StringRef text, llvm::StringRef fileName,
                            const MscclCheckOptions &opts) {
  MscclVerdict v;
  size_t elementsBeforeError = 0;
  llvm::Expected<XmlDocument> doc =
      readMscclXmlDocument(text, fileName, &elementsBeforeError);
  if (!doc) {
    llvm::handleAllErrors(
        doc.takeError(),
        [&](const DiagnosticError &de) {
          for (const Diagnostic &d : de.diagnostics())
            v.problems.push_back(d);
        },
        [&](const llvm::ErrorInfoBase &eb) {
          v.problems.push_back(Diagnostic{Severity::Error,
                                          SourceLoc{fileName.str(), 0, 0},
                                          eb.message(), ""});
        });
    // The scan reads the first element: an error in or before it already
    // fails there.
    for (const Diagnostic &d : v.problems) {
      MscclFinding f;
      f.diag = d;
      f.ruleId = MscclRule::Lexical;
      f.rule = mscclRuleName(f.ruleId).str();
      f.consequence = elementsBeforeError == 0
                          ? MscclConsequence::RejectedAtScan
                          : MscclConsequence::RejectedAtLoad;
      v.findings.push_back(std::move(f));
    }
    return v;
  }
  Checker checker(*doc, opts, v);
  checker.run();
  checker.classifyFindings();
  return v;
}

MscclCheckResult checkMscclXml(llvm::StringRef text, llvm::StringRef fileName,
                               const MscclCheckOptions &opts) {
  MscclVerdict v = verifyMscclXml(text, fileName, opts);
  MscclCheckResult r;
  r.errors = std::move(v.problems);
  r.warnings = std::move(v.warnings);
  return r;
}

std::vector<Diagnostic>
checkMscclWindowOverlaps(llvm::ArrayRef<MscclAlgoMeta> files) {
  std::vector<Diagnostic> out;
  auto hi = [](const MscclAlgoMeta &m) {
    return m.maxBytes == 0 ? LLONG_MAX : m.maxBytes;
  };
  for (size_t i = 0; i < files.size(); ++i)
    for (size_t j = i + 1; j < files.size(); ++j) {
      const MscclAlgoMeta &x = files[i], &y = files[j];
      if (x.coll != y.coll || x.ngpus != y.ngpus)
        continue;
      for (bool inplaceMode : {true, false}) {
        bool xs = inplaceMode ? x.inplace : x.outofplace;
        bool ys = inplaceMode ? y.inplace : y.outofplace;
        if (!xs || !ys)
          continue;
        long long lo = std::max(x.minBytes, y.minBytes);
        long long up = std::min(hi(x), hi(y));
        if (lo > up)
          continue;
        const MscclAlgoMeta &win = x.fileName < y.fileName ? x : y;
        out.push_back(Diagnostic{
            Severity::Warning, SourceLoc{x.fileName, 0, 0},
            llvm::formatv("size windows of {0} and {1} ({2}, {3} ranks, {4}) "
                          "overlap on {5}..{6} bytes; the executor picks {7} "
                          "(smaller path) (1.3)",
                          x.fileName, y.fileName, x.coll, x.ngpus,
                          inplaceMode ? "in-place" : "out-of-place", lo,
                          up == LLONG_MAX ? std::string("(no upper bound)")
                                          : std::to_string(up),
                          win.fileName)
                .str(),
            ""});
      }
    }
  return out;
}

} // namespace topocc::backends
