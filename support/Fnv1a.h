//===- support/Fnv1a.h - A stable 64-bit FNV-1a hash -------------*- C++ -*-===//
//
// The hash behind the plan file's topology and content hashes
// (backends/TopologyHash, backends/PlanJson): bytes, length-prefixed
// strings, integers and doubles in a fixed text form, so a value hashes the
// same on every machine and in every build.
//
//===----------------------------------------------------------------------===//

#ifndef TOPOCC_SUPPORT_FNV1A_H
#define TOPOCC_SUPPORT_FNV1A_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace topocc {

class Fnv1a {
public:
  void bytes(llvm::StringRef s);
  /// Length-prefixed, so field boundaries cannot shift.
  void str(llvm::StringRef s);
  void num(int64_t v);
  /// Doubles through a round-trip exact text form.
  void real(double v);
  uint64_t value() const { return h; }

private:
  uint64_t h = 0xcbf29ce484222325ULL;
};

} // namespace topocc

#endif // TOPOCC_SUPPORT_FNV1A_H
