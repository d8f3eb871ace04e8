//===- tests/unit/backends/PlanJsonMutationTest.cpp -----------------------===//
//
// The plan loader on damaged files: compiled plans (ring, trees, CERAR;
// tests/unit/backends/Inputs/plans) with random byte-level mutations, tokens
// that matter to the loader's scan (quotes, backslashes, brackets, commas)
// and out-of-range numbers. Whatever the damage, loading must return (no
// crash under the sanitizers, no huge allocation), nothing that is not JSON
// may load, and a plan that loads must write back and load to the same
// schedule (the writer is llvm::json's, the check of "not JSON" too). The
// libFuzzer target tests/fuzz/PlanLoaderFuzzer.cpp explores further; this is
// its deterministic companion in every test run.
//
//===----------------------------------------------------------------------===//

#include "backends/PlanJson.h"
#include "ir/Printer.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

using namespace topocc;

namespace {

std::string mutate(std::string text, std::mt19937 &rng) {
  static const char *const tokens[] = {
      "\"", "\\", "{", "}", "[", "]", ",", ":", " ", "\n", "0", "-1",
      "2000000000", "1e309", "null", "true", "\"x\"", "[]", "{}", "\\\""};
  int edits = 1 + int(rng() % 3);
  for (int e = 0; e < edits && !text.empty(); ++e) {
    size_t at = rng() % text.size();
    switch (rng() % 5) {
    case 0: // flip a byte
      text[at] = char(rng() % 128);
      break;
    case 1: // delete a run
      text.erase(at, 1 + rng() % 16);
      break;
    case 2: // insert a token
      text.insert(at, tokens[rng() % std::size(tokens)]);
      break;
    case 3: { // replace a number by another token
      size_t d = text.find_first_of("0123456789", at);
      if (d == std::string::npos)
        break;
      size_t end = text.find_first_not_of("0123456789", d);
      text.replace(d, (end == std::string::npos ? text.size() : end) - d,
                   tokens[10 + rng() % 6]);
      break;
    }
    default: { // duplicate a run elsewhere
      std::string run = text.substr(at, 1 + rng() % 64);
      text.insert(rng() % text.size(), run);
      break;
    }
    }
  }
  return text;
}

TEST(PlanJsonMutation, DamagedPlansAreRefusedOrLoadConsistently) {
  int loaded = 0, refused = 0;
  for (const char *name : {"ring4-allreduce.json", "ring4-allgather-inplace.json",
                           "trees4-reducescatter.json", "cerar4-exact.json"}) {
    std::string path = std::string(TOPOCC_SOURCE_DIR) +
                       "/tests/unit/backends/Inputs/plans/" + name;
    auto buf = llvm::MemoryBuffer::getFile(path);
    ASSERT_TRUE(bool(buf)) << path;
    std::string good = (*buf)->getBuffer().str();
    ASSERT_TRUE(bool(backends::parsePlanJson(good, name))) << name;
    std::mt19937 rng(12345);
    for (int i = 0; i < 300; ++i) {
      std::string bad = mutate(good, rng);
      auto plan = backends::parsePlanJson(bad, "p.json");
      if (!plan) {
        std::string msg = llvm::toString(plan.takeError());
        EXPECT_NE(msg.find("p.json"), std::string::npos) << msg;
        ++refused;
        continue;
      }
      ++loaded;
      auto dom = llvm::json::parse(bad);
      EXPECT_TRUE(bool(dom)) << name << " mutation " << i
                             << " loaded but is not JSON:\n" << bad;
      if (!dom)
        llvm::consumeError(dom.takeError());
      auto again = backends::planToJson(plan->schedule, plan->meta);
      ASSERT_TRUE(bool(again)) << llvm::toString(again.takeError());
      auto plan2 = backends::parsePlanJson(*again, "again.json");
      ASSERT_TRUE(bool(plan2)) << llvm::toString(plan2.takeError());
      EXPECT_EQ(ir::scheduleToString(plan2->schedule),
                ir::scheduleToString(plan->schedule));
    }
  }
  // Most damage is refused; some (whitespace, a duplicated key) is harmless.
  EXPECT_GT(refused, 1000);
  EXPECT_GT(loaded, 0);
}

} // namespace
