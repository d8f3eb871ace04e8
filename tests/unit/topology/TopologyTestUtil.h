//===- tests/unit/topology/TopologyTestUtil.h - Test helpers ---*- C++ -*-===//

#ifndef TOPOCC_TESTS_UNIT_TOPOLOGY_TOPOLOGYTESTUTIL_H
#define TOPOCC_TESTS_UNIT_TOPOLOGY_TOPOLOGYTESTUTIL_H

#include "compiler/topology/TopologyParser.h"

#include "gtest/gtest.h"

#include <string>

namespace topocc::topo::test {

/// Parses `text` as "t.yaml"; fails the test on error.
inline Topology parseOk(llvm::StringRef text) {
  auto t = parseTopology(text, "t.yaml");
  if (!t) {
    ADD_FAILURE() << llvm::toString(t.takeError());
    return Topology();
  }
  return std::move(*t);
}

/// The full diagnostic text of parsing `text`, or "(no error)".
inline std::string parseError(llvm::StringRef text) {
  auto t = parseTopology(text, "t.yaml");
  if (t)
    return "(no error)";
  return llvm::toString(t.takeError());
}

/// The text of `err`, or "(no error)".
inline std::string errText(llvm::Error err) {
  if (!err)
    return "(no error)";
  return llvm::toString(std::move(err));
}

} // namespace topocc::topo::test

#endif
