//===- support/Progress.h - Progress of long work ---------------*- C++ -*-===//
//
// Library code that may run for seconds (the realizable bound's routes and
// max flows, auto's candidates, the verifier, the simulator, the forest)
// reports what it is doing through a ProgressTask; the process's sink, which
// only a tool installs (tools/topocc/Driver.cpp: on stderr when it is a
// terminal, silenced by --quiet), decides whether and how to show it. With
// no sink, a task costs a null check per call. Library code never prints.
//
// Tasks nest (a candidate's compile inside auto's selection): the sink sees
// begin/update/end in stack order. Not thread-safe: one sink per process,
// called from the thread that runs the work.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_SUPPORT_PROGRESS_H
#define TOPOCC_SUPPORT_PROGRESS_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace topocc {

/// Receives the tasks of the work in progress.
class ProgressSink {
public:
  virtual ~ProgressSink();
  /// A task began: `total` units named `unit` ("ranks"); total 0 when the
  /// amount is not known.
  virtual void begin(llvm::StringRef task, uint64_t total,
                     llvm::StringRef unit) = 0;
  /// The innermost task has done `done` units.
  virtual void update(uint64_t done) = 0;
  /// The innermost task ended after `done` units.
  virtual void end(uint64_t done) = 0;
  /// Whether the work should stop early: long loops that report progress
  /// check it (progressStopRequested) and return an error instead of
  /// finishing. False unless a sink says so (StopSink).
  virtual bool stopRequested() const { return false; }
};

/// A sink that shows nothing and lets another thread ask the work on its
/// thread to stop (compile's bounds, computed beside the compile, when the
/// compile fails first).
class StopSink : public ProgressSink {
public:
  void begin(llvm::StringRef, uint64_t, llvm::StringRef) override {}
  void update(uint64_t) override {}
  void end(uint64_t) override {}
  bool stopRequested() const override { return stop.load(); }
  void requestStop() { stop.store(true); }

private:
  std::atomic<bool> stop{false};
};

/// The calling thread's sink asks its work to stop.
bool progressStopRequested();

/// Installs `sink` for the calling thread (nullptr: none, the default for
/// every thread) and returns the previous one.
ProgressSink *setProgressSink(ProgressSink *sink);

/// One step of long work, from construction to destruction.
class ProgressTask {
public:
  ProgressTask(llvm::StringRef task, uint64_t total = 0,
               llvm::StringRef unit = "");
  ~ProgressTask();
  ProgressTask(const ProgressTask &) = delete;
  ProgressTask &operator=(const ProgressTask &) = delete;

  /// `n` more units done.
  void advance(uint64_t n = 1) { set(done + n); }
  /// `units` done in all.
  void set(uint64_t units);

private:
  ProgressSink *sink;
  uint64_t done = 0;
};

/// A sink that writes to the stream a tool gives it (stderr), in one of two
/// styles:
/// - Live (a terminal): one line, redrawn in place at most every 0.1 s and
///   only once the work has run `delay` seconds: the nested tasks joined by
///   " > ", the innermost one's count, percentage and elapsed time, cut to
///   `columns`;
/// - Lines (a log): one line per task of depth 0 or 1 when it ends, with its
///   count and time.
/// finish() clears the live line and prints the summary of the top-level
/// tasks.
class StreamProgress : public ProgressSink {
public:
  enum class Style { Live, Lines };
  /// Seconds since some fixed point (steady clock by default; tests pass
  /// their own).
  using Clock = std::function<double()>;

  StreamProgress(llvm::raw_ostream &os, Style style, unsigned columns = 80,
                 double delay = 0.5, Clock clock = nullptr);

  void begin(llvm::StringRef task, uint64_t total,
             llvm::StringRef unit) override;
  void update(uint64_t done) override;
  void end(uint64_t done) override;

  /// Clears the live line; then, when the work took at least `minSeconds`
  /// or the style is Lines, prints "topocc COMMAND: done in T s: TASK N
  /// UNIT (T s); ..." (the top-level tasks in order; repeated names merged
  /// with their counts and times added).
  void finish(llvm::StringRef command, double minSeconds);

private:
  struct Active {
    std::string name, unit;
    uint64_t total = 0, done = 0;
    double start = 0;
  };
  struct Done {
    std::string name, unit;
    uint64_t done = 0, times = 0;
    double seconds = 0;
  };
  void draw(bool force);
  static std::string count(uint64_t done, uint64_t total, llvm::StringRef unit);

  llvm::raw_ostream &os;
  Style style;
  unsigned columns;
  double delay;
  Clock clock;
  double started, lastDraw = -1;
  bool drawn = false;
  std::vector<Active> stack;
  std::vector<Done> summary;
};

} // namespace topocc

#endif // TOPOCC_SUPPORT_PROGRESS_H
