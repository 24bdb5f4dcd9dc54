#ifndef SEAM_SYSTEM_H
#define SEAM_SYSTEM_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/// copy_file_range(2), which Glibc declares only under _GNU_SOURCE.
ssize_t seam_copy_file_range(int fd_in, int fd_out, size_t length);

/// The peer of a Unix socket (SO_PEERCRED; `struct ucred` needs _GNU_SOURCE). 0 or -1 with errno.
int seam_peer_credentials(int fd, int32_t *pid, uint32_t *uid, uint32_t *gid);

/// epoll_ctl with the event's data set to the fd (epoll_event is a packed struct Swift mishandles).
int seam_epoll_ctl(int epfd, int op, int fd, uint32_t events);

/// epoll_wait into parallel arrays of fds and event masks. Returns the count, or -1 with errno.
int seam_epoll_wait(int epfd, int32_t *fds, uint32_t *events, int max, int timeout_ms);

/// Blocks `count` signals for this thread and returns a non-blocking, close-on-exec signalfd for them.
int seam_signalfd(const int32_t *signals, int count);

/// Reads one pending signal from a signalfd: its number, 0 when none is pending, -1 on error.
int seam_signalfd_read(int fd);

/// Unblocks every signal this process blocked (for children, before exec).
int seam_unblock_all_signals(void);

/// accept4(2) with SOCK_NONBLOCK | SOCK_CLOEXEC (needs _GNU_SOURCE).
int seam_accept(int fd);

/// epoll event bits (sys/epoll.h is not part of Swift's Glibc module).
enum {
    SEAM_EPOLLIN = 0x001,
    SEAM_EPOLLOUT = 0x004,
    SEAM_EPOLLERR = 0x008,
    SEAM_EPOLLHUP = 0x010,
    SEAM_EPOLLRDHUP = 0x2000,
    SEAM_EPOLL_CTL_ADD = 1,
    SEAM_EPOLL_CTL_DEL = 2,
    SEAM_EPOLL_CTL_MOD = 3,
};

/// epoll_create1(EPOLL_CLOEXEC).
int seam_epoll_create(void);

/// A non-blocking, close-on-exec timerfd on CLOCK_REALTIME: it keeps counting through a
/// suspend, and (armed with seam_timerfd_at) wakes early when the wall clock is set.
int seam_timerfd_realtime(void);

/// Arms `fd` to expire at Unix time `seconds` (absolute, TFD_TIMER_CANCEL_ON_SET); a time in
/// the past expires at once. `seconds` < 0 disarms.
int seam_timerfd_at(int fd, double seconds);

/// Reads a timerfd: expirations (> 0), 0 when not expired yet, -2 when the wall clock was set
/// (ECANCELED: recompute and re-arm), -1 on another error.
long long seam_timerfd_read(int fd);

#endif
