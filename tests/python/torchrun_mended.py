"""torchrun (torch.distributed.run) with one helper of Debian's torch 1.13
mended: on Python 3.11 its to_map() receives None for the default output
redirection and fails before any rank starts ("'NoneType' object has no
attribute 'get'"). Nothing else changes: test_torch.py uses it to run plans
under torchrun's own agent, rendezvous and environment."""
import sys

import torch.distributed.elastic.multiprocessing as elastic_mp
import torch.distributed.elastic.multiprocessing.api as elastic_api

_to_map = elastic_api.to_map


def to_map(val_or_map, local_world_size):
    return _to_map(elastic_api.Std.NONE if val_or_map is None else val_or_map,
                   local_world_size)


elastic_api.to_map = to_map
elastic_mp.to_map = to_map

if __name__ == "__main__":
    from torch.distributed.run import main
    sys.exit(main())
