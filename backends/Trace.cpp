//===- backends/Trace.cpp - Perfetto/Chrome trace of a simulated run ------===//

#include "backends/Trace.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <map>

namespace topocc::backends {

void writeChromeTrace(llvm::raw_ostream &os, const analysis::SimResult &r,
                      llvm::ArrayRef<std::string> resourceNames,
                      llvm::StringRef title) {
  llvm::json::Array events;
  events.push_back(llvm::json::Object{{"ph", "M"},
                                      {"name", "process_name"},
                                      {"pid", 1},
                                      {"args", llvm::json::Object{
                                                   {"name", title.str()}}}});
  // Tracks in resource order, numbered from 1.
  std::map<int, int> track;
  for (const analysis::SimTransfer &x : r.transfers)
    track.emplace(x.resource, 0);
  int next = 1;
  for (auto &[res, tid] : track) {
    tid = next++;
    events.push_back(llvm::json::Object{
        {"ph", "M"},
        {"name", "thread_name"},
        {"pid", 1},
        {"tid", tid},
        {"args", llvm::json::Object{{"name", resourceNames[res]}}}});
  }
  for (const analysis::SimTransfer &x : r.transfers)
    events.push_back(llvm::json::Object{
        {"ph", "X"},
        {"name", llvm::formatv("msg {0} r{1}->r{2}", x.message, x.sender,
                               x.receiver)
                     .str()},
        {"pid", 1},
        {"tid", track[x.resource]},
        {"ts", x.start * 1e6},
        {"dur", (x.end - x.start) * 1e6},
        {"args", llvm::json::Object{{"message", x.message},
                                    {"sender", x.sender},
                                    {"receiver", x.receiver},
                                    {"bytes", x.bytes}}}});
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
    events.push_back(llvm::json::Object{{"ph", "s"},
                                        {"id", id},
                                        {"name", name},
                                        {"cat", cat},
                                        {"pid", 1},
                                        {"tid", tidOf(f.from)},
                                        {"ts", mid(f.from)}});
    events.push_back(llvm::json::Object{{"ph", "f"},
                                        {"bp", "e"},
                                        {"id", id},
                                        {"name", name},
                                        {"cat", cat},
                                        {"pid", 1},
                                        {"tid", tidOf(f.to)},
                                        {"ts", mid(f.to)}});
  }
  llvm::json::Object root{{"traceEvents", std::move(events)},
                          {"displayTimeUnit", "ns"}};
  os << llvm::formatv("{0:1}", llvm::json::Value(std::move(root))) << '\n';
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
