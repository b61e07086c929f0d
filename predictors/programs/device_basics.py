"""Unmodified PyTorch on the virtual GPU: properties, data round trips, ops, events, streams, graphs."""
import json
import time

import torch
import torch.nn.functional as F

r = {}
r["available"] = torch.cuda.is_available()
r["count"] = torch.cuda.device_count()
p = torch.cuda.get_device_properties(0)
r["name"] = p.name
r["capability"] = list(torch.cuda.get_device_capability(0))
r["sms"] = p.multi_processor_count
r["total_memory"] = p.total_memory
r["l2"] = p.L2_cache_size
free, total = torch.cuda.mem_get_info()
r["mem_get_info"] = [free, total]

# host -> device -> host round trips of small tensors
x = torch.arange(1000, dtype=torch.float32)
r["roundtrip_f32"] = torch.equal(x.cuda().cpu(), x)
y = torch.randint(-(2**40), 2**40, (257,), dtype=torch.int64)
r["roundtrip_i64"] = torch.equal(y.to("cuda").to("cpu"), y)
z = torch.randn(33, 7).to(torch.bfloat16)
g = z.cuda()
r["roundtrip_bf16_d2d"] = torch.equal(g.clone().cpu(), z)
pinned = torch.empty(1000, dtype=torch.float32).pin_memory()
pinned.copy_(x.cuda(), non_blocking=True)
torch.cuda.synchronize()
r["roundtrip_pinned_async"] = torch.equal(pinned, x)
r["item"] = torch.tensor([42], device="cuda").item()

ops = {}
for dt in (torch.bfloat16, torch.float16, torch.float32):
    a = torch.randn(128, 256, device="cuda", dtype=dt)
    b = torch.randn(256, 64, device="cuda", dtype=dt)
    w = torch.randn(96, 256, device="cuda", dtype=dt)
    bias = torch.randn(96, device="cuda", dtype=dt)
    ba = torch.randn(4, 32, 16, device="cuda", dtype=dt)
    bb = torch.randn(4, 16, 8, device="cuda", dtype=dt)
    res = {
        "matmul": a @ b,
        "linear": F.linear(a, w, bias),
        "bmm": torch.bmm(ba, bb),
        "add": a + a,
        "mul": a * 2.0,
        "silu": F.silu(a),
        "gelu": F.gelu(a),
        "sum": a.sum(dim=1),
        "mean": a.mean(),
        "max": a.max(dim=0).values,
        "softmax": torch.softmax(a, dim=-1),
        "argmax": a.argmax(dim=-1),
        "rms_norm": F.rms_norm(a, (256,), weight=torch.ones(256, device="cuda", dtype=dt)),
    }
    q = torch.randn(2, 8, 64, 64, device="cuda", dtype=dt)
    k = torch.randn(2, 2, 64, 64, device="cuda", dtype=dt)
    res["sdpa_causal_gqa"] = F.scaled_dot_product_attention(q, k, k, is_causal=True, enable_gqa=True)
    res["sdpa_causal"] = F.scaled_dot_product_attention(q, q, q, is_causal=True)
    ops[str(dt)] = {n: [list(t.shape), str(t.dtype), t.device.type] for n, t in res.items()}
torch.cuda.synchronize()
r["ops"] = ops

# events measure virtual GPU time; perf_counter around a synchronized phase agrees with them
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
torch.cuda.synchronize()
e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
t0 = time.perf_counter()
e0.record()
for _ in range(20):
    c = a @ a
e1.record()
torch.cuda.synchronize()
t1 = time.perf_counter()
r["gemm20_event_ms"] = e0.elapsed_time(e1)
r["gemm20_perf_ms"] = (t1 - t0) * 1e3

# streams: work on a side stream, cross-stream waits, query
s = torch.cuda.Stream()
before = torch.cuda.Event(enable_timing=True)
after = torch.cuda.Event(enable_timing=True)
with torch.cuda.stream(s):
    before.record()
    for _ in range(5):
        c = a @ a
    after.record()
r["side_stream_query_before_sync"] = s.query()
torch.cuda.current_stream().wait_stream(s)
s.synchronize()
r["side_stream_query_after_sync"] = s.query()
r["side_stream_ms"] = before.elapsed_time(after)
r["stream_priority_range"] = list(torch.cuda.Stream.priority_range()) if hasattr(torch.cuda.Stream, "priority_range") else None

# CUDA graph: capture once, replay; a replay takes the captured work's time
static_in = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    for _ in range(2):
        out = torch.relu(static_in @ static_in)
torch.cuda.current_stream().wait_stream(side)
graph = torch.cuda.CUDAGraph()
with torch.cuda.graph(graph):
    out = torch.relu(static_in @ static_in)
    out = out @ static_in
g0, g1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
g0.record()
for _ in range(10):
    graph.replay()
g1.record()
torch.cuda.synchronize()
r["graph_replay10_ms"] = g0.elapsed_time(g1)
r["graph_out_shape"] = list(out.shape)
e2, e3 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
e2.record()
for _ in range(10):
    o = torch.relu(static_in @ static_in)
    o = o @ static_in
e3.record()
torch.cuda.synchronize()
r["eager10_ms"] = e2.elapsed_time(e3)
r["memory_allocated"] = torch.cuda.memory_allocated()
print(json.dumps(r))
