//===- runtime/DType.h - Element types and CPU kernels ---------*- C++ -*-===//
//
// The element types the runtime reduces (fp32, fp16, bf16; sum) and the CPU
// kernels the interpreter uses: dst = a*x + b*y (a plain sum when a = b = 1,
// vectorised by the compiler) and scaled copies. fp16 and bf16 are reduced in
// fp32 and rounded to nearest even once per op.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_RUNTIME_DTYPE_H
#define TOPOCC_RUNTIME_DTYPE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstddef>
#include <cstdint>
#include <optional>

namespace topocc::runtime {

enum class DType : int32_t { F32 = 0, F16 = 1, BF16 = 2 };

/// "fp32", "fp16", "bf16".
llvm::StringRef dtypeName(DType t);
/// Accepts the names above and the nccl-tests spellings "float", "half",
/// "bfloat16".
std::optional<DType> dtypeFromName(llvm::StringRef s);
size_t dtypeSize(DType t);
/// Unit roundoff of the type (fp32 2^-24, fp16 2^-11, bf16 2^-8).
double unitRoundoff(DType t);

float halfToFloat(uint16_t h);
uint16_t floatToHalf(float f);
float bf16ToFloat(uint16_t h);
uint16_t floatToBf16(float f);

/// Element `i` of `buf` as a float, and the reverse (for tests and checks).
float loadElement(const void *buf, size_t i, DType t);
void storeElement(void *buf, size_t i, DType t, float v);

/// dst[i] = a*x[i] + b*y[i] for i < n. dst may alias x or y.
void axpby(void *dst, double a, const void *x, double b, const void *y,
           size_t n, DType t);
/// dst[i] = a*x[i]; a memmove when a == 1. dst may alias x.
void scaleCopy(void *dst, double a, const void *x, size_t n, DType t);
/// dst[i] = coeffs[0]*srcs[0][i] + coeffs[1]*srcs[1][i] + ... for i < n, in
/// one pass: accumulated in fp32 in term order (fp32 results equal a
/// scaleCopy followed by one axpby per further term), rounded once per
/// element for fp16/bf16. dst may be any of the sources or overlap them
/// (a partial overlap goes through a temporary).
/// REQUIRES: coeffs.size() == srcs.size() >= 1.
void linComb(void *dst, llvm::ArrayRef<double> coeffs,
             llvm::ArrayRef<const void *> srcs, size_t n, DType t);

} // namespace topocc::runtime

#endif // TOPOCC_RUNTIME_DTYPE_H
