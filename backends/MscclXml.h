//===- backends/MscclXml.h - Emit MSCCL algorithm XML -----------*- C++ -*-===//
//
// A pure printer from a Legalized schedule to the msccl-executor-nccl dialect
// (docs/MscclXmlFormat.md 2 and docs/Algorithms-ring.md 7): canonical text, all attributes in the
// order of the reference example, local operands in src of rrs/rrc/rrcs.
// Fails, writing nothing, only when the schedule is not expressible or breaks
// an MSCCL limit (stage, lincomb, coefficients, cnt, steps, threadblock ids).
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_BACKENDS_MSCCLXML_H
#define TOPOCC_BACKENDS_MSCCLXML_H

#include "ir/Schedule.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>

namespace topocc::backends {

struct MscclXmlOptions {
  std::string name;             ///< <algo name>; the schedule's name if empty
  std::string proto = "Simple"; ///< "Simple", "LL" or "LL128"
  int64_t minBytes = 0;         ///< selection window; maxBytes 0 = unbounded
  int64_t maxBytes = 0;
  int32_t maxSteps = 64; ///< MSCCL_MAX_NUM_STEPS of the target runtime
};

/// REQUIRES: s.stage is Legalized (else an error). Writes nothing on error.
llvm::Error emitMscclXml(const ir::Schedule &s, const MscclXmlOptions &opts,
                         llvm::raw_ostream &os);
llvm::Expected<std::string> mscclXmlToString(const ir::Schedule &s,
                                             const MscclXmlOptions &opts = {});

} // namespace topocc::backends

#endif // TOPOCC_BACKENDS_MSCCLXML_H
