"""Every symbol the real CUDA 13 / torch 2.11.0+cu130 libraries export exists in the fake ones, under the same
soname and symbol version (shim_c/symbols/*.syms, read off the real libraries)."""
import importlib.resources
import pathlib
import subprocess

import pytest

SYMS = pathlib.Path(__file__).parents[1] / "shim_c/symbols"
LIB = importlib.resources.files("timewarp") / "_lib"


def exported(lib: pathlib.Path) -> set[tuple[str, str]]:
    out = subprocess.run(["readelf", "-W", "--dyn-syms", str(lib)], capture_output=True, text=True, check=True).stdout
    rows = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 8 and parts[3] in ("FUNC", "OBJECT") and parts[6] != "UND" and parts[4] in ("GLOBAL", "WEAK"):
            name, _, ver = parts[7].partition("@")
            rows.add((name, ver.lstrip("@") or "-"))
    return rows


def soname(lib: pathlib.Path) -> str:
    out = subprocess.run(["readelf", "-d", str(lib)], capture_output=True, text=True, check=True).stdout
    return next(l.split("[")[1].rstrip("]") for l in out.splitlines() if "(SONAME)" in l)


@pytest.mark.parametrize("syms", sorted(SYMS.glob("*.syms")), ids=lambda p: p.stem)
def test_fake_library_exports_what_the_real_one_does(syms):
    name = syms.name.removesuffix(".syms")
    lib = pathlib.Path(str(LIB / name))
    assert lib.exists(), f"{lib} missing from the wheel"
    assert soname(lib) == name
    want = set()
    for line in syms.read_text().splitlines():
        if line and not line.startswith("#"):
            sym, ver, _ = line.split()
            if sym != ver:
                want.add((sym, ver))
    missing = sorted(want - exported(lib))
    assert not missing, f"{len(missing)} missing, e.g. {missing[:10]}"
