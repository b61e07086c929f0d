"""torch.distributed with the nccl backend across N processes (argv[1]): all_reduce, all_gather, broadcast,
send/recv with checked shapes, then a tensor-parallel MLP step (column-parallel, silu, row-parallel,
all_reduce; Llama-3-8B sizes) timed with CUDA events. With argv[2] == "kill", rank 1 kills itself with
SIGKILL midway. Prints `rank R ok mlp_us X` per rank."""
import os, signal, sys, time
import torch, torch.distributed as dist, torch.multiprocessing as mp


def worker(rank, world, port, kill):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.cuda.set_device(rank % torch.cuda.device_count())
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", rank))
    x = torch.ones(1 << 20, device="cuda", dtype=torch.bfloat16)
    dist.all_reduce(x)
    out = torch.empty(world, 4096, device="cuda")
    dist.all_gather_into_tensor(out, torch.ones(4096, device="cuda"))
    assert out.shape == (world, 4096)
    b = torch.empty(1000, device="cuda")
    dist.broadcast(b, 0)
    if rank == 0:
        dist.send(torch.ones(333, device="cuda"), world - 1)
    elif rank == world - 1:
        r = torch.empty(333, device="cuda"); dist.recv(r, 0)
    torch.cuda.synchronize()
    if kill and rank == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    hidden, inter, tokens = 4096, 14336 // world, 2048
    w1 = torch.empty(inter, hidden, device="cuda", dtype=torch.bfloat16)
    w2 = torch.empty(hidden, inter, device="cuda", dtype=torch.bfloat16)
    h = torch.empty(tokens, hidden, device="cuda", dtype=torch.bfloat16)
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(5 if not kill else 1000):
        dist.barrier(); torch.cuda.synchronize()
        s.record()
        y = torch.nn.functional.linear(torch.nn.functional.silu(torch.nn.functional.linear(h, w1)), w2)
        dist.all_reduce(y)
        e.record(); torch.cuda.synchronize()
        times.append(s.elapsed_time(e) * 1e3)
    assert y.shape == (tokens, hidden)
    print(f"rank {rank} ok mlp_us {sorted(times)[len(times) // 2]:.1f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    world = int(sys.argv[1]); kill = len(sys.argv) > 2 and sys.argv[2] == "kill"
    port = 20000 + os.getpid() % 20000
    if not kill:
        mp.spawn(worker, args=(world, port, kill), nprocs=world)
    else:   # plain processes, joined one by one: the survivors must end by themselves
        ctx = mp.get_context("spawn")
        ps = [ctx.Process(target=worker, args=(r, world, port, kill)) for r in range(world)]
        for p in ps: p.start()
        for p in ps: p.join()
        print("exit codes", [p.exitcode for p in ps], flush=True)
        sys.exit(1 if any(p.exitcode for p in ps) else 0)
