/* A disk that fails on cue, for the tests of what seamd does then. Preloaded into a process
 * (LD_PRELOAD), while the file $SEAM_FAULT_ARMED exists it makes
 *   - fdatasync fail with EIO for the file whose path ends with $SEAM_FAIL_FDATASYNC_SUFFIX;
 *   - pwrite64 fail with ENOSPC (a full disk) for the file whose path ends with
 *     $SEAM_FAIL_PWRITE_SUFFIX;
 *   - open64 (SQLite's open) fail with EMFILE (no file descriptor left) for the path that ends
 *     with $SEAM_FAIL_OPEN_SUFFIX;
 *   - link fail with EIO when the new name ends with $SEAM_FAIL_LINK_SUFFIX (a migration's swap
 *     keeping an original in backups/).
 * Every other call goes to the C library. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

/* Whether the call on `path` fails: armed, and the path ends with the variable's suffix. */
static int refusedPath(const char *path, const char *variable) {
    const char *suffix = getenv(variable);
    const char *armed = getenv("SEAM_FAULT_ARMED");
    if (!suffix || !armed || !path || access(armed, F_OK) != 0) return 0;
    size_t n = strlen(path), s = strlen(suffix);
    return n >= s && strcmp(path + n - s, suffix) == 0;
}

static int refused(int fd, const char *variable) {
    char link[64], path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 0) return 0;
    path[n] = 0;
    return refusedPath(path, variable);
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

int open64(const char *path, int flags, ...) {
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) {
        va_list arguments;
        va_start(arguments, flags);
        mode = va_arg(arguments, mode_t);
        va_end(arguments);
    }
    if (refusedPath(path, "SEAM_FAIL_OPEN_SUFFIX")) {
        errno = EMFILE;
        return -1;
    }
    int (*next)(const char *, int, ...) = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open64");
    return next ? next(path, flags, mode) : (errno = ENOSYS, -1);
}

int link(const char *from, const char *to) {
    if (refusedPath(to, "SEAM_FAIL_LINK_SUFFIX")) {
        errno = EIO;
        return -1;
    }
    int (*next)(const char *, const char *) = (int (*)(const char *, const char *))dlsym(RTLD_NEXT, "link");
    return next ? next(from, to) : (errno = ENOSYS, -1);
}
