#ifndef SEAM_SYSTEM_H
#define SEAM_SYSTEM_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/// copy_file_range(2), which Glibc declares only under _GNU_SOURCE.
ssize_t seam_copy_file_range(int fd_in, int fd_out, size_t length);

/// sync_file_range(2) over the whole file with SYNC_FILE_RANGE_WRITE: starts writing its dirty
/// pages without waiting for them (needs _GNU_SOURCE). 0 or -1 with errno.
int seam_start_writeback(int fd);

/// mallopt(3) with M_ARENA_MAX 1, M_TOP_PAD and M_MMAP_THRESHOLD `bytes` (malloc.h is not part of
/// Swift's Glibc module). 1 when every option was taken.
int seam_one_growing_heap(int bytes);

/// getrandom(2) with no flags (sys/random.h is not part of Swift's Glibc module).
ssize_t seam_getrandom(void *buffer, size_t length);

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

/// Limits thread `tid` (0: the calling thread) to the CPUs set in `mask` (bit i: CPU i, below 64);
/// a mask of 0 allows every CPU. sched_setaffinity(2) and cpu_set_t need _GNU_SOURCE.
int seam_set_affinity(int32_t tid, uint64_t mask);

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

/// Starts `path` with `argv` and `envp` (NULL-terminated). The child's descriptor i, for i below
/// `count` (at most 10), is a copy of `fds[i]`, or /dev/null where `fds[i]` is -1; nothing else
/// is inherited (every other descriptor Seam opens is close-on-exec). Signals are unblocked and
/// at their defaults. `flags`: SEAM_SPAWN_SESSION (setsid), SEAM_SPAWN_GROUP (own process group).
/// `tty`, when not NULL, is opened as descriptors 0, 1 and 2 after setsid, so that it becomes the
/// child's controlling terminal. Returns the pid, or -1 with errno set.
int seam_spawn(const char *path, char *const argv[], char *const envp[], const int *fds, int count, int flags,
               const char *tty);

enum { SEAM_SPAWN_SESSION = 1, SEAM_SPAWN_GROUP = 2 };

/// The pid of a child that has ended, left unreaped: still a zombie, so that neither its pid nor
/// its process group id can be given to another process yet. 0 when none has ended; -1 on an
/// error (ECHILD: no children).
int seam_ended_child(void);

/// Asks the kernel to SIGKILL this process when its parent dies; fails (ESRCH) when the parent
/// is no longer `expected_parent`.
int seam_die_with_parent(int expected_parent);

/// pipe2(2) with O_CLOEXEC (needs _GNU_SOURCE).
int seam_pipe(int fds[2]);

/// Routes `signals` (for the whole process, whatever thread they land on) to a pipe: each
/// arrival writes its number as one byte. Returns the pipe's read end (blocking, close-on-exec),
/// or -1 with errno. For programs with threads of their own, where a signalfd cannot be relied on.
int seam_signal_pipe(const int32_t *signals, int count);

/// Opens a new pseudo-terminal: returns its master side (close-on-exec, not our controlling
/// terminal) and writes the path of its slave side into `name`; -1 with errno on failure.
int seam_open_pty(char *name, size_t size);

/// A terminal's size (TIOCGWINSZ): 0, or -1 with errno.
int seam_window_size(int fd, int *rows, int *columns);

/// Sets a terminal's size (TIOCSWINSZ; the foreground group gets SIGWINCH): 0, or -1 with errno.
int seam_set_window_size(int fd, int rows, int columns);


/// A non-blocking, close-on-exec eventfd: another thread's `seam_eventfd_signal` makes it readable.
int seam_eventfd(void);
/// Adds one to an eventfd's count (safe from any thread); 0, or -1 with errno.
int seam_eventfd_signal(int fd);
/// Reads (and so clears) an eventfd's count; 0, or -1 with errno (EAGAIN when it was zero).
int seam_eventfd_drain(int fd);

/// An inotify instance (non-blocking, close-on-exec) watching directory `path` for entries made,
/// removed or renamed in or out, and for the directory itself moving or going. The fd, or -1
/// with errno.
int seam_watch_directory(const char *path);

/// Reads everything the watch `fd` has queued, without waiting: sets bit i of `*hits` for each
/// event on an entry named `names[i]` (i below 64), and every bit when the queue overflowed or
/// the directory itself moved or went. 0, or -1 with errno.
int seam_watch_read(int fd, const char *const *names, int count, uint64_t *hits);

/// Asks the scheduler to run the calling thread in slices of `nanoseconds` (SCHED_OTHER's
/// `sched_runtime`, Linux 6.12's EEVDF): a thread that needs little CPU but needs it promptly
/// is then let in ahead of threads running long slices. 0, or -1 with errno (older kernels take
/// it and ignore it, or refuse it).
int seam_request_slice(uint64_t nanoseconds);

#endif
