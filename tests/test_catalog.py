"""The virtual H200 answers every device attribute exactly as the real card did (probe of 2026-11-29)."""
import json
import pathlib

from conftest import run_emulated

PROBE = pathlib.Path(__file__).parents[1] / "predictors/data/h200/device_probe_2026-11-29.json"


def test_h200_attributes_match_the_real_card():
    code = f"""
    import ctypes, json
    probe = json.load(open({str(PROBE)!r}))
    cu = ctypes.CDLL("libcuda.so.1")
    assert cu.cuInit(0) == 0
    dev = ctypes.c_int()
    assert cu.cuDeviceGet(ctypes.byref(dev), 0) == 0
    diffs = []
    for name, a in probe["cuDeviceGetAttribute"].items():
        v = ctypes.c_int(-12345)
        rc = cu.cuDeviceGetAttribute(ctypes.byref(v), a["id"], dev)
        want_ok = a["err"] == 0
        if (rc == 0) != want_ok or (want_ok and v.value != a["value"]):
            diffs.append([name, a["value"] if want_ok else "error", v.value if rc == 0 else f"error {{rc}}"])
    total = ctypes.c_size_t()
    cu.cuDeviceTotalMem_v2(ctypes.byref(total), dev)
    name = ctypes.create_string_buffer(256)
    cu.cuDeviceGetName(name, 256, dev)
    print(json.dumps({{"diffs": diffs, "total": total.value, "name": name.value.decode()}}))
    """
    run = run_emulated(code)
    assert run.rc == 0, run.stderr[-4000:]
    r = run.result
    assert r["diffs"] == []
    probe = json.loads(PROBE.read_text())
    assert r["total"] == probe["cuDeviceTotalMem"]
    assert r["name"] == "NVIDIA H200"


def test_nvml_and_runtime_agree_on_memory():
    code = """
    import ctypes, json, torch
    free0, total = torch.cuda.mem_get_info()
    x = torch.empty(10 * 2**30, dtype=torch.uint8, device="cuda")
    free1, _ = torch.cuda.mem_get_info()
    import ctypes
    nv = ctypes.CDLL("libnvidia-ml.so.1")
    class Mem(ctypes.Structure):
        _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]
    assert nv.nvmlInit_v2() == 0
    h = ctypes.c_void_p()
    assert nv.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(h)) == 0
    m = Mem()
    assert nv.nvmlDeviceGetMemoryInfo(h, ctypes.byref(m)) == 0
    print(json.dumps({"free0": free0, "free1": free1, "total": total, "nvml_free": m.free, "nvml_total": m.total,
                      "nvml_used": m.used}))
    """
    run = run_emulated(code)
    assert run.rc == 0, run.stderr[-4000:]
    r = run.result
    assert r["free0"] - r["free1"] == 10 * 2**30
    assert r["nvml_free"] == r["free1"]
    assert r["nvml_used"] == r["nvml_total"] - r["nvml_free"]


def test_h200_device_properties_match_the_real_card():
    """Every cudaGetDeviceProperties field (CUDA 13 layout, read through ctypes from the header the shim
    is built with) equals what the real H200 reported; uuid and PCI ids are per-device by design."""
    header = pathlib.Path(__file__).parents[1] / "shim_c/include/tw/cuda_types.h"
    code = f"""
    import ctypes, json, re
    probe = json.load(open({str(PROBE)!r}))["cudaGetDeviceProperties"]
    types = {{"char": ctypes.c_char, "int": ctypes.c_int, "unsigned int": ctypes.c_uint, "size_t": ctypes.c_size_t,
              "tw_uuid16": ctypes.c_char * 16}}
    fields = []
    body = open({str(header)!r}).read().split("struct tw_cudaDeviceProp {{")[1].split("}};")[0]
    for line in body.splitlines():
        m = re.match(r"\\s*(unsigned int|char|int|size_t|tw_uuid16)\\s+(\\w+)(?:\\[(\\d+)\\])?;", line)
        if m:
            t = types[m.group(1)]
            fields.append((m.group(2), t * int(m.group(3)) if m.group(3) else t))
    Prop = type("Prop", (ctypes.Structure,), {{"_fields_": fields}})
    rt = ctypes.CDLL("libcudart.so.13")
    p = Prop()
    assert rt.cudaGetDeviceProperties(ctypes.byref(p), 0) == 0
    diffs = []
    for name, _ in fields:
        if name in ("uuid", "luid", "reserved") or name not in probe:
            continue
        v = getattr(p, name)
        v = v.decode() if isinstance(v, bytes) else (list(v) if hasattr(v, "__len__") else v)
        if v != probe[name]:
            diffs.append([name, probe[name], v])
    print(json.dumps({{"diffs": diffs, "checked": len(fields), "size": ctypes.sizeof(Prop)}}))
    """
    run = run_emulated(code)
    assert run.rc == 0, run.stderr[-4000:]
    r = run.result
    assert r["diffs"] == []
    assert r["checked"] > 90


def test_vmm_allocations_count_in_every_memory_view():
    """cuMemCreate (vLLM's sleep-mode allocator, torch's expandable segments) takes capacity that
    cudaMemGetInfo, cuMemGetInfo and NVML all report; mapping it gives a usable, host-backed small range."""
    code = """
    import ctypes, json
    cu = ctypes.CDLL("libcuda.so.1"); rt = ctypes.CDLL("libcudart.so.13"); nv = ctypes.CDLL("libnvidia-ml.so.1")
    assert cu.cuInit(0) == 0
    ctx = ctypes.c_void_p()
    assert cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) == 0
    assert cu.cuCtxSetCurrent(ctx) == 0
    class Loc(ctypes.Structure): _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]
    class Flags(ctypes.Structure): _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                                               ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]
    class Prop(ctypes.Structure): _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int),
                                              ("location", Loc), ("win32HandleMetaData", ctypes.c_void_p), ("allocFlags", Flags)]
    class Desc(ctypes.Structure): _fields_ = [("location", Loc), ("flags", ctypes.c_int)]
    prop = Prop(type=1, location=Loc(type=1, id=0))  # pinned, on device 0
    gran = ctypes.c_size_t()
    assert cu.cuMemGetAllocationGranularity(ctypes.byref(gran), ctypes.byref(prop), 0) == 0
    def infos():
        f, t = ctypes.c_size_t(), ctypes.c_size_t()
        assert rt.cudaMemGetInfo(ctypes.byref(f), ctypes.byref(t)) == 0
        cf, ct = ctypes.c_size_t(), ctypes.c_size_t()
        assert cu.cuMemGetInfo_v2(ctypes.byref(cf), ctypes.byref(ct)) == 0
        class Mem(ctypes.Structure): _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]
        assert nv.nvmlInit_v2() == 0
        h = ctypes.c_void_p(); assert nv.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(h)) == 0
        m = Mem(); assert nv.nvmlDeviceGetMemoryInfo(h, ctypes.byref(m)) == 0
        return f.value, cf.value, m.free
    before = infos()
    size = 8 * 2**30
    handle = ctypes.c_ulonglong()
    assert cu.cuMemCreate(ctypes.byref(handle), ctypes.c_size_t(size), ctypes.byref(prop), ctypes.c_ulonglong(0)) == 0
    after = infos()
    small = ctypes.c_ulonglong()
    assert cu.cuMemCreate(ctypes.byref(small), ctypes.c_size_t(gran.value), ctypes.byref(prop), ctypes.c_ulonglong(0)) == 0
    va = ctypes.c_ulonglong()
    assert cu.cuMemAddressReserve(ctypes.byref(va), ctypes.c_size_t(gran.value), ctypes.c_size_t(0), ctypes.c_ulonglong(0), ctypes.c_ulonglong(0)) == 0
    assert cu.cuMemMap(va, ctypes.c_size_t(gran.value), ctypes.c_size_t(0), small, ctypes.c_ulonglong(0)) == 0
    desc = Desc(location=Loc(type=1, id=0), flags=3)
    assert cu.cuMemSetAccess(va, ctypes.c_size_t(gran.value), ctypes.byref(desc), ctypes.c_size_t(1)) == 0
    src = (ctypes.c_ubyte * 16)(*range(16)); dst = (ctypes.c_ubyte * 16)()
    assert rt.cudaMemcpy(ctypes.c_void_p(va.value), src, ctypes.c_size_t(16), 1) == 0
    assert rt.cudaMemcpy(dst, ctypes.c_void_p(va.value), ctypes.c_size_t(16), 2) == 0
    huge = ctypes.c_ulonglong()
    oom = cu.cuMemCreate(ctypes.byref(huge), ctypes.c_size_t(200 * 2**30), ctypes.byref(prop), ctypes.c_ulonglong(0))
    assert cu.cuMemRelease(handle) == 0
    print(json.dumps({"gran": gran.value, "before": before, "after": after, "final": infos(), "roundtrip": list(dst), "oom": oom}))
    """
    run = run_emulated(code)
    assert run.rc == 0, run.stderr[-4000:]
    r = run.result
    assert r["gran"] == 2 * 2**20
    assert len(set(r["before"])) == 1 and len(set(r["after"])) == 1 and len(set(r["final"])) == 1
    assert r["before"][0] - r["after"][0] == 8 * 2**30
    assert r["before"][0] - r["final"][0] == 2 * 2**20   # only the small mapped allocation remains
    assert r["roundtrip"] == list(range(16))
    assert r["oom"] == 2  # CUDA_ERROR_OUT_OF_MEMORY


def test_cuda_visible_devices_maps_to_the_box_as_nvml_sees_it():
    code = """
    import ctypes, json, torch
    nv = ctypes.CDLL("libnvidia-ml.so.1"); rt = ctypes.CDLL("libcudart.so.13")
    assert nv.nvmlInit_v2() == 0
    n = ctypes.c_uint(); assert nv.nvmlDeviceGetCount_v2(ctypes.byref(n)) == 0
    class Mem(ctypes.Structure):
        _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]
    def nvml(i):
        h = ctypes.c_void_p(); assert nv.nvmlDeviceGetHandleByIndex_v2(i, ctypes.byref(h)) == 0
        class Pci(ctypes.Structure):
            _fields_ = [("busIdLegacy", ctypes.c_char * 16), ("domain", ctypes.c_uint), ("bus", ctypes.c_uint),
                        ("device", ctypes.c_uint), ("pciDeviceId", ctypes.c_uint), ("pciSubSystemId", ctypes.c_uint),
                        ("busId", ctypes.c_char * 32)]
        p = Pci(); assert nv.nvmlDeviceGetPciInfo_v3(h, ctypes.byref(p)) == 0
        m = Mem(); assert nv.nvmlDeviceGetMemoryInfo(h, ctypes.byref(m)) == 0
        return p.busId.decode().lower(), m.free
    before = [nvml(i) for i in range(n.value)]
    x = torch.empty(2**30, dtype=torch.uint8, device="cuda:0")
    after = [nvml(i) for i in range(n.value)]
    buf = ctypes.create_string_buffer(64)
    assert rt.cudaDeviceGetPCIBusId(buf, 64, 0) == 0
    print(json.dumps({"torch_count": torch.cuda.device_count(), "nvml_count": n.value,
                      "cuda0_bus": buf.value.decode().lower(), "nvml_bus": [b for b, _ in before],
                      "drop": [b[1] - a[1] for b, a in zip(before, after)]}))
    """
    run = run_emulated(code, gpus=4, env={"CUDA_VISIBLE_DEVICES": "2,3"})
    assert run.rc == 0, run.stderr[-4000:]
    r = run.result
    assert r["torch_count"] == 2 and r["nvml_count"] == 4
    assert r["nvml_bus"][2].endswith(r["cuda0_bus"][-12:])        # visible cuda:0 is the box's GPU 2
    assert r["drop"] == [0, 0, 2**30, 0]
