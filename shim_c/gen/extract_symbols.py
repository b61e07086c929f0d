"""Write shim_c/symbols/<soname>.syms: the functions and objects a real CUDA library exports.

This is how the symbol tables are refreshed for a new CUDA/torch stack; the .syms files are committed data
(facts about the real libraries) and gen_stubs.py turns them into C at build time.

    python shim_c/gen/extract_symbols.py --site VENV/site-packages            # NVIDIA's pip wheels
    python shim_c/gen/extract_symbols.py --readelf dynsyms_libcuda.so.1.txt    # `readelf -W --dyn-syms` of a
                                                                               # driver library read on a GPU host
Each line: `name version kind` (version '-' when the symbol is unversioned; kind FUNC or OBJECT).
"""
from __future__ import annotations

import argparse
import pathlib
import re

from elftools.elf.elffile import ELFFile
from elftools.elf.gnuversions import GNUVerSymSection

HERE = pathlib.Path(__file__).resolve().parent
OUT = HERE.parent / "symbols"

# soname -> path inside site-packages (the calibration stack: torch 2.11.0+cu130)
PIP_LIBS = {
    "libcudart.so.13": "nvidia/cu13/lib/libcudart.so.13",
    "libcublas.so.13": "nvidia/cu13/lib/libcublas.so.13",
    "libcublasLt.so.13": "nvidia/cu13/lib/libcublasLt.so.13",
    "libcufft.so.12": "nvidia/cu13/lib/libcufft.so.12",
    "libcurand.so.10": "nvidia/cu13/lib/libcurand.so.10",
    "libcusolver.so.12": "nvidia/cu13/lib/libcusolver.so.12",
    "libcusparse.so.12": "nvidia/cu13/lib/libcusparse.so.12",
    "libnvrtc.so.13": "nvidia/cu13/lib/libnvrtc.so.13",
    "libnvJitLink.so.13": "nvidia/cu13/lib/libnvJitLink.so.13",
    "libcupti.so.13": "nvidia/cu13/lib/libcupti.so.13",
    "libcufile.so.0": "nvidia/cu13/lib/libcufile.so.0",
    "libcudnn.so.9": "nvidia/cudnn/lib/libcudnn.so.9",
    "libcudnn_graph.so.9": "nvidia/cudnn/lib/libcudnn_graph.so.9",
    "libcudnn_ops.so.9": "nvidia/cudnn/lib/libcudnn_ops.so.9",
    "libcudnn_cnn.so.9": "nvidia/cudnn/lib/libcudnn_cnn.so.9",
    "libcudnn_adv.so.9": "nvidia/cudnn/lib/libcudnn_adv.so.9",
    "libcusparseLt.so.0": "nvidia/cusparselt/lib/libcusparseLt.so.0",
    "libnccl.so.2": "nvidia/nccl/lib/libnccl.so.2",
    "libnvshmem_host.so.3": "nvidia/nvshmem/lib/libnvshmem_host.so.3",
}

# C++ or internal symbols a C stub cannot stand in for
SKIP = re.compile(r"^(_Z|_fini$|_init$|__bss|_edata|_end$|__gmon|_ITM|__cxa|__dso)")


def from_elf(path: pathlib.Path) -> list[tuple[str, str, str]]:
    rows = []
    with open(path, "rb") as f:
        elf = ELFFile(f)
        dynsym = elf.get_section_by_name(".dynsym")
        versym = next((s for s in elf.iter_sections() if isinstance(s, GNUVerSymSection)), None)
        verdef = elf.get_section_by_name(".gnu.version_d")
        names = {}
        if verdef is not None:
            for vd, aux in verdef.iter_versions():
                names[vd["vd_ndx"]] = next(aux).name
        for i, sym in enumerate(dynsym.iter_symbols()):
            kind = sym["st_info"]["type"]
            if sym["st_shndx"] == "SHN_UNDEF" or kind not in ("STT_FUNC", "STT_OBJECT"):
                continue
            if sym["st_info"]["bind"] not in ("STB_GLOBAL", "STB_WEAK") or SKIP.match(sym.name):
                continue
            ver = "-"
            if versym is not None:
                ndx = versym.get_symbol(i)["ndx"]
                if isinstance(ndx, int) and ndx in names and ndx > 1:
                    ver = names[ndx]
            rows.append((sym.name, ver, "FUNC" if kind == "STT_FUNC" else "OBJECT"))
    return rows


def from_readelf(path: pathlib.Path) -> list[tuple[str, str, str]]:
    rows = []
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) < 8 or parts[3] not in ("FUNC", "OBJECT") or parts[6] == "UND":
            continue
        if parts[4] not in ("GLOBAL", "WEAK"):
            continue
        name, _, ver = parts[7].partition("@")
        if SKIP.match(name):
            continue
        rows.append((name, ver.lstrip("@") or "-", parts[3]))
    return rows


def write(soname: str, rows, source: str) -> None:
    uniq = sorted(set(rows))
    OUT.mkdir(exist_ok=True)
    text = f"# exported by the real {soname} ({source}); regenerate with shim_c/gen/extract_symbols.py\n"
    text += "".join(f"{n} {v} {k}\n" for n, v, k in uniq)
    (OUT / f"{soname}.syms").write_text(text)
    print(f"{soname}: {len(uniq)} symbols")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--site", help="site-packages holding NVIDIA's cu13 wheels")
    ap.add_argument("--readelf", nargs="*", default=[], help="readelf -W --dyn-syms dumps named dynsyms_<soname>.txt")
    a = ap.parse_args()
    if a.site:
        site = pathlib.Path(a.site)
        for soname, rel in PIP_LIBS.items():
            p = site / rel
            if not p.exists():
                raise SystemExit(f"extract_symbols: {p} not found (is torch 2.11.0+cu130 installed there?)")
            write(soname, from_elf(p), f"pip wheel file {rel}")
    for dump in a.readelf:
        p = pathlib.Path(dump)
        soname = p.name.removeprefix("dynsyms_").removesuffix(".txt")
        write(soname, from_readelf(p), f"readelf dump of the driver library, {p.read_text().splitlines()[0].lstrip('# ')}")


if __name__ == "__main__":
    main()
