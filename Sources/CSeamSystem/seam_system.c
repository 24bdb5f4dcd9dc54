// System calls that Swift cannot reach through `import Glibc`: the ones that need _GNU_SOURCE,
// and the ones whose structs (packed epoll_event, signalfd_siginfo) import badly.
#define _GNU_SOURCE
#include <malloc.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sched.h>
#include <spawn.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include "seam_system.h"

// The kernel's struct sched_attr (glibc has no wrapper for sched_setattr before 2.41).
struct seam_sched_attr {
    uint32_t size;
    uint32_t sched_policy;
    uint64_t sched_flags;
    int32_t sched_nice;
    uint32_t sched_priority;
    uint64_t sched_runtime;
    uint64_t sched_deadline;
    uint64_t sched_period;
};

int seam_request_slice(uint64_t nanoseconds) {
    struct seam_sched_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.sched_policy = SCHED_OTHER;
    // The thread's nice value, as it is (on Linux, PRIO_PROCESS with 0 is the calling thread).
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, 0);
    if (nice == -1 && errno != 0) return -1;
    attr.sched_nice = nice;
    attr.sched_runtime = nanoseconds;
    return (int)syscall(SYS_sched_setattr, 0, &attr, 0);
}

ssize_t seam_copy_file_range(int fd_in, int fd_out, size_t length) {
    return copy_file_range(fd_in, NULL, fd_out, NULL, length, 0);
}

ssize_t seam_getrandom(void *buffer, size_t length) {
    return getrandom(buffer, length, 0);
}

int seam_start_writeback(int fd) {
    return sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
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

int seam_spawn(const char *path, char *const argv[], char *const envp[], const int *fds, int count, int flags,
               const char *tty) {
    if (count > 10) { errno = EINVAL; return -1; }
    /* Copies numbered 10 and up (close-on-exec) cannot be clobbered by dup2 onto 0..9, and dup2
       from a different number clears close-on-exec on the target, which dup2(x, x) would not. */
    int copies[10];
    for (int i = 0; i < count; i++) copies[i] = -1;
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attributes);
    int rc = 0;
    for (int i = 0; i < count && rc == 0; i++) {
        if (tty != NULL && i <= 2) {
            rc = posix_spawn_file_actions_addopen(&actions, i, tty, O_RDWR, 0);
        } else if (fds[i] < 0) {
            rc = posix_spawn_file_actions_addopen(&actions, i, "/dev/null", O_RDWR, 0);
        } else {
            copies[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 10);
            if (copies[i] < 0) { rc = errno; break; }
            rc = posix_spawn_file_actions_adddup2(&actions, copies[i], i);
        }
    }
    /* Nothing else: not even a descriptor this process inherited without close-on-exec (a test
       runner's, say), which would keep its owner waiting on a daemon that never lets it go. */
    if (rc == 0) rc = posix_spawn_file_actions_addclosefrom_np(&actions, count);
    short spawnFlags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
    if (flags & SEAM_SPAWN_SESSION) spawnFlags |= POSIX_SPAWN_SETSID;
    else if (flags & SEAM_SPAWN_GROUP) spawnFlags |= POSIX_SPAWN_SETPGROUP;
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    sigdelset(&all, SIGKILL);
    sigdelset(&all, SIGSTOP);
    if (rc == 0) rc = posix_spawnattr_setflags(&attributes, spawnFlags);
    if (rc == 0) rc = posix_spawnattr_setsigmask(&attributes, &none);
    if (rc == 0) rc = posix_spawnattr_setsigdefault(&attributes, &all);
    if (rc == 0) rc = posix_spawnattr_setpgroup(&attributes, 0);
    pid_t pid = -1;
    if (rc == 0) rc = posix_spawn(&pid, path, &actions, &attributes, argv, envp);
    for (int i = 0; i < count; i++) if (copies[i] >= 0) close(copies[i]);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    if (rc != 0) { errno = rc; return -1; }
    return pid;
}

int seam_window_size(int fd, int *rows, int *columns) {
    struct winsize size;
    if (ioctl(fd, TIOCGWINSZ, &size) != 0) return -1;
    *rows = size.ws_row;
    *columns = size.ws_col;
    return 0;
}

int seam_set_window_size(int fd, int rows, int columns) {
    struct winsize size;
    memset(&size, 0, sizeof size);
    size.ws_row = (unsigned short)rows;
    size.ws_col = (unsigned short)columns;
    return ioctl(fd, TIOCSWINSZ, &size);
}

int seam_pipe(int fds[2]) {
    return pipe2(fds, O_CLOEXEC);
}

static int seam_signal_pipe_writer = -1;

static void seam_signal_to_pipe(int signo) {
    int saved = errno;
    unsigned char byte = (unsigned char)signo;
    ssize_t ignored = write(seam_signal_pipe_writer, &byte, 1);
    (void)ignored;
    errno = saved;
}

int seam_signal_pipe(const int32_t *signals, int count) {
    int fds[2];
    if (seam_signal_pipe_writer >= 0) { errno = EBUSY; return -1; }
    if (pipe2(fds, O_CLOEXEC) != 0) return -1;
    fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) | O_NONBLOCK);
    seam_signal_pipe_writer = fds[1];
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = seam_signal_to_pipe;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    for (int i = 0; i < count; i++) {
        if (sigaction(signals[i], &action, NULL) != 0) return -1;
    }
    return fds[0];
}

int seam_open_pty(char *name, size_t size) {
    int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master < 0) return -1;
    if (grantpt(master) != 0 || unlockpt(master) != 0 || ptsname_r(master, name, size) != 0) {
        int saved = errno;
        close(master);
        errno = saved;
        return -1;
    }
    return master;
}

int seam_ended_child(void) {
    siginfo_t info;
    memset(&info, 0, sizeof info);
    while (waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
        if (errno != EINTR) return -1;
    }
    return info.si_pid;
}

int seam_die_with_parent(int expected_parent) {
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) return -1;
    // The parent may have died before prctl took effect: then this process was reparented.
    if (getppid() != expected_parent) {
        errno = ESRCH;
        return -1;
    }
    return 0;
}

int seam_set_affinity(int32_t tid, uint64_t mask) {
    cpu_set_t set;
    CPU_ZERO(&set);
    // Every CPU the set can name when freeing (the kernel keeps those that exist, however they
    // are numbered); otherwise the ones asked for.
    for (int i = 0; i < CPU_SETSIZE; i++) {
        if (mask == 0 || (i < 64 && (mask >> i) & 1)) CPU_SET(i, &set);
    }
    return sched_setaffinity(tid, sizeof set, &set);
}

int seam_eventfd(void) {
    return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

int seam_eventfd_signal(int fd) {
    uint64_t one = 1;
    return write(fd, &one, sizeof one) == sizeof one ? 0 : -1;
}

int seam_eventfd_drain(int fd) {
    uint64_t count = 0;
    return read(fd, &count, sizeof count) == sizeof count ? 0 : -1;
}

int seam_watch_directory(const char *path) {
    int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd < 0) return -1;
    uint32_t mask = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF;
    if (inotify_add_watch(fd, path, mask) < 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

int seam_watch_read(int fd, const char *const *names, int count, uint64_t *hits) {
    // Aligned as inotify_event needs; large enough for many events with names.
    char buffer[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
    for (;;) {
        ssize_t n = read(fd, buffer, sizeof buffer);
        if (n < 0) return (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
        if (n == 0) return 0;
        for (char *p = buffer; p < buffer + n;) {
            const struct inotify_event *e = (const struct inotify_event *)p;
            if (e->mask & (IN_Q_OVERFLOW | IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) {
                *hits = ~(uint64_t)0;  // anything may have changed
            } else if (e->len > 0) {
                for (int i = 0; i < count && i < 64; i++) {
                    if (strcmp(e->name, names[i]) == 0) *hits |= (uint64_t)1 << i;
                }
            }
            p += sizeof(struct inotify_event) + e->len;
        }
    }
}

int seam_one_growing_heap(int bytes) {
    return mallopt(M_ARENA_MAX, 1) && mallopt(M_TOP_PAD, bytes) && mallopt(M_MMAP_THRESHOLD, bytes);
}
