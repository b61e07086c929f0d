"""C++ kernel names as kineto writes them, from the mangled names the emulator's traces hold."""
import ctypes
import subprocess


def demangler():
    """name -> demangled name, by libstdc++'s abi::__cxa_demangle (what the shim and kineto use: status 0 -> the
    demangled string, else the name unchanged); c++filt where libstdc++ cannot be loaded."""
    try:
        lib = ctypes.CDLL("libstdc++.so.6")
        f = lib.__cxa_demangle
        f.restype = ctypes.c_void_p
        f.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
        libc = ctypes.CDLL(None)
        libc.free.argtypes = [ctypes.c_void_p]

        def demangle(name: str) -> str:
            if not name.startswith("_Z"):
                return name
            st = ctypes.c_int(-1)
            p = f(name.encode(), None, None, ctypes.byref(st))
            if st.value != 0 or not p:
                return name
            s = ctypes.string_at(p).decode()
            libc.free(p)
            return s
        return demangle
    except (OSError, AttributeError):
        def demangle(name: str) -> str:
            if not name.startswith("_Z"):
                return name
            out = subprocess.run(["c++filt"], input=name, capture_output=True, text=True).stdout.strip()
            return out or name
        return demangle
