/* A disk that refuses to flush one file: preloaded into a process (LD_PRELOAD), it makes
 * fdatasync fail with EIO for the file whose path ends with $SEAM_FAIL_FDATASYNC_SUFFIX, for as
 * long as the file $SEAM_FAIL_FDATASYNC_ARMED exists. Every other call goes to the C library.
 * For the tests of what seamd does when a commit cannot be put on the disk. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int refused(int fd) {
    const char *suffix = getenv("SEAM_FAIL_FDATASYNC_SUFFIX");
    const char *armed = getenv("SEAM_FAIL_FDATASYNC_ARMED");
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
    if (refused(fd)) {
        errno = EIO;
        return -1;
    }
    int (*next)(int) = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    return next ? next(fd) : (errno = ENOSYS, -1);
}
