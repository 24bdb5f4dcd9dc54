/*
 * seam-notify — announces each Seam session that finishes.
 *
 * An example plugin on the C SDK (Protocol/c/seam.h). It subscribes to the sessions that have
 * not finished (a result as small as what runs, however long the history) and, for each that
 * leaves that result and is then found finished, runs a command (--run), else notify-send when
 * it is on PATH, else prints a line. Sessions that had already finished when it started are
 * not announced.
 *
 * It waits in poll() on two descriptors: the broker's socket and a signalfd (SIGTERM and
 * SIGINT end it with status 0; SIGCHLD reaps the commands it ran). When the broker goes
 * away it exits 1, for a supervisor (seamd itself, or systemd) to start it again.
 */
#define _GNU_SOURCE

#include "seam.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static const char *const program = "seam-notify";

enum action { PRINT, NOTIFY_SEND, RUN };

/* Commands (or notify-send) running at once, at most: a burst of sessions that finish together
 * (a resync, a machine that woke) waits its turn rather than start hundreds of processes. */
#define MAX_RUNNING 8

/* An announcement waiting for a command to end. */
struct waiting {
    char *name;
    char *uuid;
    struct waiting *next;
};

struct notifier {
    enum action action;
    const char *command;   /* RUN: the shell command */
    json_object *active;   /* the uuids of the sessions in the result (an object used as a set) */
    int64_t subscription_call;
    int running;                  /* commands started and not reaped */
    struct waiting *first, *last; /* announcements waiting, oldest first */
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: %s [--socket PATH] [--run COMMAND]\n"
            "\n"
            "Announces each Seam session that finishes: runs COMMAND, else notify-send when it\n"
            "is on PATH, else prints \"finished: NAME (UUID)\" on standard output. Sessions that\n"
            "had finished before it started are not announced.\n"
            "\n"
            "  --socket PATH   the broker's socket (default: the descriptor in $SEAM_FD when seamd\n"
            "                  started this process, else $SEAM_SOCKET, else\n"
            "                  $XDG_RUNTIME_DIR/seam/seamd.sock, else /tmp/seam-$UID/seamd.sock)\n"
            "  --run COMMAND   run COMMAND with /bin/sh -c for each finished session; the session's\n"
            "                  name is $1 and $SEAM_SESSION_NAME, its uuid $SEAM_SESSION_UUID; at\n"
            "                  most 8 run at once, the rest wait their turn\n"
            "  --help          show this\n"
            "\n"
            "Exits 0 on SIGTERM or SIGINT, 1 when the broker goes away or refuses it, 2 on a\n"
            "usage error.\n",
            program);
}

__attribute__((format(printf, 1, 2)))
static void complain(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", program);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* Whether an executable named `name` is in one of $PATH's directories. */
static int on_path(const char *name)
{
    const char *path = getenv("PATH");
    if (!path || !*path)
        return 0;
    size_t name_len = strlen(name);
    for (const char *p = path;;) {
        const char *colon = strchr(p, ':');
        size_t dir_len = colon ? (size_t)(colon - p) : strlen(p);
        char candidate[4096];
        /* An empty entry means the current directory. */
        if (dir_len + name_len + 2 <= sizeof candidate) {
            if (dir_len == 0)
                snprintf(candidate, sizeof candidate, "%s", name);
            else
                snprintf(candidate, sizeof candidate, "%.*s/%s", (int)dir_len, p, name);
            if (access(candidate, X_OK) == 0)
                return 1;
        }
        if (!colon)
            return 0;
        p = colon + 1;
    }
}

/* Our environment for a command: without SEAM_FD (the broker connection is not inherited),
 * with SEAM_SESSION_NAME and SEAM_SESSION_UUID. NULL when out of memory. */
static char **command_environment(const char *name, const char *uuid)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 3, sizeof *env);
    if (!env)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (strncmp(environ[i], "SEAM_FD=", 8) == 0 ||
            strncmp(environ[i], "SEAM_SESSION_NAME=", 18) == 0 ||
            strncmp(environ[i], "SEAM_SESSION_UUID=", 18) == 0)
            continue;
        env[k++] = environ[i];
    }
    if (asprintf(&env[k], "SEAM_SESSION_NAME=%s", name) < 0) {
        free(env);
        return NULL;
    }
    if (asprintf(&env[k + 1], "SEAM_SESSION_UUID=%s", uuid) < 0) {
        free(env[k]);
        free(env);
        return NULL;
    }
    env[k + 2] = NULL;
    return env;
}

static void free_command_environment(char **env)
{
    size_t n = 0;
    while (env[n])
        n++;
    /* The last two are ours. */
    free(env[n - 1]);
    free(env[n - 2]);
    free(env);
}

/* Starts argv[0] (searched on PATH) with env, its signals unblocked. Returns 1 when it started. */
static int spawn(char *const argv[], char *const env[])
{
    posix_spawnattr_t attr;
    sigset_t none;
    sigemptyset(&none);
    if (posix_spawnattr_init(&attr) != 0) {
        complain("cannot run %s: out of memory", argv[0]);
        return 0;
    }
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], NULL, &attr, argv, env);
    posix_spawnattr_destroy(&attr);
    if (rc != 0)
        complain("cannot run %s: %s", argv[0], strerror(rc));
    return rc == 0;
}

/* Runs the command (or notify-send) for one session now. */
static void run_now(struct notifier *n, const char *name, const char *uuid)
{
    char **env = command_environment(name, uuid);
    if (!env) {
        complain("out of memory announcing %s", uuid);
        return;
    }
    if (n->action == RUN) {
        char *argv[] = { "/bin/sh", "-c", (char *)n->command, (char *)program, (char *)name, NULL };
        n->running += spawn(argv, env);
    } else {
        char *text = NULL;
        if (asprintf(&text, "%s finished", *name ? name : "A timer") >= 0) {
            /* `--`: a name that starts with `-` is the text, not an option. */
            char *argv[] = { "notify-send", "--", "Seam", text, NULL };
            n->running += spawn(argv, env);
            free(text);
        }
    }
    free_command_environment(env);
}

/* Starts what waits, oldest first, while fewer than MAX_RUNNING run. */
static void start_waiting(struct notifier *n)
{
    while (n->first && n->running < MAX_RUNNING) {
        struct waiting *w = n->first;
        n->first = w->next;
        if (!n->first)
            n->last = NULL;
        run_now(n, w->name, w->uuid);
        free(w->name);
        free(w->uuid);
        free(w);
    }
}

static void forget_waiting(struct notifier *n)
{
    while (n->first) {
        struct waiting *w = n->first;
        n->first = w->next;
        free(w->name);
        free(w->uuid);
        free(w);
    }
    n->last = NULL;
}

static void announce(struct notifier *n, const char *name, const char *uuid)
{
    if (n->action == PRINT) {
        /* One line per session, whatever the name holds: control characters (a newline that
         * forges a second line, a terminal escape) are written as \xHH. */
        fputs("finished: ", stdout);
        if (!*name)
            fputs("(unnamed)", stdout);
        for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
            if (*p < 0x20 || *p == 0x7f || *p == '\\')
                printf("\\x%02x", *p);
            else
                putchar(*p);
        }
        printf(" (%s)\n", uuid);
        fflush(stdout);
        return;
    }
    if (n->running < MAX_RUNNING && !n->first) {
        run_now(n, name, uuid);
        return;
    }
    struct waiting *w = calloc(1, sizeof *w);
    if (!w || !(w->name = strdup(name)) || !(w->uuid = strdup(uuid))) {
        complain("out of memory announcing %s", uuid);
        if (w) {
            free(w->name);
            free(w);
        }
        return;
    }
    if (n->last)
        n->last->next = w;
    else
        n->first = w;
    n->last = w;
}

/* Reaps the commands that have ended, says so when one failed, and starts what waits. */
static void reap(struct notifier *n)
{
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        if (n->running > 0)
            n->running--;
        if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
            complain("a command (pid %ld) exited with status %d", (long)pid, WEXITSTATUS(status));
        else if (WIFSIGNALED(status))
            complain("a command (pid %ld) was killed by signal %d", (long)pid, WTERMSIG(status));
    }
    start_waiting(n);
}

static const char *string_field(json_object *o, const char *key)
{
    json_object *v = NULL;
    if (json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string))
        return json_object_get_string(v);
    return NULL;
}

static json_object *array_field(json_object *o, const char *key)
{
    json_object *v = NULL;
    if (json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_array))
        return v;
    return NULL;
}

/* A session left the result of those not finished: announced when it is found finished (one
 * deleted is not). Returns 0 to go on, else the exit status (the broker is gone). */
static int left(struct notifier *n, seam_client *c, const char *uuid)
{
    json_object *parameters = json_object_new_object();
    if (!parameters) {
        complain("out of memory");
        return 1;
    }
    json_object_object_add(parameters, "entity", json_object_new_string("Session"));
    json_object_object_add(parameters, "uuid", json_object_new_string(uuid));
    json_object *reply = NULL;
    seam_error err;
    int rc = seam_call(c, "org.seam.Store.Fetch", parameters, &reply, &err);
    json_object_put(parameters);
    if (rc != SEAM_OK) {
        json_object_put(reply);
        complain("Fetch of session %s: %s%s%s", uuid, err.name, err.name[0] ? ": " : "", err.message);
        /* An error for this call alone goes on; a broker that is gone, or stopping (it answers
         * nothing after ShuttingDown), ends this process, for its supervisor to start again. */
        if (rc == SEAM_E_REMOTE && strcmp(err.name, "org.seam.Store.ShuttingDown") != 0)
            return 0;
        return rc == SEAM_E_TIMEOUT ? 0 : 1;
    }
    json_object *rows = array_field(reply, "rows");
    json_object *row = rows && json_object_array_length(rows) > 0 ? json_object_array_get_idx(rows, 0) : NULL;
    const char *state = row ? string_field(row, "state") : NULL;
    if (state && strcmp(state, "finished") == 0) {
        const char *name = string_field(row, "name");
        announce(n, name ? name : "", uuid);
    }
    json_object_put(reply);
    return 0;
}

/* The whole result: remembered; with check, the sessions that left it meanwhile (a resync
 * after the client fell behind) are looked at as in a diff. Returns 0 or the exit status. */
static int whole_result(struct notifier *n, seam_client *c, json_object *rows, int check)
{
    json_object *fresh = json_object_new_object();
    if (!fresh) {
        complain("out of memory");
        return 1;
    }
    size_t count = rows ? json_object_array_length(rows) : 0;
    for (size_t i = 0; i < count; i++) {
        const char *uuid = string_field(json_object_array_get_idx(rows, i), "uuid");
        if (uuid)
            json_object_object_add(fresh, uuid, NULL);
    }
    json_object *old = n->active;
    n->active = fresh;
    int status = 0;
    if (check && old) {
        json_object_object_foreach(old, uuid, unused) {
            (void)unused;
            if (!status && !json_object_object_get_ex(fresh, uuid, NULL))
                status = left(n, c, uuid);
        }
    }
    json_object_put(old);
    return status;
}

/* Handles one message from the broker. Returns 0 to go on, else the exit status. */
static int handle(struct notifier *n, seam_client *c, const seam_message *m)
{
    if (m->error) {
        const char *message = string_field(m->parameters, "message");
        complain("the broker: %s%s%s", m->error, message ? ": " : "", message ? message : "");
        return 1;
    }
    if (m->id != n->subscription_call)
        return 0;
    if (!m->kind) {
        complain("a subscription reply without a kind");
        return 1;
    }
    int status = 0;
    if (strcmp(m->kind, "result") == 0) {
        json_object *rows = array_field(m->parameters, "rows");
        status = whole_result(n, c, rows, 0);
        fprintf(stderr, "%s: watching for sessions that finish (%zu running or paused)\n", program,
                rows ? json_object_array_length(rows) : (size_t)0);
    } else if (strcmp(m->kind, "resync") == 0) {
        status = whole_result(n, c, array_field(m->parameters, "rows"), 1);
    } else if (strcmp(m->kind, "diff") == 0) {
        json_object *inserted = array_field(m->parameters, "inserted");
        size_t count = inserted ? json_object_array_length(inserted) : 0;
        for (size_t i = 0; i < count; i++) {
            const char *uuid = string_field(json_object_array_get_idx(inserted, i), "uuid");
            if (uuid)
                json_object_object_add(n->active, uuid, NULL);
        }
        json_object *deleted = array_field(m->parameters, "deleted");
        count = deleted ? json_object_array_length(deleted) : 0;
        for (size_t i = 0; i < count && !status; i++) {
            const char *uuid = string_field(json_object_array_get_idx(deleted, i), "uuid");
            if (uuid && json_object_object_get_ex(n->active, uuid, NULL)) {
                json_object_object_del(n->active, uuid);
                status = left(n, c, uuid);
            }
        }
    }
    if (status)
        return status;
    if (!m->continues) {
        complain("the broker ended the subscription");
        return 1;
    }
    return 0;
}

/* Follows the subscription until a signal or the broker ends it. Returns the exit status. */
static int follow(struct notifier *n, seam_client *c, int signals)
{
    for (;;) {
        /* What the client already holds first: poll() would not signal it. */
        seam_message m;
        seam_error err;
        int rc;
        while ((rc = seam_next(c, 0, &m, &err)) == SEAM_OK) {
            int status = handle(n, c, &m);
            seam_message_free(&m);
            if (status)
                return status;
        }
        if (rc != SEAM_E_TIMEOUT) {
            complain("lost the broker: %s", err.message);
            return 1;
        }

        struct pollfd fds[2] = {
            { .fd = seam_fd(c), .events = POLLIN, .revents = 0 },
            { .fd = signals, .events = POLLIN, .revents = 0 },
        };
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            complain("poll: %s", strerror(errno));
            return 1;
        }
        if (fds[1].revents & POLLIN) {
            struct signalfd_siginfo info;
            while (read(signals, &info, sizeof info) == (ssize_t)sizeof info) {
                if (info.ssi_signo == SIGTERM || info.ssi_signo == SIGINT)
                    return 0;
            }
            reap(n);
        }
    }
}

/* Signals through a descriptor, so that one poll() waits for them and the broker: SIGTERM and
 * SIGINT end the process, SIGCHLD reaps its commands. -1 (said why) when it cannot be made. */
static int signal_descriptor(void)
{
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGCHLD);
    if (sigprocmask(SIG_BLOCK, &mask, NULL) != 0) {
        complain("sigprocmask: %s", strerror(errno));
        return -1;
    }
    int signals = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    if (signals < 0)
        complain("signalfd: %s", strerror(errno));
    return signals;
}

int main(int argc, char **argv)
{
    static const struct option options[] = {
        { "socket", required_argument, NULL, 's' },
        { "run", required_argument, NULL, 'r' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *socket_path = NULL;
    struct notifier n = { .action = PRINT, .command = NULL, .active = NULL,
                          .subscription_call = 0, .running = 0, .first = NULL, .last = NULL };
    opterr = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
        switch (opt) {
        case 's':
            socket_path = optarg;
            break;
        case 'r':
            n.action = RUN;
            n.command = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        case ':':
            complain("%s needs a value", argv[optind - 1]);
            fprintf(stderr, "Try '%s --help'.\n", program);
            return 2;
        default:
            complain("unknown option %s", argv[optind - 1]);
            fprintf(stderr, "Try '%s --help'.\n", program);
            return 2;
        }
    }
    if (optind < argc) {
        complain("unexpected argument %s", argv[optind]);
        fprintf(stderr, "Try '%s --help'.\n", program);
        return 2;
    }
    if (n.action == RUN && !*n.command) {
        complain("--run needs a command");
        return 2;
    }
    if (socket_path && !*socket_path) {
        complain("--socket needs a path");
        return 2;
    }
    if (n.action == PRINT && on_path("notify-send"))
        n.action = NOTIFY_SEND;

    /* With --socket, a descriptor seamd handed over (SEAM_FD) goes unused: no command inherits it. */
    const char *handed = getenv("SEAM_FD");
    if (socket_path && handed && *handed) {
        char *end = NULL;
        long fd = strtol(handed, &end, 10);
        if (*end == '\0' && fd >= 3 && fd <= INT_MAX)
            (void)fcntl((int)fd, F_SETFD, FD_CLOEXEC);
    }

    seam_error err;
    seam_client *c = seam_connect(socket_path, &err);
    if (!c) {
        complain("%s", err.message);
        return 1;
    }
    /* Until the subscription is in place, SIGTERM and SIGINT keep their default action: a
     * broker that never answers Hello cannot make this process deaf to them. */
    static const char *const reads[] = { "Session", NULL };

    json_object *hello = NULL;
    int status = 1;
    int signals = -1;
    if (seam_hello(c, "plugin", "seam-notify", reads, NULL, &hello, &err) != SEAM_OK) {
        complain("Hello: %s%s%s", err.name, err.name[0] ? ": " : "", err.message);
    } else if (seam_subscribe(c, "Session", "state != \"finished\"", NULL, &n.subscription_call, &err) != SEAM_OK) {
        complain("Subscribe: %s", err.message);
    } else if ((signals = signal_descriptor()) >= 0) {
        n.active = json_object_new_object();
        status = n.active ? follow(&n, c, signals) : 1;
    }
    forget_waiting(&n);
    json_object_put(hello);
    json_object_put(n.active);
    seam_close(c);
    if (signals >= 0)
        close(signals);
    return status;
}
