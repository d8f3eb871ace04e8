//===- backends/MscclXmlCheckSemantics.cpp - MSCCL XML execution checks ---===//
//
// The file imported into the IR once per declared mode, then the IR
// verifier's structure, deadlock (rule 7) and race (rule 8) checks and the
// symbolic execution against the collective's postcondition.
//
//===----------------------------------------------------------------------===//

#include "backends/MscclXmlCheckImpl.h"

#include "backends/MscclXmlImport.h"
#include "ir/Semantics.h"
#include "ir/Verifier.h"

#include "llvm/Support/FormatVariadic.h"

#include <cstdlib>

namespace topocc::backends::mscclcheck {

//===----------------------------------------------------------------------===//
// Execution: import, IR verifier, semantics
//===----------------------------------------------------------------------===//

void Checker::checkExecution(const MscclAlgo &a) {
  std::vector<bool> modes;
  if (a.inplace == 1)
    modes.push_back(true);
  if (a.outofplace == 1)
    modes.push_back(false);
  if (modes.empty())
    modes.push_back(false);
  bool hadFormatErrors = !v.problems.empty();
  bool dl = true, race = true, sem = true;
  for (bool inplace : modes) {
    std::string mode = modes.size() > 1 ? (inplace ? " (in-place mode)"
                                                   : " (out-of-place "
                                                     "mode)")
                                        : "";
    MscclImportOptions io;
    io.inplace = inplace;
    std::vector<MscclRuleTag> importTags;
    llvm::Expected<MscclImport> imp = importMscclAlgo(doc, a, io, &importTags);
    if (!imp) {
      llvm::Error e = imp.takeError();
      if (!hadFormatErrors) {
        llvm::handleAllErrors(
            std::move(e),
            [&](const DiagnosticError &de) {
              const std::vector<Diagnostic> &ds = de.diagnostics();
              for (size_t i = 0; i < ds.size(); ++i)
                addProblem(ds[i], i < importTags.size()
                                      ? importTags[i]
                                      : MscclRuleTag{MscclRule::Import, {}});
            },
            [&](const llvm::ErrorInfoBase &eb) {
              err(MscclRule::Import, a.el->loc, "import: " + eb.message());
            });
      } else {
        llvm::consumeError(std::move(e));
      }
      dl = race = sem = false;
      continue;
    }
    const ir::Schedule &s = imp->schedule;
    auto locOf = [&](const ir::VerifyProblem &p) {
      if (p.rank >= 0 && size_t(p.rank) < imp->opLocs.size() && p.op >= 0 &&
          size_t(p.op) < imp->opLocs[p.rank].size())
        return imp->opLocs[p.rank][p.op];
      return a.el->loc;
    };
    auto describe = [&](const ir::VerifyProblem &p) {
      std::string w;
      if (p.rank >= 0)
        w += llvm::formatv("rank {0}", p.rank).str();
      if (p.rank >= 0 && p.op >= 0 && size_t(p.op) < s.ranks[p.rank].ops.size())
        w += llvm::formatv(" tb {0} op %{1}",
                           s.ranks[p.rank].ops[p.op].threadblock, p.op)
                 .str();
      return w.empty() ? p.message : w + ": " + p.message;
    };
    ir::VerifyOptions so;
    so.checkDeadlock = so.checkRaces = so.checkSemantics = false;
    std::vector<ir::VerifyProblem> ps = ir::findProblems(s, so);
    if (!ps.empty()) {
      if (!hadFormatErrors)
        for (const ir::VerifyProblem &p : ps)
          err(MscclRule::Rule5, locOf(p),
              "rules 5, 6, 10 (IR structure)" + mode + ": " + describe(p),
              MscclConsequence::RunsWrongly);
      dl = race = sem = false;
      continue;
    }
    ir::VerifyOptions dopt;
    dopt.checkStructure = false;
    dopt.checkRaces = dopt.checkSemantics = false;
    ps = ir::findProblems(s, dopt);
    if (!ps.empty()) {
      for (const ir::VerifyProblem &p : ps)
        err(MscclRule::Rule7, locOf(p),
            "rule 7 (deadlock)" + mode + ": " + describe(p));
      dl = race = sem = false;
      continue;
    }
    ir::VerifyOptions ropt;
    ropt.checkStructure = false;
    ropt.checkSemantics = false;
    ps = ir::findProblems(s, ropt);
    if (!ps.empty()) {
      for (const ir::VerifyProblem &p : ps)
        err(MscclRule::Rule8, locOf(p),
            "rule 8 (data race)" + mode + ": " + describe(p));
      race = false;
    }
    llvm::Expected<ir::SymbolicResult> res = ir::execute(s);
    if (!res) {
      err(MscclRule::Postcondition, a.el->loc,
          "postcondition" + mode + ": symbolic execution failed: " +
              llvm::toString(res.takeError()));
      sem = false;
      continue;
    }
    std::vector<ir::WrongOutput> wrong = ir::findWrongOutputs(s, *res);
    if (!wrong.empty()) {
      sem = false;
      std::string msg = llvm::formatv("postcondition{0}: the schedule does "
                                      "not compute {1} ({2} wrong output "
                                      "chunk(s)); first: {3}",
                                      mode, a.coll, wrong.size(),
                                      ir::describeWrongOutput(wrong.front()))
                            .str();
      err(MscclRule::Postcondition, at(a.el, "coll"), msg);
    }
  }
  v.deadlockFree = dl;
  v.raceFree = dl && race;
  v.computesCollective = dl && sem;
}

bool Checker::executionIsBounded(const MscclAlgo &a) {
  // The symbolic execution is linear in ranks x chunks and in the buffer
  // sizes; a file beyond any real one (16-bit offsets, 8 KiB-class files)
  // is reported instead of simulated.
  constexpr int64_t kMaxWork = int64_t(1) << 22;
  int64_t work = int64_t(a.ngpus) * a.nchunksperloop;
  for (const MscclGpu &g : a.gpus) {
    work += std::abs(int64_t(g.iChunks)) + std::abs(int64_t(g.oChunks)) +
            std::abs(int64_t(g.sChunks));
    for (const MscclTb &tb : g.tbs)
      for (const MscclStep &st : tb.steps)
        work += std::abs(int64_t(st.cnt)) + 1;
  }
  if (work <= kMaxWork)
    return true;
  err(MscclRule::Limit, a.el->loc,
      llvm::formatv("limit (verifier): ngpus x nchunksperloop plus the buffer "
                    "sizes is {0}, above the {1} the symbolic check "
                    "handles; deadlock, races and the result are not "
                    "checked",
                    work, kMaxWork),
      MscclConsequence::NonConforming);
  return false;
}

} // namespace topocc::backends::mscclcheck
