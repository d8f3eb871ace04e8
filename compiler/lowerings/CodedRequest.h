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

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

#include <string>

namespace topocc::lowerings {

/// An all-reduce, a known wire dtype, a tolerance, positive components:
/// the policy options, or a user error naming `alg`.
llvm::Expected<cerar::PolicyOptions>
codedPolicyOptions(const CompileRequest &req, llvm::StringRef alg);

/// "4.142 ms".
std::string msText(double seconds);

/// The --explain line of the policy's `reason`: as is, or with a forced
/// `components` (> 0) saying that --components overrides it.
std::string forcedLine(llvm::StringRef prefix, int32_t components,
                       llvm::StringRef reason);

/// `result` carries the coded schedule `s` of design `d`: for an
/// approximate code its error contract (cerar::analyzeErrorContract,
/// docs/Algorithms-cerar.md 8): codedError = max_r e_r and
/// codedRoundoffGain. A user error (prefixed `who`) when the contract's
/// bound in the request's wire dtype exceeds --tolerance.
llvm::Error recordCode(const cerar::Design &d, const ir::Schedule &s,
                       const CompileRequest &req, CompileResult &result,
                       llvm::StringRef who);

/// For an approximate perturbed or Vandermonde code `d` and a tolerance:
/// moves eps to the minimum of the contract's bound e(eps) + Gamma(eps) of
/// `lower(d)` in the wire dtype (e grows like eps, the rounding like
/// eps^-(q-1); eps does not change the schedule's time) and rebuilds `d`,
/// at most three times; under --kappa-max only checks the bound. Sets `dec`'s eps, kappa and designError to the code's and
/// `explain` to what it did. A user error (prefixed `who`) when no eps
/// meets the tolerance.
llvm::Error
tuneForContract(cerar::Design &d, cerar::PolicyDecision &dec,
                const cerar::PolicyOptions &policy,
                llvm::function_ref<llvm::Expected<ir::Schedule>(
                    const cerar::Design &)>
                    lower,
                llvm::StringRef who, std::string &explain);

} // namespace topocc::lowerings

#endif // TOPOCC_COMPILER_LOWERINGS_CODEDREQUEST_H
