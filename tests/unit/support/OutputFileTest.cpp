//===- tests/unit/support/OutputFileTest.cpp - Files that appear whole ----===//
//
// OutputFile writes beside its path and renames at commit(): the path
// shows the old content (or nothing) until then, a dropped file leaves no
// trace, and devices are written in place.
//
//===----------------------------------------------------------------------===//

#include "support/OutputFile.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include <algorithm>
#include <string>
#include <vector>

using namespace topocc;

namespace {

/// A fresh directory, removed with what it holds.
class TempDir {
public:
  TempDir() {
    EXPECT_FALSE(
        llvm::sys::fs::createUniqueDirectory("topocc-output-test", dir));
  }
  ~TempDir() { llvm::sys::fs::remove_directories(dir); }
  std::string path(llvm::StringRef name) const {
    llvm::SmallString<256> p(dir);
    llvm::sys::path::append(p, name);
    return p.str().str();
  }
  /// The names in the directory, sorted.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it(dir, ec), end; !ec && it != end;
         it.increment(ec))
      out.push_back(llvm::sys::path::filename(it->path()).str());
    std::sort(out.begin(), out.end());
    return out;
  }

private:
  llvm::SmallString<256> dir;
};

std::string contents(const std::string &path) {
  auto buf = llvm::MemoryBuffer::getFile(path);
  return buf ? (*buf)->getBuffer().str() : "<missing>";
}

void writeFile(const std::string &path, llvm::StringRef text) {
  auto out = OutputFile::open(path);
  ASSERT_TRUE(static_cast<bool>(out));
  (*out)->os() << text;
  ASSERT_FALSE(static_cast<bool>((*out)->commit()));
}

} // namespace

TEST(OutputFileTest, ThePathChangesOnlyAtCommit) {
  TempDir d;
  const std::string plan = d.path("plan.json");
  writeFile(plan, "old");
  auto out = OutputFile::open(plan);
  ASSERT_TRUE(static_cast<bool>(out));
  EXPECT_TRUE((*out)->renamed());
  (*out)->os() << "new content";
  (*out)->os().flush();
  // Written, not committed: the old file is what a reader sees, and the
  // new one is a temporary beside it.
  EXPECT_EQ(contents(plan), "old");
  EXPECT_EQ(d.names().size(), 2u);
  ASSERT_FALSE(static_cast<bool>((*out)->commit()));
  EXPECT_EQ(contents(plan), "new content");
  EXPECT_EQ(d.names(), std::vector<std::string>{"plan.json"});
}

TEST(OutputFileTest, DroppedBeforeCommitLeavesNothing) {
  TempDir d;
  const std::string plan = d.path("plan.json");
  {
    auto out = OutputFile::open(plan);
    ASSERT_TRUE(static_cast<bool>(out));
    (*out)->os() << std::string(1 << 20, 'x'); // past the stream's buffer
  }
  EXPECT_TRUE(d.names().empty());
  // An old file stays as it was.
  writeFile(plan, "old");
  {
    auto out = OutputFile::open(plan);
    ASSERT_TRUE(static_cast<bool>(out));
    (*out)->os() << "half";
  }
  EXPECT_EQ(contents(plan), "old");
  EXPECT_EQ(d.names(), std::vector<std::string>{"plan.json"});
}

TEST(OutputFileTest, DevicesAreWrittenInPlace) {
  if (!llvm::sys::fs::exists("/dev/null"))
    GTEST_SKIP() << "no /dev/null on this system";
  auto out = OutputFile::open("/dev/null");
  ASSERT_TRUE(static_cast<bool>(out));
  EXPECT_FALSE((*out)->renamed());
  (*out)->os() << "discarded";
  EXPECT_FALSE(static_cast<bool>((*out)->commit()));
  llvm::sys::fs::file_status st;
  ASSERT_FALSE(llvm::sys::fs::status("/dev/null", st));
  EXPECT_EQ(st.type(), llvm::sys::fs::file_type::character_file);
}

TEST(OutputFileTest, AnUnwritableDirectoryIsAUserError) {
  TempDir d;
  const std::string path = d.path("missing/plan.json");
  auto out = OutputFile::open(path);
  ASSERT_FALSE(static_cast<bool>(out));
  EXPECT_THAT(llvm::toString(out.takeError()),
              testing::HasSubstr("cannot write '" + path +
                                 "': No such file or directory"));
}
