//===- tests/unit/backends/MscclXmlRulesTest.cpp --------------------------===//
//
// The MSCCL step types come from ir/OpKinds.def (every IR kind with an
// MSCCL code round-trips through the reader's table), and every finding
// carries the rule id its maker named (the reader's view, the importer,
// the checker), with the consequence that rule implies.
//
//===----------------------------------------------------------------------===//

#include "backends/MscclXmlRules.h"
#include "backends/MscclXmlCheck.h"
#include "backends/MscclXmlImport.h"
#include "backends/MscclXmlReader.h"
#include "ir/Schedule.h"

#include "llvm/Support/FormatVariadic.h"

#include "gtest/gtest.h"

#include <set>
#include <string>

using namespace topocc;
using namespace topocc::backends;

namespace {

//===----------------------------------------------------------------------===//
// Step types
//===----------------------------------------------------------------------===//

TEST(MscclStepTypeTest, EveryMscclKindRoundTrips) {
  unsigned withCode = 0;
  for (unsigned i = 0; i < ir::kNumOpKinds; ++i) {
    ir::OpKind k = static_cast<ir::OpKind>(i);
    MscclStepType t = mscclStepType(k);
    EXPECT_EQ(mscclStepOpKind(t), k) << i;
    llvm::StringRef code = ir::mscclCode(k);
    EXPECT_EQ(mscclStepTypeName(t), code) << i;
    if (code.empty())
      continue;
    ++withCode;
    // kind -> name -> kind through the reader's table.
    MscclStepType back = mscclStepTypeFromName(code);
    EXPECT_EQ(back, t) << code.str();
    EXPECT_EQ(mscclStepOpKind(back), k) << code.str();
    // The effect columns are the IR's flags.
    unsigned f = ir::opFlags(k);
    MscclStepTraits tr = mscclStepTraits(t);
    EXPECT_EQ(tr.sends, (f & ir::OF_SN) != 0) << code.str();
    EXPECT_EQ(tr.receives, (f & ir::OF_RV) != 0) << code.str();
    EXPECT_EQ(tr.readsSrc, (f & ir::OF_RS) != 0) << code.str();
    EXPECT_EQ(tr.writesDst, (f & ir::OF_WD) != 0) << code.str();
  }
  EXPECT_EQ(withCode, 9u); // s r rcs rrs rrc rrcs cpy re nop
  // No file names a kind that MSCCL cannot express.
  EXPECT_EQ(mscclStepTypeFromName(""), MscclStepType::Unknown);
  EXPECT_EQ(mscclStepTypeFromName("lincomb"), MscclStepType::Unknown);
}

TEST(MscclStepTypeTest, LegacyAndUnknownNames) {
  MscclStepType ra = mscclStepTypeFromName("ra");
  EXPECT_EQ(ra, MscclStepType::RecvAdd);
  EXPECT_EQ(mscclStepTypeName(ra), "ra");
  EXPECT_FALSE(mscclStepOpKind(ra));
  MscclStepTraits tr = mscclStepTraits(ra);
  EXPECT_FALSE(tr.sends);
  EXPECT_TRUE(tr.receives);
  EXPECT_TRUE(tr.readsSrc);
  EXPECT_TRUE(tr.writesDst);
  EXPECT_FALSE(tr.checkSrc);
  EXPECT_FALSE(tr.checkDst);
  for (llvm::StringRef bad : {"xx", "S", "rr", "re "})
    EXPECT_EQ(mscclStepTypeFromName(bad), MscclStepType::Unknown) << bad.str();
  EXPECT_EQ(mscclStepTypeName(MscclStepType::Unknown), "?");
  EXPECT_FALSE(mscclStepOpKind(MscclStepType::Unknown));
  MscclStepTraits none = mscclStepTraits(MscclStepType::Unknown);
  EXPECT_FALSE(none.sends || none.receives || none.readsSrc || none.writesDst ||
               none.checkSrc || none.checkDst);
}

TEST(MscclStepTypeTest, ExecutorBoundsChecks) {
  // msccl_parser.cc: which offsets the parser bounds-checks per type.
  struct Row {
    const char *name;
    bool src, dst;
  };
  const Row rows[] = {
      {"s", true, false},   {"r", false, true},    {"rcs", false, true},
      {"rrs", true, false}, {"rrc", false, false}, {"rrcs", true, true},
      {"cpy", true, true},  {"re", true, true},    {"nop", false, false}};
  for (const Row &r : rows) {
    MscclStepTraits tr = mscclStepTraits(mscclStepTypeFromName(r.name));
    EXPECT_EQ(tr.checkSrc, r.src) << r.name;
    EXPECT_EQ(tr.checkDst, r.dst) << r.name;
  }
}

//===----------------------------------------------------------------------===//
// Rule ids
//===----------------------------------------------------------------------===//

TEST(MscclRuleTest, NamesAndDefaultConsequences) {
  std::set<std::string> names;
  for (unsigned i = 0; i <= unsigned(MscclRule::Other); ++i)
    names.insert(mscclRuleName(MscclRule(i)).str());
  EXPECT_EQ(names.size(), unsigned(MscclRule::Other) + 1); // distinct
  EXPECT_EQ(mscclRuleName(MscclRule::Rule1), "rule 1");
  EXPECT_EQ(mscclRuleName(MscclRule::Rule11), "rule 11");
  EXPECT_EQ(mscclRuleName(MscclRule::Attribute), "attribute");
  EXPECT_EQ(mscclRuleName(MscclRule::Other), "other");
  using C = MscclConsequence;
  EXPECT_EQ(mscclRuleConsequence(MscclRule::Structure), C::RejectedAtScan);
  EXPECT_EQ(mscclRuleConsequence(MscclRule::Load), C::RejectedAtLoad);
  EXPECT_EQ(mscclRuleConsequence(MscclRule::Rule7), C::Hangs);
  EXPECT_EQ(mscclRuleConsequence(MscclRule::Rule8), C::RunsWrongly);
  EXPECT_EQ(mscclRuleConsequence(MscclRule::Rule11), C::NonConforming);
  EXPECT_EQ(mscclRuleConsequence(MscclRule::Import), C::NonConforming);
}

/// The 4-rank in-place ring allreduce (every rank sends first, or with
/// `recvFirst` receives first, which deadlocks).
std::string ring(bool recvFirst = false) {
  std::string x =
      "<algo name=\"ring\" proto=\"Simple\" nchannels=\"1\" "
      "nchunksperloop=\"4\" ngpus=\"4\" coll=\"allreduce\" inplace=\"1\" "
      "outofplace=\"0\" minBytes=\"0\" maxBytes=\"0\">\n";
  const char *types[] = {"s", "rrs", "rrs", "rrcs", "rcs", "rcs", "r"};
  const int back[] = {0, 1, 2, 3, 0, 1, 2};
  for (int r = 0; r < 4; ++r) {
    x += llvm::formatv("  <gpu id=\"{0}\" i_chunks=\"4\" o_chunks=\"0\" "
                       "s_chunks=\"0\">\n"
                       "    <tb id=\"0\" send=\"{1}\" recv=\"{2}\" "
                       "chan=\"0\">\n",
                       r, (r + 1) % 4, (r + 3) % 4);
    for (int j = 0; j < 7; ++j) {
      int k = recvFirst && j < 2 ? 1 - j : j;
      x += llvm::formatv("      <step s=\"{0}\" type=\"{1}\" srcbuf=\"i\" "
                         "srcoff=\"{2}\" dstbuf=\"i\" dstoff=\"{2}\" "
                         "cnt=\"1\" depid=\"-1\" deps=\"-1\" hasdep=\"0\" />\n",
                         j, types[k], (r - back[k] + 4) % 4);
    }
    x += "    </tb>\n  </gpu>\n";
  }
  return x + "</algo>\n";
}

std::string replaced(std::string s, llvm::StringRef from, llvm::StringRef to) {
  size_t p = s.find(from.str());
  EXPECT_NE(p, std::string::npos) << "pattern not found: " << from.str();
  if (p != std::string::npos)
    s.replace(p, from.size(), to.str());
  return s;
}

/// The finding whose message contains `needle`, among errors and warnings.
const MscclFinding *findingWith(const MscclVerdict &v, llvm::StringRef needle) {
  for (const auto *list : {&v.findings, &v.warningFindings})
    for (const MscclFinding &f : *list)
      if (llvm::StringRef(f.diag.message).contains(needle))
        return &f;
  return nullptr;
}

std::string allMessages(const MscclVerdict &v) {
  std::string out;
  for (const auto *list : {&v.findings, &v.warningFindings})
    for (const MscclFinding &f : *list)
      out += "[" + f.rule + "] " + f.diag.message + "\n";
  return out;
}

struct RuleCase {
  std::string what;
  std::string xml;
  std::string needle;
  MscclRule rule;
  std::optional<MscclConsequence> consequence;
  MscclCheckOptions opts = {};
};

TEST(MscclRuleTest, EveryKindOfFindingCarriesItsRule) {
  using C = MscclConsequence;
  using R = MscclRule;
  const std::string base = ring();
  const std::string secondTb =
      "    </tb>\n    <tb id=\"1\" send=\"-1\" recv=\"-1\" chan=\"0\">\n"
      "      <step s=\"0\" type=\"cpy\" srcbuf=\"i\" srcoff=\"0\" "
      "dstbuf=\"i\" dstoff=\"2\" cnt=\"1\" depid=\"-1\" deps=\"-1\" "
      "hasdep=\"0\" />\n    </tb>\n  </gpu>\n  <gpu id=\"1\"";
  const std::string tbEnd = "    </tb>\n  </gpu>\n  <gpu id=\"1\"";
  MscclCheckOptions fewSteps;
  fewSteps.maxSteps = 4;
  MscclCheckOptions legacy;
  legacy.legacy = true;
  std::vector<RuleCase> cases = {
      {"lexical error before <algo> ends", "<algo name=\"x\"", "Unexpected EOF",
       R::Lexical, C::RejectedAtScan},
      {"lexical error after <algo>", replaced(base, "</tb>", "</tb x>"),
       "unexpected trailing", R::Lexical, C::RejectedAtLoad},
      {"closing tag mismatch", replaced(base, "</tb>", "</tx>"), "XML Mismatch",
       R::Lexical, C::RejectedAtLoad},
      {"two spaces between attributes",
       replaced(base, "cnt=\"1\" depid", "cnt=\"1\"  depid"), "two spaces",
       R::Lexical, std::nullopt},
      {"missing attribute the scan reads",
       replaced(base, " minBytes=\"0\"", ""), "Attribute minBytes of node algo",
       R::Attribute, C::RejectedAtScan},
      {"missing attribute read at load", replaced(base, " hasdep=\"0\"", ""),
       "Attribute hasdep of node step", R::Attribute, C::RejectedAtLoad},
      {"first element is not <algo>", "<gpu id=\"0\"/>\n" + base,
       "the first element is <gpu>", R::Structure, C::RejectedAtScan},
      {"unsupported collective",
       replaced(base, "coll=\"allreduce\"", "coll=\"custom\""),
       "unsupported collective", R::Scan, C::RejectedAtScan},
      {"unsupported protocol",
       replaced(base, "proto=\"Simple\"", "proto=\"simple\""),
       "protocol simple is not supported", R::Load, C::RejectedAtLoad},
      {"legacy step type", replaced(base, "type=\"rrs\"", "type=\"ra\""),
       "ra is legacy-only", R::Load, C::RejectedAtLoad},
      {"unknown step type", replaced(base, "type=\"rrs\"", "type=\"rr\""),
       "valid: s r rcs rrs rrc rrcs cpy re nop", R::Load, C::RejectedAtLoad},
      {"too many steps", base, "limit (2.11)", R::Limit, C::RejectedAtLoad,
       fewSteps},
      {"channel out of range", replaced(base, "chan=\"0\"", "chan=\"1\""),
       "rule 1:", R::Rule1, C::Hangs},
      {"two blocks on one connection",
       replaced(base, tbEnd,
                "    </tb>\n    <tb id=\"1\" send=\"1\" recv=\"-1\" "
                "chan=\"0\">\n    </tb>\n  </gpu>\n  <gpu id=\"1\""),
       "rule 2:", R::Rule2, C::Hangs},
      {"peer out of range",
       replaced(base, "send=\"1\" recv=\"3\"", "send=\"5\" recv=\"3\""),
       "rule 3:", R::Rule3, C::Hangs},
      {"missing rank", replaced(base, "ngpus=\"4\"", "ngpus=\"5\""),
       "rule 4: rank 4 has no <gpu>", R::Rule4, C::Hangs},
      {"counts do not pair",
       replaced(base, "srcoff=\"0\" dstbuf=\"i\" dstoff=\"0\" cnt=\"1\"",
                "srcoff=\"0\" dstbuf=\"i\" dstoff=\"0\" cnt=\"2\""),
       "rule 5: receive number 0", R::Rule5, C::Hangs},
      {"misnumbered step", replaced(base, "<step s=\"1\"", "<step s=\"7\""),
       "rule 6:", R::Rule6, C::NonConforming},
      {"deadlock", ring(/*recvFirst=*/true), "rule 7 (deadlock)", R::Rule7,
       C::Hangs},
      {"race", replaced(base, tbEnd, secondTb), "rule 8 (data race)", R::Rule8,
       C::RunsWrongly},
      {"used operand is -1",
       replaced(base, "type=\"s\" srcbuf=\"i\" srcoff=\"0\"",
                "type=\"s\" srcbuf=\"i\" srcoff=\"-1\""),
       "rule 9:", R::Rule9, C::RunsWrongly},
      {"wrong buffer size", replaced(base, "i_chunks=\"4\"", "i_chunks=\"5\""),
       "rule 10:", R::Rule10, C::NonConforming},
      {"not a plain decimal", replaced(base, "cnt=\"1\"", "cnt=\"01\""),
       "rule 11:", R::Rule11, C::NonConforming},
      {"wrong result", replaced(base, "type=\"rrcs\"", "type=\"rcs\""),
       "postcondition", R::Postcondition, C::RunsWrongly},
      {"file never selected", replaced(base, "inplace=\"1\"", "inplace=\"0\""),
       "never selected", R::Other, std::nullopt},
      {"legacy dialect",
       replaced(base, "coll=\"allreduce\"", "coll=\"reduce_scatter\""),
       "legacy dialect", R::Other, std::nullopt, legacy},
  };
  for (const RuleCase &c : cases) {
    MscclVerdict v = verifyMscclXml(c.xml, "t.xml", c.opts);
    const MscclFinding *f = findingWith(v, c.needle);
    ASSERT_NE(f, nullptr) << c.what << ": no finding with '" << c.needle
                          << "'\n"
                          << allMessages(v);
    EXPECT_EQ(f->ruleId, c.rule) << c.what << ": " << f->diag.message;
    EXPECT_EQ(f->rule, mscclRuleName(c.rule)) << c.what;
    EXPECT_EQ(f->consequence, c.consequence)
        << c.what << ": " << f->diag.message;
    // Every finding's name is its id's name.
    for (const auto *list : {&v.findings, &v.warningFindings})
      for (const MscclFinding &g : *list)
        EXPECT_EQ(g.rule, mscclRuleName(g.ruleId)) << g.diag.message;
  }
}

TEST(MscclRuleTest, ViewAndImporterNameTheirRules) {
  // The view: a missing <algo> attribute the scan reads, one read at load.
  std::string x = replaced(ring(), " coll=\"allreduce\"", "");
  x = replaced(x, " hasdep=\"0\"", "");
  auto doc = readMscclXmlDocument(x, "v.xml");
  ASSERT_TRUE(static_cast<bool>(doc)) << llvm::toString(doc.takeError());
  DiagnosticList diags;
  std::vector<MscclRuleTag> tags;
  std::optional<MscclAlgo> algo = buildMscclView(*doc, diags, {}, &tags);
  ASSERT_TRUE(algo.has_value());
  ASSERT_EQ(tags.size(), diags.all().size());
  ASSERT_EQ(tags.size(), 2u);
  EXPECT_EQ(tags[0].rule, MscclRule::Attribute);
  EXPECT_EQ(tags[0].consequence, MscclConsequence::RejectedAtScan);
  EXPECT_EQ(tags[1].rule, MscclRule::Attribute);
  EXPECT_EQ(tags[1].consequence, std::nullopt);

  // The importer: a missing rank breaks rule 4, a legacy step type only
  // cannot be imported.
  auto importTags = [](const std::string &text) {
    std::vector<MscclRuleTag> t;
    auto d = readMscclXmlDocument(text, "i.xml");
    EXPECT_TRUE(static_cast<bool>(d));
    if (!d) {
      llvm::consumeError(d.takeError());
      return t;
    }
    DiagnosticList dl;
    std::optional<MscclAlgo> a = buildMscclView(*d, dl);
    EXPECT_TRUE(a && a->complete);
    if (!a)
      return t;
    llvm::Expected<MscclImport> imp = importMscclAlgo(*d, *a, {}, &t);
    EXPECT_FALSE(static_cast<bool>(imp));
    if (imp)
      return t;
    size_t n = 0;
    llvm::handleAllErrors(imp.takeError(), [&](const DiagnosticError &de) {
      n = de.diagnostics().size();
    });
    EXPECT_EQ(n, t.size());
    return t;
  };
  std::vector<MscclRuleTag> t =
      importTags(replaced(ring(), "ngpus=\"4\"", "ngpus=\"5\""));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].rule, MscclRule::Rule4);
  t = importTags(replaced(ring(), "type=\"rrs\"", "type=\"ra\""));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].rule, MscclRule::Import);
}

} // namespace
