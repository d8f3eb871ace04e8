//===- compiler/topology/NamePattern.h - Name captures ---------*- C++ -*-===//
//
// Name patterns of the topology format: `{var:lo-hi}` captures (zero padding
// kept), Slurm hostlists `dgx[00-31]`, references `{g}` and small expressions
// `{g/2}` `{g%4}` `{g+1}`. Stage: topology parsing (internal to the parser).
// Invariant: counting never expands, so size limits are checked first.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_TOPOLOGY_NAMEPATTERN_H
#define TOPOCC_COMPILER_TOPOLOGY_NAMEPATTERN_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace topocc::topo {

/// Saturates at this count (far above every size limit).
constexpr uint64_t kCountSaturation = uint64_t(1) << 62;
uint64_t saturatingMul(uint64_t a, uint64_t b);
uint64_t saturatingAdd(uint64_t a, uint64_t b);

struct CaptureRange {
  uint64_t lo = 0, hi = 0;
  unsigned width = 0; ///< zero-padded width, 0 for none
};

struct PatternPart {
  enum Kind { Literal, Capture, Ref };
  Kind kind = Literal;
  std::string text;   ///< literal text, or the part as written ("{g/2}")
  std::string var;    ///< variable; empty for an anonymous hostlist
  std::vector<CaptureRange> ranges; ///< Capture only
  char op = 0;        ///< Ref: 0, '/', '%', '+', '-', '*'
  int64_t operand = 0;
  size_t offset = 0;  ///< byte offset in the pattern text

  /// Number of values of a capture (saturating).
  uint64_t length() const;
  uint64_t number(uint64_t i) const;
  std::string value(uint64_t i) const;
  unsigned width() const { return ranges.empty() ? 0 : ranges[0].width; }
};

struct Pattern {
  std::string text;
  std::vector<PatternPart> parts;
  bool hasCaptures() const;
};

/// A problem in a pattern: the message and the byte offset it points at.
struct PatternError {
  std::string message;
  size_t offset = 0;
  int pattern = 0; ///< which pattern of a group (bindPatterns)
};

/// Parses `text`; false with `err` set on a malformed capture.
bool parsePattern(llvm::StringRef text, Pattern &out, PatternError &err);

/// The variables bound by a group of patterns (the two ends of a link, or one
/// name). The same named variable in several places pairs them; distinct
/// variables (and each hostlist) form a product, first variable outermost.
struct Binding {
  struct Var {
    std::string name;
    uint64_t length = 0;
    const PatternPart *primary = nullptr;
  };
  std::vector<Var> vars;

  /// Number of combinations (saturating).
  uint64_t count() const;
  /// Calls `fn` once per combination in order, with one index per var.
  /// Stops early when `fn` returns false.
  void forEach(const std::function<bool(llvm::ArrayRef<uint64_t>)> &fn) const;
  int find(llvm::StringRef name) const;
};

/// Binds the variables of `patterns` (their roles, e.g. "from" and "to", name
/// them in messages). Fails on paired captures of different length or a
/// reference to a variable no pattern captures.
bool bindPatterns(llvm::ArrayRef<const Pattern *> patterns,
                  llvm::ArrayRef<llvm::StringRef> roles, Binding &out,
                  PatternError &err);

/// The name `p` stands for at combination `idx` of `b`. False with `err` when
/// an expression is negative there.
bool instantiate(const Pattern &p, const Binding &b,
                 llvm::ArrayRef<uint64_t> idx, std::string &out,
                 PatternError &err);

} // namespace topocc::topo

#endif // TOPOCC_COMPILER_TOPOLOGY_NAMEPATTERN_H
