//===- tests/unit/ir/TestSchedules.h - Hand-built schedules ----*- C++ -*-===//
//
// Small, known-correct schedules built op by op, for the IR unit tests and the
// mutation tests: a ring allreduce (any stage), a direct allgather with one
// threadblock per peer, and a two-rank allreduce through scratch with a
// cross-threadblock dependency (reduce or lincomb).
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_TESTS_UNIT_IR_TESTSCHEDULES_H
#define TOPOCC_TESTS_UNIT_IR_TESTSCHEDULES_H

#include "ir/Schedule.h"

namespace topocc::ir::testing {

inline BufferRef ref(BufferKind b, int32_t chunk, int32_t count = 1) {
  return BufferRef{b, chunk, count};
}
inline BufferRef in(int32_t c, int32_t n = 1) {
  return ref(BufferKind::Input, c, n);
}
inline BufferRef out(int32_t c, int32_t n = 1) {
  return ref(BufferKind::Output, c, n);
}
inline BufferRef sc(int32_t c, int32_t n = 1) {
  return ref(BufferKind::Scratch, c, n);
}

/// In-place ring allreduce over n ranks with N = n chunks, one threadblock
/// per rank: send, n-2 x rrs, rrcs, n-2 x rcs, recv. Before
/// ThreadblocksAssigned each op depends on the previous one instead.
inline Schedule ringAllReduce(int n, Stage stage = Stage::Legalized) {
  Schedule s;
  s.name = "ring" + std::to_string(n) + "_allreduce";
  s.collective = Collective::AllReduce;
  s.numRanks = n;
  s.chunksPerLoop = n;
  s.inplace = true;
  s.stage = stage;
  bool assigned = stage >= Stage::ChannelsAssigned;
  bool tbs = stage >= Stage::ThreadblocksAssigned;
  if (assigned)
    s.numChannels = 1;
  auto mod = [n](int x) { return ((x % n) + n) % n; };
  int steps = 2 * n - 2; // sending steps per rank
  auto msgOf = [steps](int rank, int step) { return rank * steps + step; };
  for (int r = 0; r < n; ++r) {
    RankProgram rp;
    rp.inputChunks = n;
    rp.outputChunks = n;
    int next = mod(r + 1), prev = mod(r - 1);
    for (int t = 0; t <= steps; ++t) {
      Op op;
      if (t == 0) {
        op.kind = OpKind::Send;
        op.src = in(r);
      } else if (t < n - 1) {
        op.kind = OpKind::RecvReduceSend;
        op.src = in(mod(r - t));
      } else if (t == n - 1) {
        op.kind = OpKind::RecvReduceCopySend;
        op.src = in(mod(r + 1));
        op.dst = in(mod(r + 1));
      } else if (t < steps) {
        op.kind = OpKind::RecvCopySend;
        op.dst = in(mod(r - (t - (n - 1)) + 1));
      } else {
        op.kind = OpKind::Recv;
        op.dst = in(mod(r + 2));
      }
      if (sends(op.kind)) {
        op.sendPeer = next;
        op.sendMsg = msgOf(r, t);
      }
      if (receives(op.kind)) {
        op.recvPeer = prev;
        op.recvMsg = msgOf(prev, t - 1);
      }
      if (assigned)
        op.channel = 0;
      if (tbs)
        op.threadblock = 0;
      else if (t > 0)
        op.deps.push_back(t - 1);
      rp.ops.push_back(op);
    }
    s.ranks.push_back(rp);
  }
  return s;
}

/// Out-of-place allgather, k chunks per rank: copy own input to out, then
/// per peer p one threadblock that sends the input to p and receives p's.
inline Schedule directAllGather(int n, int k = 1) {
  Schedule s;
  s.name = "direct_allgather";
  s.collective = Collective::AllGather;
  s.numRanks = n;
  s.chunksPerLoop = n * k;
  s.stage = Stage::Legalized;
  s.numChannels = 1;
  auto msg = [n](int from, int to) { return from * n + to; };
  for (int r = 0; r < n; ++r) {
    RankProgram rp;
    rp.inputChunks = k;
    rp.outputChunks = n * k;
    Op cp;
    cp.kind = OpKind::Copy;
    cp.src = in(0, k);
    cp.dst = out(r * k, k);
    cp.channel = 0;
    cp.threadblock = 0;
    rp.ops.push_back(cp);
    int tb = 1;
    for (int p = 0; p < n; ++p) {
      if (p == r)
        continue;
      Op snd;
      snd.kind = OpKind::Send;
      snd.src = in(0, k);
      snd.sendPeer = p;
      snd.sendMsg = msg(r, p);
      snd.channel = 0;
      snd.threadblock = tb;
      Op rcv;
      rcv.kind = OpKind::Recv;
      rcv.dst = out(p * k, k);
      rcv.recvPeer = p;
      rcv.recvMsg = msg(p, r);
      rcv.channel = 0;
      rcv.threadblock = tb;
      rp.ops.push_back(snd);
      rp.ops.push_back(rcv);
      ++tb;
    }
    s.ranks.push_back(rp);
  }
  return s;
}

/// Two-rank out-of-place-free allreduce of `chunks` chunks through scratch:
/// tb0 sends the input, tb1 receives into scratch and then reduces it into
/// the input (in-place) after the send (a cross-threadblock dependency).
/// With `lincomb`, the reduction is `lincomb in, in, sc` instead.
inline Schedule scratchAllReduce2(bool lincomb = false, int chunks = 2) {
  Schedule s;
  s.name = lincomb ? "scratch2_lincomb" : "scratch2_reduce";
  s.collective = Collective::AllReduce;
  s.numRanks = 2;
  s.chunksPerLoop = chunks;
  s.inplace = true;
  s.stage = Stage::Legalized;
  s.numChannels = 1;
  for (int r = 0; r < 2; ++r) {
    RankProgram rp;
    rp.inputChunks = chunks;
    rp.outputChunks = chunks;
    rp.scratchChunks = chunks;
    Op snd;
    snd.kind = OpKind::Send;
    snd.src = in(0, chunks);
    snd.sendPeer = 1 - r;
    snd.sendMsg = r;
    snd.channel = 0;
    snd.threadblock = 0;
    Op rcv;
    rcv.kind = OpKind::Recv;
    rcv.dst = sc(0, chunks);
    rcv.recvPeer = 1 - r;
    rcv.recvMsg = 1 - r;
    rcv.channel = 0;
    rcv.threadblock = 1;
    Op red;
    if (lincomb) {
      red.kind = OpKind::LinComb;
      red.dst = in(0, chunks);
      red.terms = {LinTerm{1.0, in(0, chunks)}, LinTerm{1.0, sc(0, chunks)}};
    } else {
      red.kind = OpKind::Reduce;
      red.dst = in(0, chunks);
      red.src = sc(0, chunks);
    }
    red.channel = 0;
    red.threadblock = 1;
    red.deps = {0};
    rp.ops = {snd, rcv, red};
    s.ranks.push_back(rp);
  }
  return s;
}

} // namespace topocc::ir::testing

#endif // TOPOCC_TESTS_UNIT_IR_TESTSCHEDULES_H
