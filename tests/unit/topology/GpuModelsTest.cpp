//===- tests/unit/topology/GpuModelsTest.cpp - The GPU model table --------===//
//
// The SM (CU) counts, vendors and memory bandwidths of the table
// (docs/MscclXml.md, "GPU models"), the model matching (most specific key
// first, no match inside a longer number), and targetSmCount /
// targetGpuVendor on topologies: a known model, the minimum over ranks of
// two models, an unknown and a missing model (user errors naming the model
// and --sm-count).
//
//===----------------------------------------------------------------------===//

#include "compiler/topology/GpuModels.h"
#include "tests/unit/topology/TopologyTestUtil.h"

#include "gtest/gtest.h"

#include <string>

using namespace topocc;
using namespace topocc::topo;
using namespace topocc::topo::test;

namespace {

int32_t sms(llvm::StringRef model) {
  const GpuModel *m = findGpuModel(model);
  return m ? m->smCount : -1;
}

/// Two GPUs per node on one switch; `models` gives each node's GPU model
/// ("" for none).
std::string twoNodes(llvm::StringRef model0, llvm::StringRef model1) {
  auto gpus = [](llvm::StringRef model) {
    return model.empty() ? std::string("[ { name: \"g{i:0-1}\" } ]")
                         : "[ { name: \"g{i:0-1}\", model: " + model.str() +
                               " } ]";
  };
  return "schema: topocc/v1\n"
         "name: two\n"
         "link_classes:\n"
         "  nv: { type: nvlink, bandwidth: 25 GB/s, latency: 1 us }\n"
         "  net: { type: ib, bandwidth: 100 Gb/s, latency: 2 us }\n"
         "node_templates:\n"
         "  a:\n"
         "    gpus: " + gpus(model0) + "\n"
         "    nics: [ { name: nic } ]\n"
         "    links: [ { from: \"g{i:0-1}\", to: nic, class: nv } ]\n"
         "  b:\n"
         "    gpus: " + gpus(model1) + "\n"
         "    nics: [ { name: nic } ]\n"
         "    links: [ { from: \"g{i:0-1}\", to: nic, class: nv } ]\n"
         "nodes:\n"
         "  - { name: n0, template: a }\n"
         "  - { name: n1, template: b }\n"
         "fabric:\n"
         "  switches: [ { name: sw, kind: ib-switch } ]\n"
         "  links:\n"
         "    - { from: \"n0/nic\", to: sw, class: net }\n"
         "    - { from: \"n1/nic\", to: sw, class: net }\n";
}

} // namespace

TEST(GpuModelsTest, SmCounts) {
  EXPECT_EQ(sms("v100-sxm2"), 80);
  EXPECT_EQ(sms("v100-sxm3"), 80);
  EXPECT_EQ(sms("a100-sxm4"), 108);
  EXPECT_EQ(sms("a100-pcie"), 108);
  EXPECT_EQ(sms("h100-sxm5"), 132);
  EXPECT_EQ(sms("h100-sxm"), 132);
  EXPECT_EQ(sms("h100-pcie"), 114);
  EXPECT_EQ(sms("h200"), 132);
  EXPECT_EQ(sms("a10"), 72);
  EXPECT_EQ(sms("mi250-gcd"), 104);
  EXPECT_EQ(sms("mi250x-gcd"), 110);
  EXPECT_EQ(sms("MI300X"), 304);
}

TEST(GpuModelsTest, Matching) {
  // "a10" must not match inside "a100"; case does not matter.
  ASSERT_NE(findGpuModel("A100-SXM4"), nullptr);
  EXPECT_EQ(findGpuModel("A100-SXM4")->key, "a100");
  EXPECT_EQ(findGpuModel("nvidia-a10")->key, "a10");
  EXPECT_EQ(findGpuModel("mi250x")->key, "mi250x");
  EXPECT_EQ(findGpuModel("test-gpu"), nullptr);
  EXPECT_EQ(findGpuModel(""), nullptr);
  EXPECT_EQ(findGpuModel("a1000"), nullptr);
}

TEST(GpuModelsTest, VendorsAndBandwidths) {
  EXPECT_EQ(findGpuModel("mi250-gcd")->vendor, GpuVendor::Amd);
  EXPECT_EQ(findGpuModel("mi300x")->vendor, GpuVendor::Amd);
  EXPECT_EQ(findGpuModel("h100-sxm5")->vendor, GpuVendor::Nvidia);
  EXPECT_EQ(gpuVendorName(GpuVendor::Amd), "amd");
  EXPECT_EQ(gpuVendorName(GpuVendor::Nvidia), "nvidia");
  // The compute model's numbers (GB/s): one table.
  EXPECT_DOUBLE_EQ(findGpuModel("a100-sxm4")->memoryBandwidth, 2039e9);
  EXPECT_DOUBLE_EQ(findGpuModel("a100-pcie")->memoryBandwidth, 1935e9);
  EXPECT_DOUBLE_EQ(findGpuModel("h100-sxm5")->memoryBandwidth, 3350e9);
  EXPECT_DOUBLE_EQ(findGpuModel("v100-sxm2")->memoryBandwidth, 900e9);
  EXPECT_DOUBLE_EQ(findGpuModel("mi250-gcd")->memoryBandwidth, 1638e9);
  // Every row is complete, and no key is shadowed by an earlier one.
  for (size_t i = 0; i < gpuModels().size(); ++i) {
    const GpuModel &m = gpuModels()[i];
    SCOPED_TRACE(m.key.str());
    EXPECT_GT(m.smCount, 0);
    EXPECT_GT(m.memoryBandwidth, 0);
    EXPECT_FALSE(m.description.empty());
    EXPECT_EQ(findGpuModel(m.key), &m);
  }
}

TEST(GpuModelsTest, TargetSmCountKnownModel) {
  Topology t = parseOk(twoNodes("v100-sxm2", "v100-sxm2"));
  auto n = targetSmCount(t);
  ASSERT_TRUE(static_cast<bool>(n)) << llvm::toString(n.takeError());
  EXPECT_EQ(*n, 80);
  EXPECT_EQ(targetGpuVendor(t), GpuVendor::Nvidia);
}

TEST(GpuModelsTest, TargetSmCountIsTheMinimumOverRanks) {
  Topology t = parseOk(twoNodes("h100-sxm5", "a100-sxm4"));
  auto n = targetSmCount(t);
  ASSERT_TRUE(static_cast<bool>(n)) << llvm::toString(n.takeError());
  EXPECT_EQ(*n, 108);
  Topology amd = parseOk(twoNodes("mi250x-gcd", "mi250-gcd"));
  auto m = targetSmCount(amd);
  ASSERT_TRUE(static_cast<bool>(m));
  EXPECT_EQ(*m, 104);
  EXPECT_EQ(targetGpuVendor(amd), GpuVendor::Amd);
}

TEST(GpuModelsTest, UnknownModelIsAUserError) {
  Topology t = parseOk(twoNodes("a100-sxm4", "test-gpu"));
  auto n = targetSmCount(t);
  ASSERT_FALSE(static_cast<bool>(n));
  std::string msg = llvm::toString(n.takeError());
  EXPECT_NE(msg.find("'test-gpu'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("n1/g0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--sm-count"), std::string::npos) << msg;
  EXPECT_EQ(targetGpuVendor(t), std::nullopt);
}

TEST(GpuModelsTest, MissingModelIsAUserError) {
  Topology t = parseOk(twoNodes("", ""));
  auto n = targetSmCount(t);
  ASSERT_FALSE(static_cast<bool>(n));
  std::string msg = llvm::toString(n.takeError());
  EXPECT_NE(msg.find("has no model"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--sm-count"), std::string::npos) << msg;
}
