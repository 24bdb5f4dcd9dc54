/* A disk that fails on cue, for the tests of what seamd does then. Preloaded into a process
 * (LD_PRELOAD), while the file $SEAM_FAULT_ARMED exists it makes
 *   - fdatasync fail with EIO for the file whose path ends with $SEAM_FAIL_FDATASYNC_SUFFIX;
 *   - pwrite64 fail with ENOSPC (a full disk) for the file whose path ends with
 *     $SEAM_FAIL_PWRITE_SUFFIX.
 * Every other call goes to the C library. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

static int refused(int fd, const char *variable) {
    const char *suffix = getenv(variable);
    const char *armed = getenv("SEAM_FAULT_ARMED");
    if (!suffix || !armed || access(armed, F_OK) != 0) return 0;
    char link[64], path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 0) return 0;
    path[n] = 0;
    size_t s = strlen(suffix);
    return (size_t)n >= s && strcmp(path + n - s, suffix) == 0;
}

int fdatasync(int fd) {
    if (refused(fd, "SEAM_FAIL_FDATASYNC_SUFFIX")) {
        errno = EIO;
        return -1;
    }
    int (*next)(int) = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    return next ? next(fd) : (errno = ENOSYS, -1);
}

ssize_t pwrite64(int fd, const void *buffer, size_t count, off_t offset) {
    if (refused(fd, "SEAM_FAIL_PWRITE_SUFFIX")) {
        errno = ENOSPC;
        return -1;
    }
    ssize_t (*next)(int, const void *, size_t, off_t) = (ssize_t (*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite64");
    return next ? next(fd, buffer, count, offset) : (errno = ENOSYS, -1);
}
