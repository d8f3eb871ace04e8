//===- backends/Trace.cpp - Perfetto/Chrome trace of a simulated run ------===//

#include "backends/Trace.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <map>

namespace topocc::backends {

namespace {

/// Counts what is written to it and keeps nothing.
class CountingStream : public llvm::raw_ostream {
public:
  CountingStream() { SetUnbuffered(); }
  uint64_t count() const { return n; }

private:
  void write_impl(const char *, size_t size) override { n += size; }
  uint64_t current_pos() const override { return n; }
  uint64_t n = 0;
};

/// Streams the events, one per line, without building a document: the
/// memory stays that of one event whatever the trace's size.
class EventWriter {
public:
  explicit EventWriter(llvm::raw_ostream &os) : os(os) {
    os << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  }
  ~EventWriter() { os << "\n]}\n"; }

  template <typename Body> void event(Body body) {
    if (!first)
      os << ",\n";
    first = false;
    llvm::json::OStream j(os);
    j.object([&] { body(j); });
  }

private:
  llvm::raw_ostream &os;
  bool first = true;
};

} // namespace

void writeChromeTrace(llvm::raw_ostream &os, const analysis::SimResult &r,
                      llvm::ArrayRef<std::string> resourceNames,
                      llvm::StringRef title) {
  EventWriter w(os);
  w.event([&](llvm::json::OStream &j) {
    j.attribute("ph", "M");
    j.attribute("name", "process_name");
    j.attribute("pid", 1);
    j.attributeObject("args", [&] { j.attribute("name", title); });
  });
  // Tracks in resource order, numbered from 1.
  std::map<int, int> track;
  for (const analysis::SimTransfer &x : r.transfers)
    track.emplace(x.resource, 0);
  int next = 1;
  for (auto &[res, tid] : track) {
    tid = next++;
    w.event([&](llvm::json::OStream &j) {
      j.attribute("ph", "M");
      j.attribute("name", "thread_name");
      j.attribute("pid", 1);
      j.attribute("tid", tid);
      j.attributeObject("args",
                        [&] { j.attribute("name", resourceNames[res]); });
    });
  }
  for (const analysis::SimTransfer &x : r.transfers)
    w.event([&](llvm::json::OStream &j) {
      j.attribute("ph", "X");
      j.attribute("name", llvm::formatv("msg {0} r{1}->r{2}", x.message,
                                        x.sender, x.receiver)
                              .str());
      j.attribute("pid", 1);
      j.attribute("tid", track[x.resource]);
      j.attribute("ts", x.start * 1e6);
      j.attribute("dur", (x.end - x.start) * 1e6);
      j.attributeObject("args", [&] {
        j.attribute("bytes", x.bytes);
        j.attribute("message", x.message);
        j.attribute("receiver", x.receiver);
        j.attribute("sender", x.sender);
      });
    });
  auto mid = [&](int i) {
    return (r.transfers[i].start + r.transfers[i].end) / 2 * 1e6;
  };
  auto tidOf = [&](int i) { return track[r.transfers[i].resource]; };
  int64_t id = 0;
  for (const analysis::SimFlow &f : r.flows) {
    ++id;
    llvm::StringRef cat = f.sameMessage ? "hop" : "release";
    std::string name =
        llvm::formatv("msg {0} -> msg {1}", r.transfers[f.from].message,
                      r.transfers[f.to].message)
            .str();
    for (bool start : {true, false})
      w.event([&](llvm::json::OStream &j) {
        j.attribute("ph", start ? "s" : "f");
        if (!start)
          j.attribute("bp", "e");
        j.attribute("id", id);
        j.attribute("name", name);
        j.attribute("cat", cat);
        j.attribute("pid", 1);
        int at = start ? f.from : f.to;
        j.attribute("tid", tidOf(at));
        j.attribute("ts", mid(at));
      });
  }
}

uint64_t chromeTraceBytes(const analysis::SimResult &r,
                          llvm::ArrayRef<std::string> resourceNames,
                          llvm::StringRef title) {
  CountingStream counter;
  writeChromeTrace(counter, r, resourceNames, title);
  return counter.count();
}

std::string writeChromeTrace(const analysis::SimResult &r,
                             llvm::ArrayRef<std::string> resourceNames,
                             llvm::StringRef title) {
  std::string out;
  llvm::raw_string_ostream os(out);
  writeChromeTrace(os, r, resourceNames, title);
  os.flush();
  return out;
}

} // namespace topocc::backends
