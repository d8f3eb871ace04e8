"""One rank of test_torch.py's all_reduce checks: every plan given, on
tensors of several sizes and dtypes, against torch.distributed.all_reduce in
float64; then the errors a user can make. Rank 0 writes the failures (of
every rank) and the number of checks to argv[1]."""
import json
import sys

import torch
import torch.distributed as dist

import topocc.torch as tt


def main():
    out, paths = sys.argv[1], sys.argv[2:]
    dist.init_process_group("gloo")
    rank, n = dist.get_rank(), dist.get_world_size()
    errors, checked = [], 0

    def expect(cond, what):
        nonlocal checked
        checked += 1
        if not cond:
            errors.append("rank %d: %s" % (rank, what))

    for path in paths:
        plan = tt.load(path)
        for count in (1, 3, 1000, 65537):
            for dtype, tol in ((torch.float32, 1e-6), (torch.float16, 2e-3),
                               (torch.bfloat16, 1.6e-2)):
                g = torch.Generator().manual_seed(17 * rank + count)
                x64 = torch.randn(count, generator=g, dtype=torch.float64)
                x = x64.to(dtype)
                exact = x.to(torch.float64)
                dist.all_reduce(exact)
                got = tt.all_reduce(x, plan)
                coded = plan.value_error_bound(x)
                if coded > 0:
                    # A coded plan's contract (docs/Algorithms-cerar.md 8):
                    # normwise, relative to the norm of all ranks' inputs.
                    sq = exact.new_tensor([x.to(torch.float64).pow(2).sum()])
                    dist.all_reduce(sq)
                    err = ((got.to(torch.float64) - exact).norm() /
                           sq.sqrt()).item()
                    bound = coded
                else:
                    err = ((got.to(torch.float64) - exact).abs().max() /
                           exact.abs().max()).item()
                    bound = tol * n
                expect(err <= bound, "%s count %d %s: error %.3g > %.3g (%s)" % (
                    path, count, dtype, err, bound, plan.variant_for(x)))
    plan = tt.load(paths[0])
    # A view that is not contiguous.
    try:
        tt.all_reduce(torch.zeros(8, 2)[:, 0], plan)
        expect(False, "a strided tensor was accepted")
    except tt.Error as e:
        expect("contiguous" in str(e), "strided: " + str(e))
    try:
        tt.all_reduce(torch.zeros(8, dtype=torch.int32), plan)
        expect(False, "an int32 tensor was accepted")
    except tt.Error as e:
        expect("float32, float16 and bfloat16" in str(e), "int32: " + str(e))
    # Ranks that disagree on the count: every rank fails with the same
    # message, and the group stays usable.
    try:
        tt.all_reduce(torch.ones(10 + (rank == 1)), plan, timeout=30)
        expect(False, "different counts were accepted")
    except tt.Error as e:
        expect("count" in str(e), "counts: " + str(e))
    x = torch.ones(5)
    tt.all_reduce(x, plan)
    expect(torch.equal(x, torch.full((5,), float(n))), "after a mismatch: %s" % x)
    # A subgroup of two ranks cannot run a 4-rank plan.
    sub = dist.new_group([0, 1])
    if rank < 2:
        try:
            tt.all_reduce(torch.ones(4), plan, group=sub)
            expect(False, "a 4-rank plan ran on 2 ranks")
        except tt.Error as e:
            expect("4 ranks, the process group has 2" in str(e), "subgroup: " + str(e))

    everyone = [None] * n
    dist.all_gather_object(everyone, errors)
    if rank == 0:
        with open(out, "w") as f:
            json.dump({"errors": sum(everyone, []), "checked": checked}, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
