//===- tests/unit/support/ByteSizeTest.cpp --------------------------------===//
//
// support/ByteSize: every spelling of docs/CLI.md's "Sizes" (B, K/KB/KiB,
// ... in any case, blanks, fractions, exponents), what is refused (nothing,
// signs, junk, non-finite and 2^64 bytes or more), whole byte counts, the
// option errors and the nccl-tests ranges.
//
//===----------------------------------------------------------------------===//

#include "support/ByteSize.h"
#include "support/Diagnostics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <initializer_list>
#include <string>
#include <vector>

using namespace topocc;

namespace {

constexpr double kKi = 1024.0;

double bytes(llvm::StringRef text) {
  std::optional<double> v = readByteSize(text);
  return v ? *v : -1;
}

std::string errorOf(llvm::Error e) { return errorMessages(std::move(e)); }

TEST(ByteSizeTest, PlainNumbersAreBytes) {
  EXPECT_EQ(bytes("512"), 512);
  EXPECT_EQ(bytes("1048576"), 1048576);
  EXPECT_EQ(bytes("1.5"), 1.5);
  EXPECT_EQ(bytes("0.5"), 0.5);
  EXPECT_EQ(bytes(".5"), 0.5);
  EXPECT_EQ(bytes("2."), 2);
  EXPECT_EQ(bytes("1e6"), 1e6);
  EXPECT_EQ(bytes("1E3"), 1000);
  EXPECT_EQ(bytes("2.5e+3"), 2500);
  EXPECT_EQ(bytes("25e-1"), 2.5);
  EXPECT_EQ(bytes("+64"), 64);
  EXPECT_EQ(bytes("512B"), 512);
  EXPECT_EQ(bytes("512b"), 512);
  EXPECT_EQ(bytes("512 B"), 512);
}

TEST(ByteSizeTest, EverySpellingOfAPrefixIsBinary) {
  const struct {
    const char *prefix;
    double value;
  } prefixes[] = {{"K", kKi},
                  {"M", kKi * kKi},
                  {"G", kKi * kKi * kKi},
                  {"T", kKi * kKi * kKi * kKi}};
  for (const auto &p : prefixes) {
    std::string up = p.prefix, low = llvm::StringRef(up).lower();
    for (const std::string &unit :
         {up, low, up + "B", up + "b", low + "b", low + "B", up + "iB",
          low + "ib", up + "IB", low + "iB"})
      for (const char *blank : {"", " ", "  ", "\t"}) {
        std::string text = "64" + std::string(blank) + unit;
        EXPECT_EQ(bytes(text), 64 * p.value) << text;
      }
  }
  EXPECT_EQ(bytes("64M"), 67108864);
  EXPECT_EQ(bytes("64MB"), 67108864);
  EXPECT_EQ(bytes("64MiB"), 67108864);
  EXPECT_EQ(bytes("1.5K"), 1536);
  EXPECT_EQ(bytes("0.5G"), 536870912);
  EXPECT_EQ(bytes("1e3K"), 1024000);
  EXPECT_EQ(bytes("  1 GiB \n"), kKi * kKi * kKi);
}

void expectRefused(std::initializer_list<const char *> texts) {
  for (const char *text : texts)
    EXPECT_FALSE(readByteSize(text).has_value()) << "'" << text << "'";
}

TEST(ByteSizeTest, RefusesWhatIsNotAPositiveSize) {
  // No number.
  expectRefused({"", " ", "B", "K", "MiB", "iB", "+", ".", "e3"});
  // Not positive, or not finite.
  expectRefused({"-64M", "-1", "0", "0K", "0.0", "1e-400", "inf", "nan"});
  // Not a decimal number.
  expectRefused({"1e", "1e+", "1E", "1,5K", "1_000", "0x10", "0x1p4"});
  // Not a unit, or something after it.
  expectRefused({"64X", "12Q", "64MX", "64MiBs", "64 bytes", "64Ki", "64i"});
  expectRefused({"64iB", "64BB", "64KK", "64P", "64 K B", "64K B", "64 M,"});
  expectRefused({"64M junk", "1K:8K"});
  // 2^64 bytes or more.
  expectRefused({"1e400", "1e400K", "99999999999T", "16777216T"});
}

TEST(ByteSizeTest, BelowTwoToThe64Bytes) {
  EXPECT_EQ(bytes("16777215T"), std::ldexp(16777215.0, 40));
  EXPECT_EQ(bytes("16777216T"), -1); // 2^64 bytes
  EXPECT_EQ(bytes("1.8e19"), 1.8e19);
  EXPECT_EQ(bytes("1.9e19"), -1);
}

TEST(ByteSizeTest, ByteCountsAreWhole) {
  EXPECT_EQ(readByteCount("8"), 8u);
  EXPECT_EQ(readByteCount("256M"), uint64_t(256) << 20);
  EXPECT_EQ(readByteCount("1.5K"), 1536u);
  EXPECT_EQ(readByteCount("16777215T"), uint64_t(16777215) << 40);
  EXPECT_EQ(readByteCount("1.3"), std::nullopt);
  EXPECT_EQ(readByteCount("0.5"), std::nullopt);
  EXPECT_EQ(readByteCount("0"), std::nullopt);
  EXPECT_EQ(readByteCount("16777216T"), std::nullopt);
  EXPECT_EQ(readByteCount("junk"), std::nullopt);
}

TEST(ByteSizeTest, OptionErrorsNameTheOption) {
  auto ok = parseByteSize("64MiB", "--size");
  ASSERT_TRUE(bool(ok));
  EXPECT_EQ(*ok, 67108864);
  EXPECT_EQ(errorOf(parseByteSize(" 12Q", "--size").takeError()),
            "invalid --size ' 12Q' (expected a positive number with an "
            "optional K, M or G suffix, powers of 1024: 64M, 1G)");
  EXPECT_EQ(errorOf(parseByteSize("0", "-s").takeError()),
            "invalid -s '0' (expected a positive number with an "
            "optional K, M or G suffix, powers of 1024: 64M, 1G)");
}

std::vector<double> ranges(llvm::StringRef text) {
  auto v = parseByteSizeRanges(text, "--sizes");
  if (!v) {
    llvm::consumeError(v.takeError());
    return {-1};
  }
  return *v;
}

TEST(ByteSizeTest, RangesSweepLikeNcclTests) {
  EXPECT_EQ(ranges("64M"), (std::vector<double>{64 * kKi * kKi}));
  EXPECT_EQ(ranges("1K:8K"), (std::vector<double>{1024, 2048, 4096, 8192}));
  EXPECT_EQ(ranges("1KiB:8kb"), ranges("1K:8K"));
  EXPECT_EQ(ranges("1K:16K:4"), (std::vector<double>{1024, 4096, 16384}));
  EXPECT_EQ(ranges("1K:10K:4"), (std::vector<double>{1024, 4096}));
  // Sorted, without duplicates.
  EXPECT_EQ(ranges("4K,1K:2K,1KB"), (std::vector<double>{1024, 2048, 4096}));
  EXPECT_EQ(ranges("1T:2T"),
            (std::vector<double>{std::ldexp(1.0, 40), std::ldexp(1.0, 41)}));
}

TEST(ByteSizeTest, RangeErrorsQuoteTheOption) {
  auto err = [](llvm::StringRef text) {
    auto v = parseByteSizeRanges(text, "--sizes");
    return v ? std::string("(ok)") : errorOf(v.takeError());
  };
  EXPECT_EQ(err("1K:8X"),
            "invalid size '8X' in --sizes '1K:8X' (expected a positive "
            "number with an optional K, M or G suffix, powers of 1024: 64M, "
            "1G)");
  EXPECT_EQ(err("1K,,2K").substr(0, 28), "invalid size '' in --sizes '");
  EXPECT_EQ(err("1K:2K:2:2"), "invalid --sizes '1K:2K:2:2' (expected "
                              "SIZE, MIN:MAX or MIN:MAX:FACTOR)");
  EXPECT_EQ(err("1K:8K:1"), "invalid factor '1' in --sizes '1K:8K:1' "
                            "(expected a number greater than 1)");
  EXPECT_EQ(err("8K:1K"),
            "--sizes '8K:1K': the largest size is below the smallest");
  EXPECT_EQ(err("1:1e6:1.001"),
            "--sizes '1:1e6:1.001' gives more than 4096 sizes");
}

} // namespace
