#ifndef SEAM_SYSTEM_H
#define SEAM_SYSTEM_H
#include <stddef.h>
#include <sys/types.h>

/// copy_file_range(2), which Glibc declares only under _GNU_SOURCE.
ssize_t seam_copy_file_range(int fd_in, int fd_out, size_t length);

#endif
