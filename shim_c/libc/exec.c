/* Starting programs under `timewarp run`: the new image must take part in the run's clock from its first
 * instruction, or the keeper could let the clock jump (a parent waiting with a timeout for its child's
 * start-up) before the child has read the clock once. Before an exec the thread claims its slot in the
 * keeper's table (the new image keeps it: same thread id); after posix_spawn the parent claims the child's.
 * fork() children claim theirs in an atfork handler (core/timekeeper.c).
 */
#define _GNU_SOURCE
#include <spawn.h>
#include <unistd.h>

#include "tw_libc.h"

void tw_tk_claim_child(pid_t pid);
__attribute__((weak)) void tw_tk_claim_child(pid_t pid) { (void)pid; }

static void before_exec(void) {
    if (tw_libc_state != TW_LIBC_ON) return;
    tw_libc_depth++;
    tw_tk_before_exec();
    tw_libc_depth--;
}

TW_EXPORT int execve(const char *path, char *const argv[], char *const envp[]) {
    if (tw_libc_init() == TW_LIBC_ON) before_exec();
    return tw_real.execve(path, argv, envp);
}

TW_EXPORT int execv(const char *path, char *const argv[]) {
    if (tw_libc_init() == TW_LIBC_ON) before_exec();
    return tw_real.execv(path, argv);
}

TW_EXPORT int execvp(const char *file, char *const argv[]) {
    if (tw_libc_init() == TW_LIBC_ON) before_exec();
    return tw_real.execvp(file, argv);
}

TW_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]) {
    if (tw_libc_init() == TW_LIBC_ON) before_exec();
    return tw_real.execvpe(file, argv, envp);
}

static void claim_child(int rc, pid_t *pid) {
    if (rc != 0 || !pid || tw_libc_state != TW_LIBC_ON) return;
    tw_libc_depth++;
    tw_tk_claim_child(*pid);
    tw_libc_depth--;
}

TW_EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                          const posix_spawnattr_t *attr, char *const argv[], char *const envp[]) {
    pid_t local;
    if (!pid) pid = &local;
    int rc = tw_real.posix_spawn(pid, path, fa, attr, argv, envp);
    claim_child(rc, pid);
    return rc;
}

TW_EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
                           const posix_spawnattr_t *attr, char *const argv[], char *const envp[]) {
    pid_t local;
    if (!pid) pid = &local;
    int rc = tw_real.posix_spawnp(pid, file, fa, attr, argv, envp);
    claim_child(rc, pid);
    return rc;
}
