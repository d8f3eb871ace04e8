//===- tests/unit/runtime/DTypeTest.cpp -----------------------------------===//
//
// fp16 and bf16 conversions (every fp16 value round-trips; rounding to
// nearest even) and the axpby kernel with aliasing and coefficients.
//
//===----------------------------------------------------------------------===//

#include "runtime/DType.h"
#include "runtime/Interpreter.h"

#include "gtest/gtest.h"

#include <cmath>
#include <vector>

using namespace topocc::runtime;

TEST(DType, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = halfToFloat(uint16_t(h));
    if (std::isnan(f))
      continue;
    ASSERT_EQ(floatToHalf(f), h) << std::hex << h;
  }
}

TEST(DType, HalfRoundsToNearestEven) {
  EXPECT_EQ(halfToFloat(floatToHalf(1.0f + 1.0f / 2048)), 1.0f); // tie: even
  EXPECT_EQ(halfToFloat(floatToHalf(1.0f + 3.0f / 2048)),
            1.0f + 4.0f / 2048); // tie: up to even
  EXPECT_EQ(halfToFloat(floatToHalf(65504.0f)), 65504.0f);
  EXPECT_TRUE(std::isinf(halfToFloat(floatToHalf(65520.0f))));
  EXPECT_EQ(halfToFloat(floatToHalf(5.960464477539063e-08f)),
            5.960464477539063e-08f); // smallest subnormal
}

TEST(DType, Bfloat16) {
  EXPECT_EQ(bf16ToFloat(floatToBf16(1.0f)), 1.0f);
  EXPECT_EQ(bf16ToFloat(floatToBf16(1.0f + 1.0f / 256)), 1.0f); // tie: even
  EXPECT_EQ(bf16ToFloat(floatToBf16(1.0f + 3.0f / 256)), 1.0f + 4.0f / 256);
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(NAN))));
}

TEST(DType, AxpbyAliasesAndCoefficients) {
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    size_t n = 1500; // more than one 512-element block of the 16-bit path
    std::vector<char> x(n * 4), y(n * 4);
    for (size_t i = 0; i < n; ++i) {
      storeElement(x.data(), i, t, float(i % 9));
      storeElement(y.data(), i, t, float(i % 5));
    }
    axpby(y.data(), 1.0, x.data(), 1.0, y.data(), n, t); // y += x
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(loadElement(y.data(), i, t), float(i % 9 + i % 5));
    axpby(y.data(), 2.0, x.data(), -1.0, y.data(), n, t); // y = 2x - y
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(loadElement(y.data(), i, t), float(i % 9) - float(i % 5));
    scaleCopy(x.data(), 0.5, x.data(), n, t);
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(loadElement(x.data(), i, t), float(i % 9) / 2);
  }
}

TEST(DType, UnitRoundoffAndTheCodedBound) {
  EXPECT_EQ(unitRoundoff(DType::F32), 0x1p-24);
  EXPECT_EQ(unitRoundoff(DType::F16), 0x1p-11);
  EXPECT_EQ(unitRoundoff(DType::BF16), 0x1p-8);
  // Every fp32 value v has |fl(v) - v| <= u |v|.
  double v = 1.0 / 3.0;
  EXPECT_LE(std::fabs(double(float(v)) - v), unitRoundoff(DType::F32) * v);
  topocc::backends::PlanMeta m;
  EXPECT_EQ(valueErrorBound(m, DType::F32), 0.0); // exact plan
  m.errorBound = 1e-3;
  m.roundoffGain = {1e4, 3e2, 2e1};
  m.roundoffGainWorst = {2e4, 6e2, 4e1};
  EXPECT_DOUBLE_EQ(valueErrorBound(m, DType::F32), 1e-3 + 1e4 * 0x1p-24);
  EXPECT_DOUBLE_EQ(valueErrorBound(m, DType::F16), 1e-3 + 3e2 * 0x1p-11);
  EXPECT_DOUBLE_EQ(valueErrorBound(m, DType::BF16), 1e-3 + 2e1 * 0x1p-8);
  EXPECT_DOUBLE_EQ(valueErrorBound(m, DType::BF16, true), 1e-3 + 4e1 * 0x1p-8);
}

TEST(DType, Names) {
  EXPECT_EQ(dtypeFromName("float"), DType::F32);
  EXPECT_EQ(dtypeFromName("half"), DType::F16);
  EXPECT_EQ(dtypeFromName("bfloat16"), DType::BF16);
  EXPECT_EQ(dtypeFromName("int8"), std::nullopt);
  EXPECT_EQ(dtypeName(DType::BF16), "bf16");
}
