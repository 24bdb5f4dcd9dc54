// System calls that Swift cannot reach through `import Glibc`: the ones that need _GNU_SOURCE,
// and the ones whose structs (packed epoll_event, signalfd_siginfo) import badly.
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include "seam_system.h"

ssize_t seam_copy_file_range(int fd_in, int fd_out, size_t length) {
    return copy_file_range(fd_in, NULL, fd_out, NULL, length, 0);
}

int seam_peer_credentials(int fd, int32_t *pid, uint32_t *uid, uint32_t *gid) {
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return -1;
    *pid = cred.pid;
    *uid = cred.uid;
    *gid = cred.gid;
    return 0;
}

int seam_epoll_ctl(int epfd, int op, int fd, uint32_t events) {
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    ev.events = events;
    ev.data.fd = fd;
    return epoll_ctl(epfd, op, fd, &ev);
}

int seam_epoll_wait(int epfd, int32_t *fds, uint32_t *events, int max, int timeout_ms) {
    struct epoll_event evs[256];
    if (max > 256) max = 256;
    int n;
    do { n = epoll_wait(epfd, evs, max, timeout_ms); } while (n < 0 && errno == EINTR);
    for (int i = 0; i < n; i++) {
        fds[i] = evs[i].data.fd;
        events[i] = evs[i].events;
    }
    return n;
}

int seam_signalfd(const int32_t *signals, int count) {
    sigset_t set;
    sigemptyset(&set);
    for (int i = 0; i < count; i++) sigaddset(&set, signals[i]);
    if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0) return -1;
    return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

int seam_signalfd_read(int fd) {
    struct signalfd_siginfo info;
    ssize_t n = read(fd, &info, sizeof info);
    if (n == (ssize_t)sizeof info) return (int)info.ssi_signo;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
    return -1;
}

int seam_unblock_all_signals(void) {
    sigset_t set;
    sigfillset(&set);
    return pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}

int seam_accept(int fd) {
    return accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

int seam_epoll_create(void) {
    return epoll_create1(EPOLL_CLOEXEC);
}

int seam_timerfd_realtime(void) {
    return timerfd_create(CLOCK_REALTIME, TFD_NONBLOCK | TFD_CLOEXEC);
}

int seam_timerfd_at(int fd, double seconds) {
    struct itimerspec spec;
    memset(&spec, 0, sizeof spec);
    if (seconds >= 0) {
        if (seconds < 1e-9) seconds = 1e-9;  /* zero would disarm: expire at once instead */
        spec.it_value.tv_sec = (time_t)seconds;
        spec.it_value.tv_nsec = (long)((seconds - (double)spec.it_value.tv_sec) * 1e9);
    }
    return timerfd_settime(fd, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, &spec, NULL);
}

long long seam_timerfd_read(int fd) {
    uint64_t expirations = 0;
    ssize_t n = read(fd, &expirations, sizeof expirations);
    if (n == (ssize_t)sizeof expirations) return (long long)expirations;
    if (n < 0 && errno == EAGAIN) return 0;
    if (n < 0 && errno == ECANCELED) return -2;
    return -1;
}
