//===- compiler/passes/Fuse.h - Fuse receive chains into MSCCL ops -*- C++
//-*-===//
//
// Fuses a receive with the reduce and the send that consume it into the
// combined MSCCL primitives rcs, rrc, rrcs and rrs (rules written above the
// code in Fuse.cpp, msccl-tools rank_dag.py style). Stage: Lowered -> Fused.
// Preserves semantics, message pairing and the FIFO order per peer; shrinks
// each rank's scratch to what is still addressed. Ops a lowering put on
// different channels are never fused.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_PASSES_FUSE_H
#define TOPOCC_COMPILER_PASSES_FUSE_H

#include "ir/Schedule.h"

namespace topocc::passes {

/// REQUIRES: s.stage is Lowered or Fused; same-rank deps are acyclic.
/// Only plain (unit-coefficient) ops are fused.
void fuse(ir::Schedule &s);

} // namespace topocc::passes

#endif // TOPOCC_COMPILER_PASSES_FUSE_H
