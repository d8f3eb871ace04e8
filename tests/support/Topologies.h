//===- tests/support/Topologies.h - Topologies for unit tests -*- C++ -*-===//
//
// A topology parsed from YAML text or loaded from topologies/ in the source
// tree, failing the current test (and returning an empty topology) when it
// does not load.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_TESTS_SUPPORT_TOPOLOGIES_H
#define TOPOCC_TESTS_SUPPORT_TOPOLOGIES_H

#include "compiler/topology/TopologyParser.h"

#include "gtest/gtest.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Path.h"

#include <string>

namespace topocc::testing {

inline topo::Topology parseTopologyOk(const std::string &text) {
  auto t = topo::parseTopology(text, "t.yaml");
  if (!t) {
    ADD_FAILURE() << llvm::toString(t.takeError()) << "\n" << text;
    return topo::Topology();
  }
  return std::move(*t);
}

/// topologies/<name> of the source tree (TOPOCC_SOURCE_DIR).
inline topo::Topology libraryTopology(const char *name) {
  llvm::SmallString<256> path(TOPOCC_SOURCE_DIR);
  llvm::sys::path::append(path, "topologies", name);
  auto t = topo::loadTopologyFile(path.str());
  if (!t) {
    ADD_FAILURE() << llvm::toString(t.takeError());
    return topo::Topology();
  }
  return std::move(*t);
}

} // namespace topocc::testing

#endif // TOPOCC_TESTS_SUPPORT_TOPOLOGIES_H
