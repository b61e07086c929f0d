"""Two ranks create N gloo process groups (argv[1], default 60) and broadcast an object over each: the pattern of
vLLM's TP=2 start-up (GroupCoordinator's CPU groups), without vLLM. Prints one JSON line per rank: the virtual
seconds the groups took and the slowest new_group and broadcast.

Before the condvar hand-overs (shim_c/libc/condvar.c), beside two CPU hogs about 1 run in 3 hung: one rank
waited in gloo's Pair::waitUntilConnected for a connection its connect callback had already notified, while
the other had gone on. A reproduction, not a test (the suite's test_a_condvar_hand_over_is_neither_lost_nor_
jumped_over covers the mechanism faster):

    (yes > /dev/null &); (yes > /dev/null &); timewarp run -- python tests/progs/gloo_groups.py 60; pkill yes
"""
import json
import os
import sys
import time

import torch.distributed as dist
import torch.multiprocessing as mp


def worker(rank: int, world: int, port: int, n: int) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    t0 = time.monotonic()
    slowest_group = slowest_bcast = 0.0
    for i in range(n):
        a = time.monotonic()
        g = dist.new_group(list(range(world)), backend="gloo")
        b = time.monotonic()
        obj = [f"x{i}"] if rank == 0 else [None]
        dist.broadcast_object_list(obj, src=0, group=g)
        c = time.monotonic()
        assert obj[0] == f"x{i}", obj
        slowest_group, slowest_bcast = max(slowest_group, b - a), max(slowest_bcast, c - b)
    print(json.dumps({"rank": rank, "groups": n, "virtual_s": round(time.monotonic() - t0, 4),
                      "slowest_new_group_s": round(slowest_group, 4), "slowest_broadcast_s": round(slowest_bcast, 4)}),
          flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 60
    mp.spawn(worker, args=(2, 20000 + os.getpid() % 20000, n), nprocs=2)
