/* The runtime's C API from C, built against an installed topocc
   (tests/install/check.sh): loads a plan file, runs it on one thread per
   rank over local transports and checks every element; a file that does
   not exist must fail with a message.
     consumer-c PLAN.json */
#include "runtime/topocc_c.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

enum { kMaxRanks = 64, kCount = 999 };

struct rank_job {
  const topocc_plan *plan;
  topocc_local_fabric *fabric;
  int rank;
  long wrong;
  int failed;
};

static void *run_rank(void *arg) {
  struct rank_job *job = (struct rank_job *)arg;
  topocc_transport *tr = NULL;
  if (topocc_local_transport_create(job->fabric, job->rank, &tr) != TOPOCC_OK) {
    fprintf(stderr, "rank %d: %s\n", job->rank, topocc_last_error());
    job->failed = 1;
    return NULL;
  }
  size_t in_n = topocc_plan_input_elements(job->plan, kCount);
  size_t out_n = topocc_plan_output_elements(job->plan, kCount);
  float *in = malloc(in_n * sizeof(float)), *out = malloc(out_n * sizeof(float));
  for (size_t i = 0; i < in_n; ++i)
    in[i] = 1.0f;
  if (topocc_plan_run(job->plan, in, out, kCount, TOPOCC_FP32, tr, NULL) !=
      TOPOCC_OK) {
    fprintf(stderr, "rank %d: %s\n", job->rank, topocc_last_error());
    job->failed = 1;
  } else {
    for (size_t i = 0; i < out_n; ++i)
      job->wrong += out[i] != (float)topocc_plan_ranks(job->plan);
  }
  free(in);
  free(out);
  topocc_transport_free(tr);
  return NULL;
}

int main(int argc, char **argv) {
  topocc_plan *plan = NULL;
  if (topocc_plan_load("no-such-plan.json", &plan) != TOPOCC_ERROR ||
      topocc_last_error()[0] == '\0') {
    fprintf(stderr, "a missing file did not fail with a message\n");
    return 1;
  }
  if (argc != 2 || topocc_plan_load(argv[1], &plan) != TOPOCC_OK) {
    fprintf(stderr, "%s\n", argc == 2 ? topocc_last_error() : "usage: consumer-c PLAN.json");
    return 1;
  }
  int n = topocc_plan_ranks(plan);
  if (n > kMaxRanks || topocc_plan_collective(plan) != TOPOCC_ALLREDUCE) {
    fprintf(stderr, "expected an all-reduce plan of at most %d ranks\n", kMaxRanks);
    return 1;
  }
  topocc_local_fabric *fabric = NULL;
  if (topocc_local_fabric_create(n, &fabric) != TOPOCC_OK) {
    fprintf(stderr, "%s\n", topocc_last_error());
    return 1;
  }
  struct rank_job jobs[kMaxRanks];
  pthread_t threads[kMaxRanks];
  for (int r = 0; r < n; ++r) {
    jobs[r] = (struct rank_job){plan, fabric, r, 0, 0};
    pthread_create(&threads[r], NULL, run_rank, &jobs[r]);
  }
  long wrong = 0;
  int failed = 0;
  for (int r = 0; r < n; ++r) {
    pthread_join(threads[r], NULL);
    wrong += jobs[r].wrong;
    failed |= jobs[r].failed;
  }
  printf("consumer-c: plan '%s', %d ranks on threads, count %d: %ld wrong\n",
         topocc_plan_name(plan), n, kCount, wrong);
  topocc_local_fabric_free(fabric);
  topocc_plan_free(plan);
  return failed || wrong != 0;
}
