//===- tests/unit/ir/Mutations.h - Mutation testing of schedules -*- C++ -*-===//
//
// Generic mutations of a verified schedule (drop a message's receiving op,
// swap two ops of a threadblock, shift an operand, double a reduction, add a
// dependency that closes a cycle) and an independent oracle: a concrete
// simulation with random integers in a random topological order. A mutant
// the oracle finds wrong, cyclic or malformed must be rejected by
// verifySchedule; a mutant the verifier accepts must be correct for the
// oracle. Header-only so that other test folders (lowering passes) can run
// it on their own schedules:
//
//   #include "tests/unit/ir/Mutations.h"
//   topocc::ir::testing::expectMutantsRejected(mySchedule);
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_TESTS_UNIT_IR_MUTATIONS_H
#define TOPOCC_TESTS_UNIT_IR_MUTATIONS_H

#include "ir/Printer.h"
#include "ir/Schedule.h"
#include "ir/Verifier.h"

#include "gtest/gtest.h"
#include "llvm/Support/Error.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace topocc::ir::testing {

struct Mutant {
  std::string description;
  Schedule schedule;
};

/// Removes op `id` of rank `r`; ops that depended on it inherit its deps, and
/// later op ids shift down by one.
inline void removeOp(Schedule &s, RankId r, OpId id) {
  std::vector<Op> &ops = s.ranks[r].ops;
  OpDeps inherited = ops[id].deps;
  ops.erase(ops.begin() + id);
  for (Op &op : ops) {
    OpDeps deps;
    for (OpId d : op.deps) {
      if (d == id) {
        for (OpId x : inherited)
          deps.push_back(x > id ? x - 1 : x);
      } else {
        deps.push_back(d > id ? d - 1 : d);
      }
    }
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    op.deps = deps;
  }
  for (size_t i = 0; i < ops.size(); ++i)
    ops[i].deps.erase(
        std::remove(ops[i].deps.begin(), ops[i].deps.end(), OpId(i)),
        ops[i].deps.end());
}

/// Swaps the list positions of ops a and b of rank r; deps follow the ops.
inline void swapOps(Schedule &s, RankId r, OpId a, OpId b) {
  std::vector<Op> &ops = s.ranks[r].ops;
  std::swap(ops[a], ops[b]);
  for (Op &op : ops)
    for (OpId &d : op.deps)
      d = d == a ? b : d == b ? a : d;
}

inline std::string opName(RankId r, OpId i) {
  return "rank " + std::to_string(r) + " %" + std::to_string(i);
}

/// One mutant per message: its receiving op removed.
inline std::vector<Mutant> dropRecvMutants(const Schedule &s) {
  std::vector<Mutant> out;
  for (RankId r = 0; r < static_cast<RankId>(s.ranks.size()); ++r)
    for (OpId i = 0; i < static_cast<OpId>(s.ranks[r].ops.size()); ++i)
      if (receives(s.ranks[r].ops[i].kind)) {
        Mutant m{"drop receiving op " + opName(r, i), s};
        removeOp(m.schedule, r, i);
        out.push_back(std::move(m));
      }
  return out;
}

/// Swaps each op with the next op of its threadblock (of its rank when
/// threadblocks are not assigned yet).
inline std::vector<Mutant> swapMutants(const Schedule &s) {
  std::vector<Mutant> out;
  for (RankId r = 0; r < static_cast<RankId>(s.ranks.size()); ++r) {
    const std::vector<Op> &ops = s.ranks[r].ops;
    for (OpId i = 0; i < static_cast<OpId>(ops.size()); ++i)
      for (OpId j = i + 1; j < static_cast<OpId>(ops.size()); ++j)
        if (ops[j].threadblock == ops[i].threadblock) {
          Mutant m{"swap " + opName(r, i) + " and %" + std::to_string(j), s};
          swapOps(m.schedule, r, i, j);
          out.push_back(std::move(m));
          break;
        }
  }
  return out;
}

/// Shifts each used operand by +1 and -1 chunk (wrapping inside the buffer,
/// so that the mutant stays in range and tests semantics, not bounds).
inline std::vector<Mutant> offsetMutants(const Schedule &s) {
  std::vector<Mutant> out;
  for (RankId r = 0; r < static_cast<RankId>(s.ranks.size()); ++r) {
    const RankProgram &rp = s.ranks[r];
    auto size = [&](BufferKind b) {
      return b == BufferKind::Input    ? rp.inputChunks
             : b == BufferKind::Output ? rp.outputChunks
                                       : rp.scratchChunks;
    };
    for (OpId i = 0; i < static_cast<OpId>(rp.ops.size()); ++i) {
      for (int which = 0; which < 2; ++which) {
        const BufferRef &b = which ? rp.ops[i].dst : rp.ops[i].src;
        if (!b.isUsed())
          continue;
        int32_t n = size(b.buffer);
        for (int delta : {1, -1}) {
          if (n <= b.count)
            continue;
          int32_t c = ((b.chunk + delta) % n + n) % n;
          if (c + b.count > n)
            c = delta > 0 ? 0 : n - b.count;
          if (c == b.chunk)
            continue;
          Mutant m{"move " + std::string(which ? "dst" : "src") + " of " +
                       opName(r, i) + " to chunk " + std::to_string(c),
                   s};
          Op &op = m.schedule.ranks[r].ops[i];
          (which ? op.dst : op.src).chunk = c;
          // Keep the two ends of a message the same size.
          out.push_back(std::move(m));
        }
      }
    }
  }
  return out;
}

/// Doubles each reduction: a `reduce` op is duplicated right after itself;
/// ops that combine a received message get msgCoeff 2.
inline std::vector<Mutant> doubleReduceMutants(const Schedule &s) {
  std::vector<Mutant> out;
  for (RankId r = 0; r < static_cast<RankId>(s.ranks.size()); ++r) {
    const std::vector<Op> &ops = s.ranks[r].ops;
    for (OpId i = 0; i < static_cast<OpId>(ops.size()); ++i) {
      if (ops[i].kind == OpKind::Reduce) {
        Mutant m{"duplicate reduce " + opName(r, i), s};
        std::vector<Op> &mops = m.schedule.ranks[r].ops;
        Op dup = mops[i];
        dup.deps = {i};
        if (s.stage >= Stage::ThreadblocksAssigned)
          dup.deps.clear(); // program order already follows %i
        for (Op &op : mops)
          for (OpId &d : op.deps)
            if (d > i)
              ++d;
        mops.insert(mops.begin() + i + 1, dup);
        out.push_back(std::move(m));
      } else if (opFlags(ops[i].kind) & OF_RE) {
        Mutant m{"msgCoeff 2 on " + opName(r, i), s};
        m.schedule.ranks[r].ops[i].msgCoeff = 2.0;
        out.push_back(std::move(m));
      }
    }
  }
  return out;
}

/// For each op with a dependency or a threadblock predecessor, makes that
/// predecessor depend on it: a cycle.
inline std::vector<Mutant> cycleMutants(const Schedule &s) {
  std::vector<Mutant> out;
  for (RankId r = 0; r < static_cast<RankId>(s.ranks.size()); ++r) {
    const std::vector<Op> &ops = s.ranks[r].ops;
    for (OpId i = 0; i < static_cast<OpId>(ops.size()); ++i) {
      std::optional<OpId> pred;
      if (!ops[i].deps.empty())
        pred = ops[i].deps.front();
      else if (s.stage >= Stage::ThreadblocksAssigned)
        for (OpId j = i - 1; j >= 0; --j)
          if (ops[j].threadblock == ops[i].threadblock) {
            pred = j;
            break;
          }
      if (!pred)
        continue;
      Mutant m{"make " + opName(r, *pred) + " depend on %" + std::to_string(i),
               s};
      m.schedule.ranks[r].ops[*pred].deps.push_back(i);
      out.push_back(std::move(m));
    }
  }
  return out;
}

inline std::vector<Mutant> allMutants(const Schedule &s) {
  std::vector<Mutant> all;
  for (auto gen : {dropRecvMutants, swapMutants, offsetMutants,
                   doubleReduceMutants, cycleMutants})
    for (Mutant &m : gen(s))
      all.push_back(std::move(m));
  return all;
}

enum class Verdict { Correct, Wrong, Cycle, Malformed };

inline const char *verdictName(Verdict v) {
  switch (v) {
  case Verdict::Correct:
    return "correct";
  case Verdict::Wrong:
    return "wrong result";
  case Verdict::Cycle:
    return "cycle";
  case Verdict::Malformed:
    return "malformed";
  }
  return "?";
}

/// The oracle: runs the schedule on random integer data in a random
/// topological order (deps, program order per threadblock from
/// ThreadblocksAssigned on, send before receive) and compares the output
/// with the collective computed directly on that data. Written without the
/// verifier's or the semantics' code.
inline Verdict concreteOracle(const Schedule &s, uint64_t seed) {
  int n = s.numRanks;
  if (n < 1 || static_cast<int>(s.ranks.size()) != n || s.chunksPerLoop < 1)
    return Verdict::Malformed;
  int N = s.chunksPerLoop, per = N / n;
  bool perRank = s.collective == Collective::AllGather ||
                 s.collective == Collective::ReduceScatter ||
                 s.collective == Collective::AllToAll;
  if (perRank && N % n)
    return Verdict::Malformed;
  std::mt19937_64 rng(seed);
  int nin = s.collective == Collective::AllGather ? per : N;
  int nout = s.collective == Collective::ReduceScatter ? per : N;
  std::vector<std::vector<double>> input(n, std::vector<double>(nin));
  for (auto &row : input)
    for (double &x : row)
      x = static_cast<double>(rng() % (1u << 30)) + 1;

  // Memory: per rank a map from (buffer, chunk) after aliasing to a value.
  using Loc = std::pair<int, long>;
  auto alias = [&](int r, BufferKind b, long c) -> Loc {
    if (s.inplace) {
      if (s.collective == Collective::AllGather && b == BufferKind::Input)
        return {1, long(r) * per + c};
      if (s.collective == Collective::ReduceScatter &&
          b == BufferKind::Output)
        return {0, long(r) * per + c};
      if (s.collective != Collective::AllGather &&
          s.collective != Collective::ReduceScatter &&
          b == BufferKind::Output)
        return {0, c};
    }
    return {static_cast<int>(b), c};
  };
  std::vector<std::map<Loc, double>> mem(n);
  for (int r = 0; r < n; ++r)
    for (int c = 0; c < nin; ++c)
      mem[r][alias(r, BufferKind::Input, c)] = input[r][c];

  auto inRange = [&](int r, const BufferRef &b) {
    const RankProgram &rp = s.ranks[r];
    int size = b.buffer == BufferKind::Input    ? rp.inputChunks
               : b.buffer == BufferKind::Output ? rp.outputChunks
                                                : rp.scratchChunks;
    return b.count >= 1 && b.chunk >= 0 && b.chunk + b.count <= size;
  };

  // Graph.
  std::vector<int> base(n + 1, 0);
  for (int r = 0; r < n; ++r)
    base[r + 1] = base[r] + static_cast<int>(s.ranks[r].ops.size());
  int total = base[n];
  std::vector<std::vector<int>> succ(total);
  std::vector<int> indeg(total, 0);
  std::map<MsgId, int> sender, receiver;
  for (int r = 0; r < n; ++r) {
    const auto &ops = s.ranks[r].ops;
    std::map<TbId, int> lastOfTb;
    for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
      const Op &op = ops[i];
      int v = base[r] + i;
      for (OpId d : op.deps) {
        if (d < 0 || d >= static_cast<int>(ops.size()) || d == i)
          return Verdict::Malformed;
        succ[base[r] + d].push_back(v);
        ++indeg[v];
      }
      if (s.stage >= Stage::ThreadblocksAssigned) {
        auto it = lastOfTb.find(op.threadblock);
        if (it != lastOfTb.end()) {
          succ[it->second].push_back(v);
          ++indeg[v];
        }
        lastOfTb[op.threadblock] = v;
      }
      if (sends(op.kind)) {
        if (op.sendPeer < 0 || op.sendPeer >= n || op.sendPeer == r ||
            !sender.emplace(op.sendMsg, v).second)
          return Verdict::Malformed;
      }
      if (receives(op.kind)) {
        if (op.recvPeer < 0 || op.recvPeer >= n || op.recvPeer == r ||
            !receiver.emplace(op.recvMsg, v).second)
          return Verdict::Malformed;
      }
    }
  }
  if (sender.size() != receiver.size())
    return Verdict::Malformed;
  for (auto [m, v] : sender) {
    auto it = receiver.find(m);
    if (it == receiver.end())
      return Verdict::Malformed;
    succ[v].push_back(it->second);
    ++indeg[it->second];
  }

  // Random topological order.
  std::vector<int> ready;
  for (int v = 0; v < total; ++v)
    if (indeg[v] == 0)
      ready.push_back(v);
  std::map<MsgId, std::vector<double>> inflight;
  int done = 0;
  bool malformed = false;
  auto readRef = [&](int r, const BufferRef &b, std::vector<double> &vals) {
    if (!inRange(r, b)) {
      malformed = true;
      return;
    }
    vals.clear();
    for (int c = 0; c < b.count; ++c) {
      auto it = mem[r].find(alias(r, b.buffer, b.chunk + c));
      // A slot nobody wrote poisons whatever is computed from it.
      vals.push_back(it == mem[r].end() ? NAN : it->second);
    }
  };
  auto writeRef = [&](int r, const BufferRef &b,
                      const std::vector<double> &vals) {
    if (!inRange(r, b) || vals.size() != static_cast<size_t>(b.count)) {
      malformed = true;
      return;
    }
    for (int c = 0; c < b.count; ++c)
      mem[r][alias(r, b.buffer, b.chunk + c)] = vals[c];
  };
  while (!ready.empty() && !malformed) {
    size_t pick = rng() % ready.size();
    int v = ready[pick];
    ready.erase(ready.begin() + pick);
    ++done;
    int r = static_cast<int>(std::upper_bound(base.begin(), base.end(), v) -
                             base.begin()) -
            1;
    const Op &op = s.ranks[r].ops[v - base[r]];
    std::vector<double> a, b, res;
    switch (op.kind) {
    case OpKind::Send:
      readRef(r, op.src, a);
      inflight[op.sendMsg] = a;
      break;
    case OpKind::Recv:
    case OpKind::RecvCopySend:
    case OpKind::RecvReduceSend:
    case OpKind::RecvReduceCopy:
    case OpKind::RecvReduceCopySend: {
      b = inflight[op.recvMsg];
      bool reduce = op.kind == OpKind::RecvReduceSend ||
                    op.kind == OpKind::RecvReduceCopy ||
                    op.kind == OpKind::RecvReduceCopySend;
      if (reduce) {
        readRef(r, op.src, a);
        if (a.size() != b.size())
          malformed = true;
        for (size_t k = 0; k < a.size() && k < b.size(); ++k)
          res.push_back(op.localCoeff * a[k] + op.msgCoeff * b[k]);
      } else {
        for (double x : b)
          res.push_back(op.msgCoeff * x);
      }
      if (writesDst(op.kind))
        writeRef(r, op.dst, res);
      if (sends(op.kind))
        inflight[op.sendMsg] = res;
      break;
    }
    case OpKind::Copy:
      readRef(r, op.src, a);
      writeRef(r, op.dst, a);
      break;
    case OpKind::Reduce:
      readRef(r, op.src, a);
      readRef(r, op.dst, b);
      for (size_t k = 0; k < a.size() && k < b.size(); ++k)
        res.push_back(a[k] + b[k]);
      writeRef(r, op.dst, res);
      break;
    case OpKind::LinComb:
      res.assign(std::max(0, op.dst.count), 0.0);
      for (const LinTerm &t : op.terms) {
        readRef(r, t.src, a);
        for (size_t k = 0; k < a.size() && k < res.size(); ++k)
          res[k] += t.coeff * a[k];
      }
      writeRef(r, op.dst, res);
      break;
    case OpKind::Nop:
      break;
    }
    for (int w : succ[v])
      if (--indeg[w] == 0)
        ready.push_back(w);
  }
  if (malformed)
    return Verdict::Malformed;
  if (done != total)
    return Verdict::Cycle;

  for (int r = 0; r < n; ++r) {
    if (s.collective == Collective::Reduce && r != s.root)
      continue;
    for (int c = 0; c < nout; ++c) {
      double want = 0;
      switch (s.collective) {
      case Collective::AllReduce:
      case Collective::Reduce:
        for (int q = 0; q < n; ++q)
          want += input[q][c];
        break;
      case Collective::AllGather:
        want = input[c / per][c % per];
        break;
      case Collective::ReduceScatter:
        for (int q = 0; q < n; ++q)
          want += input[q][r * per + c];
        break;
      case Collective::Broadcast:
        want = input[s.root][c];
        break;
      case Collective::AllToAll:
        want = input[c / per][r * per + c % per];
        break;
      }
      auto it = mem[r].find(alias(r, BufferKind::Output, c));
      if (it == mem[r].end() || it->second != want)
        return Verdict::Wrong;
    }
  }
  return Verdict::Correct;
}

/// The worst verdict over a few random orders.
inline Verdict oracle(const Schedule &s, int runs = 4) {
  for (int k = 0; k < runs; ++k) {
    Verdict v = concreteOracle(s, 0x9e3779b97f4a7c15ull * (k + 1));
    if (v != Verdict::Correct)
      return v;
  }
  return Verdict::Correct;
}

struct MutationStats {
  size_t total = 0, rejected = 0, acceptedCorrect = 0;
};

/// The schedule itself must verify and be correct for the oracle; then every
/// mutant the oracle finds incorrect must be rejected, and every mutant the
/// verifier accepts must be correct for the oracle.
inline MutationStats expectMutantsRejected(const Schedule &s) {
  MutationStats stats;
  EXPECT_EQ(oracle(s), Verdict::Correct) << scheduleToString(s);
  if (auto err = verifySchedule(s)) {
    ADD_FAILURE() << "the unmutated schedule does not verify:\n"
                  << llvm::toString(std::move(err));
    return stats;
  }
  for (Mutant &m : allMutants(s)) {
    ++stats.total;
    Verdict v = oracle(m.schedule);
    llvm::Error err = verifySchedule(m.schedule);
    bool rejected = static_cast<bool>(err);
    llvm::consumeError(std::move(err));
    if (rejected)
      ++stats.rejected;
    else
      ++stats.acceptedCorrect;
    if (!rejected) {
      EXPECT_EQ(v, Verdict::Correct)
          << "mutant accepted by the verifier but " << verdictName(v)
          << " for the oracle: " << m.description << "\n"
          << scheduleToString(m.schedule);
    }
  }
  return stats;
}

/// `s` with one to three random operand or op-kind changes that keep every
/// coefficient 1 and every message matched.
inline void damageOperands(Schedule &s, std::mt19937 &rng) {
  const int32_t chunks =
      std::max(s.nominalInputChunks(), s.nominalOutputChunks());
  for (int e = 0, n = 1 + int(rng() % 3); e < n; ++e) {
    RankProgram &rp = s.ranks[rng() % s.ranks.size()];
    if (rp.ops.empty())
      continue;
    Op &op = rp.ops[rng() % rp.ops.size()];
    switch (rng() % 6) {
    case 0:
      if (readsSrc(op.kind))
        op.src.chunk = int32_t(rng() % chunks);
      break;
    case 1:
      if (writesDst(op.kind))
        op.dst.chunk = int32_t(rng() % chunks);
      break;
    case 2:
      if (writesDst(op.kind))
        op.dst.buffer = rng() % 2 ? BufferKind::Input : BufferKind::Output;
      break;
    case 5: // read another buffer: often a slot not written yet
      if (readsSrc(op.kind))
        op.src.buffer = rng() % 2 ? BufferKind::Input : BufferKind::Output;
      break;
    case 3: // a copy becomes a reduction: a term counted twice
      if (op.kind == OpKind::Copy)
        op.kind = OpKind::Reduce;
      break;
    default: // add instead of copy and back, keeping the messages
      if (op.kind == OpKind::RecvReduceSend) {
        op.kind = OpKind::RecvCopySend;
        op.dst = op.src;
        op.src = BufferRef();
      } else if (op.kind == OpKind::RecvCopySend) {
        op.kind = OpKind::RecvReduceSend;
        op.src = op.dst;
        op.dst = BufferRef();
      } else if (op.kind == OpKind::Recv) {
        op.kind = OpKind::RecvReduceCopy;
        op.src = op.dst;
      }
      break;
    }
  }
}

} // namespace topocc::ir::testing

#endif // TOPOCC_TESTS_UNIT_IR_MUTATIONS_H
