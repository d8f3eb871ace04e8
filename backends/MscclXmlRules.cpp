//===- backends/MscclXmlRules.cpp - MSCCL XML finding rules ---------------===//
//
// The names and default consequences of the rules, and the texts of the
// consequences.
//
//===----------------------------------------------------------------------===//

#include "backends/MscclXmlRules.h"

namespace topocc::backends {

llvm::StringRef mscclRuleName(MscclRule r) {
  switch (r) {
  case MscclRule::Lexical:
    return "lexical";
  case MscclRule::Attribute:
    return "attribute";
  case MscclRule::Structure:
    return "structure";
  case MscclRule::Scan:
    return "scan";
  case MscclRule::Load:
    return "load";
  case MscclRule::Limit:
    return "limit";
  case MscclRule::Rule1:
    return "rule 1";
  case MscclRule::Rule2:
    return "rule 2";
  case MscclRule::Rule3:
    return "rule 3";
  case MscclRule::Rule4:
    return "rule 4";
  case MscclRule::Rule5:
    return "rule 5";
  case MscclRule::Rule6:
    return "rule 6";
  case MscclRule::Rule7:
    return "rule 7";
  case MscclRule::Rule8:
    return "rule 8";
  case MscclRule::Rule9:
    return "rule 9";
  case MscclRule::Rule10:
    return "rule 10";
  case MscclRule::Rule11:
    return "rule 11";
  case MscclRule::Postcondition:
    return "postcondition";
  case MscclRule::Import:
    return "import";
  case MscclRule::Other:
    return "other";
  }
  return "other";
}

MscclConsequence mscclRuleConsequence(MscclRule r) {
  using C = MscclConsequence;
  switch (r) {
  case MscclRule::Lexical:
  case MscclRule::Attribute:
  case MscclRule::Load:
  case MscclRule::Limit:
    return C::RejectedAtLoad;
  case MscclRule::Structure:
  case MscclRule::Scan:
    return C::RejectedAtScan;
  case MscclRule::Rule1: // unconnected channel
  case MscclRule::Rule2: // shared FIFO
  case MscclRule::Rule3: // no such peer
  case MscclRule::Rule4: // missing rank
  case MscclRule::Rule5: // FIFO mismatch
  case MscclRule::Rule6: // dependency never released
  case MscclRule::Rule7: // deadlock
    return C::Hangs;
  case MscclRule::Rule8:  // race
  case MscclRule::Rule9:  // wrong local operand
  case MscclRule::Rule10: // out of bounds
  case MscclRule::Postcondition:
  case MscclRule::Other:
    return C::RunsWrongly;
  case MscclRule::Rule11: // lexical hygiene
  case MscclRule::Import:
    return C::NonConforming;
  }
  return C::RunsWrongly;
}

llvm::StringRef mscclConsequenceText(MscclConsequence c) {
  switch (c) {
  case MscclConsequence::RejectedAtScan:
    return "rejected by the executor (scan)";
  case MscclConsequence::RejectedAtLoad:
    return "rejected by the executor (load)";
  case MscclConsequence::Hangs:
    return "hangs";
  case MscclConsequence::RunsWrongly:
    return "runs wrongly";
  case MscclConsequence::NonConforming:
    return "non-conforming";
  }
  return "?";
}

llvm::StringRef mscclConsequenceKey(MscclConsequence c) {
  switch (c) {
  case MscclConsequence::RejectedAtScan:
    return "rejected-scan";
  case MscclConsequence::RejectedAtLoad:
    return "rejected-load";
  case MscclConsequence::Hangs:
    return "hangs";
  case MscclConsequence::RunsWrongly:
    return "runs-wrongly";
  case MscclConsequence::NonConforming:
    return "non-conforming";
  }
  return "?";
}

} // namespace topocc::backends
