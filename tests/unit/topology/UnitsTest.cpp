//===- tests/unit/topology/UnitsTest.cpp - Quantities with units ----------===//

#include "compiler/topology/Units.h"

#include "gtest/gtest.h"

using namespace topocc::topo;

namespace {
double value(llvm::StringRef s, QuantityKind k) {
  auto q = parseQuantity(s, k, "bandwidth");
  if (!q) {
    ADD_FAILURE() << s.str() << ": " << llvm::toString(q.takeError());
    return -1;
  }
  return q->value;
}

std::string errorOf(llvm::StringRef s, QuantityKind k,
                    llvm::StringRef what = "bandwidth") {
  auto q = parseQuantity(s, k, what);
  if (q)
    return "(no error)";
  return llvm::toString(q.takeError());
}
} // namespace

TEST(UnitsTest, DecimalBitRates) {
  using K = QuantityKind;
  EXPECT_DOUBLE_EQ(value("8 b/s", K::Bandwidth), 1);
  EXPECT_DOUBLE_EQ(value("8 kb/s", K::Bandwidth), 1e3);
  EXPECT_DOUBLE_EQ(value("8 Mb/s", K::Bandwidth), 1e6);
  EXPECT_DOUBLE_EQ(value("400 Gb/s", K::Bandwidth), 50e9);
  EXPECT_DOUBLE_EQ(value("1 Tb/s", K::Bandwidth), 125e9);
}

TEST(UnitsTest, BitRateAliases) {
  using K = QuantityKind;
  EXPECT_DOUBLE_EQ(value("200 Gbps", K::Bandwidth), 25e9);
  EXPECT_DOUBLE_EQ(value("200 Gbit/s", K::Bandwidth), 25e9);
  EXPECT_DOUBLE_EQ(value("8 Mbps", K::Bandwidth), 1e6);
  EXPECT_DOUBLE_EQ(value("8 kbit/s", K::Bandwidth), 1e3);
  EXPECT_DOUBLE_EQ(value("8 bps", K::Bandwidth), 1);
  EXPECT_DOUBLE_EQ(value("1 Tbps", K::Bandwidth), 125e9);
}

TEST(UnitsTest, ByteRates) {
  using K = QuantityKind;
  EXPECT_DOUBLE_EQ(value("1 B/s", K::Bandwidth), 1);
  EXPECT_DOUBLE_EQ(value("1 kB/s", K::Bandwidth), 1e3);
  EXPECT_DOUBLE_EQ(value("1 MB/s", K::Bandwidth), 1e6);
  EXPECT_DOUBLE_EQ(value("25 GB/s", K::Bandwidth), 25e9);
  EXPECT_DOUBLE_EQ(value("2 TB/s", K::Bandwidth), 2e12);
  EXPECT_DOUBLE_EQ(value("1 KiB/s", K::Bandwidth), 1024);
  EXPECT_DOUBLE_EQ(value("1 MiB/s", K::Bandwidth), 1024.0 * 1024);
  EXPECT_DOUBLE_EQ(value("1 GiB/s", K::Bandwidth), 1024.0 * 1024 * 1024);
}

TEST(UnitsTest, TimesSizesFactors) {
  using K = QuantityKind;
  EXPECT_DOUBLE_EQ(value("5 ns", K::Time), 5e-9);
  EXPECT_DOUBLE_EQ(value("0.7 us", K::Time), 0.7e-6);
  EXPECT_DOUBLE_EQ(value("0.7 \xC2\xB5s", K::Time), 0.7e-6);
  EXPECT_DOUBLE_EQ(value("2 ms", K::Time), 2e-3);
  EXPECT_DOUBLE_EQ(value("1 s", K::Time), 1);
  EXPECT_DOUBLE_EQ(value("0 us", K::Time), 0);
  EXPECT_DOUBLE_EQ(value("3 B", K::Size), 3);
  EXPECT_DOUBLE_EQ(value("1 kB", K::Size), 1e3);
  EXPECT_DOUBLE_EQ(value("1 MB", K::Size), 1e6);
  EXPECT_DOUBLE_EQ(value("1 GB", K::Size), 1e9);
  EXPECT_DOUBLE_EQ(value("1 KiB", K::Size), 1024);
  EXPECT_DOUBLE_EQ(value("64 MiB", K::Size), 64.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(value("1 GiB", K::Size), 1024.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(value("2x", K::Factor), 2);
  EXPECT_DOUBLE_EQ(value("0.5x", K::Factor), 0.5);
  EXPECT_DOUBLE_EQ(value("1e3 MB/s", K::Bandwidth), 1e9);
  EXPECT_DOUBLE_EQ(value("25GB/s", K::Bandwidth), 25e9);
}

TEST(UnitsTest, EveryTableUnitParsesAndRoundTrips) {
  for (const UnitInfo &u : allUnits()) {
    std::string text = "3 " + u.name.str();
    if (u.kind == QuantityKind::Factor)
      text = "3x";
    auto q = parseQuantity(text, u.kind, "q");
    ASSERT_TRUE(static_cast<bool>(q)) << text;
    EXPECT_DOUBLE_EQ(q->value, 3 * u.toBase) << text;
    EXPECT_EQ(formatInUnit(q->value, u.name), text);
  }
}

TEST(UnitsTest, DeltasKeepTheirSign) {
  auto q = parseQuantity("+0.5 us", QuantityKind::Time, "latency");
  ASSERT_TRUE(static_cast<bool>(q));
  EXPECT_TRUE(q->hasSign);
  EXPECT_EQ(q->text(), "+0.5 us");
  auto n = parseQuantity("-10 Gb/s", QuantityKind::Bandwidth, "bandwidth");
  ASSERT_TRUE(static_cast<bool>(n));
  EXPECT_DOUBLE_EQ(n->value, -1.25e9);
  EXPECT_EQ(n->text(), "-10 Gb/s");
}

TEST(UnitsTest, NearMissesNameTheIntendedUnit) {
  using K = QuantityKind;
  EXPECT_EQ(errorOf("25 GBps", K::Bandwidth),
            "unknown unit 'GBps' in bandwidth; did you mean 'GB/s' (bytes) or "
            "'Gb/s' (bits)?");
  // A lowercase b reads as bits: the bit unit first.
  EXPECT_EQ(errorOf("25 gb/s", K::Bandwidth),
            "unknown unit 'gb/s' in bandwidth; did you mean 'Gb/s' (bits) or "
            "'GB/s' (bytes)?");
  EXPECT_EQ(errorOf("25 gbps", K::Bandwidth),
            "unknown unit 'gbps' in bandwidth; did you mean 'Gb/s' (bits) or "
            "'GB/s' (bytes)?");
  // Without "/s": the prefix and the b say which.
  EXPECT_EQ(errorOf("100 Gbs", K::Bandwidth),
            "unknown unit 'Gbs' in bandwidth; did you mean 'Gb/s' (bits) or "
            "'GB/s' (bytes)?");
  EXPECT_EQ(errorOf("100 Gb", K::Bandwidth),
            "unknown unit 'Gb' in bandwidth; did you mean 'Gb/s' (bits) or "
            "'GB/s' (bytes)?");
  EXPECT_EQ(errorOf("400 mb", K::Bandwidth),
            "unknown unit 'mb' in bandwidth; did you mean 'Mb/s' (bits) or "
            "'MB/s' (bytes)?");
  EXPECT_EQ(errorOf("25 GBs", K::Bandwidth),
            "unknown unit 'GBs' in bandwidth; did you mean 'GB/s' (bytes)?");
  EXPECT_EQ(errorOf("25 G", K::Bandwidth),
            "unknown unit 'G' in bandwidth; did you mean 'GB/s' (bytes) or "
            "'Gb/s' (bits)?");
  EXPECT_EQ(errorOf("25 gib/s", K::Bandwidth),
            "unknown unit 'gib/s' in bandwidth; did you mean 'GiB/s' (binary "
            "bytes)?");
  EXPECT_EQ(errorOf("1 usec", K::Time, "latency"),
            "unknown unit 'usec' in latency; did you mean 'us'?");
  EXPECT_EQ(errorOf("1 NS", K::Time, "latency"),
            "unknown unit 'NS' in latency; did you mean 'ns'?");
  EXPECT_EQ(errorOf("1 mib", K::Size, "size"),
            "unknown unit 'mib' in size; did you mean 'MiB' (binary bytes)?");
}

TEST(UnitsTest, WrongKindAndMissingUnit) {
  using K = QuantityKind;
  EXPECT_EQ(errorOf("25 GB", K::Bandwidth),
            "unit 'GB' is a size unit, but bandwidth needs a bandwidth; did "
            "you mean 'GB/s' (bytes)?");
  EXPECT_EQ(errorOf("25 us", K::Bandwidth),
            "unit 'us' is a time unit, but bandwidth needs a bandwidth such "
            "as '25 GB/s' or '200 Gb/s'");
  EXPECT_EQ(errorOf("25", K::Bandwidth),
            "bandwidth '25' has no unit; expected a bandwidth such as "
            "'25 GB/s' or '200 Gb/s'");
  EXPECT_EQ(errorOf("0.7", K::Time, "latency"),
            "latency '0.7' has no unit; expected a time such as '0.7 us'");
  EXPECT_EQ(errorOf("2", K::Factor, "bandwidth factor"),
            "bandwidth factor '2' has no unit; expected a factor such as '2x' "
            "or '0.5x'");
  EXPECT_EQ(errorOf("fast", K::Bandwidth),
            "expected a bandwidth such as '25 GB/s' or '200 Gb/s' for "
            "bandwidth, got 'fast'");
  EXPECT_EQ(errorOf("1 furlong", K::Time, "latency"),
            "unknown unit 'furlong' in latency; expected one of: ns, us, ms, "
            "s");
}

TEST(UnitsTest, FormatNumberIsShortAndExact) {
  EXPECT_EQ(formatNumber(25), "25");
  EXPECT_EQ(formatNumber(0.5), "0.5");
  EXPECT_EQ(formatNumber(62.5), "62.5");
  EXPECT_EQ(formatInUnit(50e9, "Gb/s"), "400 Gb/s");
  EXPECT_EQ(formatInUnit(2.5e10, "GB/s"), "25 GB/s");
}
