//===- support/Progress.cpp - Progress of long work -----------------------===//

#include "support/Progress.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <chrono>

namespace topocc {

namespace {
// Per thread: work a tool runs on a thread of its own (compile's bounds
// beside auto) reports nothing, and never into another task's line.
ProgressSink *&currentSink() {
  static thread_local ProgressSink *sink = nullptr;
  return sink;
}
} // namespace

ProgressSink::~ProgressSink() = default;

bool progressStopRequested() {
  ProgressSink *sink = currentSink();
  return sink && sink->stopRequested();
}

ProgressSink *setProgressSink(ProgressSink *sink) {
  ProgressSink *old = currentSink();
  currentSink() = sink;
  return old;
}

ProgressTask::ProgressTask(llvm::StringRef task, uint64_t total,
                           llvm::StringRef unit)
    : sink(currentSink()) {
  if (sink)
    sink->begin(task, total, unit);
}

ProgressTask::~ProgressTask() {
  if (sink)
    sink->end(done);
}

void ProgressTask::set(uint64_t units) {
  done = units;
  if (sink)
    sink->update(done);
}

} // namespace topocc

namespace topocc {

namespace {
double steadySeconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

std::string seconds(double s) {
  return llvm::formatv(s < 10 ? "{0:F2} s" : "{0:F1} s", s).str();
}
} // namespace

StreamProgress::StreamProgress(llvm::raw_ostream &os, Style style,
                               unsigned columns, double delay, Clock clock)
    : os(os), style(style), columns(std::max(20u, columns)), delay(delay),
      clock(clock ? std::move(clock) : Clock(steadySeconds)),
      started(this->clock()) {}

std::string StreamProgress::count(uint64_t done, uint64_t total,
                                  llvm::StringRef unit) {
  if (done == 0 && total == 0 && unit.empty())
    return "";
  std::string out = std::to_string(done);
  if (total > 0)
    out += "/" + std::to_string(total);
  if (!unit.empty())
    out += " " + unit.str();
  return out;
}

void StreamProgress::begin(llvm::StringRef task, uint64_t total,
                           llvm::StringRef unit) {
  stack.push_back({task.str(), unit.str(), total, 0, clock()});
  draw(false);
}

void StreamProgress::update(uint64_t done) {
  if (stack.empty())
    return;
  stack.back().done = done;
  draw(false);
}

void StreamProgress::end(uint64_t done) {
  if (stack.empty())
    return;
  Active a = std::move(stack.back());
  stack.pop_back();
  a.done = done;
  double took = clock() - a.start;
  if (style == Style::Lines && stack.size() <= 1) {
    std::string path;
    for (const Active &outer : stack)
      path += outer.name + " > ";
    std::string units = count(a.done, a.total, a.unit);
    os << "topocc: " << path << a.name << (units.empty() ? "" : ": ") << units
       << " in " << seconds(took) << '\n';
  }
  if (stack.empty()) {
    auto same = llvm::find_if(summary, [&](const Done &d) {
      return d.name == a.name && d.unit == a.unit;
    });
    if (same == summary.end())
      summary.push_back({a.name, a.unit, a.done, 1, took});
    else {
      same->done += a.done;
      same->seconds += took;
      ++same->times;
    }
    // Nothing runs now: clear the line, so that what the command prints
    // next (its results) starts on a clean line.
    if (drawn) {
      os << "\r\x1b[K";
      os.flush();
      drawn = false;
    }
    return;
  }
  draw(false);
}

void StreamProgress::draw(bool force) {
  if (style != Style::Live)
    return;
  double now = clock();
  if (!force && (now - started < delay || now - lastDraw < 0.1))
    return;
  lastDraw = now;
  std::string line;
  for (size_t i = 0; i < stack.size(); ++i)
    line += (i ? " > " : "") + stack[i].name;
  if (!stack.empty()) {
    const Active &in = stack.back();
    std::string units = count(in.done, in.total, in.unit);
    if (!units.empty())
      line += ": " + units;
    if (in.total > 0)
      line += llvm::formatv(" ({0}%)", in.done * 100 / in.total).str();
    line += ", " + seconds(now - started);
  }
  if (line.size() + 1 > columns)
    line = line.substr(0, columns - 4) + "...";
  os << '\r' << line << "\x1b[K";
  os.flush();
  drawn = true;
}

void StreamProgress::finish(llvm::StringRef command, double minSeconds) {
  if (drawn) {
    os << "\r\x1b[K";
    drawn = false;
  }
  double took = clock() - started;
  if (style == Style::Live && took < minSeconds)
    return;
  os << "topocc " << command << ": done in " << seconds(took);
  const char *sep = ": ";
  for (const Done &d : summary) {
    os << sep << d.name;
    if (std::string units = count(d.done, 0, d.unit); !units.empty())
      os << " " << units;
    if (d.times > 1)
      os << " in " << d.times << " runs";
    os << " (" << seconds(d.seconds) << ")";
    sep = "; ";
  }
  os << '\n';
  os.flush();
}

} // namespace topocc
