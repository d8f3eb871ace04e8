//===- compiler/passes/LowerRing.cpp - Ring collectives to schedule IR ----===//
//
// Layout (N ranks, C channels, K_c chunks per rank on channel c, T = sum of
// K_c, O_c = K_0 + ... + K_{c-1}; the total buffer is cut into
// nchunksperloop = N*T units; with K_c = K for all c this is N*C*K):
//   data unit of rank q, channel c, sub-chunk j:  q*T + O_c + j
//   per-rank unit (allgather input, reducescatter output): O_c + j
// Ring position p holds rank ring[p]; it receives from position p-1 and sends
// to position p+1. Reducescatter step t (0..N-1) handles the block of rank
// ring[p-1-t], so the last step completes the rank's own block; allgather
// step u (0..N-1) handles the block of rank ring[p-u]. Allreduce runs both,
// its reduce-scatter starting with the own block (step t: ring[p-t], the
// last step completes block ring[p+1]) as in the MSCCL reference ring, and
// the last reduce-scatter step is the first all-gather step. Steps are
// emitted step-major (all K sub-chunks of step t, then step t+1), which is
// what pipelines the K chunks around the ring.
//
//===----------------------------------------------------------------------===//

#include "compiler/passes/LowerRing.h"

#include "ir/Target.h"
#include "support/Diagnostics.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace topocc::passes {

using namespace ir;

namespace {

/// Lowers one ring collective; see the file comment for the layout.
class RingLowering {
public:
  RingLowering(const RingOptions &o, std::vector<std::vector<RankId>> rings,
               std::vector<int32_t> kc, std::vector<int32_t> width)
      : o(o), rings(std::move(rings)), kc(std::move(kc)),
        width(std::move(width)), n(o.numRanks) {
    for (size_t c = 0; c < this->kc.size(); ++c) {
      off.push_back(total);
      pieceOff.push_back(pieces);
      total += this->kc[c];
      pieces += this->kc[c] / this->width[c];
    }
  }

  Schedule run();

private:
  const RingOptions &o;
  std::vector<std::vector<RankId>> rings; ///< per channel
  std::vector<int32_t> kc, off;           ///< K_c and O_c per channel
  std::vector<int32_t> width;             ///< W_c per channel
  std::vector<int32_t> pieceOff; ///< pieces (K_c / W_c) of channels < c
  int32_t pieces = 0;
  int32_t w = 1; ///< W_c of the channel being lowered
  int32_t n, total = 0;
  Schedule s;
  /// Last op of the (rank, channel) chain being emitted; kNone at its start.
  OpId last = kNone;

  int32_t numSteps() const {
    return o.collective == Collective::AllReduce ? 2 * n - 1 : n;
  }
  int32_t dataUnit(RankId q, int32_t ch, int32_t j) const {
    return q * total + off[ch] + j;
  }
  int32_t localUnit(int32_t ch, int32_t j) const { return off[ch] + j; }
  /// Rank at position `pos` of the ring of the channel being lowered.
  RankId rankAt(int32_t pos) const { return (*ring)[((pos % n) + n) % n]; }
  /// Message sent at step t by position p for (channel, sub-chunk).
  MsgId msg(int32_t ch, int32_t j, int32_t t, int32_t p) const {
    return ((pieceOff[ch] + j / w) * (numSteps() - 1) + t) * n +
           ((p % n) + n) % n;
  }
  /// A fresh scratch unit for the partial sum of reduce-scatter step t >= 1.
  BufferRef scratch(int32_t ch, int32_t j, int32_t t) {
    int32_t unit = (off[ch] + j) * (n - 1) + (t - 1) * w;
    return {BufferKind::Scratch, unit, w};
  }

  BufferRef in(int32_t unit) const { return {BufferKind::Input, unit, w}; }
  BufferRef out(int32_t unit) const { return {BufferKind::Output, unit, w}; }

  /// Appends `op` to rank `r`, chained after the previous op of the chain.
  void emit(RankId r, Op op) {
    if (last != kNone)
      op.deps = {last};
    auto &ops = s.ranks[r].ops;
    ops.push_back(std::move(op));
    last = static_cast<OpId>(ops.size() - 1);
  }
  void emitSend(RankId r, BufferRef src, RankId to, MsgId m) {
    emit(r, makeSend(src, to, m));
  }

  void emitRecv(RankId r, BufferRef dst, RankId from, MsgId m) {
    emit(r, makeRecv(dst, from, m));
  }

  /// dst = dst + src
  void emitReduce(RankId r, BufferRef dst, BufferRef src) {
    emit(r, makeLocal(OpKind::Reduce, dst, src));
  }

  void emitCopy(RankId r, BufferRef dst, BufferRef src) {
    emit(r, makeLocal(OpKind::Copy, dst, src));
  }


  void lowerChannel(int32_t p, int32_t ch);
  /// The ops lowerChannel emits for one rank of channel `ch`: every rank is
  /// on each channel's ring once, so a rank's ops are the sum over the
  /// channels (reserved at once: a list grown op by op holds up to twice
  /// its size, a gigabyte for the flat ring of 1024 GPUs).
  size_t opsPerRank(int32_t ch) const;

  const std::vector<RankId> *ring = nullptr; ///< the channel being lowered
};

size_t RingLowering::opsPerRank(int32_t ch) const {
  const int32_t steps = numSteps();
  size_t perPiece = 0; // as lowerChannel's cases
  for (int32_t t = 0; t < steps; ++t) {
    const size_t send = t + 1 < steps ? 1 : 0;
    if (t == 0)
      perPiece += 1;
    else if (o.collective == Collective::AllGather)
      perPiece += 1 + send;
    else if (t < n - 1)
      perPiece += 3;
    else
      perPiece += (t == n - 1 ? 2 : 1) + send;
  }
  const size_t pieces = (kc[ch] + width[ch] - 1) / width[ch];
  const bool ownCopy = o.collective == Collective::AllGather && !o.inplace;
  return pieces * perPiece + (ownCopy ? 1 : 0);
}

void RingLowering::lowerChannel(int32_t p, int32_t ch) {
  ring = &rings[ch];
  const RankId r = rankAt(p), next = rankAt(p + 1), prev = rankAt(p - 1);
  const int32_t steps = numSteps(), k = kc[ch];
  const bool inplace = o.inplace;
  w = width[ch];
  last = kNone;
  // Piece j covers the channel's units j .. j + w - 1.
  for (int32_t t = 0; t < steps; ++t) {
    for (int32_t j = 0; j < k; j += w) {
      const MsgId sendMsg = t + 1 < steps ? msg(ch, j, t, p) : kNone;
      const MsgId recvMsg = t > 0 ? msg(ch, j, t - 1, p - 1) : kNone;
      switch (o.collective) {
      case Collective::AllReduce:
      case Collective::ReduceScatter: {
        const bool ar = o.collective == Collective::AllReduce;
        // Reduce-scatter step t handles the block of rank ring[p-shift-t].
        const int32_t shift = ar ? 0 : 1;
        if (t == 0) {
          // Step 0: start the partial sum of the first block.
          emitSend(r, in(dataUnit(rankAt(p - shift), ch, j)), next, sendMsg);
        } else if (t < n - 1) {
          // Middle reduce-scatter step: add the own contribution, forward.
          BufferRef sc = scratch(ch, j, t);
          emitRecv(r, sc, prev, recvMsg);
          emitReduce(r, sc, in(dataUnit(rankAt(p - shift - t), ch, j)));
          emitSend(r, sc, next, sendMsg);
        } else if (t == n - 1) {
          // Last reduce-scatter step: block q is complete on this rank.
          RankId q = rankAt(p - shift - t);
          BufferRef own = in(dataUnit(q, ch, j));
          BufferRef result =
              inplace ? own
                      : (ar ? out(dataUnit(q, ch, j)) : out(localUnit(ch, j)));
          if (inplace) {
            BufferRef sc = scratch(ch, j, t);
            emitRecv(r, sc, prev, recvMsg);
            emitReduce(r, result, sc);
          } else {
            emitRecv(r, result, prev, recvMsg);
            emitReduce(r, result, own);
          }
          if (sendMsg != kNone) // allreduce: all-gather step 0
            emitSend(r, result, next, sendMsg);
        } else {
          // All-gather step u of allreduce (block ring[p+1-u]): store and
          // forward.
          int32_t u = t - (n - 1);
          int32_t unit = dataUnit(rankAt(p + 1 - u), ch, j);
          BufferRef dst = inplace ? in(unit) : out(unit);
          emitRecv(r, dst, prev, recvMsg);
          if (sendMsg != kNone)
            emitSend(r, dst, next, sendMsg);
        }
        break;
      }
      case Collective::AllGather: {
        if (t == 0) {
          BufferRef src =
              inplace ? out(dataUnit(r, ch, j)) : in(localUnit(ch, j));
          emitSend(r, src, next, sendMsg);
        } else {
          BufferRef dst = out(dataUnit(rankAt(p - t), ch, j));
          emitRecv(r, dst, prev, recvMsg);
          if (sendMsg != kNone)
            emitSend(r, dst, next, sendMsg);
        }
        break;
      }
      default:
        llvm_unreachable("collective checked by lowerRing");
      }
    }
  }
  // Out-of-place allgather: the rank's own block, off the critical path.
  if (o.collective == Collective::AllGather && !inplace)
    emitCopy(r, {BufferKind::Output, dataUnit(r, ch, 0), k},
             {BufferKind::Input, localUnit(ch, 0), k});
}

Schedule RingLowering::run() {
  s.collective = o.collective;
  s.numRanks = n;
  s.chunksPerLoop = n * total;
  s.inplace = o.inplace;
  s.stage = Stage::Lowered;
  s.name = o.name.empty() ? llvm::formatv("ring{0}_{1}_c{2}_k{3}_{4}", n,
                                          collectiveName(o.collective),
                                          o.channels, o.chunks,
                                          o.inplace ? "inplace" : "outofplace")
                                .str()
                          : o.name;
  s.ranks.resize(n);
  const int32_t c = static_cast<int32_t>(rings.size());
  size_t perRank = 0;
  for (int32_t ch = 0; ch < c; ++ch)
    perRank += opsPerRank(ch);
  for (RankProgram &rp : s.ranks)
    rp.ops.reserve(perRank);
  for (int32_t p = 0; p < n; ++p)
    for (int32_t ch = 0; ch < c; ++ch)
      lowerChannel(p, ch);

  for (RankProgram &rp : s.ranks) {
    assert(rp.ops.size() == perRank && "opsPerRank counts lowerChannel's ops");
    rp.scratchChunks = scratchExtent(rp);
    setCollectiveBuffers(rp, o.collective, s.chunksPerLoop, total, o.inplace);
  }
  return std::move(s);
}

/// Every problem with a ring order, or "" when it is a permutation of 0..n-1.
std::string checkRingOrder(llvm::ArrayRef<RankId> ring, int32_t n) {
  std::vector<std::string> problems;
  if (static_cast<int32_t>(ring.size()) != n)
    problems.push_back(
        llvm::formatv("it has {0} entries, expected {1}", ring.size(), n));
  std::vector<int> seen(n, 0);
  for (RankId r : ring) {
    if (r < 0 || r >= n)
      problems.push_back(
          llvm::formatv("rank {0} is out of range 0..{1}", r, n - 1));
    else if (seen[r]++ == 1)
      problems.push_back(llvm::formatv("rank {0} appears more than once", r));
  }
  std::vector<std::string> missing;
  for (int32_t r = 0; r < n; ++r)
    if (!seen[r])
      missing.push_back(std::to_string(r));
  if (!missing.empty())
    problems.push_back((missing.size() == 1 ? "rank " : "ranks ") +
                       llvm::join(missing, ", ") +
                       (missing.size() == 1 ? " is missing" : " are missing"));
  if (problems.empty())
    return "";
  std::vector<std::string> text;
  for (RankId r : ring)
    text.push_back(std::to_string(r));
  return llvm::formatv("invalid ring order '{0}': expected a permutation of "
                       "0..{1}; {2}",
                       llvm::join(text, ","), n - 1, llvm::join(problems, "; "))
      .str();
}

} // namespace

llvm::Expected<Schedule> lowerRing(const RingOptions &o) {
  std::vector<std::string> problems;
  if (o.collective != Collective::AllReduce &&
      o.collective != Collective::AllGather &&
      o.collective != Collective::ReduceScatter)
    problems.push_back(("the ring algorithm supports allreduce, allgather and "
                        "reducescatter, not " +
                        collectiveName(o.collective))
                           .str());
  if (o.numRanks < 2)
    problems.push_back(llvm::formatv("a ring needs at least 2 ranks, the "
                                     "topology has {0}",
                                     o.numRanks));
  if (o.channels < 1 || o.channels > kMaxRingChannels)
    problems.push_back(llvm::formatv(
        "--channels must be between 1 and {0}, got {1}", kMaxRingChannels,
        o.channels));
  if (o.chunks < 1)
    problems.push_back(
        llvm::formatv("--chunks must be at least 1, got {0}", o.chunks));
  if (!o.channelOrders.empty() &&
      static_cast<int64_t>(o.channelOrders.size()) != o.channels)
    problems.push_back(llvm::formatv("{0} per-channel ring orders for {1} "
                                     "channels",
                                     o.channelOrders.size(), o.channels));
  if (!o.channelChunks.empty() &&
      static_cast<int64_t>(o.channelChunks.size()) != o.channels)
    problems.push_back(llvm::formatv("{0} per-channel chunk counts for {1} "
                                     "channels",
                                     o.channelChunks.size(), o.channels));
  for (size_t c = 0; c < o.channelChunks.size(); ++c)
    if (o.channelChunks[c] < 1)
      problems.push_back(llvm::formatv(
          "channel {0} has {1} chunks; every channel needs at least 1", c,
          o.channelChunks[c]));
  if (!problems.empty())
    return makeUserError(llvm::join(problems, "\n"));
  std::vector<int32_t> kc = o.channelChunks;
  if (kc.empty())
    kc.assign(o.channels, o.chunks);
  if (!o.channelWidths.empty() &&
      static_cast<int64_t>(o.channelWidths.size()) != o.channels)
    problems.push_back(llvm::formatv("{0} per-channel step widths for {1} "
                                     "channels",
                                     o.channelWidths.size(), o.channels));
  else
    for (size_t c = 0; c < o.channelWidths.size(); ++c)
      if (o.channelWidths[c] < 1 || kc[c] % o.channelWidths[c] != 0)
        problems.push_back(llvm::formatv(
            "channel {0}: a step width of {1} does not divide its {2} chunks",
            c, o.channelWidths[c], kc[c]));
  int64_t units = 0;
  for (int32_t x : kc)
    units += x;
  units *= o.numRanks;
  if (units > 32767)
    problems.push_back(
        o.channelChunks.empty()
            ? llvm::formatv("ranks * channels * chunks = {0} units exceeds "
                            "32767 (MSCCL stores offsets in 16 bits); use "
                            "fewer channels or chunks",
                            units)
                  .str()
            : llvm::formatv("ranks * (sum of the channels' chunks) = {0} "
                            "units exceeds 32767 (MSCCL stores offsets in 16 "
                            "bits); use fewer channels or chunks",
                            units)
                  .str());
  std::vector<std::vector<RankId>> rings;
  if (o.numRanks >= 2) {
    std::vector<RankId> ident;
    for (RankId r = 0; r < o.numRanks; ++r)
      ident.push_back(r);
    for (int32_t c = 0; c < o.channels; ++c) {
      const std::vector<RankId> &ring =
          !o.channelOrders.empty() ? o.channelOrders[c] : o.ringOrder;
      if (ring.empty()) {
        rings.push_back(ident);
        continue;
      }
      // One problem per distinct bad order (channels often share one).
      if (std::string p = checkRingOrder(ring, o.numRanks); !p.empty()) {
        if (!o.channelOrders.empty())
          p = llvm::formatv("channel {0}: {1}", c, p).str();
        if (!o.channelOrders.empty() || c == 0)
          problems.push_back(p);
      }
      rings.push_back(ring);
    }
  }
  if (!problems.empty())
    return makeUserError(llvm::join(problems, "\n"));
  std::vector<int32_t> width = o.channelWidths;
  if (width.empty())
    width.assign(o.channels, 1);
  return RingLowering(o, std::move(rings), std::move(kc), std::move(width))
      .run();
}

std::vector<int32_t> chunksForShares(llvm::ArrayRef<double> shares,
                                     int32_t chunks) {
  assert(!shares.empty() && chunks >= 1 && "bad chunksForShares input");
  const int64_t n = static_cast<int64_t>(shares.size());
  // A power of two, so that nchunksperloop divides every power-of-two call
  // size (docs/MscclXml.md, "Sizes a file serves").
  const int64_t units =
      static_cast<int64_t>(llvm::PowerOf2Ceil(static_cast<uint64_t>(n) * chunks));
  double sum = 0;
  for (double x : shares)
    sum += std::max(0.0, x);
  std::vector<int32_t> kc(n);
  std::vector<double> rem(n);
  int64_t given = 0;
  for (int64_t c = 0; c < n; ++c) {
    double exact = sum > 0 ? std::max(0.0, shares[c]) / sum * units
                           : static_cast<double>(chunks);
    // Snap values within rounding noise of an integer (equal shares).
    double fl = std::floor(exact + 1e-9);
    kc[c] = static_cast<int32_t>(fl);
    rem[c] = exact - fl;
    given += kc[c];
  }
  // Largest remainders first, ties to the lower channel.
  std::vector<int64_t> byRem(n);
  for (int64_t c = 0; c < n; ++c)
    byRem[c] = c;
  std::stable_sort(byRem.begin(), byRem.end(),
                   [&](int64_t a, int64_t b) { return rem[a] > rem[b]; });
  for (int64_t i = 0; given < units; i = (i + 1) % n, ++given)
    ++kc[byRem[i]];
  // Every channel carries something: take units back from the largest.
  for (int64_t c = 0; c < n; ++c)
    while (kc[c] < 1) {
      int64_t big = std::max_element(kc.begin(), kc.end()) - kc.begin();
      --kc[big];
      ++kc[c];
    }
  return kc;
}

RingOptions searchedRingOptions(llvm::ArrayRef<analysis::RingChannel> rings,
                                ir::Collective c, int32_t numRanks,
                                int32_t chunks, bool wide) {
  RingOptions ro;
  ro.collective = c;
  ro.numRanks = numRanks;
  ro.channels = static_cast<int32_t>(rings.size());
  ro.chunks = chunks;
  std::vector<double> shares;
  bool quantised = !rings.empty();
  for (const analysis::RingChannel &rc : rings) {
    ro.channelOrders.emplace_back(rc.order.begin(), rc.order.end());
    shares.push_back(rc.share);
    quantised = quantised && rc.units > 0;
  }
  if (quantised) {
    // The search's units are exact shares of a power-of-two total.
    for (const analysis::RingChannel &rc : rings) {
      ro.channelChunks.push_back(rc.units * chunks);
      if (wide)
        ro.channelWidths.push_back(rc.units);
    }
    return ro;
  }
  if (!wide) {
    ro.channelChunks = chunksForShares(shares, chunks);
    return ro;
  }
  // Wide: the shares as units of one step each (as fine as the pipelined
  // chunks would split them), `chunks` pieces of them.
  ro.channelWidths = chunksForShares(shares, chunks);
  for (int32_t w : ro.channelWidths)
    ro.channelChunks.push_back(w * chunks);
  return ro;
}

} // namespace topocc::passes
