"""Generate, for one fake library, a weak stub for every symbol the real library exports, and its linker
version script. Run by CMake at build time:

    python gen_stubs.py SONAME SYMS_FILE STUB_CODES_TOML OUT_C OUT_MAP

A front end implements a function by defining it (strong symbol, TW_EXPORT); the weak stub then loses at
link time, so the implemented set needs no manifest that could drift from the code. A stub logs its name
once, counts the call and returns the library's "not supported" code (TIMEWARP_STRICT=1 aborts instead).
"""
from __future__ import annotations

import pathlib
import sys
import tomllib


def main() -> None:
    soname, syms_path, codes_path, out_c, out_map = sys.argv[1:6]
    codes = tomllib.loads(pathlib.Path(codes_path).read_text())
    if soname not in codes:
        raise SystemExit(f"gen_stubs: {codes_path} has no entry for {soname}")
    entry = codes[soname]
    code, code_name, label = int(entry["code"]), entry["code_name"], entry.get("label", soname)
    hook = entry.get("error_hook")

    funcs, objects, versions = [], [], {}
    for line in pathlib.Path(syms_path).read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, ver, kind = line.split()
        if name == ver:  # the version node's own symbol
            continue
        versions.setdefault(ver, []).append(name)
        (funcs if kind == "FUNC" else objects).append(name)

    c = [f"/* generated from {pathlib.Path(syms_path).name} by shim_c/gen/gen_stubs.py; do not edit */",
         '#include "tw/core.h"', ""]
    if hook:
        c.append(f"void {hook}(int code);")
    c.append(f'static const char tw_lib[] = "{label}";')
    c.append(f'static const char tw_code_name[] = "{code_name}";')
    hook_call = f"{hook}({code}); " if hook else ""
    c.append("#define TW_STUB(i, sym) \\")
    c.append(f"    static long tw_stub_##i(void) {{ {hook_call}return tw_unimplemented(tw_lib, #sym, {code}, tw_code_name); }} \\")
    c.append("    extern __typeof__(tw_stub_##i) sym __attribute__((weak, alias(\"tw_stub_\" #i), visibility(\"default\")));")
    for i, name in enumerate(funcs):
        c.append(f"TW_STUB({i}, {name})")
    for name in objects:
        # data the real library exports (debugger hooks, tables): present, zero, never read by programs we run
        c.append(f"__attribute__((weak, visibility(\"default\"))) unsigned long long {name}[8];")
    pathlib.Path(out_c).write_text("\n".join(c) + "\n")

    m = [f"/* generated from {pathlib.Path(syms_path).name}; do not edit */"]
    unversioned = versions.pop("-", [])
    if unversioned:
        m.append("{ global:")
        m += [f"  {n};" for n in sorted(unversioned)]
        m.append("  local: *; };")
    for i, (ver, names) in enumerate(sorted(versions.items())):
        m.append(f"{ver} {{ global:")
        m += [f"  {n};" for n in sorted(names)]
        m.append("  local: *; };" if not unversioned and i == 0 else "};")
    pathlib.Path(out_map).write_text("\n".join(m) + "\n")


if __name__ == "__main__":
    main()
