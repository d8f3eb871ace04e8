//===- support/Fnv1a.cpp - A stable 64-bit FNV-1a hash --------------------===//
//
// See Fnv1a.h.
//
//===----------------------------------------------------------------------===//

#include "support/Fnv1a.h"

#include "llvm/Support/FormatVariadic.h"

namespace topocc {

void Fnv1a::bytes(llvm::StringRef s) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
}

void Fnv1a::str(llvm::StringRef s) {
  num(static_cast<int64_t>(s.size()));
  bytes(s);
}

void Fnv1a::num(int64_t v) { bytes(llvm::formatv("{0};", v).str()); }

void Fnv1a::real(double v) { bytes(llvm::formatv("{0:e16};", v).str()); }

void Fnv1aStream::write_impl(const char *ptr, size_t size) {
  hash.bytes(llvm::StringRef(ptr, size));
  written += size;
}

} // namespace topocc
