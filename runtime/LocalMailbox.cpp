//===- runtime/LocalMailbox.cpp - Matching for ranks in one process -------===//

#include "runtime/LocalMailbox.h"

#include <algorithm>

namespace topocc::runtime {

std::vector<RunHeader> LocalRendezvous::allgatherHeader(int64_t call, int me,
                                                        const RunHeader &mine,
                                                        double timeoutSeconds) {
  using Clock = std::chrono::steady_clock;
  auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(
                                         std::max(timeoutSeconds, 0.0)));
  std::unique_lock<std::mutex> lock(mu);
  std::vector<RunHeader> &slot = gathers[call];
  if (slot.empty())
    slot.resize(size());
  slot[me] = mine;
  slot[me].rank = me + 1; // 0 marks "not arrived" until all are there
  cv.notify_all();
  auto allThere = [&] {
    for (const RunHeader &h : gathers[call])
      if (h.rank == 0)
        return false;
    return true;
  };
  if (timeoutSeconds > 0)
    cv.wait_until(lock, deadline, allThere);
  else
    cv.wait(lock, allThere);
  std::vector<RunHeader> all = gathers[call];
  for (RunHeader &h : all)
    h.rank = h.rank == 0 ? RunHeader::kMissing : h.rank - 1;
  if (++gatherReads[call] == size()) {
    gathers.erase(call);
    gatherReads.erase(call);
  }
  return all;
}

} // namespace topocc::runtime
