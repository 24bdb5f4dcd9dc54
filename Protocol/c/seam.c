/*
 * seam.c — the implementation of seam.h: connection, NUL framing, ids, errors.
 *
 * Reading: one buffer holds what the socket gave and has not been returned yet, from `start`
 * to `len`. A frame is the bytes before the next NUL; `scan` remembers how far the search for
 * that NUL has got, so a frame arriving in many pieces is scanned once. The buffer grows (by
 * doubling) only while no NUL has been found, and never beyond max_frame + 1 bytes: a frame
 * longer than the limit is detected without holding more of it.
 *
 * A failure that leaves the stream unusable (EOF, a reset, a frame too large or malformed)
 * is recorded in `dead`; every later operation returns it without touching the socket.
 */
#define _GNU_SOURCE

#include "seam.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* json-c's nesting limit for replies: the broker refuses requests deeper than 32, and a
 * reply wraps stored values in a few levels of its own. */
#define SEAM_JSON_DEPTH 128
/* An empty read buffer bigger than this is given back. */
#define SEAM_KEEP_BUFFER ((size_t)1024 * 1024)

struct seam_queued {
    json_object *frame;
    struct seam_queued *next;
};

struct seam_client {
    int fd;
    char *buf;
    size_t cap, start, len, scan;
    size_t max_frame;
    int call_timeout_ms;
    int64_t next_id;
    struct seam_queued *head, *tail;
    /* The final failure, once there is one. */
    int dead;
    int dead_errno;
    char dead_message[sizeof(((seam_error *)0)->message)];
};

/* ---- errors ---------------------------------------------------------------------------- */

const char *seam_strerror(int code)
{
    switch (code) {
    case SEAM_OK: return "success";
    case SEAM_E_CONNECT: return "cannot connect to seamd";
    case SEAM_E_DISCONNECTED: return "the broker closed the connection";
    case SEAM_E_TOO_LARGE: return "a reply is larger than the frame limit";
    case SEAM_E_MALFORMED: return "a malformed reply";
    case SEAM_E_REMOTE: return "the broker answered with an error";
    case SEAM_E_TIMEOUT: return "timed out";
    case SEAM_E_IO: return "an I/O error on the connection";
    case SEAM_E_ARGUMENT: return "an invalid argument";
    case SEAM_E_NOMEM: return "out of memory";
    default: return "an unknown error";
    }
}

static void clear_error(seam_error *err)
{
    if (!err)
        return;
    err->code = SEAM_OK;
    err->sys_errno = 0;
    err->name[0] = '\0';
    err->message[0] = '\0';
}

/* Fills err (when given) and returns code. */
__attribute__((format(printf, 4, 5)))
static int fail(seam_error *err, int code, int sys_errno, const char *fmt, ...)
{
    if (err) {
        err->code = code;
        err->sys_errno = sys_errno;
        err->name[0] = '\0';
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return code;
}

/* Records a final failure on the client, fills err, returns code. */
__attribute__((format(printf, 5, 6)))
static int die(seam_client *c, seam_error *err, int code, int sys_errno, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->dead_message, sizeof c->dead_message, fmt, ap);
    va_end(ap);
    c->dead = code;
    c->dead_errno = sys_errno;
    return fail(err, code, sys_errno, "%s", c->dead_message);
}

/* The final failure again, for an operation on a finished connection. */
static int dead_again(seam_client *c, seam_error *err)
{
    return fail(err, c->dead, c->dead_errno, "%s", c->dead_message);
}

static void copy_string(char *dst, size_t size, const char *src)
{
    size_t n = strlen(src);
    if (n >= size)
        n = size - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* ---- time ------------------------------------------------------------------------------ */

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A deadline for a timeout: -1 for none. */
static int64_t deadline_after(int timeout_ms)
{
    return timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
}

/* Waits until fd is ready for events or the deadline passes. */
static int wait_ready(seam_client *c, short events, int64_t deadline, seam_error *err)
{
    for (;;) {
        int wait = -1;
        if (deadline >= 0) {
            int64_t left = deadline - now_ms();
            wait = left <= 0 ? 0 : left > INT_MAX ? INT_MAX : (int)left;
        }
        struct pollfd p = { .fd = c->fd, .events = events, .revents = 0 };
        int n = poll(&p, 1, wait);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return die(c, err, SEAM_E_IO, errno, "poll on the broker's socket: %s", strerror(errno));
        }
        if (n == 0)
            return fail(err, SEAM_E_TIMEOUT, 0, "no reply from the broker in time");
        if (p.revents & POLLNVAL)
            return die(c, err, SEAM_E_IO, EBADF, "the broker's socket is not open");
        /* Readable, writable, hung up or failed: the next recv or send tells which. */
        return SEAM_OK;
    }
}

/* ---- connecting ------------------------------------------------------------------------ */

static seam_client *new_client(int fd, seam_error *err)
{
    int type = 0;
    socklen_t size = sizeof type;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &size) != 0) {
        fail(err, SEAM_E_CONNECT, errno, "descriptor %d is not a socket: %s", fd, strerror(errno));
        return NULL;
    }
    if (type != SOCK_STREAM) {
        fail(err, SEAM_E_CONNECT, 0, "descriptor %d is not a stream socket", fd);
        return NULL;
    }
    seam_client *c = calloc(1, sizeof *c);
    if (!c) {
        fail(err, SEAM_E_NOMEM, ENOMEM, "out of memory");
        return NULL;
    }
    c->fd = fd;
    c->max_frame = SEAM_DEFAULT_MAX_FRAME;
    c->call_timeout_ms = -1;
    c->next_id = 1;
    clear_error(err);
    return c;
}

seam_client *seam_connect_fd(int fd, seam_error *err)
{
    if (fd < 0) {
        fail(err, SEAM_E_ARGUMENT, 0, "a negative descriptor");
        return NULL;
    }
    return new_client(fd, err);
}

/* Completes a connect() that a signal interrupted: it goes on in the background. */
static int finish_connect(int fd)
{
    struct pollfd p = { .fd = fd, .events = POLLOUT, .revents = 0 };
    while (poll(&p, 1, -1) < 0) {
        if (errno != EINTR)
            return -1;
    }
    int so_error = 0;
    socklen_t size = sizeof so_error;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &size) != 0)
        return -1;
    if (so_error != 0) {
        errno = so_error;
        return -1;
    }
    return 0;
}

static seam_client *connect_path(const char *path, seam_error *err)
{
    struct sockaddr_un addr;
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof addr.sun_path) {
        fail(err, SEAM_E_CONNECT, ENAMETOOLONG, "cannot connect to %s: %s", path,
             n == 0 ? "an empty socket path" : "the socket path is too long");
        return NULL;
    }
    memcpy(addr.sun_path, path, n);

    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        fail(err, SEAM_E_CONNECT, errno, "cannot create a socket: %s", strerror(errno));
        return NULL;
    }
    int rc = connect(fd, (const struct sockaddr *)&addr, sizeof addr);
    if (rc != 0 && errno == EINTR)
        rc = finish_connect(fd);
    if (rc != 0) {
        int e = errno;
        close(fd);
        fail(err, SEAM_E_CONNECT, e, "cannot connect to %s: %s%s", path, strerror(e),
             e == ENOENT || e == ECONNREFUSED ? " (is seamd running?)" : "");
        return NULL;
    }
    seam_client *c = new_client(fd, err);
    if (!c)
        close(fd);
    return c;
}

/* The $SEAM_FD number a client of this process took: it has one client, since two would
 * read each other's replies, and the first seam_close would close it under the other. */
static atomic_long inherited_taken = -1;

/* Whether $SEAM_FD names the descriptor a client of this process has taken already. */
static int inherited_is_taken(const char *value)
{
    char *end = NULL;
    errno = 0;
    long fd = strtol(value, &end, 10);
    return errno == 0 && end != value && *end == '\0' && fd == atomic_load(&inherited_taken);
}

/* $SEAM_FD: a decimal descriptor number. */
static seam_client *connect_inherited(const char *value, seam_error *err)
{
    char *end = NULL;
    errno = 0;
    long fd = strtol(value, &end, 10);
    if (errno != 0 || end == value || *end != '\0' || fd < 0 || fd > INT_MAX) {
        fail(err, SEAM_E_CONNECT, 0, "SEAM_FD=%s is not a descriptor number", value);
        return NULL;
    }
    int flags = fcntl((int)fd, F_GETFD);
    if (flags < 0) {
        fail(err, SEAM_E_CONNECT, errno, "SEAM_FD=%s is not an open descriptor: %s", value,
             strerror(errno));
        return NULL;
    }
    seam_client *c = new_client((int)fd, err);
    if (!c) {
        if (err && err->code == SEAM_E_CONNECT) {
            char detail[sizeof err->message];
            copy_string(detail, sizeof detail, err->message);
            fail(err, SEAM_E_CONNECT, err->sys_errno, "SEAM_FD=%s: %s", value, detail);
        }
        return NULL;
    }
    /* Commands the client runs must not inherit the broker connection. */
    (void)fcntl((int)fd, F_SETFD, flags | FD_CLOEXEC);
    atomic_store(&inherited_taken, fd);
    return c;
}

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

seam_client *seam_connect(const char *socket_path, seam_error *err)
{
    if (socket_path)
        return connect_path(socket_path, err);

    const char *v = env("SEAM_FD");
    if (v && !inherited_is_taken(v))
        return connect_inherited(v, err);
    v = env("SEAM_SOCKET");
    if (v)
        return connect_path(v, err);

    char path[sizeof(((struct sockaddr_un *)0)->sun_path) + 64];
    v = env("XDG_RUNTIME_DIR");
    if (v)
        snprintf(path, sizeof path, "%s/seam/seamd.sock", v);
    else
        snprintf(path, sizeof path, "/tmp/seam-%lu/seamd.sock", (unsigned long)getuid());
    if (v && strlen(v) + sizeof "/seam/seamd.sock" > sizeof path) {
        fail(err, SEAM_E_CONNECT, ENAMETOOLONG,
             "cannot connect: $XDG_RUNTIME_DIR/seam/seamd.sock is too long a path");
        return NULL;
    }
    return connect_path(path, err);
}

int seam_fd(const seam_client *c)
{
    return c ? c->fd : -1;
}

int seam_set_max_frame(seam_client *c, size_t bytes)
{
    if (!c || bytes == 0 || bytes == SIZE_MAX)
        return SEAM_E_ARGUMENT;
    c->max_frame = bytes;
    return SEAM_OK;
}

int seam_set_call_timeout(seam_client *c, int timeout_ms)
{
    if (!c)
        return SEAM_E_ARGUMENT;
    c->call_timeout_ms = timeout_ms < 0 ? -1 : timeout_ms;
    return SEAM_OK;
}

void seam_close(seam_client *c)
{
    if (!c)
        return;
    struct seam_queued *q = c->head;
    while (q) {
        struct seam_queued *next = q->next;
        json_object_put(q->frame);
        free(q);
        q = next;
    }
    if (c->fd >= 0)
        close(c->fd);
    free(c->buf);
    free(c);
}

/* ---- frames in --------------------------------------------------------------------------- */

/* The offset of the first byte that is not strict UTF-8 (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF), or n when all of s is. */
static size_t utf8_invalid_at(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned char b = s[i];
        if (b < 0x80) {
            i++;
            continue;
        }
        size_t more;
        unsigned char lo = 0x80, hi = 0xBF;  /* the range of the second byte */
        if (b >= 0xC2 && b <= 0xDF) {
            more = 1;
        } else if (b >= 0xE0 && b <= 0xEF) {
            more = 2;
            if (b == 0xE0)
                lo = 0xA0;        /* overlong */
            else if (b == 0xED)
                hi = 0x9F;        /* surrogates */
        } else if (b >= 0xF0 && b <= 0xF4) {
            more = 3;
            if (b == 0xF0)
                lo = 0x90;        /* overlong */
            else if (b == 0xF4)
                hi = 0x8F;        /* above U+10FFFF */
        } else {
            return i;
        }
        if (n - i <= more)
            return i;
        if (s[i + 1] < lo || s[i + 1] > hi)
            return i;
        for (size_t k = 2; k <= more; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return i;
        }
        i += more + 1;
    }
    return n;
}

static const char *type_name(json_object *o)
{
    return json_type_to_name(json_object_get_type(o));
}

/* Parses and checks one frame (n bytes, without its NUL). */
static int parse_frame(seam_client *c, const char *p, size_t n, json_object **out,
                       seam_error *err)
{
    *out = NULL;
    if (n == 0)
        return die(c, err, SEAM_E_MALFORMED, 0, "malformed reply: an empty frame");
    if (n >= INT_MAX)
        return die(c, err, SEAM_E_TOO_LARGE, 0, "a reply frame of %zu bytes is too large", n);
    size_t bad = utf8_invalid_at((const unsigned char *)p, n);
    if (bad < n)
        return die(c, err, SEAM_E_MALFORMED, 0,
                   "malformed reply: invalid UTF-8 at byte %zu of the frame", bad);

    struct json_tokener *tok = json_tokener_new_ex(SEAM_JSON_DEPTH);
    if (!tok)
        return die(c, err, SEAM_E_NOMEM, ENOMEM, "out of memory reading a reply");
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    /* The frame's NUL (p[n]) goes in too: it ends a value that could go on, like a number,
     * and anything after the value is an error in strict mode. */
    json_object *frame = json_tokener_parse_ex(tok, p, (int)(n + 1));
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    size_t end = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    if (jerr != json_tokener_success || end != n) {
        json_object_put(frame);
        return die(c, err, SEAM_E_MALFORMED, 0, "malformed reply: not JSON (%s at byte %zu)",
                   jerr == json_tokener_success ? "data after the value"
                                                : json_tokener_error_desc(jerr),
                   end);
    }
    if (!frame)
        return die(c, err, SEAM_E_MALFORMED, 0, "malformed reply: the frame is JSON null");

    const char *problem = NULL;
    json_object *v = NULL;
    bool has_parameters = json_object_object_get_ex(frame, "parameters", &v);
    if (!json_object_is_type(frame, json_type_object))
        problem = "the frame is not a JSON object";
    else if (has_parameters && !json_object_is_type(v, json_type_object))
        problem = "\"parameters\" is not an object";
    else if (json_object_object_get_ex(frame, "error", &v) && !json_object_is_type(v, json_type_string))
        problem = "\"error\" is not a string";
    else if (!has_parameters && !json_object_object_get_ex(frame, "error", NULL))
        problem = "a reply with neither \"parameters\" nor \"error\"";
    else if (json_object_object_get_ex(frame, "continues", &v) &&
             !json_object_is_type(v, json_type_boolean))
        problem = "\"continues\" is not a boolean";
    else if (json_object_object_get_ex(frame, "id", &v) &&
             !json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_string))
        problem = "\"id\" is neither an integer nor a string";
    if (problem) {
        const char *type = type_name(frame);
        json_object_put(frame);
        return die(c, err, SEAM_E_MALFORMED, 0, "malformed reply: %s (a JSON %s)", problem, type);
    }

    if (!has_parameters) {
        /* An error without parameters: give it an empty object, as the header promises. */
        json_object *empty = json_object_new_object();
        if (!empty || json_object_object_add(frame, "parameters", empty) != 0) {
            json_object_put(empty);
            json_object_put(frame);
            return die(c, err, SEAM_E_NOMEM, ENOMEM, "out of memory reading a reply");
        }
    }
    *out = frame;
    return SEAM_OK;
}

/* Makes room to read into: compacts, or grows up to max_frame + 1 bytes. */
static int make_room(seam_client *c, seam_error *err)
{
    if (c->len < c->cap)
        return SEAM_OK;
    if (c->start > 0) {
        memmove(c->buf, c->buf + c->start, c->len - c->start);
        c->len -= c->start;
        c->scan -= c->start;
        c->start = 0;
        return SEAM_OK;
    }
    size_t limit = c->max_frame + 1;
    size_t cap = c->cap ? c->cap : 4096;
    while (cap <= c->len && cap < limit)
        cap = cap > limit / 2 ? limit : cap * 2;
    if (cap > limit)
        cap = limit;
    if (cap <= c->len)  /* cannot happen: len > max_frame is reported before */
        return die(c, err, SEAM_E_TOO_LARGE, 0, "a reply frame exceeds the limit of %zu bytes",
                   c->max_frame);
    char *buf = realloc(c->buf, cap);
    if (!buf)
        return fail(err, SEAM_E_NOMEM, ENOMEM, "out of memory for a reply of %zu bytes", c->len);
    c->buf = buf;
    c->cap = cap;
    return SEAM_OK;
}

/* Reads the next frame from the socket (not the queue). */
static int read_frame(seam_client *c, int64_t deadline, json_object **out, seam_error *err)
{
    *out = NULL;
    for (;;) {
        size_t from = c->scan > c->start ? c->scan : c->start;
        char *nul = from < c->len ? memchr(c->buf + from, '\0', c->len - from) : NULL;
        if (nul) {
            size_t n = (size_t)(nul - (c->buf + c->start));
            if (n > c->max_frame)
                return die(c, err, SEAM_E_TOO_LARGE, 0,
                           "a reply frame of %zu bytes exceeds the limit of %zu bytes", n,
                           c->max_frame);
            int rc = parse_frame(c, c->buf + c->start, n, out, err);
            if (rc != SEAM_OK)
                return rc;
            c->start += n + 1;
            c->scan = c->start;
            if (c->start == c->len) {
                c->start = c->len = c->scan = 0;
                if (c->cap > SEAM_KEEP_BUFFER) {
                    free(c->buf);
                    c->buf = NULL;
                    c->cap = 0;
                }
            }
            clear_error(err);
            return SEAM_OK;
        }
        c->scan = c->len;
        if (c->len - c->start > c->max_frame)
            return die(c, err, SEAM_E_TOO_LARGE, 0,
                       "a reply frame exceeds the limit of %zu bytes", c->max_frame);

        int rc = make_room(c, err);
        if (rc != SEAM_OK)
            return rc;
        rc = wait_ready(c, POLLIN, deadline, err);
        if (rc != SEAM_OK)
            return rc;
        ssize_t got = recv(c->fd, c->buf + c->len, c->cap - c->len, MSG_DONTWAIT);
        if (got > 0) {
            c->len += (size_t)got;
            continue;
        }
        if (got < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
            continue;
        if (got == 0 || errno == ECONNRESET || errno == EPIPE) {
            int e = got == 0 ? 0 : errno;
            const char *how = got == 0 ? "closed" : "reset";
            size_t pending = c->len - c->start;
            if (pending > 0)
                return die(c, err, SEAM_E_DISCONNECTED, e,
                           "the broker %s the connection in the middle of a reply "
                           "(%zu bytes without their NUL)", how, pending);
            return die(c, err, SEAM_E_DISCONNECTED, e, "the broker %s the connection", how);
        }
        return die(c, err, SEAM_E_IO, errno, "reading from the broker: %s", strerror(errno));
    }
}

/* The id a reply carries: its integer id, else 0. */
static int64_t frame_id(json_object *frame)
{
    json_object *v = NULL;
    if (json_object_object_get_ex(frame, "id", &v) && json_object_is_type(v, json_type_int))
        return json_object_get_int64(v);
    return 0;
}

static void fill_message(json_object *frame, seam_message *m)
{
    json_object *v = NULL;
    memset(m, 0, sizeof *m);
    m->frame = frame;
    m->id = frame_id(frame);
    m->sequence = -1;
    if (json_object_object_get_ex(frame, "continues", &v))
        m->continues = json_object_get_boolean(v);
    if (json_object_object_get_ex(frame, "error", &v))
        m->error = json_object_get_string(v);
    json_object_object_get_ex(frame, "parameters", &m->parameters);
    if (json_object_object_get_ex(m->parameters, "kind", &v) && json_object_is_type(v, json_type_string))
        m->kind = json_object_get_string(v);
    if (json_object_object_get_ex(m->parameters, "sequence", &v) && json_object_is_type(v, json_type_int))
        m->sequence = json_object_get_int64(v);
}

static int enqueue(seam_client *c, json_object *frame, seam_error *err)
{
    struct seam_queued *q = malloc(sizeof *q);
    if (!q) {
        json_object_put(frame);
        /* A reply to another call is lost: its caller could wait for ever. */
        return die(c, err, SEAM_E_NOMEM, ENOMEM, "out of memory keeping a reply");
    }
    q->frame = frame;
    q->next = NULL;
    if (c->tail)
        c->tail->next = q;
    else
        c->head = q;
    c->tail = q;
    return SEAM_OK;
}

int seam_next(seam_client *c, int timeout_ms, seam_message *out, seam_error *err)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!c || !out)
        return fail(err, SEAM_E_ARGUMENT, 0, "seam_next needs a client and a message");
    json_object *frame = NULL;
    struct seam_queued *q = c->head;
    if (q) {
        c->head = q->next;
        if (!c->head)
            c->tail = NULL;
        frame = q->frame;
        free(q);
    } else if (c->dead) {
        return dead_again(c, err);
    } else {
        int rc = read_frame(c, deadline_after(timeout_ms), &frame, err);
        if (rc != SEAM_OK)
            return rc;
    }
    fill_message(frame, out);
    clear_error(err);
    return SEAM_OK;
}

void seam_message_free(seam_message *m)
{
    if (!m)
        return;
    json_object_put(m->frame);
    memset(m, 0, sizeof *m);
    m->sequence = -1;
}

/* ---- frames out -------------------------------------------------------------------------- */

static int send_all(seam_client *c, const char *p, size_t n, seam_error *err)
{
    while (n > 0) {
        ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int rc = wait_ready(c, POLLOUT, -1, err);
            if (rc != SEAM_OK)
                return rc;
            continue;
        }
        if (w < 0 && (errno == EPIPE || errno == ECONNRESET))
            return die(c, err, SEAM_E_DISCONNECTED, errno, "the broker closed the connection");
        return die(c, err, SEAM_E_IO, w < 0 ? errno : EIO, "writing to the broker: %s",
                   strerror(w < 0 ? errno : EIO));
    }
    return SEAM_OK;
}

static bool valid_method(const char *method)
{
    if (!method)
        return false;
    const char *dot = strrchr(method, '.');
    return dot && dot != method && dot[1] != '\0';
}

static int add(json_object *o, const char *key, json_object *value)
{
    if (!value)
        return -1;
    if (json_object_object_add(o, key, value) != 0) {
        json_object_put(value);
        return -1;
    }
    return 0;
}

static size_t utf8_invalid_at(const unsigned char *s, size_t n);

/* Whether a value holds a number JSON cannot write (json-c would write NaN or Infinity, which
 * the broker refuses without the call's id, so the caller would wait for a reply that never
 * comes). Containers are walked to a bounded depth, like the broker's. */
static int has_non_finite(json_object *o, int depth)
{
    if (depth > 64)
        return 0;
    switch (json_object_get_type(o)) {
    case json_type_double:
        return !isfinite(json_object_get_double(o));
    case json_type_array:
        for (size_t i = 0; i < json_object_array_length(o); i++)
            if (has_non_finite(json_object_array_get_idx(o, i), depth + 1))
                return 1;
        return 0;
    case json_type_object: {
        json_object_object_foreach(o, key, value) {
            (void)key;
            if (has_non_finite(value, depth + 1))
                return 1;
        }
        return 0;
    }
    default:
        return 0;
    }
}

/* Whether a container in `o` (a container `depth` deep in the frame) lies deeper than the 32 the
 * broker reads: it refuses such a frame without the call's id, like a NaN. */
static int too_deep(json_object *o, int depth)
{
    enum json_type type = json_object_get_type(o);
    if (type != json_type_array && type != json_type_object)
        return 0;
    if (depth > 32)
        return 1;
    if (type == json_type_array) {
        for (size_t i = 0; i < json_object_array_length(o); i++)
            if (too_deep(json_object_array_get_idx(o, i), depth + 1))
                return 1;
        return 0;
    }
    json_object_object_foreach(o, key, value) {
        (void)key;
        if (too_deep(value, depth + 1))
            return 1;
    }
    return 0;
}

int seam_send(seam_client *c, const char *method, json_object *parameters, unsigned flags,
              int64_t *call_id, seam_error *err)
{
    if (call_id)
        *call_id = 0;
    if (!c)
        return fail(err, SEAM_E_ARGUMENT, 0, "no client");
    if (c->dead)
        return dead_again(c, err);
    if (!valid_method(method))
        return fail(err, SEAM_E_ARGUMENT, 0, "\"%s\" is not a method name (INTERFACE.Member)",
                    method ? method : "(null)");
    if (parameters && !json_object_is_type(parameters, json_type_object))
        return fail(err, SEAM_E_ARGUMENT, 0, "the parameters of %s are not an object", method);
    if (flags & ~(unsigned)(SEAM_CALL_MORE | SEAM_CALL_ONEWAY))
        return fail(err, SEAM_E_ARGUMENT, 0, "unknown flags %#x", flags);
    if (parameters && has_non_finite(parameters, 0))
        return fail(err, SEAM_E_ARGUMENT, 0, "the parameters of %s hold a number JSON cannot write (NaN or infinite)",
                    method);
    /* The frame is depth 1, its parameters 2. */
    if (parameters && too_deep(parameters, 2))
        return fail(err, SEAM_E_ARGUMENT, 0, "the parameters of %s nest more than 31 arrays and objects deep, "
                    "more than the broker reads", method);

    int64_t id = c->next_id;
    json_object *call = json_object_new_object();
    int bad = call ? 0 : -1;
    if (!bad)
        bad = add(call, "method", json_object_new_string(method));
    if (!bad && parameters)
        bad = add(call, "parameters", json_object_get(parameters));
    if (!bad && (flags & SEAM_CALL_MORE))
        bad = add(call, "more", json_object_new_boolean(1));
    if (!bad && (flags & SEAM_CALL_ONEWAY))
        bad = add(call, "oneway", json_object_new_boolean(1));
    if (!bad)
        bad = add(call, "id", json_object_new_int64(id));
    size_t n = 0;
    const char *text = NULL;
    if (!bad) {
        text = json_object_to_json_string_length(call, JSON_C_TO_STRING_PLAIN |
                                                       JSON_C_TO_STRING_NOSLASHESCAPE, &n);
        bad = text ? 0 : -1;
    }
    if (bad) {
        json_object_put(call);
        return fail(err, SEAM_E_NOMEM, ENOMEM, "out of memory writing a call to %s", method);
    }
    if (n > SEAM_BROKER_MAX_FRAME) {
        json_object_put(call);
        return fail(err, SEAM_E_ARGUMENT, 0,
                    "a call to %s of %zu bytes exceeds the broker's frame limit of %zu bytes",
                    method, n, SEAM_BROKER_MAX_FRAME);
    }
    size_t invalid = utf8_invalid_at((const unsigned char *)text, n);
    if (invalid < n) {
        json_object_put(call);
        return fail(err, SEAM_E_ARGUMENT, 0, "the call to %s holds text that is not UTF-8 (at byte %zu)", method,
                    invalid);
    }
    /* json-c terminates the text with a NUL: that is the frame's end, sent with it. */
    int rc = send_all(c, text, n + 1, err);
    json_object_put(call);
    if (rc != SEAM_OK)
        return rc;
    c->next_id++;
    if (call_id)
        *call_id = id;
    clear_error(err);
    return SEAM_OK;
}

/* ---- calls ------------------------------------------------------------------------------- */

/* Fills err from an error reply and returns SEAM_E_REMOTE. */
static int remote_error(json_object *frame, seam_error *err)
{
    if (!err)
        return SEAM_E_REMOTE;
    json_object *v = NULL, *parameters = NULL;
    err->code = SEAM_E_REMOTE;
    err->sys_errno = 0;
    json_object_object_get_ex(frame, "error", &v);
    copy_string(err->name, sizeof err->name, json_object_get_string(v));
    json_object_object_get_ex(frame, "parameters", &parameters);
    if (json_object_object_get_ex(parameters, "message", &v) && json_object_is_type(v, json_type_string))
        copy_string(err->message, sizeof err->message, json_object_get_string(v));
    else if (json_object_object_length(parameters) > 0)
        copy_string(err->message, sizeof err->message,
                    json_object_to_json_string_ext(parameters, JSON_C_TO_STRING_PLAIN |
                                                               JSON_C_TO_STRING_NOSLASHESCAPE));
    else
        err->message[0] = '\0';
    return SEAM_E_REMOTE;
}

int seam_call(seam_client *c, const char *method, json_object *parameters, json_object **reply,
              seam_error *err)
{
    if (reply)
        *reply = NULL;
    int64_t id = 0;
    int rc = seam_send(c, method, parameters, 0, &id, err);
    if (rc != SEAM_OK)
        return rc;
    int64_t deadline = deadline_after(c->call_timeout_ms);
    for (;;) {
        json_object *frame = NULL;
        rc = read_frame(c, deadline, &frame, err);
        if (rc != SEAM_OK)
            return rc;
        /* seamd stopping says so once, to the whole connection (no id), and answers no call
         * after that: this one ends with it (and seam_next still sees it, queued). */
        json_object *name = NULL;
        if (!json_object_object_get_ex(frame, "id", NULL) && json_object_object_get_ex(frame, "error", &name)
            && json_object_is_type(name, json_type_string)
            && strcmp(json_object_get_string(name), "org.seam.Store.ShuttingDown") == 0) {
            rc = remote_error(frame, err);
            seam_error ignored;
            (void)enqueue(c, frame, &ignored);
            return rc;
        }
        if (frame_id(frame) != id) {
            rc = enqueue(c, frame, err);
            if (rc != SEAM_OK)
                return rc;
            continue;
        }
        json_object *params = NULL, *e = NULL;
        json_object_object_get_ex(frame, "parameters", &params);
        rc = json_object_object_get_ex(frame, "error", &e) ? remote_error(frame, err) : SEAM_OK;
        if (rc == SEAM_OK)
            clear_error(err);
        if (reply)
            *reply = json_object_get(params);
        json_object_put(frame);
        return rc;
    }
}

static json_object *string_array(const char *const *names)
{
    json_object *a = json_object_new_array();
    if (!a)
        return NULL;
    for (size_t i = 0; names && names[i]; i++) {
        json_object *s = json_object_new_string(names[i]);
        if (!s || json_object_array_add(a, s) != 0) {
            json_object_put(s);
            json_object_put(a);
            return NULL;
        }
    }
    return a;
}

int seam_hello(seam_client *c, const char *role, const char *name, const char *const *reads,
               const char *const *writes, json_object **reply, seam_error *err)
{
    if (reply)
        *reply = NULL;
    json_object *p = json_object_new_object();
    int bad = p ? 0 : -1;
    if (!bad)
        bad = add(p, "version", json_object_new_int(SEAM_PROTOCOL_VERSION));
    if (!bad && role)
        bad = add(p, "role", json_object_new_string(role));
    if (!bad && name)
        bad = add(p, "name", json_object_new_string(name));
    if (!bad && (reads || writes)) {
        json_object *caps = json_object_new_object();
        bad = add(p, "capabilities", caps);
        if (!bad)
            bad = add(caps, "reads", string_array(reads));
        if (!bad)
            bad = add(caps, "writes", string_array(writes));
    }
    if (bad) {
        json_object_put(p);
        return fail(err, SEAM_E_NOMEM, ENOMEM, "out of memory writing Hello");
    }
    int rc = seam_call(c, "org.seam.Store.Hello", p, reply, err);
    json_object_put(p);
    return rc;
}

int seam_subscribe(seam_client *c, const char *entity, const char *predicate, const char *sort,
                   int64_t *call_id, seam_error *err)
{
    if (call_id)
        *call_id = 0;
    if (!entity || !*entity)
        return fail(err, SEAM_E_ARGUMENT, 0, "Subscribe needs an entity");
    json_object *p = json_object_new_object();
    int bad = p ? 0 : -1;
    if (!bad)
        bad = add(p, "entity", json_object_new_string(entity));
    if (!bad && predicate)
        bad = add(p, "predicate", json_object_new_string(predicate));
    if (!bad && sort)
        bad = add(p, "sort", json_object_new_string(sort));
    if (bad) {
        json_object_put(p);
        return fail(err, SEAM_E_NOMEM, ENOMEM, "out of memory writing Subscribe");
    }
    int rc = seam_send(c, "org.seam.Store.Subscribe", p, SEAM_CALL_MORE, call_id, err);
    json_object_put(p);
    return rc;
}
