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

#include <sys/wait.h>
#include <unistd.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include <algorithm>
#include <csignal>
#include <cstdlib>
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

TEST(OutputFileTest, SymbolicLinksAreWrittenThrough) {
  TempDir d;
  const std::string target = d.path("real.json"), link = d.path("link.json");
  writeFile(target, "old");
  ASSERT_FALSE(llvm::sys::fs::create_link(target, link));
  auto out = OutputFile::open(link);
  ASSERT_TRUE(static_cast<bool>(out));
  EXPECT_FALSE((*out)->renamed());
  (*out)->os() << "new";
  ASSERT_FALSE(static_cast<bool>((*out)->commit()));
  bool isLink = false;
  EXPECT_FALSE(llvm::sys::fs::is_symlink_file(link, isLink));
  EXPECT_TRUE(isLink);
  EXPECT_EQ(contents(target), "new");
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

// A command killed while it writes (SIGTERM; Ctrl-C's SIGINT alike) leaves
// no temporary behind; a signal the process ignores (SIGINT in a script's
// background job) changes nothing. Each case runs in a child process.
TEST(OutputFileTest, SignalsRemoveTheTemporaryUnlessIgnored) {
  TempDir d;
  const std::string plan = d.path("plan.json");
  auto child = [&](bool ignoreInt, int sig) {
    pid_t pid = fork();
    if (pid == 0) {
      OutputFile::removeTemporariesOnSignals(true);
      if (ignoreInt)
        std::signal(SIGINT, SIG_IGN);
      auto out = OutputFile::open(plan);
      if (!out)
        _exit(3);
      (*out)->os() << "written";
      (*out)->os().flush();
      raise(sig);
      _exit((*out)->commit() ? 4 : 0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return status;
  };
  int status = child(false, SIGTERM);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status;
  EXPECT_TRUE(d.names().empty());
  status = child(true, SIGINT);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(contents(plan), "written");
  EXPECT_EQ(d.names(), std::vector<std::string>{"plan.json"});
}

/// The file of the death test below, named by the test process's id (the
/// child that runs the statement is a fresh process it started).
std::string ignoredSignalPlan(pid_t testProcess) {
  llvm::SmallString<256> p;
  llvm::sys::path::system_temp_directory(/*ErasedOnReboot=*/true, p);
  llvm::sys::path::append(p, "topocc-ignored-sigint-" +
                                 std::to_string(testProcess) + ".json");
  return p.str().str();
}

// The first OutputFile of a process installs the handlers that remove its
// temporary on a signal. A signal the process ignored before (SIGINT in a
// script's background job) must stay ignored, or the handler would remove
// the file and return to a command that then cannot rename it. Run in a
// fresh process ("threadsafe" death tests re-execute the test binary), so
// that no earlier test has installed the handlers.
TEST(OutputFileDeathTest, IgnoredSignalsStayIgnored) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const std::string plan = ignoredSignalPlan(getpid());
  EXPECT_EXIT(
      {
        std::signal(SIGINT, SIG_IGN);
        OutputFile::removeTemporariesOnSignals(true);
        auto out = OutputFile::open(ignoredSignalPlan(getppid()));
        if (!out) {
          llvm::consumeError(out.takeError());
          std::_Exit(3);
        }
        (*out)->os() << "written";
        raise(SIGINT);
        llvm::Error err = (*out)->commit();
        const bool failed = static_cast<bool>(err);
        llvm::consumeError(std::move(err));
        std::_Exit(failed ? 4 : 0);
      },
      testing::ExitedWithCode(0), "");
  EXPECT_EQ(contents(plan), "written");
  llvm::sys::fs::remove(plan);
}
