//===- runtime/Transport.cpp - Host defaults of the transport hooks -------===//
//
// The Transport hooks as a host transport has them: no device workspace, and
// the arithmetic on the CPU kernels of runtime/DType.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/Transport.h"

#include "support/Diagnostics.h"

#include <cstring>

namespace topocc::runtime {

bool sameRun(const RunHeader &a, const RunHeader &b) {
  return !a.missing() && !b.missing() && a.planHash == b.planHash &&
         a.count == b.count && a.planRanks == b.planRanks &&
         a.dtype == b.dtype && a.inplace == b.inplace;
}

Transport::~Transport() = default;

llvm::Expected<void *> Transport::workspace(int slot, size_t bytes) {
  return makeInternalError(
      "a host transport has no device workspace (deviceMemory() is false)");
}

llvm::Error Transport::axpby(void *dst, double a, const void *x, double b,
                             const void *y, size_t n, DType t) {
  runtime::axpby(dst, a, x, b, y, n, t);
  return llvm::Error::success();
}

llvm::Error Transport::scaleCopy(void *dst, double a, const void *x, size_t n,
                                 DType t) {
  runtime::scaleCopy(dst, a, x, n, t);
  return llvm::Error::success();
}

llvm::Error Transport::linComb(void *dst, llvm::ArrayRef<double> coeffs,
                               llvm::ArrayRef<const void *> srcs, size_t n,
                               DType t) {
  // One fused pass (runtime/DType.h), no temporary unless a source
  // partially overlaps dst.
  runtime::linComb(dst, coeffs, srcs, n, t);
  return llvm::Error::success();
}

llvm::Error Transport::zero(void *dst, size_t bytes) {
  std::memset(dst, 0, bytes);
  return llvm::Error::success();
}

} // namespace topocc::runtime
