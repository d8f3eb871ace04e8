//===- tests/unit/support/ProgressTest.cpp - Progress of long work --------===//

#include "support/Progress.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

using namespace topocc;

namespace {

/// Records what a ProgressTask tells its sink.
struct RecordingSink : ProgressSink {
  std::vector<std::string> calls;
  void begin(llvm::StringRef task, uint64_t total,
             llvm::StringRef unit) override {
    calls.push_back("begin " + task.str() + " " + std::to_string(total) + " " +
                    unit.str());
  }
  void update(uint64_t done) override {
    calls.push_back("update " + std::to_string(done));
  }
  void end(uint64_t done) override {
    calls.push_back("end " + std::to_string(done));
  }
};

/// Installs a sink for one test.
struct SinkScope {
  explicit SinkScope(ProgressSink *s) : old(setProgressSink(s)) {}
  ~SinkScope() { setProgressSink(old); }
  ProgressSink *old;
};

TEST(Progress, TasksReachTheInstalledSinkInStackOrder) {
  RecordingSink sink;
  {
    SinkScope scope(&sink);
    ProgressTask outer("outer", 2, "steps");
    outer.advance();
    {
      ProgressTask inner("inner");
      inner.set(7);
    }
    outer.advance();
  }
  EXPECT_EQ(sink.calls, (std::vector<std::string>{
                            "begin outer 2 steps", "update 1", "begin inner 0 ",
                            "update 7", "end 7", "update 2", "end 2"}));
  // Without a sink a task does nothing (and the sink above is gone).
  ProgressTask none("none", 3);
  none.advance(3);
  EXPECT_EQ(sink.calls.size(), 7u);
}

// The sink is the installing thread's: work on another thread (compile's
// bounds, computed beside auto) reports nothing into the main thread's tasks.
TEST(Progress, OtherThreadsDoNotReachTheSink) {
  RecordingSink sink;
  SinkScope scope(&sink);
  ProgressTask outer("outer", 1);
  std::thread beside([] {
    ProgressTask task("beside", 5);
    task.advance(5);
  });
  beside.join();
  outer.advance();
  EXPECT_EQ(sink.calls,
            (std::vector<std::string>{"begin outer 1 ", "update 1"}));
}

/// A StreamProgress writing to `out` on the clock `now`.
struct Captured {
  std::string out;
  llvm::raw_string_ostream os{out};
  double now = 0;
  StreamProgress p;
  Captured(StreamProgress::Style style, unsigned columns)
      : p(os, style, columns, 0.5, [this] { return now; }) {}
};

TEST(Progress, LinesStyleReportsOuterStepsAndASummary) {
  Captured c(StreamProgress::Style::Lines, 80);
  std::string &out = c.out;
  double &now = c.now;
  {
    SinkScope scope(&c.p);
    for (int round = 0; round < 2; ++round) {
      ProgressTask top("routes", 4, "ranks");
      ProgressTask mid("flows", 0, "max flows");
      {
        ProgressTask deep("too deep for a line");
        now += 1;
      }
      mid.set(10);
      top.set(4);
    }
    ProgressTask other("other");
    now += 0.5;
  }
  c.p.finish("bound", 2.0);
  c.os.flush();
  EXPECT_EQ(out, "topocc: routes > flows: 10 max flows in 1.00 s\n"
                 "topocc: routes: 4/4 ranks in 1.00 s\n"
                 "topocc: routes > flows: 10 max flows in 1.00 s\n"
                 "topocc: routes: 4/4 ranks in 1.00 s\n"
                 "topocc: other in 0.50 s\n"
                 "topocc bound: done in 2.50 s: routes 8 ranks in 2 runs "
                 "(2.00 s); other (0.50 s)\n");
}

TEST(Progress, LiveStyleRedrawsInPlaceAfterTheDelay) {
  Captured c(StreamProgress::Style::Live, 50);
  std::string &out = c.out;
  double &now = c.now;
  SinkScope scope(&c.p);
  {
    ProgressTask t("routes", 100, "ranks");
    t.set(10); // before the delay: nothing
    c.os.flush();
    EXPECT_EQ(out, "");
    now = 0.6;
    t.set(20);
    now = 0.65; // within 0.1 s of the last line: not redrawn
    t.set(30);
    now = 0.8;
    t.set(40);
    ProgressTask inner("a task with a long name that does not fit");
    now = 1.0;
    inner.set(1);
  }
  c.os.flush();
  // The line is cleared when the last task ends (the command's output
  // follows on a clean line).
  EXPECT_EQ(out, "\rroutes: 20/100 ranks (20%), 0.60 s\x1b[K"
                 "\rroutes: 40/100 ranks (40%), 0.80 s\x1b[K"
                 "\rroutes > a task with a long name that does not...\x1b[K"
                 "\r\x1b[K");
  // A command under minSeconds prints no summary; a task still drawn is
  // cleared by finish.
  out.clear();
  c.p.finish("bound", 2.0);
  c.os.flush();
  EXPECT_EQ(out, "");
  {
    ProgressTask open("open", 3);
    now = 1.2;
    open.set(1);
    out.clear();
    c.p.finish("bound", 2.0);
    c.os.flush();
    EXPECT_EQ(out, "\r\x1b[K");
  }
  now = 5;
  out.clear();
  c.p.finish("bound", 2.0);
  c.os.flush();
  EXPECT_EQ(out, "topocc bound: done in 5.00 s: routes 40 ranks (1.00 s); "
                 "open 1 (0.20 s)\n");
}

} // namespace
