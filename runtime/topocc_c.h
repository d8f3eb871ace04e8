/*===- runtime/topocc_c.h - The runtime's C API ------------------*- C -*-===//
//
// Plans from C and from any language with a C FFI: load a plan file (or a
// plan set), ask what it is, and run it on buffers over a transport. Every
// call that can fail returns TOPOCC_OK or TOPOCC_ERROR; after an error,
// topocc_last_error() gives the message (the same text as the C++ API's
// llvm::Error), valid on that thread until its next failing call. Objects
// are opaque and freed by their *_free function (NULL is accepted).
// docs/Runtime.md, "The C API". Implemented in runtime/CApi.cpp
// (topocc_runtime); topocc_mpi_transport_create in runtime/mpi/MpiCApi.cpp
// (topocc_runtime_mpi, when built with MPI).
//
// Thread safety: a plan may be run by many threads at once (one transport
// each); a transport is one rank's and must not be used by two threads at
// once.
//
//===----------------------------------------------------------------------===*/
#ifndef TOPOCC_RUNTIME_TOPOCC_C_H
#define TOPOCC_RUNTIME_TOPOCC_C_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { TOPOCC_OK = 0, TOPOCC_ERROR = 1 } topocc_status;
/* The same values as topocc::runtime::DType. */
typedef enum { TOPOCC_FP32 = 0, TOPOCC_FP16 = 1, TOPOCC_BF16 = 2 } topocc_dtype;
typedef enum {
  TOPOCC_ALLREDUCE = 0,
  TOPOCC_ALLGATHER = 1,
  TOPOCC_REDUCESCATTER = 2
} topocc_collective;

typedef struct topocc_plan topocc_plan;
typedef struct topocc_transport topocc_transport;
typedef struct topocc_local_fabric topocc_local_fabric;

/* The message of this thread's last failed call ("" when none). */
const char *topocc_last_error(void);

/* Reads, validates and re-verifies a plan file or plan set. */
topocc_status topocc_plan_load(const char *path, topocc_plan **out);
void topocc_plan_free(topocc_plan *plan);
/* The schedule's name, rank count, collective and in-place flag (a plan
   set's first variant's). */
const char *topocc_plan_name(const topocc_plan *plan);
int topocc_plan_ranks(const topocc_plan *plan);
topocc_collective topocc_plan_collective(const topocc_plan *plan);
int topocc_plan_inplace(const topocc_plan *plan);
/* Elements of the input and output buffers of one rank for a call of
   `count` (nccl's conventions: allgather ranks*count out, reducescatter
   ranks*count in). */
size_t topocc_plan_input_elements(const topocc_plan *plan, size_t count);
size_t topocc_plan_output_elements(const topocc_plan *plan, size_t count);

typedef struct {
  /* Nonzero: every rank checks that all run the same plan with the same
     count and dtype first (default 1). The same on every rank. */
  int check_peers;
  /* Seconds without progress before the run fails naming what it waits
     for; <= 0 waits without limit (default 600). */
  double timeout_seconds;
} topocc_run_options;
void topocc_run_options_init(topocc_run_options *options);

/* Runs the calling rank's part (the transport's rank) of one collective of
   `count` elements; `options` NULL: the defaults. In-place plans need
   nccl's aliasing (docs/Runtime.md). After an error the transport is not
   reusable. */
topocc_status topocc_plan_run(const topocc_plan *plan, const void *sendbuf,
                              void *recvbuf, size_t count, topocc_dtype dtype,
                              topocc_transport *transport,
                              const topocc_run_options *options);

/* Ranks as threads of one process: a fabric of `ranks`, then one
   transport per rank (each used by its own thread). Free the transports
   before the fabric. */
topocc_status topocc_local_fabric_create(int ranks, topocc_local_fabric **out);
void topocc_local_fabric_free(topocc_local_fabric *fabric);
topocc_status topocc_local_transport_create(topocc_local_fabric *fabric,
                                            int rank, topocc_transport **out);
/* MPI_COMM_WORLD (libtopocc_runtime_mpi). Collective: every rank calls it
   after MPI_Init, and frees the transport before MPI_Finalize. */
topocc_status topocc_mpi_transport_create(topocc_transport **out);
void topocc_transport_free(topocc_transport *transport);

#ifdef __cplusplus
}
#endif

#endif /* TOPOCC_RUNTIME_TOPOCC_C_H */
