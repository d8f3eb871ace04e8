//===- compiler/lowerings/CodedRequest.h - CERAR's request checks -*- C++ -*-===//
//
// What the two coded lowerings (Cerar.cpp, HierCerar.cpp) check alike and
// hand to the CERAR policy (compiler/algorithms/CerarPolicy.h). Private to
// compiler/lowerings/.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_LOWERINGS_CODEDREQUEST_H
#define TOPOCC_COMPILER_LOWERINGS_CODEDREQUEST_H

#include "compiler/CompileRequest.h"
#include "compiler/algorithms/CerarPolicy.h"

#include "llvm/Support/Error.h"

#include <string>

namespace topocc::lowerings {

/// An all-reduce, a known wire dtype, a tolerance, positive components:
/// the policy options, or a user error naming `alg`.
llvm::Expected<cerar::PolicyOptions>
codedPolicyOptions(const CompileRequest &req, llvm::StringRef alg);

/// "4.142 ms".
std::string msText(double seconds);

/// `result` carries a coded schedule of design `d`: its worst per-rank
/// error and how much it amplifies rounding (condition number x rounds).
void recordCode(const cerar::Design &d, CompileResult &result);

} // namespace topocc::lowerings

#endif // TOPOCC_COMPILER_LOWERINGS_CODEDREQUEST_H
