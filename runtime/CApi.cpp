//===- runtime/CApi.cpp - The runtime's C API -----------------------------===//
//
// runtime/topocc_c.h over runtime::Plan and LocalTransport. No exception or
// llvm::Error crosses the C boundary: errors become TOPOCC_ERROR and the
// thread's last-error text.
//
//===----------------------------------------------------------------------===//

#include "runtime/CApiImpl.h"
#include "runtime/LocalTransport.h"

#include <new>
#include <string>

using namespace topocc;
using namespace topocc::runtime;

struct topocc_plan {
  Plan plan;
};

struct topocc_local_fabric {
  explicit topocc_local_fabric(int n) : fabric(n) {}
  LocalFabric fabric;
};

namespace {
thread_local std::string lastError;

/// llvm::toString's text ("path:line:col: error: ...", with the source
/// excerpt) without its final newline.
std::string messageOf(llvm::Error err) {
  std::string text = llvm::toString(std::move(err));
  while (!text.empty() && text.back() == '\n')
    text.pop_back();
  return text;
}
} // namespace

topocc_status topocc::runtime::capi::fail(llvm::Error err) {
  lastError = messageOf(std::move(err));
  return TOPOCC_ERROR;
}

topocc_status topocc::runtime::capi::fail(const char *message) {
  lastError = message;
  return TOPOCC_ERROR;
}

extern "C" {

const char *topocc_last_error(void) { return lastError.c_str(); }

topocc_status topocc_plan_load(const char *path, topocc_plan **out) {
  if (!out)
    return capi::fail("topocc_plan_load: out is NULL");
  *out = nullptr;
  if (!path)
    return capi::fail("topocc_plan_load: path is NULL");
  auto plan = Plan::load(path);
  if (!plan)
    return capi::fail(plan.takeError());
  *out = new (std::nothrow) topocc_plan{std::move(*plan)};
  if (!*out)
    return capi::fail("topocc_plan_load: out of memory");
  return TOPOCC_OK;
}

void topocc_plan_free(topocc_plan *plan) { delete plan; }

const char *topocc_plan_name(const topocc_plan *plan) {
  return plan ? plan->plan.schedule().name.c_str() : "";
}

int topocc_plan_ranks(const topocc_plan *plan) {
  return plan ? plan->plan.schedule().numRanks : 0;
}

topocc_collective topocc_plan_collective(const topocc_plan *plan) {
  if (!plan)
    return TOPOCC_ALLREDUCE;
  switch (plan->plan.schedule().collective) {
  case ir::Collective::AllGather:
    return TOPOCC_ALLGATHER;
  case ir::Collective::ReduceScatter:
    return TOPOCC_REDUCESCATTER;
  default:
    return TOPOCC_ALLREDUCE;
  }
}

int topocc_plan_inplace(const topocc_plan *plan) {
  return plan && plan->plan.schedule().inplace ? 1 : 0;
}

static size_t blocks(const topocc_plan *plan, bool input) {
  if (!plan)
    return 0;
  ir::Collective c = plan->plan.schedule().collective;
  bool many = input ? c == ir::Collective::ReduceScatter
                    : c == ir::Collective::AllGather;
  return many ? size_t(plan->plan.schedule().numRanks) : 1;
}

size_t topocc_plan_input_elements(const topocc_plan *plan, size_t count) {
  return blocks(plan, true) * count;
}

size_t topocc_plan_output_elements(const topocc_plan *plan, size_t count) {
  return blocks(plan, false) * count;
}

void topocc_run_options_init(topocc_run_options *options) {
  if (!options)
    return;
  RunOptions defaults;
  options->check_peers = defaults.checkPeers ? 1 : 0;
  options->timeout_seconds = defaults.timeoutSeconds;
}

topocc_status topocc_plan_run(const topocc_plan *plan, const void *sendbuf,
                              void *recvbuf, size_t count, topocc_dtype dtype,
                              topocc_transport *transport,
                              const topocc_run_options *options) {
  if (!plan || !transport || !transport->impl)
    return capi::fail("topocc_plan_run: plan or transport is NULL");
  if (dtype != TOPOCC_FP32 && dtype != TOPOCC_FP16 && dtype != TOPOCC_BF16)
    return capi::fail(("topocc_plan_run: unknown dtype " +
                       std::to_string(int(dtype)) +
                       " (TOPOCC_FP32, TOPOCC_FP16 or TOPOCC_BF16)")
                          .c_str());
  RunOptions opts;
  if (options) {
    opts.checkPeers = options->check_peers != 0;
    opts.timeoutSeconds = options->timeout_seconds;
  }
  if (auto err = plan->plan.run(sendbuf, recvbuf, count, DType(int(dtype)),
                                *transport->impl, opts))
    return capi::fail(std::move(err));
  return TOPOCC_OK;
}

topocc_status topocc_local_fabric_create(int ranks,
                                         topocc_local_fabric **out) {
  if (!out)
    return capi::fail("topocc_local_fabric_create: out is NULL");
  *out = nullptr;
  if (ranks < 1 || ranks > 4096)
    return capi::fail(("topocc_local_fabric_create: ranks must be 1 to "
                       "4096, got " +
                       std::to_string(ranks))
                          .c_str());
  *out = new (std::nothrow) topocc_local_fabric(ranks);
  return *out ? TOPOCC_OK : capi::fail("topocc_local_fabric_create: out of memory");
}

void topocc_local_fabric_free(topocc_local_fabric *fabric) { delete fabric; }

topocc_status topocc_local_transport_create(topocc_local_fabric *fabric,
                                            int rank, topocc_transport **out) {
  if (!out)
    return capi::fail("topocc_local_transport_create: out is NULL");
  *out = nullptr;
  if (!fabric)
    return capi::fail("topocc_local_transport_create: fabric is NULL");
  if (rank < 0 || rank >= fabric->fabric.size())
    return capi::fail(("topocc_local_transport_create: rank " +
                       std::to_string(rank) + " is not in 0 to " +
                       std::to_string(fabric->fabric.size() - 1))
                          .c_str());
  *out = new (std::nothrow) topocc_transport{
      std::make_unique<LocalTransport>(fabric->fabric, rank)};
  return *out ? TOPOCC_OK
              : capi::fail("topocc_local_transport_create: out of memory");
}

void topocc_transport_free(topocc_transport *transport) { delete transport; }

} // extern "C"
