"""Read everything a CUDA program can learn about the real device, for the GPU catalog.

Run on a real GPU machine: python3 probe_device.py OUTDIR
Writes OUTDIR/device_probe.json: cudaGetDeviceProperties (every field), cuDeviceGetAttribute (every
CUdevice_attribute), NVML getters, torch's view, cudaMemGetInfo, versions. Uses cuda-bindings and
nvidia-ml-py as installed on the calibration image.
"""
import json
import os
import subprocess
import sys
import datetime


def _plain(v):
    if isinstance(v, (int, float, str, bool)) or v is None:
        return v
    if isinstance(v, bytes):
        return v.decode(errors="replace").rstrip("\x00")
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if hasattr(v, "value") and not callable(v.value):
        return _plain(v.value)
    try:
        return int(v)
    except Exception:
        return str(v)


def cudart_props(out):
    from cuda.bindings import runtime as rt
    err, prop = rt.cudaGetDeviceProperties(0)
    fields = {}
    for name in dir(prop):
        if name.startswith("_") or name in ("getPtr",):
            continue
        try:
            val = getattr(prop, name)
        except Exception as e:  # noqa: BLE001
            val = f"<error {e}>"
        if callable(val):
            continue
        fields[name] = _plain(val)
    out["cudaGetDeviceProperties"] = fields
    out["cudaGetDeviceProperties_err"] = str(err)
    err, free, total = rt.cudaMemGetInfo()
    out["cudaMemGetInfo"] = {"free": free, "total": total}
    out["cudaRuntimeGetVersion"] = rt.cudaRuntimeGetVersion()[1]
    out["cudaDriverGetVersion"] = rt.cudaDriverGetVersion()[1]
    attrs = {}
    for a in rt.cudaDeviceAttr:
        err, v = rt.cudaDeviceGetAttribute(a, 0)
        attrs[a.name] = {"id": int(a.value), "value": v, "err": int(err.value) if hasattr(err, "value") else str(err)}
    out["cudaDeviceGetAttribute"] = attrs
    err, lo, hi = rt.cudaDeviceGetStreamPriorityRange()
    out["streamPriorityRange"] = [lo, hi]


def driver_attrs(out):
    from cuda.bindings import driver as drv
    drv.cuInit(0)
    err, dev = drv.cuDeviceGet(0)
    attrs = {}
    for a in drv.CUdevice_attribute:
        err, v = drv.cuDeviceGetAttribute(a, dev)
        attrs[a.name] = {"id": int(a.value), "value": v, "err": int(err.value)}
    out["cuDeviceGetAttribute"] = attrs
    out["cuDeviceGetName"] = drv.cuDeviceGetName(256, dev)[1].decode(errors="replace").rstrip("\x00")
    out["cuDeviceTotalMem"] = drv.cuDeviceTotalMem(dev)[1]
    out["cuDriverGetVersion"] = drv.cuDriverGetVersion()[1]
    try:
        err, uuid = drv.cuDeviceGetUuid(dev)
        out["cuDeviceGetUuid"] = bytes(uuid.bytes).hex()
    except Exception as e:  # noqa: BLE001
        out["cuDeviceGetUuid"] = str(e)
    # VMM granularity as vLLM's cumem allocator asks for it
    try:
        prop = drv.CUmemAllocationProp()
        prop.type = drv.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
        prop.location.type = drv.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
        prop.location.id = 0
        g = {}
        for opt in drv.CUmemAllocationGranularity_flags:
            g[opt.name] = drv.cuMemGetAllocationGranularity(prop, opt)[1]
        out["cuMemGetAllocationGranularity"] = g
    except Exception as e:  # noqa: BLE001
        out["cuMemGetAllocationGranularity"] = str(e)


def nvml_info(out):
    import pynvml as n
    n.nvmlInit()
    h = n.nvmlDeviceGetHandleByIndex(0)
    res = {}
    getters = [
        "nvmlDeviceGetName", "nvmlDeviceGetUUID", "nvmlDeviceGetSerial", "nvmlDeviceGetMemoryInfo",
        "nvmlDeviceGetBAR1MemoryInfo", "nvmlDeviceGetPciInfo", "nvmlDeviceGetCudaComputeCapability",
        "nvmlDeviceGetPowerManagementLimit", "nvmlDeviceGetPowerManagementDefaultLimit",
        "nvmlDeviceGetEnforcedPowerLimit", "nvmlDeviceGetPowerUsage", "nvmlDeviceGetTemperature",
        "nvmlDeviceGetComputeMode", "nvmlDeviceGetPersistenceMode", "nvmlDeviceGetMinorNumber",
        "nvmlDeviceGetBoardPartNumber", "nvmlDeviceGetBrand", "nvmlDeviceGetArchitecture",
        "nvmlDeviceGetNumGpuCores", "nvmlDeviceGetMemoryBusWidth", "nvmlDeviceGetPcieLinkMaxSpeed",
        "nvmlDeviceGetMaxPcieLinkGeneration", "nvmlDeviceGetMaxPcieLinkWidth", "nvmlDeviceGetCurrPcieLinkGeneration",
        "nvmlDeviceGetCurrPcieLinkWidth", "nvmlDeviceGetUtilizationRates", "nvmlDeviceGetVbiosVersion",
        "nvmlDeviceGetInforomImageVersion", "nvmlDeviceGetMultiGpuBoard", "nvmlDeviceGetBoardId",
        "nvmlDeviceGetEccMode", "nvmlDeviceGetMigMode", "nvmlDeviceGetIndex", "nvmlDeviceGetComputeRunningProcesses",
        "nvmlDeviceGetPerformanceState", "nvmlDeviceGetCurrentClocksThrottleReasons", "nvmlDeviceGetNumFans",
        "nvmlDeviceGetPowerState", "nvmlDeviceGetDisplayMode", "nvmlDeviceGetDisplayActive",
        "nvmlDeviceGetPersistenceMode", "nvmlDeviceGetGpuOperationMode",
    ]
    for g in getters:
        f = getattr(n, g, None)
        if f is None:
            continue
        try:
            v = f(h, 0) if g == "nvmlDeviceGetTemperature" else f(h)
            if hasattr(v, "_fields_"):
                v = {k: _plain(getattr(v, k)) for k, _ in v._fields_}
            elif isinstance(v, list):
                v = [({k: _plain(getattr(x, k)) for k, _ in x._fields_} if hasattr(x, "_fields_") else _plain(x)) for x in v]
            res[g] = _plain(v) if not isinstance(v, (dict, list)) else v
        except Exception as e:  # noqa: BLE001
            res[g] = f"<error {type(e).__name__}: {e}>"
    clocks = {}
    for cname in ("NVML_CLOCK_GRAPHICS", "NVML_CLOCK_SM", "NVML_CLOCK_MEM", "NVML_CLOCK_VIDEO"):
        c = getattr(n, cname)
        for kind in ("nvmlDeviceGetMaxClockInfo", "nvmlDeviceGetClockInfo", "nvmlDeviceGetApplicationsClock",
                     "nvmlDeviceGetDefaultApplicationsClock"):
            try:
                clocks[f"{kind}:{cname}"] = getattr(n, kind)(h, c)
            except Exception as e:  # noqa: BLE001
                clocks[f"{kind}:{cname}"] = f"<error {e}>"
    res["clocks"] = clocks
    try:
        res["nvmlSystemGetDriverVersion"] = _plain(n.nvmlSystemGetDriverVersion())
        res["nvmlSystemGetNVMLVersion"] = _plain(n.nvmlSystemGetNVMLVersion())
        res["nvmlSystemGetCudaDriverVersion"] = n.nvmlSystemGetCudaDriverVersion()
        res["nvmlDeviceGetCount"] = n.nvmlDeviceGetCount()
    except Exception as e:  # noqa: BLE001
        res["system_error"] = str(e)
    out["nvml"] = res


def torch_info(out):
    import torch
    p = torch.cuda.get_device_properties(0)
    out["torch"] = {
        "version": torch.__version__, "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "props": {k: _plain(getattr(p, k)) for k in dir(p) if not k.startswith("_") and not callable(getattr(p, k))},
        "mem_get_info": list(torch.cuda.mem_get_info()),
        "capability": list(torch.cuda.get_device_capability()),
        "nccl": list(torch.cuda.nccl.version()),
    }
    # which SDPA backend torch picks for a causal GQA case (profiler kernel names)
    q = torch.randn(4, 32, 512, 128, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(4, 8, 512, 128, device="cuda", dtype=torch.bfloat16)
    from torch.profiler import profile, ProfilerActivity
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        torch.nn.functional.scaled_dot_product_attention(q, k, k, is_causal=True, enable_gqa=True)
        q2 = torch.randn(4, 32, 512, 128, device="cuda", dtype=torch.bfloat16)
        torch.nn.functional.scaled_dot_product_attention(q2, q2, q2, is_causal=True)
        a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
        a @ a
        torch.cuda.synchronize()
    out["torch"]["kernels"] = sorted({e.name for e in prof.events() if e.device_type.name == "CUDA"})


def exported_symbols(outdir):
    """Dynamic symbol tables of the real driver libraries (not in any pip package)."""
    import glob
    libs = []
    for pat in ("/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/usr/lib64/libcuda.so.1", "/usr/local/nvidia/lib64/libcuda.so.1",
                "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", "/usr/lib64/libnvidia-ml.so.1",
                "/usr/local/nvidia/lib64/libnvidia-ml.so.1", "/usr/local/nvidia/lib/libcuda.so.1"):
        libs += glob.glob(pat)
    ld = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    for line in ld.splitlines():
        if "libcuda.so.1 " in line or "libnvidia-ml.so.1 " in line:
            libs.append(line.split("=>")[-1].strip())
    seen = {}
    for lib in libs:
        real = os.path.realpath(lib)
        if real in seen or not os.path.exists(real):
            continue
        base = os.path.basename(lib)
        txt = subprocess.run(["readelf", "-W", "--dyn-syms", real], capture_output=True, text=True).stdout
        if not txt:
            txt = subprocess.run(["nm", "-D", "--defined-only", real], capture_output=True, text=True).stdout
        seen[real] = base
        with open(os.path.join(outdir, f"dynsyms_{base}.txt"), "w") as f:
            f.write(f"# {real}\n" + txt)
    return seen


def main():
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    out = {"date": datetime.datetime.utcnow().isoformat() + "Z"}
    for name, fn in (("cudart", cudart_props), ("driver", driver_attrs), ("nvml", nvml_info), ("torch", torch_info)):
        try:
            fn(out)
        except Exception as e:  # noqa: BLE001
            import traceback
            out[f"{name}_error"] = traceback.format_exc()
    out["symbol_files"] = exported_symbols(outdir)
    try:
        out["nvidia_smi_q"] = subprocess.run(["nvidia-smi", "-q"], capture_output=True, text=True).stdout
    except Exception as e:  # noqa: BLE001
        out["nvidia_smi_q"] = str(e)
    with open(os.path.join(outdir, "device_probe.json"), "w") as f:
        json.dump(out, f, indent=1, sort_keys=True, default=str)
    print("wrote", outdir, {k: ("ok" if not k.endswith("_error") else v[-300:]) for k, v in out.items() if k.endswith("_error")})


if __name__ == "__main__":
    main()
