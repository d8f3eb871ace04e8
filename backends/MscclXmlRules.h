//===- backends/MscclXmlRules.h - MSCCL XML finding rules -------*- C++ -*-===//
//
// The rules a finding about an MSCCL algorithm XML file can break (the
// executor's lexical rules, its scan and load checks, rules 1 to 11 of
// docs/MscclXmlFormat.md 2.10, the limits of 2.11, the postcondition) and what
// breaking one means on the real executor. Every place that makes a finding
// (the reader's view, the importer, the checker) names its rule with a
// MscclRule; the checker classifies by that id, never by message text.
// Stage: back end (verification of input files).
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_BACKENDS_MSCCLXMLRULES_H
#define TOPOCC_BACKENDS_MSCCLXMLRULES_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>

namespace topocc::backends {

/// What a finding means on the real msccl-executor-nccl runtime.
enum class MscclConsequence {
  /// The executor's parser fails at the directory scan (<algo> only).
  RejectedAtScan,
  /// The executor's parser fails when a communicator loads the file.
  RejectedAtLoad,
  /// Loaded, but some block waits forever (FIFO mismatch, unconnected
  /// channel, dependency never released, deadlock cycle).
  Hangs,
  /// Loaded and runs to completion (or crashes), but computes a wrong
  /// result or corrupts memory (race, wrong local operand, out of bounds).
  RunsWrongly,
  /// Loaded and runs as written, but breaks a rule a conforming file keeps
  /// (e.g. misnumbered s, non-decimal integers); fragile, not wrong today.
  NonConforming,
};

/// The rule a finding breaks. The comment gives the default consequence of
/// an error of that rule (mscclRuleConsequence); a finding may state
/// another one.
enum class MscclRule : uint8_t {
  Lexical,       ///< the executor's lexical rules (2.1); rejected at load
  Attribute,     ///< a mandatory attribute is missing (2.3-2.6); at load
  Structure,     ///< the document structure (2.2); rejected at the scan
  Scan,          ///< the executor's directory scan rejects <algo>
  Load,          ///< a check the executor makes when it loads the file
  Limit,         ///< a limit of 2.11 or of the verifier; rejected at load
  Rule1,         ///< channels in range; hangs
  Rule2,         ///< one block per (channel, peer, direction); hangs
  Rule3,         ///< peers in range; hangs
  Rule4,         ///< one <gpu> per rank; hangs
  Rule5,         ///< sends and receives pair with equal counts; hangs
  Rule6,         ///< step positions and dependencies; hangs
  Rule7,         ///< deadlock freedom; hangs
  Rule8,         ///< race freedom; runs wrongly
  Rule9,         ///< the right local operand; runs wrongly
  Rule10,        ///< offsets and buffer sizes; runs wrongly
  Rule11,        ///< lexical hygiene; non-conforming
  Postcondition, ///< the file does not compute its collective; runs wrongly
  Import,        ///< the importer cannot read the file; non-conforming
  Other,         ///< a warning outside the numbered rules (selection, dialect)
};

/// "lexical", "attribute", "structure", "scan", "load", "limit",
/// "rule 1" .. "rule 11", "postcondition", "import", "other" (stable
/// CLI/JSON text).
llvm::StringRef mscclRuleName(MscclRule r);
/// The consequence of an error of rule `r` unless the finding says
/// otherwise.
MscclConsequence mscclRuleConsequence(MscclRule r);

/// "rejected by the executor (scan)", "hangs", ... (stable CLI/JSON text).
llvm::StringRef mscclConsequenceText(MscclConsequence c);
/// "rejected-scan", "rejected-load", "hangs", "runs-wrongly",
/// "non-conforming" (stable JSON keys).
llvm::StringRef mscclConsequenceKey(MscclConsequence c);

/// The rule of one diagnostic and, where it differs from the rule's default
/// (errors) or is known at all (warnings), its consequence.
struct MscclRuleTag {
  MscclRule rule = MscclRule::Other;
  std::optional<MscclConsequence> consequence;
};

} // namespace topocc::backends

#endif // TOPOCC_BACKENDS_MSCCLXMLRULES_H
