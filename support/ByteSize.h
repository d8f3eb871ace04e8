//===- support/ByteSize.h - Byte sizes of the command line -----*- C++ -*-===//
//
// The one parser of message and buffer sizes that every command and
// benchmark uses (docs/CLI.md, "Sizes"), so that `--size 64M`, `--sizes
// 64MiB:1G`, `topocc-bench -b 64MB` and `topocc-gpu-bench -s 64m` read the
// same spellings the same way. The topology format's quantities (where
// 1 MB is 10^6 bytes) are compiler/topology/Units.h's, not these.
//
//===----------------------------------------------------------------------===//

#ifndef TOPOCC_SUPPORT_BYTESIZE_H
#define TOPOCC_SUPPORT_BYTESIZE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace topocc {

/// The end of a decimal exponent ("e6", "E-3": e or E, an optional sign,
/// at least one digit) starting at s[i]; `i` itself when there is none.
/// Shared by the size and the topology-unit lexers.
size_t skipDecimalExponent(llvm::StringRef s, size_t i);

/// A byte size in the nccl-tests convention: a positive decimal number
/// ("64", "1.5", "1e6", an optional leading '+'), optional blanks, and an
/// optional unit: B, or K, M, G or T alone or followed by B or iB (any
/// case). K, M, G and T are powers of 1024 whichever way they are written:
/// 64M = 64MB = 64 MiB = 64mb = 67108864. Blanks around the text are
/// ignored. Nothing when `text` is not such a size, or the size is 2^64
/// bytes or more. Fractions of a byte are kept ("0.5" is half a byte).
std::optional<double> readByteSize(llvm::StringRef text);

/// readByteSize for a whole number of bytes (a benchmark's buffers):
/// nothing also when the size is not whole ("1.5K" is 1536; "1.3" is not).
std::optional<uint64_t> readByteCount(llvm::StringRef text);

/// readByteSize, or the user error "invalid WHAT 'TEXT' (expected a positive
/// number with an optional K, M or G suffix, powers of 1024: 64M, 1G)", WHAT
/// naming the option ("--size").
llvm::Expected<double> parseByteSize(llvm::StringRef text,
                                     llvm::StringRef what);

/// A list of sizes as nccl-tests sweeps them: "64M" (one size), "1K:8G"
/// (powers of 2 from 1K to 8G), "1K:8G:4" (factor 4), or a comma list of
/// those; each size as readByteSize reads it. Sorted, without duplicates, at
/// most 4096. User errors name the option `what` ("--sizes").
llvm::Expected<std::vector<double>> parseByteSizeRanges(llvm::StringRef text,
                                                        llvm::StringRef what);

/// Shortest decimal text with at most 3 decimals ("300", "12.5").
std::string plainNumber(double v);
/// A byte count in binary units, nccl-tests style ("64 MiB", "1.5 GiB").
std::string sizeText(double bytes);

} // namespace topocc

#endif // TOPOCC_SUPPORT_BYTESIZE_H
