//===- support/ByteSize.cpp - Byte sizes of the command line --------------===//

#include "support/ByteSize.h"

#include "support/Diagnostics.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>

namespace topocc {

namespace {

/// The bytes one unit stands for (lower-cased: "", "b", "k", "kb", "kib",
/// ..., "tib"); 0 when it is none.
double unitBytes(llvm::StringRef unit) {
  if (unit.empty() || unit == "b")
    return 1;
  int power = 0;
  switch (unit.front()) {
  case 'k':
    power = 1;
    break;
  case 'm':
    power = 2;
    break;
  case 'g':
    power = 3;
    break;
  case 't':
    power = 4;
    break;
  default:
    return 0;
  }
  llvm::StringRef rest = unit.drop_front();
  if (!rest.empty() && rest != "b" && rest != "ib")
    return 0;
  return std::ldexp(1.0, 10 * power);
}

/// The length of the decimal number at the start of `s` ([+] digits [.
/// digits] [e [+-] digits], at least one digit before the exponent); 0 when
/// there is none.
size_t numberLength(llvm::StringRef s) {
  size_t i = 0, digits = 0;
  if (i < s.size() && s[i] == '+')
    ++i;
  for (; i < s.size() && llvm::isDigit(s[i]); ++i)
    ++digits;
  if (i < s.size() && s[i] == '.')
    for (++i; i < s.size() && llvm::isDigit(s[i]); ++i)
      ++digits;
  if (digits == 0)
    return 0;
  return skipDecimalExponent(s, i);
}

} // namespace

size_t skipDecimalExponent(llvm::StringRef s, size_t i) {
  if (i >= s.size() || (s[i] != 'e' && s[i] != 'E'))
    return i;
  size_t j = i + 1;
  if (j < s.size() && (s[j] == '+' || s[j] == '-'))
    ++j;
  if (j >= s.size() || !llvm::isDigit(s[j]))
    return i;
  while (j < s.size() && llvm::isDigit(s[j]))
    ++j;
  return j;
}

std::optional<double> readByteSize(llvm::StringRef text) {
  llvm::StringRef s = text.trim();
  size_t n = numberLength(s);
  if (n == 0)
    return std::nullopt;
  double mult = unitBytes(s.drop_front(n).ltrim().lower());
  double v;
  // getAsDouble fails on overflow ("1e400"); the digits are checked above.
  if (mult == 0 || s.take_front(n).getAsDouble(v))
    return std::nullopt;
  v *= mult;
  if (!(v > 0) || !(v < std::ldexp(1.0, 64)))
    return std::nullopt;
  return v;
}

std::optional<uint64_t> readByteCount(llvm::StringRef text) {
  std::optional<double> v = readByteSize(text);
  if (!v || *v != std::floor(*v))
    return std::nullopt;
  return static_cast<uint64_t>(*v);
}

llvm::Expected<double> parseByteSize(llvm::StringRef text,
                                     llvm::StringRef what) {
  if (std::optional<double> v = readByteSize(text))
    return *v;
  return makeUserError("invalid " + what + " '" + text +
                       "' (expected a positive number with an optional K, M "
                       "or G suffix, powers of 1024: 64M, 1G)");
}

llvm::Expected<std::vector<double>> parseByteSizeRanges(llvm::StringRef text,
                                                        llvm::StringRef what) {
  auto size = [&](llvm::StringRef item) -> llvm::Expected<double> {
    if (std::optional<double> v = readByteSize(item))
      return *v;
    return makeUserError("invalid size '" + item + "' in " + what + " '" +
                         text +
                         "' (expected a positive number with an optional K, "
                         "M or G suffix, powers of 1024: 64M, 1G)");
  };
  std::vector<double> out;
  llvm::SmallVector<llvm::StringRef, 4> items;
  text.split(items, ',');
  for (llvm::StringRef item : items) {
    llvm::SmallVector<llvm::StringRef, 3> parts;
    item.split(parts, ':');
    if (parts.size() > 3)
      return makeUserError("invalid " + what + " '" + text +
                           "' (expected SIZE, MIN:MAX or MIN:MAX:FACTOR)");
    auto lo = size(parts[0]);
    if (!lo)
      return lo.takeError();
    if (parts.size() == 1) {
      out.push_back(*lo);
      continue;
    }
    auto hi = size(parts[1]);
    if (!hi)
      return hi.takeError();
    double factor = 2;
    if (parts.size() == 3 &&
        (parts[2].trim().getAsDouble(factor) || !(factor > 1)))
      return makeUserError("invalid factor '" + parts[2] + "' in " + what +
                           " '" + text +
                           "' (expected a number greater than 1)");
    if (*hi < *lo)
      return makeUserError(what + " '" + text +
                           "': the largest size is below the smallest");
    for (double v = *lo; v <= *hi * (1 + 1e-12); v *= factor) {
      out.push_back(v);
      if (out.size() > 4096)
        return makeUserError(what + " '" + text +
                             "' gives more than 4096 sizes");
    }
  }
  llvm::sort(out);
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string plainNumber(double v) {
  std::string s = llvm::formatv("{0:F3}", v).str();
  while (!s.empty() && s.back() == '0')
    s.pop_back();
  if (!s.empty() && s.back() == '.')
    s.pop_back();
  return s;
}

std::string sizeText(double b) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  return plainNumber(b) + " " + units[u];
}

} // namespace topocc
