//===- tests/unit/backends/MscclXmlCheckTest.cpp --------------------------===//
//
// The MSCCL XML reader, checker and importer: inline XML for every rule, and
// the corpus in ../shared/data/msccl with its expected verdicts.
//
//===----------------------------------------------------------------------===//

#include "backends/MscclXmlCheck.h"
#include "backends/MscclXmlImport.h"
#include "backends/MscclXmlReader.h"
#include "ir/Schedule.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

using namespace topocc;
using namespace topocc::backends;

namespace {

/// The 4-rank in-place ring allreduce of docs/MscclXmlFormat.md 2.2 (all
/// ranks). With `recvFirst`, every rank receives before its first send
/// (deadlock).
std::string ringXml(llvm::StringRef algoExtra = "", bool recvFirst = false) {
  std::string x =
      "<algo name=\"allreduce_ring_inplace\" proto=\"Simple\" "
      "nchannels=\"1\" nchunksperloop=\"4\" ngpus=\"4\" coll=\"allreduce\" "
      "inplace=\"1\" outofplace=\"0\" minBytes=\"0\" maxBytes=\"0\"" +
      algoExtra.str() + ">\n";
  const char *types[] = {"s", "rrs", "rrs", "rrcs", "rcs", "rcs", "r"};
  const int back[] = {0, 1, 2, 3, 0, 1, 2};
  for (int r = 0; r < 4; ++r) {
    x += llvm::formatv("  <gpu id=\"{0}\" i_chunks=\"4\" o_chunks=\"0\" "
                       "s_chunks=\"0\">\n",
                       r);
    x += llvm::formatv("    <tb id=\"0\" send=\"{0}\" recv=\"{1}\" "
                       "chan=\"0\">\n",
                       (r + 1) % 4, (r + 3) % 4);
    for (int j = 0; j < 7; ++j) {
      int k = recvFirst && j < 2 ? 1 - j : j;
      int c = (r - back[k] + 4) % 4;
      x += llvm::formatv("      <step s=\"{0}\" type=\"{1}\" srcbuf=\"i\" "
                         "srcoff=\"{2}\" dstbuf=\"i\" dstoff=\"{2}\" "
                         "cnt=\"1\" depid=\"-1\" deps=\"-1\" hasdep=\"0\" />\n",
                         j, types[k], c);
    }
    x += "    </tb>\n  </gpu>\n";
  }
  x += "</algo>\n";
  return x;
}

/// Replaces the first occurrence of `from` (which must exist).
std::string replaceFirst(std::string s, llvm::StringRef from,
                         llvm::StringRef to) {
  size_t p = s.find(from.str());
  EXPECT_NE(p, std::string::npos) << "pattern not found: " << from.str();
  if (p != std::string::npos)
    s.replace(p, from.size(), to.str());
  return s;
}

std::string replaceAll(std::string s, llvm::StringRef from,
                       llvm::StringRef to) {
  size_t p = 0;
  while ((p = s.find(from.str(), p)) != std::string::npos) {
    s.replace(p, from.size(), to.str());
    p += to.size();
  }
  return s;
}

std::string joinDiags(const std::vector<Diagnostic> &ds) {
  std::string out;
  llvm::raw_string_ostream os(out);
  for (const Diagnostic &d : ds)
    d.print(os);
  return os.str();
}

bool hasMessage(const std::vector<Diagnostic> &ds, llvm::StringRef needle) {
  return std::any_of(ds.begin(), ds.end(), [&](const Diagnostic &d) {
    return llvm::StringRef(d.message).contains(needle);
  });
}

const Diagnostic *findMessage(const std::vector<Diagnostic> &ds,
                              llvm::StringRef needle) {
  for (const Diagnostic &d : ds)
    if (llvm::StringRef(d.message).contains(needle))
      return &d;
  return nullptr;
}

MscclCheckOptions structuralOnly() {
  MscclCheckOptions o;
  o.checkExecution = false;
  return o;
}

#define EXPECT_REJECTED_WITH(xml, needle)                                      \
  do {                                                                         \
    MscclCheckResult res_ = checkMscclXml(xml, "t.xml", structuralOnly());     \
    EXPECT_TRUE(hasMessage(res_.errors, needle))                               \
        << "expected an error containing: " << (needle) << "\ngot:\n"          \
        << joinDiags(res_.errors);                                             \
  } while (0)

//===----------------------------------------------------------------------===//
// Integers
//===----------------------------------------------------------------------===//

TEST(MscclXmlReaderTest, StrtolLikeTheExecutor) {
  EXPECT_EQ(executorStrtol("16"), 16);
  EXPECT_EQ(executorStrtol("0x10"), 16);
  EXPECT_EQ(executorStrtol("010"), 8);
  EXPECT_EQ(executorStrtol("5abc"), 5);
  EXPECT_EQ(executorStrtol("abc"), 0);
  EXPECT_EQ(executorStrtol("-1"), -1);
  EXPECT_EQ(executorStrtol(" +7"), 7);
  EXPECT_EQ(executorStrtol("09"), 0); // octal stops at 9
  EXPECT_EQ(executorStrtoll("1073741824"), 1073741824LL);
  EXPECT_TRUE(isPlainDecimal("0"));
  EXPECT_TRUE(isPlainDecimal("-1"));
  EXPECT_TRUE(isPlainDecimal("1024"));
  EXPECT_FALSE(isPlainDecimal("010"));
  EXPECT_FALSE(isPlainDecimal("+1"));
  EXPECT_FALSE(isPlainDecimal("0x10"));
  EXPECT_FALSE(isPlainDecimal("5abc"));
  EXPECT_FALSE(isPlainDecimal(""));
  EXPECT_FALSE(isPlainDecimal(" 1"));
}

//===----------------------------------------------------------------------===//
// Reader: lexical rules of 2.1
//===----------------------------------------------------------------------===//

TEST(MscclXmlReaderTest, DomHasLocationsOfElementsAndAttributes) {
  auto doc = readMscclXmlDocument(ringXml(), "ring.xml");
  ASSERT_TRUE(static_cast<bool>(doc)) << llvm::toString(doc.takeError());
  ASSERT_EQ(doc->roots.size(), 1u);
  const XmlElement &algo = doc->elements[doc->roots[0]];
  EXPECT_EQ(algo.name, "algo");
  EXPECT_EQ(algo.loc.line, 1u);
  EXPECT_EQ(algo.loc.col, 1u);
  ASSERT_EQ(algo.children.size(), 4u);
  const XmlElement &gpu0 = doc->elements[algo.children[0]];
  EXPECT_EQ(gpu0.loc.line, 2u);
  EXPECT_EQ(gpu0.loc.col, 3u);
  const XmlAttr *ic = gpu0.find("i_chunks");
  ASSERT_NE(ic, nullptr);
  EXPECT_EQ(ic->value, "4");
  EXPECT_EQ(ic->loc.line, 2u);
  EXPECT_EQ(ic->loc.col, 15u);
  const XmlElement &tb = doc->elements[gpu0.children[0]];
  EXPECT_EQ(tb.closeName, "tb");
  const XmlElement &step = doc->elements[tb.children[0]];
  EXPECT_TRUE(step.selfClosing);
  // " />" leaves one empty attribute slot, as in the executor.
  EXPECT_EQ(step.attrs.size(), 11u);
  EXPECT_TRUE(step.attrs.back().key.empty());
}

TEST(MscclXmlReaderTest, CommentsAreSkippedEvenBeforeAlgo) {
  std::string x = "<!-- generated -->\n<!--x-->\n" + ringXml();
  x = replaceFirst(x, "  <gpu id=\"1\"", "  <!-- rank 1 -->\n  <gpu id=\"1\"");
  auto doc = readMscclXmlDocument(x, "c.xml");
  ASSERT_TRUE(static_cast<bool>(doc)) << llvm::toString(doc.takeError());
  EXPECT_EQ(doc->elements[doc->roots[0]].name, "algo");
  EXPECT_EQ(doc->elements[doc->roots[0]].loc.line, 3u);
}

std::string lexError(const std::string &x) {
  auto doc = readMscclXmlDocument(x, "l.xml");
  if (doc)
    return "";
  return llvm::toString(doc.takeError());
}

TEST(MscclXmlReaderTest, LexicalErrorsQuoteTheExecutor) {
  EXPECT_NE(lexError("<?xml version=\"1.0\"?>\n" + ringXml())
                .find("XML Parse : expected >, got '?'"),
            std::string::npos);
  EXPECT_NE(lexError(replaceFirst(ringXml(), "\n  <gpu", "\n\t<gpu"))
                .find("XML Parse error : expecting '<', got '\\t'"),
            std::string::npos);
  EXPECT_NE(lexError(replaceFirst(ringXml(), " proto=", "\n proto="))
                .find("XML Parse : expected >, got '\\n'"),
            std::string::npos);
  EXPECT_NE(
      lexError(replaceFirst(ringXml(), "proto=\"Simple\"", "proto='Simple'"))
          .find("XML Parse : expected >, got '1'"),
      std::string::npos);
  EXPECT_NE(
      lexError(replaceFirst(ringXml(), "proto=\"Simple\"", "proto=Simple"))
          .find("XML Parse : Expected (double) quote."),
      std::string::npos);
  EXPECT_NE(lexError(replaceFirst(ringXml(), "</tb>", "</tb >"))
                .find("unexpected trailing"),
            std::string::npos);
  EXPECT_NE(lexError("<algo ngpus=\"1\">\n  <gpu id=\"0\">\n")
                .find("unterminated gpu"),
            std::string::npos);
  EXPECT_NE(lexError("<algo ngpus=\"1\">\n").find("unterminated algo"),
            std::string::npos);
  EXPECT_NE(lexError("<algo ngpus=\"1").find("Unexpected EOF"),
            std::string::npos);
  EXPECT_NE(lexError("<" + std::string(300, 'a') + "/>").find("too long"),
            std::string::npos);
  EXPECT_NE(lexError("text").find("expecting '<', got 't'"), std::string::npos);
  EXPECT_NE(lexError("<!-- never closed").find("unterminated comment"),
            std::string::npos);
  // Error location: line 2, column of the TAB.
  auto doc = readMscclXmlDocument(
      replaceFirst(ringXml(), "\n  <gpu", "\n\t<gpu"), "tab.xml");
  ASSERT_FALSE(static_cast<bool>(doc));
  std::string text = llvm::toString(doc.takeError());
  EXPECT_NE(text.find("tab.xml:2:1: error:"), std::string::npos) << text;
}

TEST(MscclXmlReaderTest, AcceptsWhatTheExecutorAccepts) {
  // Two spaces (an empty slot), a space before '>', "/>" and " />", CRLF.
  std::string x =
      replaceFirst(ringXml(), "proto=\"Simple\" ", "proto=\"Simple\"  ");
  x = replaceAll(x, "chan=\"0\">", "chan=\"0\" >");
  x = replaceFirst(x, "hasdep=\"0\" />", "hasdep=\"0\"/>");
  x = replaceAll(x, "\n", "\r\n");
  MscclCheckResult r = checkMscclXml(x, "ok.xml", structuralOnly());
  EXPECT_TRUE(r.ok()) << joinDiags(r.errors);
}

//===----------------------------------------------------------------------===//
// Structure and the executor's own checks
//===----------------------------------------------------------------------===//

TEST(MscclXmlCheckTest, BaseFileIsClean) {
  MscclCheckResult r = checkMscclXml(ringXml(), "ring.xml", structuralOnly());
  EXPECT_TRUE(r.ok()) << joinDiags(r.errors);
  EXPECT_TRUE(r.warnings.empty()) << joinDiags(r.warnings);
}

TEST(MscclXmlCheckTest, ExecutorScanChecks) {
  EXPECT_REJECTED_WITH(
      replaceFirst(ringXml(), "coll=\"allreduce\"", "coll=\"custom\""),
      "unsupported collective \"custom\"");
  EXPECT_REJECTED_WITH(
      replaceFirst(ringXml(), "coll=\"allreduce\"", "coll=\"reduce_scatter\""),
      "legacy");
  EXPECT_REJECTED_WITH(replaceFirst(ringXml(), " minBytes=\"0\"", ""),
                       "Attribute minBytes of node algo not found");
  EXPECT_REJECTED_WITH("<!-- c -->\n<gpu id=\"0\"/>\n" + ringXml(),
                       "the first element is <gpu>");
}

TEST(MscclXmlCheckTest, ExecutorLoadChecks) {
  std::string base = ringXml();
  EXPECT_REJECTED_WITH(
      replaceFirst(base, "proto=\"Simple\"", "proto=\"simple\""),
      "MSCCL: protocol simple is not supported.");
  EXPECT_REJECTED_WITH(replaceFirst(base, " hasdep=\"0\"", ""),
                       "Attribute hasdep of node step not found");
  EXPECT_REJECTED_WITH(replaceFirst(base, "type=\"rrs\"", "type=\"rr\""),
                       "MSCCL: type of transfer is not supported: rr");
  EXPECT_REJECTED_WITH(replaceFirst(base, "type=\"rrs\"", "type=\"ra\""),
                       "MSCCL: type of transfer is not supported: ra");
  EXPECT_REJECTED_WITH(replaceFirst(base, "cnt=\"1\"", "cnt=\"72\""),
                       "MSCCL: count (72) must be positive and less than 72");
  EXPECT_REJECTED_WITH(replaceFirst(base, "srcbuf=\"i\"", "srcbuf=\"x\""),
                       "type of buffer is not supported: x");
  EXPECT_REJECTED_WITH(replaceFirst(base, "s=\"6\"", "s=\"64\""),
                       "MSCCL: too many steps are requested. Max number of "
                       "steps: 64, requested: 65");
  EXPECT_REJECTED_WITH(replaceFirst(base, "s=\"6\"", "s=\"-1\""),
                       "MSCCL: step must be positive");
  EXPECT_REJECTED_WITH(replaceFirst(base, "<tb id=\"0\"", "<tb id=\"1\""),
                       "MSCCL: thread block 1 is missing");
  EXPECT_REJECTED_WITH(
      replaceFirst(base, "send=\"1\" recv=\"3\"", "send=\"0\" recv=\"3\""),
      "must be different");
  EXPECT_REJECTED_WITH(
      replaceFirst(base, "send=\"1\" recv=\"3\"", "send=\"-2\" recv=\"3\""),
      "MSCCL: wrong recvPeer (3) or sendPeer (-2)");
  EXPECT_REJECTED_WITH(replaceFirst(base, "chan=\"0\"", "chan=\"33\""),
                       "has an invalid channel 33");
  EXPECT_REJECTED_WITH(replaceFirst(base, "srcoff=\"3\"", "srcoff=\"4\""),
                       "Incorrect offset set for input buffer: offset: 4 "
                       "maximum allowed: 4");
  EXPECT_REJECTED_WITH(replaceFirst(base, "hasdep=\"0\"", "hasdep=\"2\""),
                       "MSCCL: hasDependence needs to be 0 or 1, but it was 2");
  EXPECT_REJECTED_WITH(replaceFirst(base, "s_chunks=\"0\"", "s_chunks=\"-1\""),
                       "MSCCL: nScratchChunks must be not negative");
  EXPECT_REJECTED_WITH(
      replaceFirst(base, "send=\"1\" recv=\"3\"", "send=\"-1\" recv=\"3\""),
      "there is a send in thread block 0 on GPU 0 without a "
      "sendPeer.");
  // A duplicate tb id.
  std::string dup = replaceFirst(
      base, "    </tb>\n  </gpu>\n  <gpu id=\"1\"",
      "    </tb>\n    <tb id=\"0\" send=\"-1\" recv=\"-1\" chan=\"0\">\n"
      "    </tb>\n  </gpu>\n  <gpu id=\"1\"");
  EXPECT_REJECTED_WITH(dup, "MSCCL: duplicate thread block id 0 for MSCCL");
  // A closing tag with another name in a stored element.
  EXPECT_REJECTED_WITH(replaceFirst(base, "</tb>", "</tx>"),
                       "XML Mismatch : tb / tx");
}

TEST(MscclXmlCheckTest, NopChainRule) {
  std::string x = replaceFirst(
      ringXml(), "      <step s=\"0\" type=\"s\" srcbuf=\"i\" srcoff=\"0\"",
      "      <step s=\"0\" type=\"nop\" srcbuf=\"i\" srcoff=\"-1\" "
      "dstbuf=\"o\" dstoff=\"-1\" cnt=\"0\" depid=\"0\" deps=\"0\" "
      "hasdep=\"0\" />\n      <step s=\"0\" type=\"s\" srcbuf=\"i\" "
      "srcoff=\"0\"");
  EXPECT_REJECTED_WITH(x, "MSCCL: when there is a chain of dependencies, the "
                          "last reduction must be a part of the first "
                          "immediate instruction.");
  EXPECT_REJECTED_WITH(x, "rule 6:");
}

TEST(MscclXmlCheckTest, StepLimitIsAnOption) {
  MscclCheckOptions o = structuralOnly();
  o.maxSteps = 4;
  MscclCheckResult r = checkMscclXml(ringXml(), "t.xml", o);
  EXPECT_TRUE(hasMessage(r.errors, "Max number of steps: 4, requested: 5"))
      << joinDiags(r.errors);
  EXPECT_TRUE(hasMessage(r.errors, "limit (2.11)")) << joinDiags(r.errors);
}

//===----------------------------------------------------------------------===//
// Rules 1 to 11 of 2.10
//===----------------------------------------------------------------------===//

TEST(MscclXmlCheckTest, Rule1ChannelInRange) {
  std::string x = replaceFirst(ringXml(), "chan=\"0\"", "chan=\"1\"");
  MscclCheckResult r = checkMscclXml(x, "c.xml", structuralOnly());
  const Diagnostic *d =
      findMessage(r.errors, "rule 1: tb 0 on rank 0 uses chan 1 but "
                            "nchannels is 1");
  ASSERT_NE(d, nullptr) << joinDiags(r.errors);
  EXPECT_EQ(d->loc.file, "c.xml");
  EXPECT_EQ(d->loc.line, 3u);
  EXPECT_EQ(d->loc.col, 34u); // the chan attribute
  EXPECT_FALSE(d->sourceLine.empty());
}

TEST(MscclXmlCheckTest, Rule2And5OneBlockPerConnection) {
  std::string x = replaceFirst(
      ringXml(), "    </tb>\n  </gpu>\n  <gpu id=\"1\"",
      "    </tb>\n    <tb id=\"1\" send=\"1\" recv=\"-1\" chan=\"0\">\n"
      "      <step s=\"0\" type=\"s\" srcbuf=\"i\" srcoff=\"1\" dstbuf=\"i\" "
      "dstoff=\"1\" cnt=\"1\" depid=\"-1\" deps=\"-1\" hasdep=\"0\" />\n"
      "    </tb>\n  </gpu>\n  <gpu id=\"1\"");
  EXPECT_REJECTED_WITH(x, "rule 2: tb 0 and tb 1 on rank 0 both use the send "
                          "connection to rank 1 on chan 0");
  EXPECT_REJECTED_WITH(x, "rule 5:");
}

TEST(MscclXmlCheckTest, Rule3PeersInRange) {
  std::string x = ringXml();
  x = replaceFirst(x,
                   "<gpu id=\"3\" i_chunks=\"4\" o_chunks=\"0\" "
                   "s_chunks=\"0\">\n    <tb id=\"0\" send=\"0\"",
                   "<gpu id=\"3\" i_chunks=\"4\" o_chunks=\"0\" "
                   "s_chunks=\"0\">\n    <tb id=\"0\" send=\"4\"");
  EXPECT_REJECTED_WITH(x, "rule 3: tb 0 on rank 3 has send=\"4\"");
}

TEST(MscclXmlCheckTest, Rule4OneGpuPerRank) {
  EXPECT_REJECTED_WITH(
      replaceFirst(ringXml(), "<gpu id=\"3\"", "<gpu id=\"2\""),
      "rule 4: rank 2 has more than one <gpu>");
  EXPECT_REJECTED_WITH(
      replaceFirst(ringXml(), "<gpu id=\"3\"", "<gpu id=\"2\""),
      "rule 4: rank 3 has no <gpu>");
  EXPECT_REJECTED_WITH(
      replaceFirst(ringXml(), "<gpu id=\"3\"", "<gpu id=\"7\""),
      "rule 4: <gpu id=\"7\"> is not a rank");
}

TEST(MscclXmlCheckTest, Rule5CountsPairUp) {
  // Rank 1 receives its first message with cnt 2; rank 0 sent cnt 1.
  std::string x = ringXml();
  size_t g1 = x.find("<gpu id=\"1\"");
  size_t p = x.find("type=\"rrs\"", g1);
  size_t c = x.find("cnt=\"1\"", p);
  x.replace(c, 7, "cnt=\"2\"");
  EXPECT_REJECTED_WITH(x, "rule 5: receive number 0 from rank 0 to rank 1 on "
                          "chan 0 has cnt 2");
  // An extra send.
  std::string y =
      replaceFirst(ringXml(), "type=\"r\" srcbuf=\"i\" srcoff=\"2\"",
                   "type=\"rcs\" srcbuf=\"i\" srcoff=\"2\"");
  EXPECT_REJECTED_WITH(y, "has no matching receive");
}

TEST(MscclXmlCheckTest, Rule6PositionsAndDependencies) {
  EXPECT_REJECTED_WITH(
      replaceFirst(ringXml(), "<step s=\"1\"", "<step s=\"7\""),
      "rule 6: tb 0 on rank 0 step 1 has s=\"7\"");
  // Two blocks on rank 0: tb 1 depends on tb 0.
  auto twoBlocks = [](llvm::StringRef dep, llvm::StringRef hasdep) {
    std::string x = replaceFirst(ringXml(),
                                 "s=\"6\" type=\"r\" srcbuf=\"i\" "
                                 "srcoff=\"2\" dstbuf=\"i\" "
                                 "dstoff=\"2\" cnt=\"1\" "
                                 "depid=\"-1\" deps=\"-1\" "
                                 "hasdep=\"0\"",
                                 ("s=\"6\" type=\"r\" srcbuf=\"i\" "
                                  "srcoff=\"2\" dstbuf=\"i\" dstoff=\"2\" "
                                  "cnt=\"1\" depid=\"-1\" deps=\"-1\" "
                                  "hasdep=\"" +
                                  hasdep + "\"")
                                     .str());
    return replaceFirst(
        x, "    </tb>\n  </gpu>\n  <gpu id=\"1\"",
        ("    </tb>\n    <tb id=\"1\" send=\"-1\" recv=\"-1\" chan=\"0\">\n"
         "      <step s=\"0\" type=\"cpy\" srcbuf=\"i\" srcoff=\"2\" "
         "dstbuf=\"s\" dstoff=\"0\" cnt=\"1\" " +
         dep + " hasdep=\"0\" />\n    </tb>\n  </gpu>\n  <gpu id=\"1\"")
            .str());
  };
  std::string ok = replaceFirst(twoBlocks("depid=\"0\" deps=\"6\"", "1"),
                                "<gpu id=\"0\" i_chunks=\"4\" o_chunks=\"0\" "
                                "s_chunks=\"0\"",
                                "<gpu id=\"0\" i_chunks=\"4\" o_chunks=\"0\" "
                                "s_chunks=\"1\"");
  MscclCheckResult r = checkMscclXml(ok, "dep.xml", structuralOnly());
  EXPECT_TRUE(r.ok()) << joinDiags(r.errors);
  EXPECT_REJECTED_WITH(twoBlocks("depid=\"0\" deps=\"6\"", "0"),
                       "which has hasdep=\"0\"");
  EXPECT_REJECTED_WITH(twoBlocks("depid=\"0\" deps=\"9\"", "1"),
                       "depends on step 9 of tb 0, which has 7 steps");
  EXPECT_REJECTED_WITH(twoBlocks("depid=\"5\" deps=\"0\"", "1"),
                       "depends on tb 5, which does not exist on rank 0");
  EXPECT_REJECTED_WITH(twoBlocks("depid=\"1\" deps=\"0\"", "1"),
                       "depends on its own block");
}

TEST(MscclXmlCheckTest, Rule9And10Operands) {
  // -1 in a used field passes the executor's bounds check but not rule 9.
  EXPECT_REJECTED_WITH(replaceFirst(ringXml(), "srcoff=\"0\" dstbuf=\"i\"",
                                    "srcoff=\"-1\" dstbuf=\"i\""),
                       "rule 9: tb 0 on rank 0 step 0 (s) uses srcoff but it "
                       "is -1");
  // off + cnt beyond the buffer (the executor checks only the start).
  std::string x = ringXml();
  size_t p = x.find("type=\"rrs\"");
  size_t c = x.find("cnt=\"1\"", p);
  x.replace(c, 7, "cnt=\"2\"");
  EXPECT_REJECTED_WITH(x, "rule 10: tb 0 on rank 0 step 1 addresses i[3..5)");
  EXPECT_REJECTED_WITH(
      replaceFirst(ringXml(), "i_chunks=\"4\"", "i_chunks=\"5\""),
      "rule 10: rank 0 has i_chunks=\"5\"; allreduce needs 4");
  std::string ag =
      replaceFirst(ringXml(), "coll=\"allreduce\"", "coll=\"allgather\"");
  ag = replaceFirst(ag, "nchunksperloop=\"4\"", "nchunksperloop=\"6\"");
  EXPECT_REJECTED_WITH(ag, "rule 10: nchunksperloop=6 must be a multiple of "
                           "ngpus=4");
}

TEST(MscclXmlCheckTest, Rule11LexicalHygiene) {
  EXPECT_REJECTED_WITH(replaceFirst(ringXml(), "cnt=\"1\"", "cnt=\"01\""),
                       "rule 11: cnt=\"01\" is not a plain decimal integer");
  EXPECT_REJECTED_WITH(replaceFirst(ringXml(), "cnt=\"1\"", "cnt=\"0x1\""),
                       "rule 11: cnt=\"0x1\"");
  EXPECT_REJECTED_WITH(
      replaceFirst(ringXml(), "cnt=\"1\"", "cnt=\"1\" cnt=\"2\""),
      "rule 11: duplicate attribute 'cnt'");
  EXPECT_REJECTED_WITH(replaceFirst(ringXml(),
                                    "name=\"allreduce_ring_inplace\"",
                                    "name=\"" + std::string(300, 'n') + "\""),
                       "rule 11: value of 'name' has 300 characters");
  EXPECT_REJECTED_WITH(replaceFirst(ringXml(),
                                    "name=\"allreduce_ring_inplace\"",
                                    "name=\"all\xc3\xa9\""),
                       "rule 11: the file has 2 non-ASCII byte(s)");
  std::string many;
  for (int i = 0; i < 8; ++i)
    many += llvm::formatv(" x{0}=\"1\"", i).str();
  EXPECT_REJECTED_WITH(ringXml(many), "rule 11: <algo> has 18 attribute slots");
}

TEST(MscclXmlCheckTest, Warnings) {
  std::string x =
      replaceFirst(ringXml(), "coll=\"allreduce\"", "coll=\"broadcast\"");
  MscclCheckResult r = checkMscclXml(x, "b.xml", structuralOnly());
  EXPECT_TRUE(hasMessage(r.warnings, "matches neither root nor peer"))
      << joinDiags(r.warnings);
  MscclCheckOptions o = structuralOnly();
  o.smCount = 0;
  r = checkMscclXml(ringXml(), "t.xml", o);
  EXPECT_TRUE(r.warnings.empty());
  std::vector<MscclAlgoMeta> metas = {
      {"a.xml", "allgather", 4, false, true, 64, 792576},
      {"b.xml", "allgather", 4, false, true, 792576, 1073741824},
      {"c.xml", "allgather", 4, true, false, 0, 0}};
  std::vector<Diagnostic> w = checkMscclWindowOverlaps(metas);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].message.find("the executor picks a.xml"), std::string::npos)
      << w[0].message;
}

//===----------------------------------------------------------------------===//
// Importer
//===----------------------------------------------------------------------===//

TEST(MscclXmlImportTest, RingMapsToLegalizedSchedule) {
  auto s = importMscclXml(ringXml(), "ring.xml");
  ASSERT_TRUE(static_cast<bool>(s)) << llvm::toString(s.takeError());
  EXPECT_EQ(s->collective, ir::Collective::AllReduce);
  EXPECT_EQ(s->numRanks, 4);
  EXPECT_EQ(s->chunksPerLoop, 4);
  EXPECT_TRUE(s->inplace);
  EXPECT_EQ(s->stage, ir::Stage::Legalized);
  EXPECT_EQ(s->numChannels, 1);
  ASSERT_EQ(s->ranks.size(), 4u);
  EXPECT_EQ(s->ranks[0].inputChunks, 4);
  EXPECT_EQ(s->ranks[0].outputChunks, 0);
  ASSERT_EQ(s->ranks[0].ops.size(), 7u);
  const ir::Op &send = s->ranks[0].ops[0];
  EXPECT_EQ(send.kind, ir::OpKind::Send);
  EXPECT_EQ(send.sendPeer, 1);
  EXPECT_EQ(send.src, (ir::BufferRef{ir::BufferKind::Input, 0, 1}));
  EXPECT_FALSE(send.dst.isUsed()); // unused fields are ignored
  const ir::Op &rrs = s->ranks[1].ops[1];
  EXPECT_EQ(rrs.kind, ir::OpKind::RecvReduceSend);
  EXPECT_EQ(rrs.recvPeer, 0);
  EXPECT_EQ(rrs.src, (ir::BufferRef{ir::BufferKind::Input, 0, 1}));
  // Rank 0's first send pairs with rank 1's first receive.
  EXPECT_NE(send.sendMsg, ir::kNone);
  EXPECT_EQ(send.sendMsg, rrs.recvMsg);
  EXPECT_EQ(s->numMessages(), 24);
  for (const ir::RankProgram &rp : s->ranks)
    for (const ir::Op &op : rp.ops) {
      EXPECT_EQ(op.channel, 0);
      EXPECT_EQ(op.threadblock, 0);
      EXPECT_TRUE(op.deps.empty());
    }
}

TEST(MscclXmlImportTest, NopsAndDependencies) {
  // rank 0: tb 1 = nop(dep tb0 step 6), cpy(dep tb 0 step 6).
  std::string x = replaceFirst(ringXml(),
                               "s=\"6\" type=\"r\" srcbuf=\"i\" "
                               "srcoff=\"2\" dstbuf=\"i\" "
                               "dstoff=\"2\" cnt=\"1\" "
                               "depid=\"-1\" deps=\"-1\" "
                               "hasdep=\"0\"",
                               "s=\"6\" type=\"r\" srcbuf=\"i\" srcoff=\"2\" "
                               "dstbuf=\"i\" dstoff=\"2\" cnt=\"1\" "
                               "depid=\"-1\" deps=\"-1\" hasdep=\"1\"");
  x = replaceFirst(
      x, "    </tb>\n  </gpu>\n  <gpu id=\"1\"",
      "    </tb>\n    <tb id=\"1\" send=\"-1\" recv=\"-1\" chan=\"0\">\n"
      "      <step s=\"0\" type=\"nop\" srcbuf=\"i\" srcoff=\"-1\" "
      "dstbuf=\"o\" dstoff=\"-1\" cnt=\"0\" depid=\"0\" deps=\"6\" "
      "hasdep=\"0\" />\n"
      "      <step s=\"1\" type=\"cpy\" srcbuf=\"i\" srcoff=\"2\" "
      "dstbuf=\"s\" dstoff=\"0\" cnt=\"1\" depid=\"0\" deps=\"6\" "
      "hasdep=\"0\" />\n    </tb>\n  </gpu>\n  <gpu id=\"1\"");
  x = replaceFirst(x, "s_chunks=\"0\"", "s_chunks=\"1\"");
  auto imp = importMscclXmlDetailed(x, "n.xml");
  ASSERT_TRUE(static_cast<bool>(imp)) << llvm::toString(imp.takeError());
  const ir::RankProgram &rp = imp->schedule.ranks[0];
  ASSERT_EQ(rp.ops.size(), 9u);
  EXPECT_EQ(rp.ops[7].kind, ir::OpKind::Nop);
  EXPECT_EQ(rp.ops[7].deps, (ir::OpDeps{6}));
  EXPECT_EQ(rp.ops[8].kind, ir::OpKind::Copy);
  EXPECT_EQ(rp.ops[8].deps, (ir::OpDeps{6}));
  EXPECT_EQ(rp.ops[8].threadblock, 1);
  EXPECT_EQ(imp->opLocs[0][8].line, 14u);
  EXPECT_EQ(imp->opLocs[0][8].file, "n.xml");
  MscclCheckResult r = checkMscclXml(x, "n.xml", structuralOnly());
  EXPECT_TRUE(r.ok()) << joinDiags(r.errors);
}

TEST(MscclXmlImportTest, LegacyDialect) {
  std::string x =
      replaceFirst(ringXml(), "coll=\"allreduce\"", "coll=\"reduce_scatter\"");
  x = replaceFirst(x, " outofplace=\"0\"", "");
  x = replaceFirst(x, " minBytes=\"0\" maxBytes=\"0\"", "");
  auto imp = importMscclXmlDetailed(x, "legacy.xml");
  ASSERT_TRUE(static_cast<bool>(imp)) << llvm::toString(imp.takeError());
  EXPECT_EQ(imp->schedule.collective, ir::Collective::ReduceScatter);
  EXPECT_TRUE(imp->schedule.inplace);
  EXPECT_TRUE(hasMessage(imp->warnings, "reduce_scatter"));
  auto bad = importMscclXml(
      replaceFirst(ringXml(), "coll=\"allreduce\"", "coll=\"custom\""),
      "custom.xml");
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_NE(llvm::toString(bad.takeError()).find("cannot be imported"),
            std::string::npos);
  auto ra = importMscclXml(
      replaceFirst(ringXml(), "type=\"rrs\"", "type=\"ra\""), "ra.xml");
  ASSERT_FALSE(static_cast<bool>(ra));
  EXPECT_NE(llvm::toString(ra.takeError()).find("not executable"),
            std::string::npos);
}

//===----------------------------------------------------------------------===//
// Execution: rules 7, 8 and the postcondition (IR verifier and semantics)
//===----------------------------------------------------------------------===//

TEST(MscclXmlExecTest, RingComputesAllReduce) {
  MscclVerdict v = verifyMscclXml(ringXml(), "ring.xml");
  EXPECT_TRUE(v.formatOk);
  EXPECT_TRUE(v.deadlockFree);
  EXPECT_TRUE(v.raceFree);
  EXPECT_TRUE(v.computesCollective) << joinDiags(v.problems);
  EXPECT_TRUE(v.accepted());
}

TEST(MscclXmlExecTest, Deadlock) {
  // Every rank receives before it sends: the ring waits on itself.
  MscclVerdict v = verifyMscclXml(ringXml("", /*recvFirst=*/true), "dl.xml");
  EXPECT_TRUE(v.formatOk) << joinDiags(v.problems);
  EXPECT_FALSE(v.deadlockFree);
  EXPECT_FALSE(v.raceFree);
  EXPECT_FALSE(v.computesCollective);
  const Diagnostic *d = findMessage(v.problems, "rule 7 (deadlock)");
  ASSERT_NE(d, nullptr) << joinDiags(v.problems);
  EXPECT_EQ(d->loc.file, "dl.xml");
  EXPECT_GT(d->loc.line, 1u); // points at a step
}

TEST(MscclXmlExecTest, RaceAndWrongResult) {
  // A second block on rank 0 copies into i[2] with no dependency, while
  // tb 0 reads and writes i[2]: a race.
  std::string x = replaceFirst(
      ringXml(), "    </tb>\n  </gpu>\n  <gpu id=\"1\"",
      "    </tb>\n    <tb id=\"1\" send=\"-1\" recv=\"-1\" chan=\"0\">\n"
      "      <step s=\"0\" type=\"cpy\" srcbuf=\"i\" srcoff=\"0\" "
      "dstbuf=\"i\" dstoff=\"2\" cnt=\"1\" depid=\"-1\" deps=\"-1\" "
      "hasdep=\"0\" />\n    </tb>\n  </gpu>\n  <gpu id=\"1\"");
  MscclVerdict v = verifyMscclXml(x, "race.xml");
  EXPECT_TRUE(v.formatOk) << joinDiags(v.problems);
  EXPECT_TRUE(v.deadlockFree);
  EXPECT_FALSE(v.raceFree);
  EXPECT_TRUE(hasMessage(v.problems, "rule 8 (data race)"))
      << joinDiags(v.problems);

  // The final forward of rank 0 is a plain receive instead of a reduction
  // on the rrcs step: wrong result, no deadlock, no race.
  std::string w = replaceFirst(ringXml(), "type=\"rrcs\"", "type=\"rcs\"");
  v = verifyMscclXml(w, "wrong.xml");
  EXPECT_TRUE(v.formatOk) << joinDiags(v.problems);
  EXPECT_TRUE(v.deadlockFree);
  EXPECT_TRUE(v.raceFree) << joinDiags(v.problems);
  EXPECT_FALSE(v.computesCollective);
  EXPECT_TRUE(hasMessage(v.problems, "postcondition")) << joinDiags(v.problems);
}

//===----------------------------------------------------------------------===//
// The corpus in ../shared/data/msccl
//===----------------------------------------------------------------------===//

std::string dataDir() {
  llvm::SmallString<256> p(TOPOCC_SOURCE_DIR);
  llvm::sys::path::append(p, "..", "shared", "data", "msccl");
  return std::string(p);
}

std::vector<std::string> xmlFiles(const std::string &dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec))
    if (llvm::StringRef(it->path()).endswith(".xml"))
      out.push_back(it->path());
  std::sort(out.begin(), out.end());
  return out;
}

std::string readFile(const std::string &path) {
  auto buf = llvm::MemoryBuffer::getFile(path);
  if (!buf)
    return "";
  return (*buf)->getBuffer().str();
}

TEST(MscclXmlCorpusTest, InvalidFilesGetTheExpectedVerdict) {
  std::string dir = dataDir() + "/msccl_invalid";
  if (!llvm::sys::fs::exists(dir + "/EXPECTED.tsv"))
    GTEST_SKIP() << "../shared/data is absent";
  llvm::SmallVector<llvm::StringRef, 32> lines;
  std::string tsv = readFile(dir + "/EXPECTED.tsv");
  llvm::StringRef(tsv).split(lines, '\n', -1, false);
  ASSERT_GT(lines.size(), 1u);
  unsigned accepted = 0, rejected = 0;
  for (size_t i = 1; i < lines.size(); ++i) {
    llvm::SmallVector<llvm::StringRef, 3> cols;
    lines[i].split(cols, '\t', 2);
    ASSERT_EQ(cols.size(), 3u) << lines[i].str();
    std::string file = cols[0].str();
    bool expectAccept = cols[1] == "accept";
    llvm::StringRef reason = cols[2];
    MscclVerdict v = verifyMscclXml(readFile(dir + "/" + file), file);
    if (expectAccept) {
      ++accepted;
      EXPECT_TRUE(v.accepted()) << file << "\n" << joinDiags(v.problems);
      continue;
    }
    ++rejected;
    EXPECT_FALSE(v.problems.empty()) << file << " must be rejected";
    EXPECT_FALSE(v.formatOk) << file;
    // The quoted executor message, or the rule the reason names.
    size_t q = reason.find("-> \"");
    if (q != llvm::StringRef::npos) {
      llvm::StringRef msg = reason.substr(q + 4);
      msg = msg.substr(0, msg.find('"'));
      if (msg.endswith(" ..."))
        msg = msg.drop_back(4);
      // The TSV spells control characters <newline>/<TAB>; diagnostics write
      // them as C escapes, as the format doc does.
      std::string needle = replaceAll(msg.str(), "<newline>", "\\n");
      needle = replaceAll(needle, "<TAB>", "\\t");
      EXPECT_TRUE(hasMessage(v.problems, needle))
          << file << ": expected \"" << needle << "\" in:\n"
          << joinDiags(v.problems);
    }
    size_t rp = reason.find("(rule ");
    if (rp != llvm::StringRef::npos) {
      llvm::StringRef num = reason.substr(rp + 6).take_while(
          [](char c) { return c >= '0' && c <= '9'; });
      std::string needle = "rule " + num.str() + ":";
      EXPECT_TRUE(hasMessage(v.problems, needle))
          << file << ": expected \"" << needle << "\" in:\n"
          << joinDiags(v.problems);
    }
  }
  EXPECT_EQ(accepted, 3u);
  EXPECT_EQ(rejected, 17u);
}

TEST(MscclXmlCorpusTest, ValidFilesComputeTheirCollective) {
  std::string root = dataDir();
  if (!llvm::sys::fs::exists(root + "/msccl_real_algorithms"))
    GTEST_SKIP() << "../shared/data is absent";
  std::vector<std::string> files = xmlFiles(root + "/msccl_real_algorithms");
  std::vector<std::string> gen = xmlFiles(root + "/msccl_generated");
  files.insert(files.end(), gen.begin(), gen.end());
  EXPECT_EQ(files.size(), 36u);
  auto start = std::chrono::steady_clock::now();
  for (const std::string &path : files) {
    std::string name = llvm::sys::path::filename(path).str();
    MscclVerdict v = verifyMscclXml(readFile(path), name);
    EXPECT_TRUE(v.formatOk) << name << "\n" << joinDiags(v.problems);
    EXPECT_TRUE(v.deadlockFree) << name << "\n" << joinDiags(v.problems);
    EXPECT_TRUE(v.raceFree) << name << "\n" << joinDiags(v.problems);
    if (name == "pipeline_a100_ring_args4-1-1_8ranks.xml") {
      EXPECT_FALSE(v.computesCollective) << name;
      EXPECT_TRUE(hasMessage(v.problems, "postcondition"))
          << joinDiags(v.problems);
    } else {
      EXPECT_TRUE(v.computesCollective) << name << "\n"
                                        << joinDiags(v.problems);
    }
  }
  double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  EXPECT_LT(secs, 60.0) << "checking the corpus took " << secs << " s";
}

TEST(MscclXmlCorpusTest, SelectionWindowOverlapsAreWarned) {
  std::string dir = dataDir() + "/msccl_real_algorithms";
  if (!llvm::sys::fs::exists(dir))
    GTEST_SKIP() << "../shared/data is absent";
  std::vector<MscclAlgoMeta> metas;
  for (const std::string &path : xmlFiles(dir)) {
    auto doc = readMscclXmlDocument(readFile(path), path);
    ASSERT_TRUE(static_cast<bool>(doc)) << llvm::toString(doc.takeError());
    DiagnosticList diags;
    auto algo = buildMscclView(*doc, diags);
    ASSERT_TRUE(algo.has_value());
    metas.push_back({llvm::sys::path::filename(path).str(), algo->coll,
                     algo->ngpus, algo->inplace == 1, algo->outofplace == 1,
                     algo->minBytes, algo->maxBytes});
  }
  std::vector<Diagnostic> w = checkMscclWindowOverlaps(metas);
  EXPECT_EQ(w.size(), 2u) << joinDiags(w);
}

TEST(MscclXmlCorpusTest, IdenticalAlltoallFilesImportAlike) {
  std::string dir = dataDir() + "/msccl_generated";
  if (!llvm::sys::fs::exists(dir))
    GTEST_SKIP() << "../shared/data is absent";
  auto a = importMscclXml(readFile(dir + "/alltoall_allpairs_4gpu_1inst.xml"),
                          "a.xml");
  auto b = importMscclXml(
      readFile(dir + "/alltoall_allpairs_outofplace_4gpu_1inst.xml"), "b.xml");
  ASSERT_TRUE(static_cast<bool>(a)) << llvm::toString(a.takeError());
  ASSERT_TRUE(static_cast<bool>(b)) << llvm::toString(b.takeError());
  ASSERT_EQ(a->ranks.size(), b->ranks.size());
  for (size_t r = 0; r < a->ranks.size(); ++r) {
    ASSERT_EQ(a->ranks[r].ops.size(), b->ranks[r].ops.size());
    for (size_t i = 0; i < a->ranks[r].ops.size(); ++i) {
      const ir::Op &x = a->ranks[r].ops[i], &y = b->ranks[r].ops[i];
      EXPECT_EQ(x.kind, y.kind);
      EXPECT_EQ(x.src, y.src);
      EXPECT_EQ(x.dst, y.dst);
      EXPECT_EQ(x.sendMsg, y.sendMsg);
      EXPECT_EQ(x.recvMsg, y.recvMsg);
      EXPECT_EQ(x.deps, y.deps);
    }
  }
}

} // namespace
