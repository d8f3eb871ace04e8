//===- support/Diagnostics.h - User-facing diagnostics ---------*- C++ -*-===//
//
// Source-located diagnostics (file:line:col, the source line and a caret) and
// the llvm::Error that carries a list of them. Every stage that reads user
// input reports through this; only the CLI driver prints.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_SUPPORT_DIAGNOSTICS_H
#define TOPOCC_SUPPORT_DIAGNOSTICS_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace topocc {

/// A position in a user file. Line and column are 1-based; 0 means unknown.
struct SourceLoc {
  std::string file;
  unsigned line = 0;
  unsigned col = 0;

  bool isValid() const { return line != 0; }
};

enum class Severity { Error, Warning, Note };

/// One message about one place in a user file.
struct Diagnostic {
  Severity severity = Severity::Error;
  SourceLoc loc;
  std::string message;
  /// The full text of the source line (without newline); empty if unknown.
  std::string sourceLine;

  /// Prints `file:line:col: error: message`, then the source line and a caret
  /// under the column when both are known.
  void print(llvm::raw_ostream &os) const;
};

/// An llvm::Error carrying one or more diagnostics (validators report every
/// problem in a file, not just the first).
class DiagnosticError : public llvm::ErrorInfo<DiagnosticError> {
public:
  static char ID;
  explicit DiagnosticError(std::vector<Diagnostic> diags)
      : diags(std::move(diags)) {}

  const std::vector<Diagnostic> &diagnostics() const { return diags; }
  void log(llvm::raw_ostream &os) const override;
  std::error_code convertToErrorCode() const override;

private:
  std::vector<Diagnostic> diags;
};

/// Collects diagnostics and turns them into an llvm::Error at the end.
class DiagnosticList {
public:
  void error(SourceLoc loc, std::string message, std::string sourceLine = {});
  void warning(SourceLoc loc, std::string message,
               std::string sourceLine = {});
  void add(Diagnostic d) { diags.push_back(std::move(d)); }
  bool hasErrors() const;
  bool empty() const { return diags.empty(); }
  const std::vector<Diagnostic> &all() const { return diags; }
  /// Error::success() when no diagnostic has severity Error; otherwise a
  /// DiagnosticError with every diagnostic (warnings included).
  llvm::Error takeError();

private:
  std::vector<Diagnostic> diags;
};

/// A plain user error without a source location ("what was expected").
llvm::Error makeUserError(const llvm::Twine &message);

/// An error with one located diagnostic.
llvm::Error makeDiagError(SourceLoc loc, const llvm::Twine &message,
                          llvm::StringRef sourceLine = {});

/// The messages of `err` as the user reads them, without locations or
/// severities, joined by `separator` (consumes the error).
std::string errorMessages(llvm::Error err, llvm::StringRef separator = "\n");

/// What a diagnostic shows of a source line: a window of at most `width`
/// bytes around column `col` ("..." where it is cut), non-text bytes as
/// \xNN, and the whitespace that puts a caret under the column.
struct SourceExcerpt {
  std::string text;
  std::string caretPad;
};
SourceExcerpt excerptAround(llvm::StringRef line, unsigned col,
                            unsigned width = 120);

/// Returns line `line` (1-based) of `text`, without its line terminator.
std::string sourceLineOf(llvm::StringRef text, unsigned line);

/// The candidate nearest to `word` by edit distance, or "" when none is
/// close enough to be a plausible typo. Used for "did you mean" hints.
std::string nearestMatch(llvm::StringRef word,
                         llvm::ArrayRef<llvm::StringRef> candidates);

/// An internal error: a bug in topocc, not in the user's input (exit code 2).
class InternalError : public llvm::ErrorInfo<InternalError> {
public:
  static char ID;
  explicit InternalError(std::string message) : message(std::move(message)) {}
  void log(llvm::raw_ostream &os) const override { os << message; }
  std::error_code convertToErrorCode() const override;
  const std::string &getMessage() const { return message; }

private:
  std::string message;
};

llvm::Error makeInternalError(const llvm::Twine &message);

} // namespace topocc

#endif // TOPOCC_SUPPORT_DIAGNOSTICS_H
