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
#include "llvm/Support/raw_ostream.h"

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

/// A stream that hashes what is written to it (Fnv1a::bytes of the whole
/// text), so a large text is hashed without being held: printing a 9
/// million-step schedule to a string for its content hash took gigabytes.
class Fnv1aStream : public llvm::raw_ostream {
public:
  Fnv1aStream() = default;
  ~Fnv1aStream() override { flush(); }
  /// The hash of everything written so far.
  uint64_t value() {
    flush();
    return hash.value();
  }

private:
  void write_impl(const char *ptr, size_t size) override;
  uint64_t current_pos() const override { return written; }

  Fnv1a hash;
  uint64_t written = 0;
};

} // namespace topocc

#endif // TOPOCC_SUPPORT_FNV1A_H
