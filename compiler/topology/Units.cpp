//===- compiler/topology/Units.cpp - Quantities with units ----------------===//
//
// Unit table of docs/TopologyFormat.md, "Units", and the near-miss hints.
//
//===----------------------------------------------------------------------===//

#include "compiler/topology/Units.h"

#include "support/ByteSize.h"
#include "support/Diagnostics.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace topocc::topo {

namespace {
using QK = QuantityKind;
constexpr double kKi = 1024.0;

// Primary spellings first (in the order hints list them: bytes before bits),
// then aliases.
const UnitInfo kUnits[] = {
    {"B/s", QK::Bandwidth, 1, "B/s", "bytes"},
    {"kB/s", QK::Bandwidth, 1e3, "kB/s", "bytes"},
    {"MB/s", QK::Bandwidth, 1e6, "MB/s", "bytes"},
    {"GB/s", QK::Bandwidth, 1e9, "GB/s", "bytes"},
    {"TB/s", QK::Bandwidth, 1e12, "TB/s", "bytes"},
    {"b/s", QK::Bandwidth, 1.0 / 8, "b/s", "bits"},
    {"kb/s", QK::Bandwidth, 1e3 / 8, "kb/s", "bits"},
    {"Mb/s", QK::Bandwidth, 1e6 / 8, "Mb/s", "bits"},
    {"Gb/s", QK::Bandwidth, 1e9 / 8, "Gb/s", "bits"},
    {"Tb/s", QK::Bandwidth, 1e12 / 8, "Tb/s", "bits"},
    {"KiB/s", QK::Bandwidth, kKi, "KiB/s", "binary bytes"},
    {"MiB/s", QK::Bandwidth, kKi * kKi, "MiB/s", "binary bytes"},
    {"GiB/s", QK::Bandwidth, kKi * kKi * kKi, "GiB/s", "binary bytes"},
    {"ns", QK::Time, 1e-9, "ns", ""},
    {"us", QK::Time, 1e-6, "us", ""},
    {"\xC2\xB5s", QK::Time, 1e-6, "\xC2\xB5s", ""},
    {"ms", QK::Time, 1e-3, "ms", ""},
    {"s", QK::Time, 1, "s", ""},
    {"B", QK::Size, 1, "B", "bytes"},
    {"kB", QK::Size, 1e3, "kB", "bytes"},
    {"MB", QK::Size, 1e6, "MB", "bytes"},
    {"GB", QK::Size, 1e9, "GB", "bytes"},
    {"KiB", QK::Size, kKi, "KiB", "binary bytes"},
    {"MiB", QK::Size, kKi * kKi, "MiB", "binary bytes"},
    {"GiB", QK::Size, kKi * kKi * kKi, "GiB", "binary bytes"},
    {"x", QK::Factor, 1, "x", ""},
    // Aliases of the decimal bit rates.
    {"bps", QK::Bandwidth, 1.0 / 8, "b/s", "bits"},
    {"kbps", QK::Bandwidth, 1e3 / 8, "kb/s", "bits"},
    {"Mbps", QK::Bandwidth, 1e6 / 8, "Mb/s", "bits"},
    {"Gbps", QK::Bandwidth, 1e9 / 8, "Gb/s", "bits"},
    {"Tbps", QK::Bandwidth, 1e12 / 8, "Tb/s", "bits"},
    {"bit/s", QK::Bandwidth, 1.0 / 8, "b/s", "bits"},
    {"kbit/s", QK::Bandwidth, 1e3 / 8, "kb/s", "bits"},
    {"Mbit/s", QK::Bandwidth, 1e6 / 8, "Mb/s", "bits"},
    {"Gbit/s", QK::Bandwidth, 1e9 / 8, "Gb/s", "bits"},
    {"Tbit/s", QK::Bandwidth, 1e12 / 8, "Tb/s", "bits"},
};

bool isPrimary(const UnitInfo &u) { return u.name == u.canonical; }

// Folds the spellings people confuse: case, "ps" for "/s", "bit" for "b",
// "sec" for "s", "u" for the micro sign.
std::string normalizeUnit(llvm::StringRef unit) {
  std::string s = unit.str();
  if (llvm::StringRef(s).startswith("\xC2\xB5"))
    s = "u" + s.substr(2);
  s = llvm::StringRef(s).lower();
  llvm::StringRef r(s);
  std::string out;
  if (r.endswith("ps") && r.size() > 2)
    out = r.drop_back(2).str() + "/s";
  else if (r.endswith("/sec"))
    out = r.drop_back(4).str() + "/s";
  else if (r.endswith("sec"))
    out = r.drop_back(3).str() + "s";
  else
    out = r.str();
  for (const char *word : {"bits/", "bit/", "bytes/", "byte/"}) {
    size_t pos = out.find(word);
    if (pos != std::string::npos) {
      bool bytes = word[1] == 'y';
      out = out.substr(0, pos) + (bytes ? "B/" : "b/") +
            out.substr(pos + strlen(word));
      // Bytes stay distinguishable after folding case below.
      out = llvm::StringRef(out).lower();
      if (bytes)
        out += "#bytes";
      break;
    }
  }
  return out;
}

std::string quoteUnit(const UnitInfo &u) {
  std::string s = "'" + u.name.str() + "'";
  if (!u.desc.empty())
    s += " (" + u.desc.str() + ")";
  return s;
}

std::string example(QuantityKind kind) {
  switch (kind) {
  case QK::Bandwidth:
    return "a bandwidth such as '25 GB/s' or '200 Gb/s'";
  case QK::Time:
    return "a time such as '0.7 us'";
  case QK::Size:
    return "a size such as '64 MiB'";
  case QK::Factor:
    return "a factor such as '2x' or '0.5x'";
  }
  llvm_unreachable("unknown quantity kind");
}

/// The bandwidth units a prefix-and-b spelling without "/s" means, most
/// likely first: "Gbs" and "Gb" give Gb/s then GB/s, "GBs" gives GB/s, and
/// "G" both, bytes first.
llvm::SmallVector<const UnitInfo *, 4> rateUnitsFor(llvm::StringRef unit) {
  llvm::SmallVector<const UnitInfo *, 4> out;
  size_t b = unit.find_first_of("bB");
  llvm::StringRef prefix = unit.take_front(b);
  llvm::StringRef rest = b == llvm::StringRef::npos ? "" : unit.substr(b + 1);
  if (rest != "" && rest != "s")
    return out;
  std::string p;
  if (prefix == "k" || prefix == "K")
    p = "k";
  else if (prefix.size() == 1 && llvm::StringRef("mgtMGT").contains(prefix[0]))
    p = std::string(1, llvm::toUpper(prefix[0]));
  else if (!prefix.empty() || b == llvm::StringRef::npos)
    return out;
  const UnitInfo *bits = findUnit(p + "b/s");
  const UnitInfo *bytes = findUnit(p + "B/s");
  if (b == llvm::StringRef::npos) {
    out = {bytes, bits};
  } else if (unit[b] == 'b') {
    out = {bits, bytes};
  } else {
    out = {bytes};
  }
  return out;
}

std::string unitHint(llvm::StringRef unit, QuantityKind kind) {
  // 1. Same unit up to case and spelling ("gb/s", "GBps").
  std::string norm = normalizeUnit(unit);
  llvm::SmallVector<const UnitInfo *, 4> same;
  for (const UnitInfo &u : kUnits) {
    if (u.kind != kind || !isPrimary(u))
      continue;
    std::string un = llvm::StringRef(u.name).lower();
    bool bytesOnly = llvm::StringRef(norm).endswith("#bytes");
    llvm::StringRef n = llvm::StringRef(norm);
    if (bytesOnly)
      n = n.drop_back(6);
    if (un == n && (!bytesOnly || u.desc != "bits"))
      same.push_back(&u);
  }
  // A lowercase 'b' is what people write for bits ("gbps", "gb/s"): the bit
  // unit comes first then; an uppercase 'B' keeps the bytes first.
  if (kind == QK::Bandwidth && unit.contains('b') && !unit.contains('B'))
    std::stable_partition(same.begin(), same.end(), [](const UnitInfo *u) {
      return u->desc == "bits";
    });
  // 1b. A rate prefix and 'b' or 'B' without "/s" ("100 Gbs", "100 Gb"), or
  // a bare prefix ("100 G"), which says neither bits nor bytes.
  if (same.empty() && kind == QK::Bandwidth)
    same = rateUnitsFor(unit);
  if (!same.empty()) {
    std::string s = "; did you mean ";
    for (size_t i = 0; i < same.size(); ++i) {
      if (i)
        s += i + 1 == same.size() ? " or " : ", ";
      s += quoteUnit(*same[i]);
    }
    return s + "?";
  }
  // 2. Edit distance among the units of this kind.
  llvm::SmallVector<llvm::StringRef, 16> names;
  for (const UnitInfo &u : kUnits)
    if (u.kind == kind && isPrimary(u) && u.name != "\xC2\xB5s")
      names.push_back(u.name);
  std::string near = nearestMatch(unit, names);
  if (!near.empty())
    return "; did you mean " + quoteUnit(*findUnit(near)) + "?";
  std::string s = "; expected one of: ";
  for (size_t i = 0; i < names.size(); ++i)
    s += (i ? ", " : "") + names[i].str();
  return s;
}

} // namespace

llvm::ArrayRef<UnitInfo> allUnits() { return kUnits; }

const UnitInfo *findUnit(llvm::StringRef name) {
  for (const UnitInfo &u : kUnits)
    if (u.name == name)
      return &u;
  return nullptr;
}

llvm::StringRef quantityKindName(QuantityKind kind) {
  switch (kind) {
  case QK::Bandwidth:
    return "bandwidth";
  case QK::Time:
    return "time";
  case QK::Size:
    return "size";
  case QK::Factor:
    return "factor";
  }
  llvm_unreachable("unknown quantity kind");
}

std::string Quantity::text() const {
  std::string n = formatNumber(number);
  if (hasSign && number >= 0)
    n = "+" + n;
  if (unit == "x")
    return n + "x";
  return n + " " + unit;
}

std::string formatNumber(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string formatInUnit(double baseValue, llvm::StringRef unit) {
  if (unit == "x")
    return formatNumber(baseValue) + "x";
  const UnitInfo *u = findUnit(unit);
  assert(u && "formatInUnit needs a known unit");
  return formatNumber(baseValue / u->toBase) + " " + unit.str();
}

llvm::Expected<Quantity> parseQuantity(llvm::StringRef text, QuantityKind kind,
                                       llvm::StringRef what) {
  auto fail = [](const llvm::Twine &msg) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
  };
  llvm::StringRef s = text.trim();
  // Number: [+-]? digits [. digits] ([eE] [+-]? digits)?
  size_t i = 0;
  bool hasSign = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
    hasSign = true;
    ++i;
  }
  size_t digits = 0;
  while (i < s.size() && llvm::isDigit(s[i]))
    ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && llvm::isDigit(s[i]))
      ++i, ++digits;
  }
  if (digits == 0)
    return fail("expected " + example(kind) + " for " + what + ", got '" + s +
                "'");
  i = skipDecimalExponent(s, i);
  std::string numText = s.substr(0, i).str();
  double number = std::strtod(numText.c_str(), nullptr);
  if (!std::isfinite(number))
    return fail(what + " '" + s + "' is out of range");
  llvm::StringRef unit = s.substr(i).trim();
  if (unit.empty())
    return fail(what + " '" + s + "' has no unit; expected " + example(kind));
  const UnitInfo *u = findUnit(unit);
  if (!u)
    return fail("unknown unit '" + unit + "' in " + what +
                unitHint(unit, kind));
  if (u->kind != kind) {
    std::string msg = "unit '" + unit.str() + "' is a " +
                      quantityKindName(u->kind).str() + " unit, but " +
                      what.str() + " needs " + example(kind);
    if (kind == QK::Bandwidth && u->kind == QK::Size)
      if (const UnitInfo *b = findUnit(unit.str() + "/s"))
        msg = "unit '" + unit.str() + "' is a size unit, but " + what.str() +
              " needs a bandwidth; did you mean " + quoteUnit(*b) + "?";
    return fail(msg);
  }
  Quantity q;
  q.number = number;
  q.unit = unit.str();
  q.hasSign = hasSign;
  q.value = number * u->toBase;
  if (!std::isfinite(q.value))
    return fail(what + " '" + s + "' is out of range");
  return q;
}

} // namespace topocc::topo
