//===- support/Diagnostics.cpp - User-facing diagnostics ------------------===//

#include "support/Diagnostics.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/ConvertUTF.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

namespace topocc {

char DiagnosticError::ID = 0;
char InternalError::ID = 0;

static llvm::StringRef severityName(Severity s) {
  switch (s) {
  case Severity::Error:
    return "error";
  case Severity::Warning:
    return "warning";
  case Severity::Note:
    return "note";
  }
  llvm_unreachable("unknown severity");
}

void Diagnostic::print(llvm::raw_ostream &os) const {
  if (!loc.file.empty()) {
    os << loc.file << ':';
    if (loc.line) {
      os << loc.line << ':';
      if (loc.col)
        os << loc.col << ':';
    }
    os << ' ';
  }
  os << severityName(severity) << ": " << message << '\n';
  if (!sourceLine.empty() && loc.col) {
    SourceExcerpt e = excerptAround(sourceLine, loc.col);
    os << e.text << '\n' << e.caretPad << "^\n";
  }
}

SourceExcerpt excerptAround(llvm::StringRef line, unsigned col,
                            unsigned width) {
  // The window of at most `width` bytes around the caret, on UTF-8
  // character boundaries.
  size_t caret = col ? std::min<size_t>(col - 1, line.size()) : 0;
  size_t begin = 0, end = line.size();
  if (line.size() > width) {
    begin = caret > width / 2 ? caret - width / 2 : 0;
    end = std::min(line.size(), begin + width);
    begin = end - std::min<size_t>(width, end);
    auto continuation = [&](size_t i) {
      return i < line.size() && (static_cast<unsigned char>(line[i]) & 0xC0) ==
                                    0x80;
    };
    while (begin < caret && continuation(begin))
      ++begin;
    while (end > caret && continuation(end))
      --end;
  }
  llvm::StringRef window = line.slice(begin, end);
  // Bytes that are not text (control characters; high bytes outside valid
  // UTF-8, as in a binary file) are shown as \xNN.
  const auto *first = reinterpret_cast<const llvm::UTF8 *>(window.begin());
  const bool utf8 = llvm::isLegalUTF8String(
      &first, reinterpret_cast<const llvm::UTF8 *>(window.end()));
  SourceExcerpt out;
  if (begin > 0) {
    out.text = "...";
    out.caretPad = "   ";
  }
  for (size_t i = begin; i < end; ++i) {
    unsigned char c = static_cast<unsigned char>(line[i]);
    std::string shown;
    if (c == '\t')
      shown = "\t";
    else if (c < 0x20 || c == 0x7F || (c >= 0x80 && !utf8))
      shown = llvm::formatv("\\x{0:X-2}", static_cast<unsigned>(c)).str();
    else
      shown = std::string(1, static_cast<char>(c));
    out.text += shown;
    if (i < caret) {
      // Tabs stay tabs so the caret lines up; a UTF-8 character counts once.
      if (c == '\t')
        out.caretPad += '\t';
      else if (!(utf8 && (c & 0xC0) == 0x80))
        out.caretPad += std::string(shown.size(), ' ');
    }
  }
  if (end < line.size())
    out.text += "...";
  return out;
}

void DiagnosticError::log(llvm::raw_ostream &os) const {
  for (const Diagnostic &d : diags)
    d.print(os);
}

std::error_code DiagnosticError::convertToErrorCode() const {
  return llvm::inconvertibleErrorCode();
}

std::error_code InternalError::convertToErrorCode() const {
  return llvm::inconvertibleErrorCode();
}

void DiagnosticList::error(SourceLoc loc, std::string message,
                           std::string sourceLine) {
  diags.push_back(
      {Severity::Error, std::move(loc), std::move(message), std::move(sourceLine)});
}

void DiagnosticList::warning(SourceLoc loc, std::string message,
                             std::string sourceLine) {
  diags.push_back({Severity::Warning, std::move(loc), std::move(message),
                   std::move(sourceLine)});
}

bool DiagnosticList::hasErrors() const {
  for (const Diagnostic &d : diags)
    if (d.severity == Severity::Error)
      return true;
  return false;
}

llvm::Error DiagnosticList::takeError() {
  if (!hasErrors())
    return llvm::Error::success();
  auto err = llvm::make_error<DiagnosticError>(std::move(diags));
  diags.clear();
  return err;
}

llvm::Error makeUserError(const llvm::Twine &message) {
  return llvm::make_error<DiagnosticError>(
      std::vector<Diagnostic>{{Severity::Error, {}, message.str(), {}}});
}

std::string errorMessages(llvm::Error err, llvm::StringRef separator) {
  std::string text;
  llvm::handleAllErrors(
      std::move(err),
      [&](const DiagnosticError &d) {
        for (const Diagnostic &diag : d.diagnostics())
          text += (text.empty() ? "" : separator.str()) + diag.message;
      },
      [&](const llvm::ErrorInfoBase &b) { text += b.message(); });
  return text;
}

llvm::Error makeDiagError(SourceLoc loc, const llvm::Twine &message,
                          llvm::StringRef sourceLine) {
  return llvm::make_error<DiagnosticError>(std::vector<Diagnostic>{
      {Severity::Error, std::move(loc), message.str(), sourceLine.str()}});
}

llvm::Error makeInternalError(const llvm::Twine &message) {
  return llvm::make_error<InternalError>(message.str());
}

std::string sourceLineOf(llvm::StringRef text, unsigned line) {
  if (line == 0)
    return {};
  unsigned current = 1;
  size_t pos = 0;
  while (current < line) {
    size_t nl = text.find('\n', pos);
    if (nl == llvm::StringRef::npos)
      return {};
    pos = nl + 1;
    ++current;
  }
  llvm::StringRef rest = text.substr(pos);
  llvm::StringRef lineText = rest.take_until([](char c) { return c == '\n'; });
  return lineText.rtrim("\r").str();
}

/// Optimal string alignment distance (edits and adjacent transpositions),
/// case-insensitive: "nmae" is one edit from "name".
static unsigned typoDistance(llvm::StringRef a, llvm::StringRef b) {
  std::string x = a.lower(), y = b.lower();
  size_t n = x.size(), m = y.size();
  std::vector<std::vector<unsigned>> d(n + 1, std::vector<unsigned>(m + 1));
  for (size_t i = 0; i <= n; ++i)
    d[i][0] = i;
  for (size_t j = 0; j <= m; ++j)
    d[0][j] = j;
  for (size_t i = 1; i <= n; ++i)
    for (size_t j = 1; j <= m; ++j) {
      unsigned cost = x[i - 1] == y[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1,
                          d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && x[i - 1] == y[j - 2] && x[i - 2] == y[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[n][m];
}

std::string nearestMatch(llvm::StringRef word,
                         llvm::ArrayRef<llvm::StringRef> candidates) {
  std::string best;
  unsigned bestDist = ~0u;
  for (llvm::StringRef c : candidates) {
    // Long words cannot be typos of each other; skip the quadratic work.
    if (word.size() > 64 || c.size() > 64)
      continue;
    unsigned d = typoDistance(word, c);
    if (d < bestDist) {
      bestDist = d;
      best = c.str();
    }
  }
  // Plausible typo: at most 3 edits and at most a third of the longer word
  // (rounded up).
  size_t len = std::max(word.size(), best.size());
  if (best.empty() || bestDist > 3 || bestDist * 3 > len + 2)
    return {};
  return best;
}

} // namespace topocc
