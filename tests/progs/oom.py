"""Allocating past the virtual card's memory raises torch's usual OutOfMemoryError."""
import json

import torch

r = {}
blocks = []
try:
    for _ in range(1000):
        blocks.append(torch.empty(16 * 2**30, dtype=torch.uint8, device="cuda"))  # 16 GiB each
    r["raised"] = None
except torch.OutOfMemoryError as e:
    r["raised"] = "OutOfMemoryError"
    r["message"] = str(e)[:300]
r["allocated_gib"] = len(blocks) * 16
del blocks
torch.cuda.empty_cache()
r["after_free"] = torch.cuda.mem_get_info()[0]
r["total"] = torch.cuda.mem_get_info()[1]
x = torch.empty(2**30, device="cuda")  # usable again after freeing
r["realloc_ok"] = x.numel() == 2**30
print(json.dumps(r))
