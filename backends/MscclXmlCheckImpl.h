//===- backends/MscclXmlCheckImpl.h - MSCCL XML checker ---------*- C++ -*-===//
//
// Private to the MscclXmlCheck*.cpp files: the Checker that verifyMscclXml
// (MscclXmlCheck.h) runs over one file. Each member is defined in the file
// of its phase:
//   MscclXmlCheck.cpp           the driver: run() (the phases in order),
//                               classifyFindings(), the public entry points
//   MscclXmlCheckLoad.cpp       what the executor checks: the document
//                               structure, the scan of <algo>, the parser's
//                               per-rank storage and the load of every <gpu>
//   MscclXmlCheckRules.cpp      rules 1-6 and 9-11 and the limits
//   MscclXmlCheckSemantics.cpp  import into the IR: rules 7 and 8 and the
//                               postcondition through ir/Verifier.h
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_BACKENDS_MSCCLXMLCHECKIMPL_H
#define TOPOCC_BACKENDS_MSCCLXMLCHECKIMPL_H

#include "backends/MscclXmlCheck.h"
#include "backends/MscclXmlReader.h"
#include "backends/MscclXmlRules.h"
#include "support/Diagnostics.h"

#include "llvm/ADT/StringRef.h"

#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

namespace topocc::backends::mscclcheck {

inline bool oneOf(std::initializer_list<llvm::StringRef> set,
                  llvm::StringRef x) {
  for (llvm::StringRef e : set)
    if (e == x)
      return true;
  return false;
}

inline bool isNewColl(llvm::StringRef c) {
  return oneOf({"allreduce", "allgather", "reducescatter", "alltoall",
                "alltoallv", "broadcast", "reduce", "send", "recv", "gather",
                "scatter"},
               c);
}

class Checker {
public:
  Checker(const XmlDocument &doc, const MscclCheckOptions &opts,
          MscclVerdict &v)
      : doc(doc), opts(opts), v(v) {}

  void run();

private:
  /// An error of `rule`; `c` overrides the consequence the rule implies
  /// (mscclRuleConsequence).
  void err(MscclRule rule, const SourceLoc &loc, std::string msg,
           std::optional<MscclConsequence> c = std::nullopt) {
    addProblem(doc.diag(Severity::Error, loc, std::move(msg)), {rule, c});
  }
  /// A warning of `rule`; `c` is the consequence where it is known.
  void warn(MscclRule rule, const SourceLoc &loc, std::string msg,
            std::optional<MscclConsequence> c = std::nullopt) {
    v.warnings.push_back(doc.diag(Severity::Warning, loc, std::move(msg)));
    warningTags.push_back({rule, c});
  }
  /// An error another stage made (the view, the importer) with its rule.
  void addProblem(Diagnostic d, MscclRuleTag tag) {
    v.problems.push_back(std::move(d));
    problemTags.push_back(tag);
  }
  static SourceLoc at(const XmlElement *el, llvm::StringRef key) {
    if (const XmlAttr *a = el->find(key))
      return a->loc;
    return el->loc;
  }

  void checkHygiene();
  bool checkTopLevel();
  void checkScan(const MscclAlgo &a);
  void checkLoadAlgo(const MscclAlgo &a);
  void checkStoredElements(const MscclAlgo &a);
  void checkGpuLoad(const MscclAlgo &a, const MscclGpu &g);
  void checkRules(const MscclAlgo &a);
  void checkGpuRules(const MscclAlgo &a, const MscclGpu &g);
  void checkFifo(const MscclAlgo &a);
  void checkExecution(const MscclAlgo &a);
  bool executionIsBounded(const MscclAlgo &a);

public:
  void classifyFindings();

private:
  const XmlDocument &doc;
  const MscclCheckOptions &opts;
  MscclVerdict &v;
  /// The rule of each of v.problems and v.warnings (same order and size).
  std::vector<MscclRuleTag> problemTags;
  std::vector<MscclRuleTag> warningTags;
};

} // namespace topocc::backends::mscclcheck

#endif // TOPOCC_BACKENDS_MSCCLXMLCHECKIMPL_H
