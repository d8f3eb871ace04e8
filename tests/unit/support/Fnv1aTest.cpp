//===- tests/unit/support/Fnv1aTest.cpp - Fnv1a and Fnv1aStream -----------===//
//
// FNV-1a's published values, and the stream that hashes text as it is
// written: the same value as hashing the whole text at once, whatever the
// pieces and the stream's buffering.
//
//===----------------------------------------------------------------------===//

#include "support/Fnv1a.h"

#include "gtest/gtest.h"

#include <string>

using namespace topocc;

TEST(Fnv1aTest, PublishedValues) {
  Fnv1a empty;
  EXPECT_EQ(empty.value(), 0xcbf29ce484222325ULL);
  Fnv1a a;
  a.bytes("a");
  EXPECT_EQ(a.value(), 0xaf63dc4c8601ec8cULL);
  Fnv1a foobar;
  foobar.bytes("foobar");
  EXPECT_EQ(foobar.value(), 0x85944171f73967e8ULL);
}

TEST(Fnv1aTest, StreamHashesWhatIsWritten) {
  std::string text;
  Fnv1aStream os;
  for (int i = 0; i < 20000; ++i) {
    const std::string piece = "op " + std::to_string(i * 7919) + ";\n";
    text += piece;
    os << piece;
    if (i % 1000 == 0) { // a write larger than the stream's buffer
      const std::string big(70000, static_cast<char>('a' + i % 26));
      text += big;
      os.write(big.data(), big.size());
    }
  }
  Fnv1a whole;
  whole.bytes(text);
  EXPECT_EQ(os.tell(), text.size());
  EXPECT_EQ(os.value(), whole.value());
  os << "x";
  whole.bytes("x");
  EXPECT_EQ(os.value(), whole.value());
}
