#ifndef SEAM_CSYSTEMD_SHIM_H
#define SEAM_CSYSTEMD_SHIM_H

// libsystemd's journal calls, as Swift can call them: sd_journal_sendv takes struct iovec, and
// whether standard error is the journal's stream is a getenv and an fstat (systemd's own rule:
// JOURNAL_STREAM names the device and inode of the stream it connected).

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <systemd/sd-journal.h>

// Sends one entry of n fields, each "NAME=value" of the given length (a value may hold any
// byte, newlines included). 0, or a negative errno.
static inline int seam_journal_send(const char *const *fields, const size_t *lengths, int n) {
    struct iovec iov[16];
    if (n <= 0 || n > 16) return -22;
    for (int i = 0; i < n; i++) {
        iov[i].iov_base = (void *)fields[i];
        iov[i].iov_len = lengths[i];
    }
    return sd_journal_sendv(iov, n);
}

// 1 when file descriptor 2 is the stream systemd connected to the journal (JOURNAL_STREAM).
static inline int seam_stderr_is_journal(void) {
    const char *stream = getenv("JOURNAL_STREAM");
    if (stream == NULL) return 0;
    unsigned long long device = 0, inode = 0;
    if (sscanf(stream, "%llu:%llu", &device, &inode) != 2) return 0;
    struct stat st;
    if (fstat(2, &st) != 0) return 0;
    return (unsigned long long)st.st_dev == device && (unsigned long long)st.st_ino == inode;
}

#endif
