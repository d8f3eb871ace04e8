//===- compiler/topology/Units.h - Quantities with units -------*- C++ -*-===//
//
// Parses and prints the quantities of the topology format (bandwidth, time,
// size, factor) with their required units. Stage: topology parsing.
// Invariant: parsed values are in base units (bytes/s, seconds, bytes).
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_TOPOLOGY_UNITS_H
#define TOPOCC_COMPILER_TOPOLOGY_UNITS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace topocc::topo {

enum class QuantityKind { Bandwidth, Time, Size, Factor };

/// A unit spelling the format accepts.
struct UnitInfo {
  llvm::StringRef name;      ///< as written, e.g. "Gbps"
  QuantityKind kind;
  double toBase;             ///< multiply a number in this unit to get base units
  llvm::StringRef canonical; ///< the primary spelling ("Gb/s" for "Gbps")
  llvm::StringRef desc;      ///< "bits", "bytes", "binary bytes" or ""
};

/// Every accepted unit (primary spellings first, then aliases).
llvm::ArrayRef<UnitInfo> allUnits();

/// The unit named exactly `name` (case matters), or nullptr.
const UnitInfo *findUnit(llvm::StringRef name);

/// A number with its unit as written in the file.
struct Quantity {
  double value = 0;   ///< base units (bytes/s, s, bytes; scalar for factors)
  double number = 0;  ///< the number as written (signed)
  std::string unit;   ///< the unit as written ("x" for factors)
  bool hasSign = false; ///< written with a leading '+' or '-'

  /// The quantity as written, e.g. "25 GB/s" or "0.5x".
  std::string text() const;
};

/// Human name of a quantity kind ("bandwidth", "time", "size", "factor").
llvm::StringRef quantityKindName(QuantityKind kind);

/// Parses `text` (e.g. "25 GB/s", "0.7us", "+0.5 us", "2x") as a quantity of
/// `kind`. `what` names the field for messages ("bandwidth", "latency").
/// Sign and range checks are the caller's. Errors are plain messages (the
/// caller adds the location), e.g. "unknown unit 'GBps' in bandwidth; did you
/// mean 'GB/s' (bytes) or 'Gb/s' (bits)?".
llvm::Expected<Quantity> parseQuantity(llvm::StringRef text, QuantityKind kind,
                                       llvm::StringRef what);

/// Formats a number without trailing zeros (up to 6 significant digits).
std::string formatNumber(double v);

/// Formats `baseValue` in `unit` (e.g. 2.5e10 in "GB/s" gives "25 GB/s").
/// REQUIRES: findUnit(unit) != nullptr, or unit == "x".
std::string formatInUnit(double baseValue, llvm::StringRef unit);

} // namespace topocc::topo

#endif // TOPOCC_COMPILER_TOPOLOGY_UNITS_H
