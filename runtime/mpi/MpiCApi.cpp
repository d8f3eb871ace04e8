//===- runtime/mpi/MpiCApi.cpp - topocc_mpi_transport_create --------------===//
//
// The MPI transport for runtime/topocc_c.h (topocc_runtime_mpi).
//
//===----------------------------------------------------------------------===//

#include "runtime/CApiImpl.h"
#include "runtime/mpi/MpiTransport.h"

#include <mpi.h>

#include <new>

extern "C" topocc_status topocc_mpi_transport_create(topocc_transport **out) {
  using namespace topocc::runtime;
  if (!out)
    return capi::fail("topocc_mpi_transport_create: out is NULL");
  *out = nullptr;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized)
    return capi::fail("topocc_mpi_transport_create: call MPI_Init first");
  *out = new (std::nothrow) topocc_transport{std::make_unique<MpiTransport>()};
  return *out ? TOPOCC_OK
              : capi::fail("topocc_mpi_transport_create: out of memory");
}
