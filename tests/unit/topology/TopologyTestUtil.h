//===- tests/unit/topology/TopologyTestUtil.h - Test helpers ---*- C++ -*-===//

#ifndef TOPOCC_TESTS_UNIT_TOPOLOGY_TOPOLOGYTESTUTIL_H
#define TOPOCC_TESTS_UNIT_TOPOLOGY_TOPOLOGYTESTUTIL_H

#include "compiler/topology/TopologyParser.h"

#include "gtest/gtest.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <string>
#include <vector>

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

/// The library's folder, topologies/ in the source tree.
inline std::string libraryDir() {
  llvm::SmallString<256> p(TOPOCC_SOURCE_DIR);
  llvm::sys::path::append(p, "topologies");
  return std::string(p);
}

/// Every .yaml file of the library, sorted.
inline std::vector<std::string> libraryFiles() {
  std::vector<std::string> files;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(libraryDir(), ec), end;
       it != end && !ec; it.increment(ec))
    if (llvm::StringRef(it->path()).endswith(".yaml"))
      files.push_back(it->path());
  std::sort(files.begin(), files.end());
  return files;
}

} // namespace topocc::topo::test

#endif
