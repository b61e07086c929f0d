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
