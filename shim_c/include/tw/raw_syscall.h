/* The system call instruction, without libc: for code that must not reach an interposed libc function
 * (the shim's own clock readings and futex waits) or that runs before libc's are resolved. Returns the
 * kernel's result: a negative errno on failure. */
#ifndef TW_RAW_SYSCALL_H
#define TW_RAW_SYSCALL_H

static inline long tw_sys6(long nr, long a1, long a2, long a3, long a4, long a5, long a6) {
    long ret;
#if defined(__x86_64__)
    register long r10 __asm__("r10") = a4;
    register long r8 __asm__("r8") = a5;
    register long r9 __asm__("r9") = a6;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
#elif defined(__aarch64__)
    register long x8 __asm__("x8") = nr;
    register long x0 __asm__("x0") = a1;
    register long x1 __asm__("x1") = a2;
    register long x2 __asm__("x2") = a3;
    register long x3 __asm__("x3") = a4;
    register long x4 __asm__("x4") = a5;
    register long x5 __asm__("x5") = a6;
    __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5) : "memory");
    ret = x0;
#else
#error "tw_sys6: unsupported architecture"
#endif
    return ret;
}

#define tw_sys2(nr, a1, a2) tw_sys6((nr), (long)(a1), (long)(a2), 0, 0, 0, 0)

#endif
