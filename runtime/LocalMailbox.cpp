//===- runtime/LocalMailbox.cpp - Matching for ranks in one process -------===//

#include "runtime/LocalMailbox.h"

namespace topocc::runtime {

std::vector<RunHeader> LocalRendezvous::allgatherHeader(int64_t call, int me,
                                                        const RunHeader &mine) {
  std::unique_lock<std::mutex> lock(mu);
  std::vector<RunHeader> &slot = gathers[call];
  if (slot.empty())
    slot.resize(size());
  slot[me] = mine;
  slot[me].rank = me + 1; // 0 marks "not arrived" until all are there
  cv.notify_all();
  cv.wait(lock, [&] {
    for (const RunHeader &h : gathers[call])
      if (h.rank == 0)
        return false;
    return true;
  });
  std::vector<RunHeader> all = gathers[call];
  for (RunHeader &h : all)
    --h.rank;
  if (++gatherReads[call] == size()) {
    gathers.erase(call);
    gatherReads.erase(call);
  }
  return all;
}

} // namespace topocc::runtime
