"""Write the C table of the GPU catalog (run by CMake at build time; standard library only).

    python predictors/gen_catalog.py OUT.c [--catalog predictors/catalog/gpus.toml]
                                           [--header shim_c/include/tw/cuda_types.h]

OUT.c defines `const tw_gpu_spec tw_catalog[]` and `const int tw_catalog_count` (tw/core.h): per GPU one
static struct tw_cudaDeviceProp (device 0's view: name and uuid from the catalog, pciBusID as probed; the
core patches the per-device fields), the cuDeviceGetAttribute values indexed by CUdevice_attribute id with a
parallel validity array, and the rates of the analytical model. Every cudaDeviceProp field of cuda_types.h
(but uuid, luid, luidDeviceNodeMask and reserved) must have a catalog value, and every catalog property must
be a field: drift between the header and the catalog fails the build. The file is rewritten only when its
content changes, so that an unchanged catalog does not relink the core.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import catalog as _catalog  # noqa: E402  (this directory's catalog.py; the package is not installed yet)

DEFAULT_HEADER = HERE.parent / "shim_c" / "include" / "tw" / "cuda_types.h"
# Fields the emulator fills itself, or that stay zero.
SKIPPED_FIELDS = {"uuid", "luid", "luidDeviceNodeMask", "reserved"}


def parse_prop_fields(header: Path) -> list[tuple[str, str, int | None]]:
    """(C type, field name, array length or None) of struct tw_cudaDeviceProp, in declaration order."""
    text = header.read_text()
    m = re.search(r"struct\s+tw_cudaDeviceProp\s*\{(.*?)\};", text, re.S)
    if not m:
        sys.exit(f"gen_catalog: struct tw_cudaDeviceProp not found in {header}")
    body = re.sub(r"/\*.*?\*/|//[^\n]*", "", m.group(1), flags=re.S)
    fields = []
    for decl in body.split(";"):
        decl = " ".join(decl.split())
        if not decl:
            continue
        fm = re.fullmatch(r"(.+?)\s*\b(\w+)\s*(?:\[(\d+)\])?", decl)
        if not fm:
            sys.exit(f"gen_catalog: cannot parse field declaration {decl!r} in {header}")
        fields.append((fm.group(1).strip(), fm.group(2), int(fm.group(3)) if fm.group(3) else None))
    return fields


def c_string(s: str) -> str:
    out = []
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif 32 <= ord(ch) < 127:
            out.append(ch)
        else:
            out.extend(f"\\{b:03o}" for b in ch.encode())
    return '"' + "".join(out) + '"'


def c_int(value: int, ctype: str) -> str:
    if ctype == "size_t":
        if value < 0:
            raise ValueError(f"negative size_t {value}")
        return f"{value}ULL"
    if ctype.startswith("unsigned"):
        if value < 0:
            raise ValueError(f"negative unsigned {value}")
        return f"{value}u"
    if not -(2**31) <= value < 2**31:
        raise ValueError(f"{value} does not fit an int")
    return str(value)


def c_double(x: float) -> str:
    text = repr(float(x))
    return text if any(c in text for c in ".en") else text + ".0"


def ident(key: str) -> str:
    return re.sub(r"\W", "_", key)


def gen_props(spec: _catalog.GpuSpec, fields, out: list[str]) -> None:
    known = {name for _, name, _ in fields}
    extra = sorted(set(spec.props) - known)
    if extra:
        raise SystemExit(f"gen_catalog: gpu.{spec.key}: properties not in struct tw_cudaDeviceProp: {extra}")
    out.append(f"static const struct tw_cudaDeviceProp props_{ident(spec.key)} = {{")
    for ctype, name, dim in fields:
        if name == "uuid":
            raw = spec.uuid(0)
            out.append("    .uuid = {{" + ", ".join(f"(char)0x{b:02x}" for b in raw) + "}},")
            continue
        if name in SKIPPED_FIELDS:
            continue
        if name not in spec.props:
            raise SystemExit(f"gen_catalog: gpu.{spec.key}: no value for cudaDeviceProp.{name}")
        value = spec.props[name]
        if ctype == "char":
            if not isinstance(value, str) or len(value.encode()) >= (dim or 1):
                raise SystemExit(f"gen_catalog: gpu.{spec.key}: bad string for {name}: {value!r}")
            out.append(f"    .{name} = {c_string(value)},")
        elif dim is not None:
            if not isinstance(value, list) or len(value) != dim:
                raise SystemExit(f"gen_catalog: gpu.{spec.key}: {name} needs {dim} values, has {value!r}")
            out.append(f"    .{name} = {{{', '.join(c_int(int(v), ctype) for v in value)}}},")
        else:
            out.append(f"    .{name} = {c_int(int(value), ctype)},")
    out.append("};")


def gen_attrs(spec: _catalog.GpuSpec, names: dict[int, str], out: list[str]) -> None:
    k = ident(spec.key)
    out.append(f"static const int attrs_{k}[{spec.n_attrs}] = {{")
    for aid, value in spec.attrs.items():
        out.append(f"    [{aid}] = {c_int(value, 'int')}, /* {names.get(aid, '?')} */")
    out.append("};")
    out.append(f"static const unsigned char attr_valid_{k}[{spec.n_attrs}] = {{")
    ids = list(spec.attrs)
    for i in range(0, len(ids), 12):
        out.append("    " + " ".join(f"[{aid}] = 1," for aid in ids[i:i + 12]))
    out.append("};")


def gen_entry(spec: _catalog.GpuSpec, out: list[str]) -> None:
    k = ident(spec.key)
    r = spec.rates
    p = spec.props
    out += [
        "    {",
        f"        .key = {c_string(spec.key)},",
        f"        .name = {c_string(spec.name)},",
        f"        .cc_major = {p['major']}, .cc_minor = {p['minor']},",
        f"        .sm_count = {p['multiProcessorCount']},",
        f"        .total_mem = {spec.total_mem}ULL,",
        f"        .nvml_total_mem = {spec.nvml_total_mem}ULL,",
        f"        .context_reserved = {spec.context_reserved}ULL,",
        f"        .props = &props_{k},",
        f"        .attrs = attrs_{k},",
        f"        .attr_valid = attr_valid_{k},",
        f"        .n_attrs = {spec.n_attrs},",
        f"        .peak_flops_bf16 = {c_double(r['bf16_flops'])},",
        f"        .peak_flops_fp32 = {c_double(r['fp32_flops'])},",
        f"        .peak_flops_fp8 = {c_double(r['fp8_flops'])},",
        f"        .mem_bw = {c_double(r['hbm_bytes_per_s'])},",
        f"        .pcie_bw = {c_double(r['pcie_bytes_per_s'])},",
        f"        .launch_floor_s = {c_double(r['launch_floor_s'])},",
        f"        .sm_clock_mhz = {spec.sm_clock_mhz}, .mem_clock_mhz = {spec.mem_clock_mhz},",
        f"        .memory_bus_width = {p['memoryBusWidth']},",
        f"        .power_limit_mw = {round(spec.power_limit_w * 1000)},",
        f"        .board_part = {c_string(spec.board_part)},",
        f"        .vbios = {c_string(spec.vbios)},",
        f"        .uuid_prefix = {c_string(spec.uuid_prefix)},",
        f"        .pci_device_id = {c_int(p['gpuPciDeviceID'], 'int')},",
        f"        .pci_subsystem_id = {c_int(p['gpuPciSubsystemID'], 'int')},",
        "    },",
    ]


def generate(catalog_path: Path, header: Path) -> str:
    try:
        cat = _catalog.load(catalog_path)
    except _catalog.CatalogError as e:
        raise SystemExit(f"gen_catalog: {e}") from None
    fields = parse_prop_fields(header)
    names = {aid: name for name, aid in cat.attribute_ids.items()}
    out = [
        f"/* Generated from {catalog_path.name} by predictors/gen_catalog.py; do not edit. */",
        "/* uuid: bytes 0-7 \"timewarp\", 8-11 from the catalog key (uuid_prefix holds bytes 0-11 in hex),",
        " * 12-15 the device index, big-endian; props hold device 0's. The rate fields hold achievable rates",
        " * (datasheet peak x measured efficiency), which is what the analytical model divides by. */",
        '#include "tw/core.h"',
        '#include "tw/cuda_types.h"',
        "",
        "extern const tw_gpu_spec tw_catalog[];",
        "extern const int tw_catalog_count;",
    ]
    for spec in cat.gpus.values():
        out += ["", f"/* ---- {spec.key}: {spec.description} */", f"/* source: {spec.source} */"]
        gen_props(spec, fields, out)
        gen_attrs(spec, names, out)
    out += ["", "const tw_gpu_spec tw_catalog[] = {"]
    for spec in cat.gpus.values():
        gen_entry(spec, out)
    out += ["};", "const int tw_catalog_count = (int)(sizeof(tw_catalog) / sizeof(tw_catalog[0]));", ""]
    return "\n".join(out).replace("*/ */", "*/")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="the C file to write")
    ap.add_argument("--catalog", type=Path, default=_catalog.CATALOG_PATH)
    ap.add_argument("--header", type=Path, default=DEFAULT_HEADER, help="cuda_types.h (struct tw_cudaDeviceProp)")
    args = ap.parse_args(argv)
    text = generate(args.catalog, args.header)
    if not args.out.exists() or args.out.read_text() != text:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        tmp = args.out.with_name(args.out.name + ".tmp")
        tmp.write_text(text)
        tmp.replace(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
