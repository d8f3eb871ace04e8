//===- compiler/analysis/SimFold.cpp - Folding symmetric ranks -----------===//
//
// findSimFold (SimFold.h). Each proposal of namePermutations, and each of
// its powers, is tried in falling order of the cycle length it gives rank
// 0, and the first that
// passes every check is kept: the device permutation must send ranks to
// ranks of the same memory bandwidth, every link to a link of the same
// kind, capacity and latency between the images of its ends, and every
// rank and used link resource round cycles of one length; then rank σ(r)
// must run r's program. The schedule check is one pass over every op, and
// it names each message by the id its orbit's representative sends
// (`canon`), which the quotient's receives then use.
//
//===----------------------------------------------------------------------===//

#include "compiler/analysis/SimFold.h"

#include "compiler/analysis/ComputeModel.h"
#include "compiler/analysis/NameSymmetry.h"

#include <algorithm>
#include <unordered_map>

namespace topocc::analysis {

std::optional<CyclicOrbits> CyclicOrbits::of(const std::vector<int> &perm,
                                             int order,
                                             const std::vector<bool> &moves) {
  const int n = static_cast<int>(perm.size());
  if (order < 1 || static_cast<int>(moves.size()) != n)
    return std::nullopt;
  CyclicOrbits o;
  o.k = order;
  o.first.assign(n, -1);
  o.pos.assign(n, 0);
  o.cycleStart.assign(n, -1);
  for (int x = 0; x < n; ++x) {
    if (o.first[x] >= 0)
      continue;
    if (!moves[x]) {
      o.first[x] = x;
      continue;
    }
    const int start = static_cast<int>(o.cycles.size());
    int y = x;
    do {
      if (y < 0 || y >= n || !moves[y] || o.first[y] >= 0 ||
          static_cast<int>(o.cycles.size()) - start >= order)
        return std::nullopt;
      o.first[y] = x;
      o.pos[y] = static_cast<int>(o.cycles.size()) - start;
      o.cycleStart[y] = start;
      o.cycles.push_back(y);
      y = perm[y];
    } while (y != x);
    if (static_cast<int>(o.cycles.size()) - start != order)
      return std::nullopt;
  }
  return o;
}

int CyclicOrbits::image(int x, int j) const {
  if (cycleStart[x] < 0)
    return x;
  const int at = ((pos[x] + j) % k + k) % k;
  return cycles[cycleStart[x] + at];
}

namespace {

/// Links with the same properties, `b` possibly the other way round.
bool sameLink(const topo::Link &a, const topo::Link &b, bool reversed) {
  return a.type == b.type && a.latency == b.latency && a.count == b.count &&
         a.duplex == b.duplex && a.efficiency == b.efficiency &&
         a.bandwidth[0] == b.bandwidth[reversed ? 1 : 0] &&
         a.bandwidth[1] == b.bandwidth[reversed ? 0 : 1];
}

uint64_t pairKey(int u, int v) {
  return static_cast<uint64_t>(u) << 32 | static_cast<uint32_t>(v);
}

/// The resource permutation of device permutation `perm`, with `moves`
/// the resources that carry bytes; false when a link has no image.
bool mapResources(const LinkModel &m, const std::vector<int> &perm,
                  const std::unordered_map<uint64_t, std::vector<int>> &links,
                  std::vector<int> &resPerm, std::vector<bool> &moves) {
  const topo::Topology &t = m.topology();
  const int numRes = m.numResources();
  resPerm.resize(numRes);
  for (int r = 0; r < numRes; ++r)
    resPerm[r] = r;
  moves.assign(numRes, false);
  std::vector<bool> taken(t.links().size(), false);
  for (int l = 0; l < static_cast<int>(t.links().size()); ++l) {
    const topo::Link &a = t.link(l);
    const int pu = perm[a.from], pv = perm[a.to];
    int image = -1;
    bool reversed = false;
    for (bool rev : {false, true}) {
      auto it = links.find(rev ? pairKey(pv, pu) : pairKey(pu, pv));
      if (it == links.end())
        continue;
      for (int c : it->second)
        if (!taken[c] && sameLink(a, t.link(c), rev)) {
          image = c;
          reversed = rev;
          break;
        }
      if (image >= 0)
        break;
    }
    if (image < 0)
      return false;
    taken[image] = true;
    for (int dir : {0, 1}) {
      const int from = m.resourceOf(l, dir);
      const int to = m.resourceOf(image, reversed ? 1 - dir : dir);
      resPerm[from] = to;
      moves[from] = m.capacity(from) > 0;
    }
  }
  return true;
}

/// The quotient of `s` under the rank orbits `ranks`, or nullopt when
/// σ(r) does not run r's program with its peers mapped.
std::optional<ir::Schedule> quotientOf(const ir::Schedule &s,
                                       const CyclicOrbits &ranks) {
  const int n = static_cast<int>(s.ranks.size());
  const ir::MsgId numMsgs = s.numMessages();
  std::vector<int32_t> canon(std::max<ir::MsgId>(numMsgs, 0), -1);
  // Each message's sender's peer: its receiver must be that rank.
  std::vector<int32_t> sentTo(canon.size(), -1);
  auto peerOf = [&](ir::RankId peer, int j) {
    return peer >= 0 && peer < n ? ranks.image(peer, j) : peer;
  };
  auto traffic = [](const ir::Op &op) { return computeTime(op, 1, 1); };
  for (int x = 0; x < n; ++x) {
    const int r = ranks.rep(x), j = ranks.shift(x);
    const auto &A = s.ranks[x].ops, &B = s.ranks[r].ops;
    if (A.size() != B.size())
      return std::nullopt;
    for (size_t i = 0; i < A.size(); ++i) {
      const ir::Op &a = A[i], &b = B[i];
      if (x != r &&
          (a.kind != b.kind || a.channel != b.channel ||
           a.threadblock != b.threadblock || a.deps != b.deps ||
           (a.sendMsg >= 0) != (b.sendMsg >= 0) ||
           (a.recvMsg >= 0) != (b.recvMsg >= 0) ||
           a.sendPeer != peerOf(b.sendPeer, j) ||
           a.recvPeer != peerOf(b.recvPeer, j) ||
           a.wireCount() != b.wireCount() || traffic(a) != traffic(b)))
        return std::nullopt;
      if (a.sendMsg >= 0) {
        // The folded run routes a message by its sender's peer.
        if (a.sendMsg >= numMsgs || canon[a.sendMsg] != -1 || a.sendPeer < 0 ||
            a.sendPeer >= n)
          return std::nullopt;
        canon[a.sendMsg] = b.sendMsg;
        sentTo[a.sendMsg] = a.sendPeer;
      }
    }
  }
  for (int x = 0; x < n; ++x) {
    const auto &A = s.ranks[x].ops, &B = s.ranks[ranks.rep(x)].ops;
    for (size_t i = 0; i < A.size(); ++i)
      if (A[i].recvMsg >= 0 &&
          (A[i].recvMsg >= numMsgs || canon[A[i].recvMsg] < 0 ||
           sentTo[A[i].recvMsg] != x ||
           canon[A[i].recvMsg] != canon[B[i].recvMsg]))
        return std::nullopt;
  }
  ir::Schedule q;
  q.name = s.name;
  q.collective = s.collective;
  q.numRanks = s.numRanks;
  q.chunksPerLoop = s.chunksPerLoop;
  q.inplace = s.inplace;
  q.root = s.root;
  q.stage = s.stage;
  q.numChannels = s.numChannels;
  q.ranks.resize(n);
  for (int r = 0; r < n; ++r) {
    if (ranks.rep(r) != r)
      continue;
    q.ranks[r] = s.ranks[r];
    for (ir::Op &op : q.ranks[r].ops)
      if (op.recvMsg >= 0)
        op.recvMsg = canon[op.recvMsg];
  }
  return q;
}

} // namespace

std::optional<SimFold> findSimFold(const ir::Schedule &s, const LinkModel &m,
                                   const std::vector<double> &memoryBandwidth) {
  const topo::Topology &t = m.topology();
  const int n = t.numRanks();
  if (n < 2 || static_cast<int>(s.ranks.size()) != n || s.numRanks != n ||
      static_cast<int>(memoryBandwidth.size()) != n)
    return std::nullopt;
  std::vector<std::string> names;
  names.reserve(t.devices().size());
  for (const topo::Device &d : t.devices())
    names.push_back(d.name);
  // Proposals with the rank permutation each gives, longest cycles first.
  struct Proposal {
    std::vector<int> devices, ranks;
    int order = 0;
  };
  std::vector<Proposal> proposals;
  auto propose = [&](std::vector<int> perm) {
    Proposal p;
    p.ranks.resize(n);
    for (int r = 0; r < n; ++r) {
      const int d = t.rankDevice(r), image = perm[d];
      p.ranks[r] = t.device(image).rank;
      if (p.ranks[r] < 0 || t.device(image).model != t.device(d).model ||
          memoryBandwidth[p.ranks[r]] != memoryBandwidth[r])
        return;
    }
    int x = p.ranks[0];
    p.order = 1;
    while (x != 0 && p.order <= n) {
      x = p.ranks[x];
      ++p.order;
    }
    if (p.order < 2 || p.order > n)
      return;
    p.devices = std::move(perm);
    proposals.push_back(std::move(p));
  };
  for (std::vector<int> &perm : namePermutations(names, NameMoves::Rotations)) {
    const size_t before = proposals.size();
    propose(perm);
    if (proposals.size() == before)
      continue;
    // Its powers σ^d for the divisors d of its order: a ring that snakes
    // through two boxes at a time repeats every second box.
    const int order = proposals.back().order;
    for (int d = 2; d <= order / 2; ++d) {
      if (order % d != 0)
        continue;
      std::vector<int> power(perm.size());
      for (size_t v = 0; v < perm.size(); ++v) {
        int y = static_cast<int>(v);
        for (int i = 0; i < d; ++i)
          y = perm[y];
        power[v] = y;
      }
      propose(std::move(power));
    }
  }
  std::stable_sort(
      proposals.begin(), proposals.end(),
      [](const Proposal &a, const Proposal &b) { return a.order > b.order; });
  if (proposals.empty())
    return std::nullopt;
  std::unordered_map<uint64_t, std::vector<int>> links;
  for (int l = 0; l < static_cast<int>(t.links().size()); ++l)
    links[pairKey(t.link(l).from, t.link(l).to)].push_back(l);
  const std::vector<bool> allRanks(n, true);
  std::vector<int> resPerm;
  std::vector<bool> moves;
  for (const Proposal &p : proposals) {
    auto rankOrbits = CyclicOrbits::of(p.ranks, p.order, allRanks);
    if (!rankOrbits || !mapResources(m, p.devices, links, resPerm, moves))
      continue;
    auto resOrbits = CyclicOrbits::of(resPerm, p.order, moves);
    if (!resOrbits)
      continue;
    auto quotient = quotientOf(s, *rankOrbits);
    if (!quotient)
      continue;
    return SimFold{std::move(*rankOrbits), std::move(*resOrbits),
                   std::move(*quotient)};
  }
  return std::nullopt;
}

} // namespace topocc::analysis
