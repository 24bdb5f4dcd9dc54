/*
 * Tests of the Seam C SDK: against fake servers that send canned (often hostile) bytes, and
 * against a real seamd that the program starts itself from $SEAMD (default
 * ../../.build/release/seamd, relative to Protocol/c).
 *
 * One line per test ("ok", "FAIL" or "skip"), then a summary; exits 1 when a test failed.
 */
#define _GNU_SOURCE

#include "seam.h"

#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- a tiny harness ------------------------------------------------------------------ */

enum { PASS = 0, FAILED = 1, SKIPPED = 2 };

static int run_count, fail_count, skip_count;
static char skip_reason[256];

#define CHECK(cond)                                                                    \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            printf("    %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);        \
            return FAILED;                                                             \
        }                                                                              \
    } while (0)

/* err's name and message, for a failure line. */
static const char *describe(const seam_error *err)
{
    static char text[sizeof err->name + sizeof err->message + 2];
    if (!err)
        return "";
    snprintf(text, sizeof text, "%s%s%s", err->name, err->name[0] ? " " : "", err->message);
    return text;
}

/* Checks that expr returns want; on failure shows both codes and err's message. */
#define CHECK_RC(expr, want, errp)                                                     \
    do {                                                                               \
        int rc_ = (expr);                                                              \
        if (rc_ != (want)) {                                                           \
            printf("    %s:%d: %s returned %d (%s), want %d (%s): %s\n", __FILE__,      \
                   __LINE__, #expr, rc_, seam_strerror(rc_), (want),                   \
                   seam_strerror(want), describe(errp));                               \
            return FAILED;                                                             \
        }                                                                              \
    } while (0)

#define CHECK_STR(a, b)                                                                \
    do {                                                                               \
        const char *a_ = (a), *b_ = (b);                                               \
        if (!a_ || !b_ || strcmp(a_, b_) != 0) {                                       \
            printf("    %s:%d: %s is \"%s\", want \"%s\"\n", __FILE__, __LINE__, #a,   \
                   a_ ? a_ : "(null)", b_ ? b_ : "(null)");                            \
            return FAILED;                                                             \
        }                                                                              \
    } while (0)

static int skip(const char *why)
{
    snprintf(skip_reason, sizeof skip_reason, "%s", why);
    return SKIPPED;
}

static void run(const char *name, int (*test)(void))
{
    skip_reason[0] = '\0';
    int r = test();
    run_count++;
    if (r == PASS) {
        printf("ok   %s\n", name);
    } else if (r == SKIPPED) {
        skip_count++;
        printf("skip %s (%s)\n", name, skip_reason);
    } else {
        fail_count++;
        printf("FAIL %s\n", name);
    }
    fflush(stdout);
}

/* Valgrind makes everything slower: scale waits. */
static int slow(int ms)
{
    return getenv("SEAM_TEST_UNDER_VALGRIND") ? ms * 4 : ms;
}

/* ---- helpers --------------------------------------------------------------------------- */

static json_object *parse(const char *text)
{
    json_object *o = json_tokener_parse(text);
    if (!o) {
        fprintf(stderr, "test bug: cannot parse %s\n", text);
        abort();
    }
    return o;
}

static int write_all(int fd, const void *bytes, size_t n)
{
    const char *p = bytes;
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Writes a string and, when with_nul, its NUL. */
static int put(int fd, const char *text, int with_nul)
{
    return write_all(fd, text, strlen(text) + (with_nul ? 1 : 0));
}

/* Reads one NUL-terminated frame from fd (byte by byte: nothing is read past it) and parses
 * it. NULL on EOF or bad JSON. */
static json_object *read_request(int fd)
{
    char buf[65536];
    size_t n = 0;
    for (;;) {
        if (n == sizeof buf)
            return NULL;
        ssize_t r = recv(fd, buf + n, 1, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return NULL;
        if (buf[n] == '\0')
            break;
        n++;
    }
    return json_tokener_parse(buf);
}

static const char *get_string(json_object *o, const char *key)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
        return NULL;
    return json_object_get_string(v);
}

static int64_t get_int(json_object *o, const char *key, int64_t missing)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
        return missing;
    return json_object_get_int64(v);
}

static json_object *get(json_object *o, const char *key)
{
    json_object *v = NULL;
    return json_object_object_get_ex(o, key, &v) ? v : NULL;
}

/* A client on one end of a socketpair; the test plays the server on *server. */
static seam_client *pair_client(int *server)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return NULL;
    seam_error err;
    seam_client *c = seam_connect_fd(sv[0], &err);
    if (!c) {
        printf("    seam_connect_fd: %s\n", err.message);
        close(sv[0]);
        close(sv[1]);
        return NULL;
    }
    *server = sv[1];
    return c;
}

/* Forks a child that writes n bytes of data to the server end in pieces of `piece` bytes,
 * pausing between them, then exits (closing it). Returns the child's pid; the parent's copy of
 * the server end is closed. */
static pid_t serve_in_child(int server, const char *data, size_t n, size_t piece, int pause_us)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        for (size_t off = 0; off < n; off += piece) {
            size_t k = n - off < piece ? n - off : piece;
            if (write_all(server, data + off, k) != 0)
                _exit(3);
            if (pause_us)
                usleep((useconds_t)pause_us);
        }
        _exit(0);
    }
    close(server);
    return pid;
}

/* Waits for a child and says whether it exited 0 (under valgrind: also without errors). */
static int child_ok(pid_t pid)
{
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR)
            return 0;
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* A client given one canned reply (bytes written as they are), after which the server end is
 * kept open (unless close_after) and returned in *server. */
static seam_client *canned(const char *bytes, size_t n, int close_after, int *server)
{
    seam_client *c = pair_client(server);
    if (!c)
        return NULL;
    if (write_all(*server, bytes, n) != 0) {
        seam_close(c);
        close(*server);
        return NULL;
    }
    if (close_after) {
        close(*server);
        *server = -1;
    }
    return c;
}

/* Checks that a finished client keeps answering `want` to every operation. */
static int check_finished(seam_client *c, int want)
{
    seam_error err;
    seam_message m;
    json_object *reply = (json_object *)&err;  /* must be reset to NULL */
    CHECK_RC(seam_call(c, "org.varlink.service.GetInfo", NULL, &reply, &err), want, &err);
    CHECK(reply == NULL);
    CHECK(err.code == want);
    CHECK_RC(seam_next(c, 0, &m, &err), want, &err);
    CHECK(m.frame == NULL && m.parameters == NULL);
    seam_message_free(&m);
    CHECK_RC(seam_next(c, -1, &m, &err), want, &err);
    int64_t id = 7;
    CHECK_RC(seam_subscribe(c, "Session", NULL, NULL, &id, &err), want, &err);
    CHECK(id == 0);
    CHECK_RC(seam_hello(c, "cli", NULL, NULL, NULL, NULL, &err), want, &err);
    return PASS;
}

/* One canned reply to a call must fail with want, and the client must stay failed. */
static int expect_reply_fails(const char *bytes, size_t n, int want)
{
    int server = -1;
    seam_client *c = canned(bytes, n, 0, &server);
    CHECK(c);
    seam_error err;
    json_object *reply = NULL;
    CHECK_RC(seam_call(c, "org.example.Test.Call", NULL, &reply, &err), want, &err);
    CHECK(reply == NULL);
    CHECK(err.message[0] != '\0');
    int r = check_finished(c, want);
    seam_close(c);
    if (server >= 0)
        close(server);
    return r;
}

/* A canned reply: bytes that may hold NULs, so with their length. */
struct canned_reply {
    const char *bytes;
    size_t len;
};
#define REPLY(literal) { literal, sizeof(literal) - 1 }

/* Each reply, served alone, must make the client fail with `want`; stops at the first that does not. */
static int expect_all_fail(const struct canned_reply *replies, size_t n, int want)
{
    int r = PASS;
    for (size_t i = 0; i < n && r == PASS; i++)
        r = expect_reply_fails(replies[i].bytes, replies[i].len, want);
    return r;
}
#define EXPECT_ALL_FAIL(replies, want) expect_all_fail(replies, sizeof(replies) / sizeof(replies[0]), want)

/* ---- tests against fake servers ----------------------------------------------------------- */

static int test_strerror(void)
{
    int codes[] = { SEAM_OK, SEAM_E_CONNECT, SEAM_E_DISCONNECTED, SEAM_E_TOO_LARGE,
                    SEAM_E_MALFORMED, SEAM_E_REMOTE, SEAM_E_TIMEOUT, SEAM_E_IO,
                    SEAM_E_ARGUMENT, SEAM_E_NOMEM };
    size_t n = sizeof codes / sizeof codes[0];
    for (size_t i = 0; i < n; i++) {
        CHECK(seam_strerror(codes[i]) != NULL);
        for (size_t j = 0; j < i; j++)
            CHECK(strcmp(seam_strerror(codes[i]), seam_strerror(codes[j])) != 0);
        CHECK(i == 0 || codes[i] < 0);
    }
    CHECK(seam_strerror(12345) != NULL);
    return PASS;
}

/* Fetch parameters {entity: Timer, ignored: [[…]]} with `arrays` arrays nested under them. */
static json_object *nested_params(int arrays)
{
    json_object *params = json_object_new_object();
    json_object_object_add(params, "entity", json_object_new_string("Timer"));
    json_object *inner = json_object_new_array();
    json_object_object_add(params, "ignored", inner);
    for (int i = 1; i < arrays; i++) {
        json_object *next = json_object_new_array();
        json_object_array_add(inner, next);
        inner = next;
    }
    return params;
}

static int test_arguments(void)
{
    seam_error err;
    seam_message m;
    CHECK_RC(seam_call(NULL, "a.B", NULL, NULL, &err), SEAM_E_ARGUMENT, &err);
    CHECK_RC(seam_next(NULL, 0, &m, &err), SEAM_E_ARGUMENT, &err);
    CHECK_RC(seam_send(NULL, "a.B", NULL, 0, NULL, NULL), SEAM_E_ARGUMENT, (seam_error *)NULL);
    CHECK(seam_fd(NULL) == -1);
    CHECK_RC(seam_set_max_frame(NULL, 10), SEAM_E_ARGUMENT, (seam_error *)NULL);
    seam_close(NULL);
    seam_message_free(NULL);
    CHECK(seam_connect_fd(-1, &err) == NULL && err.code == SEAM_E_ARGUMENT);

    int p[2];
    CHECK(pipe(p) == 0);
    CHECK(seam_connect_fd(p[0], &err) == NULL);
    CHECK(err.code == SEAM_E_CONNECT);
    CHECK(fcntl(p[0], F_GETFD) >= 0);  /* still the caller's, open */
    close(p[0]);
    close(p[1]);

    int server = -1;
    seam_client *c = pair_client(&server);
    CHECK(c);
    CHECK_RC(seam_set_max_frame(c, 0), SEAM_E_ARGUMENT, (seam_error *)NULL);
    CHECK_RC(seam_call(c, NULL, NULL, NULL, &err), SEAM_E_ARGUMENT, &err);
    CHECK_RC(seam_call(c, "Fetch", NULL, NULL, &err), SEAM_E_ARGUMENT, &err);
    CHECK_RC(seam_call(c, "org.seam.Store.", NULL, NULL, &err), SEAM_E_ARGUMENT, &err);
    json_object *array = parse("[1]");
    CHECK_RC(seam_call(c, "org.seam.Store.Fetch", array, NULL, &err), SEAM_E_ARGUMENT, &err);
    json_object_put(array);
    CHECK_RC(seam_send(c, "a.B", NULL, 64, NULL, &err), SEAM_E_ARGUMENT, &err);
    CHECK_RC(seam_subscribe(c, NULL, NULL, NULL, NULL, &err), SEAM_E_ARGUMENT, &err);
    CHECK_RC(seam_subscribe(c, "", NULL, NULL, NULL, &err), SEAM_E_ARGUMENT, &err);
    CHECK_RC(seam_next(c, 0, NULL, &err), SEAM_E_ARGUMENT, &err);

    /* A request larger than the broker's frame limit is refused before it is sent. */
    size_t big = SEAM_BROKER_MAX_FRAME + 16;
    char *text = malloc(big + 1);
    CHECK(text);
    memset(text, 'a', big);
    text[big] = '\0';
    json_object *params = json_object_new_object();
    json_object_object_add(params, "text", json_object_new_string(text));
    free(text);
    CHECK_RC(seam_call(c, "org.seam.Store.Fetch", params, NULL, &err), SEAM_E_ARGUMENT, &err);
    json_object_put(params);

    /* Numbers JSON cannot write, and text that is not UTF-8: refused before they are sent
     * (the broker would answer without the call's id, and the caller wait for ever). */
    json_object *nan = json_object_new_object();
    json_object_object_add(nan, "limit", json_object_new_double(NAN));
    CHECK_RC(seam_call(c, "org.seam.Store.Fetch", nan, NULL, &err), SEAM_E_ARGUMENT, &err);
    CHECK(strstr(err.message, "NaN") != NULL);
    json_object_put(nan);
    json_object *deep = parse("{\"values\":[{\"n\":1}]}");
    json_object_array_put_idx(get(deep, "values"), 1, json_object_new_double(-INFINITY));
    CHECK_RC(seam_call(c, "org.seam.Store.Fetch", deep, NULL, &err), SEAM_E_ARGUMENT, &err);
    json_object_put(deep);
    /* Nesting deeper than the broker reads (the frame, its parameters, 30 more) is refused
     * here, or the broker's id-less refusal left the call waiting for ever. */
    json_object *deep_params = nested_params(31);
    CHECK_RC(seam_call(c, "org.seam.Store.Fetch", deep_params, NULL, &err), SEAM_E_ARGUMENT, &err);
    CHECK(strstr(err.message, "nest") != NULL);
    json_object_put(deep_params);
    json_object *latin1 = json_object_new_object();
    json_object_object_add(latin1, "entity", json_object_new_string("Tim\xe9r"));
    CHECK_RC(seam_call(c, "org.seam.Store.Fetch", latin1, NULL, &err), SEAM_E_ARGUMENT, &err);
    CHECK(strstr(err.message, "UTF-8") != NULL);
    json_object_put(latin1);

    /* None of that reached the server, and the client still works. */
    CHECK(put(server, "{\"parameters\":{\"fine\":true},\"id\":1}", 1) == 0);
    json_object *reply = NULL;
    CHECK_RC(seam_call(c, "a.B", NULL, &reply, &err), SEAM_OK, &err);
    CHECK(json_object_get_boolean(get(reply, "fine")));
    json_object_put(reply);
    json_object *request = read_request(server);
    CHECK(request);
    CHECK_STR(get_string(request, "method"), "a.B");
    CHECK(get_int(request, "id", -1) == 1);
    json_object_put(request);
    seam_close(c);
    close(server);
    return PASS;
}

/* What the client writes: method, parameters, id, more, Hello's capabilities. */
static int test_wire_format(void)
{
    int server = -1;
    seam_client *c = pair_client(&server);
    CHECK(c);
    seam_error err;
    CHECK(put(server, "{\"parameters\":{\"echo\":1},\"id\":1}", 1) == 0);
    json_object *params = parse("{\"entity\":\"Timer\",\"predicate\":\"name == \\\"a/b\\\"\"}");
    json_object *reply = NULL;
    CHECK_RC(seam_call(c, "org.seam.Store.Fetch", params, &reply, &err), SEAM_OK, &err);
    CHECK(err.code == SEAM_OK && err.message[0] == '\0');
    CHECK(get_int(reply, "echo", 0) == 1);
    json_object_put(reply);
    /* The parameters are borrowed: still ours, unchanged. */
    CHECK_STR(get_string(params, "entity"), "Timer");
    json_object *request = read_request(server);
    CHECK(request);
    CHECK_STR(get_string(request, "method"), "org.seam.Store.Fetch");
    CHECK(get_int(request, "id", -1) == 1);
    CHECK(get(request, "more") == NULL);
    CHECK(json_object_equal(get(request, "parameters"), params));
    json_object_put(request);
    json_object_put(params);

    int64_t id = 0;
    CHECK_RC(seam_subscribe(c, "Session", "state == \"finished\"", "-finishedAt", &id, &err),
             SEAM_OK, &err);
    CHECK(id == 2);
    request = read_request(server);
    CHECK(request);
    CHECK_STR(get_string(request, "method"), "org.seam.Store.Subscribe");
    CHECK(get_int(request, "id", -1) == 2);
    CHECK(json_object_get_boolean(get(request, "more")));
    CHECK_STR(get_string(get(request, "parameters"), "entity"), "Session");
    CHECK_STR(get_string(get(request, "parameters"), "predicate"), "state == \"finished\"");
    CHECK_STR(get_string(get(request, "parameters"), "sort"), "-finishedAt");
    json_object_put(request);

    CHECK_RC(seam_send(c, "org.example.Test.Ping", NULL, SEAM_CALL_ONEWAY, &id, &err), SEAM_OK, &err);
    CHECK(id == 3);
    request = read_request(server);
    CHECK(request);
    CHECK(json_object_get_boolean(get(request, "oneway")));
    CHECK(get(request, "parameters") == NULL);
    json_object_put(request);

    /* Hello with capabilities: a NULL list goes out empty. */
    CHECK(put(server, "{\"parameters\":{\"role\":\"plugin\"},\"id\":4}", 1) == 0);
    const char *reads[] = { "Session", "Timer", NULL };
    CHECK_RC(seam_hello(c, "plugin", "p", reads, NULL, NULL, &err), SEAM_OK, &err);
    request = read_request(server);
    CHECK(request);
    CHECK_STR(get_string(request, "method"), "org.seam.Store.Hello");
    json_object *want = parse("{\"version\":1,\"role\":\"plugin\",\"name\":\"p\","
                              "\"capabilities\":{\"reads\":[\"Session\",\"Timer\"],\"writes\":[]}}");
    CHECK(json_object_equal(get(request, "parameters"), want));
    json_object_put(want);
    json_object_put(request);

    /* Hello without capabilities sends none. */
    CHECK(put(server, "{\"parameters\":{},\"id\":5}", 1) == 0);
    CHECK_RC(seam_hello(c, "cli", NULL, NULL, NULL, &reply, &err), SEAM_OK, &err);
    CHECK(reply && json_object_object_length(reply) == 0);
    json_object_put(reply);
    request = read_request(server);
    CHECK(request);
    want = parse("{\"version\":1,\"role\":\"cli\"}");
    CHECK(json_object_equal(get(request, "parameters"), want));
    json_object_put(want);
    json_object_put(request);

    seam_close(c);
    close(server);
    return PASS;
}

static int test_remote_errors(void)
{
    static const char replies[] =
        "{\"error\":\"org.seam.Store.NotFound\",\"parameters\":{\"entity\":\"Timer\","
        "\"uuid\":\"u-1\",\"message\":\"no Timer u-1\"},\"id\":1}\0"
        "{\"error\":\"org.varlink.service.MethodNotFound\",\"parameters\":{\"method\":\"x.Y\"},\"id\":2}\0"
        "{\"error\":\"org.example.Bare\",\"id\":3}\0"
        "{\"parameters\":{\"after\":true},\"id\":4}\0"
        "{\"error\":\"org.seam.Store.ShuttingDown\",\"parameters\":{\"message\":\"seamd is stopping\"}}\0";
    int server = -1;
    seam_client *c = canned(replies, sizeof replies - 1, 0, &server);
    CHECK(c);
    seam_error err;
    json_object *reply = NULL;
    CHECK_RC(seam_call(c, "a.B", NULL, &reply, &err), SEAM_E_REMOTE, &err);
    CHECK_STR(err.name, "org.seam.Store.NotFound");
    CHECK_STR(err.message, "no Timer u-1");
    CHECK_STR(get_string(reply, "uuid"), "u-1");
    json_object_put(reply);

    CHECK_RC(seam_call(c, "a.B", NULL, NULL, &err), SEAM_E_REMOTE, &err);
    CHECK_STR(err.name, "org.varlink.service.MethodNotFound");
    CHECK_STR(err.message, "{\"method\":\"x.Y\"}");

    CHECK_RC(seam_call(c, "a.B", NULL, &reply, &err), SEAM_E_REMOTE, &err);
    CHECK_STR(err.name, "org.example.Bare");
    CHECK_STR(err.message, "");
    CHECK(reply && json_object_is_type(reply, json_type_object));
    json_object_put(reply);

    /* A remote error leaves the connection usable. */
    CHECK_RC(seam_call(c, "a.B", NULL, &reply, &err), SEAM_OK, &err);
    CHECK(err.name[0] == '\0');
    CHECK(json_object_get_boolean(get(reply, "after")));
    json_object_put(reply);

    /* seamd stopping tells the connection once, without an id: a call waiting ends with it. */
    CHECK_RC(seam_call(c, "a.B", NULL, NULL, &err), SEAM_E_REMOTE, &err);
    CHECK_STR(err.name, "org.seam.Store.ShuttingDown");
    seam_close(c);
    close(server);
    return PASS;
}

/* Replies to other calls that arrive while seam_call waits are kept for seam_next, in order. */
static int test_interleaved_replies(void)
{
    static const char replies[] =
        "{\"parameters\":{\"subscription\":1,\"kind\":\"result\",\"sequence\":4,\"rows\":[]},"
        "\"continues\":true,\"id\":1}\0"
        "{\"parameters\":{\"subscription\":1,\"kind\":\"diff\",\"sequence\":5},\"continues\":true,\"id\":1}\0"
        "{\"parameters\":{\"message\":\"hi\"},\"error\":\"org.example.Broadcast\"}\0"
        "{\"parameters\":{\"answer\":42},\"id\":2}\0"
        "{\"parameters\":{\"subscription\":1,\"kind\":\"end\",\"sequence\":6},\"id\":1}\0";
    int server = -1;
    seam_client *c = canned(replies, sizeof replies - 1, 0, &server);
    CHECK(c);
    seam_error err;
    int64_t sub = 0;
    CHECK_RC(seam_subscribe(c, "Session", NULL, NULL, &sub, &err), SEAM_OK, &err);
    CHECK(sub == 1);
    json_object *reply = NULL;
    CHECK_RC(seam_call(c, "org.example.Test.Answer", NULL, &reply, &err), SEAM_OK, &err);
    close(server);
    CHECK(get_int(reply, "answer", 0) == 42);
    json_object_put(reply);

    seam_message m;
    CHECK_RC(seam_next(c, 0, &m, &err), SEAM_OK, &err);
    CHECK(m.id == 1 && m.continues && m.error == NULL);
    CHECK_STR(m.kind, "result");
    CHECK(m.sequence == 4);
    CHECK(json_object_is_type(get(m.parameters, "rows"), json_type_array));
    seam_message_free(&m);
    CHECK(m.frame == NULL);
    seam_message_free(&m);  /* twice is fine */

    CHECK_RC(seam_next(c, 0, &m, &err), SEAM_OK, &err);
    CHECK(m.id == 1 && m.continues);
    CHECK_STR(m.kind, "diff");
    CHECK(m.sequence == 5);
    seam_message_free(&m);

    CHECK_RC(seam_next(c, 0, &m, &err), SEAM_OK, &err);
    CHECK(m.id == 0 && !m.continues);
    CHECK_STR(m.error, "org.example.Broadcast");
    CHECK_STR(get_string(m.parameters, "message"), "hi");
    CHECK(m.kind == NULL && m.sequence == -1);
    seam_message_free(&m);

    /* This one is read from the socket, after the kept ones. */
    CHECK_RC(seam_next(c, 1000, &m, &err), SEAM_OK, &err);
    CHECK(m.id == 1 && !m.continues);
    CHECK_STR(m.kind, "end");
    /* Keeping the parameters beyond the message. */
    json_object *kept = json_object_get(m.parameters);
    seam_message_free(&m);
    CHECK(get_int(kept, "sequence", 0) == 6);
    json_object_put(kept);

    /* The server has gone: the end of the stream, for good. */
    CHECK_RC(seam_next(c, 1000, &m, &err), SEAM_E_DISCONNECTED, &err);
    int r = check_finished(c, SEAM_E_DISCONNECTED);
    seam_close(c);
    return r;
}

/* Frames that arrive a byte at a time, several frames in one read, and a frame in many
 * reads bigger than the socket's buffer. */
static int test_partial_reads(void)
{
    int server = -1;
    seam_client *c = pair_client(&server);
    CHECK(c);
    static const char bytes[] =
        "{\"parameters\":{\"n\":1,\"s\":\"\xe2\x82\xac \\u00e9\"},\"continues\":true,\"id\":1}\0"
        "{\"parameters\":{\"n\":2},\"id\":1}\0";
    pid_t child = serve_in_child(server, bytes, sizeof bytes - 1, 1, 200);
    seam_error err;
    seam_message m;
    CHECK_RC(seam_next(c, slow(5000), &m, &err), SEAM_OK, &err);
    CHECK(get_int(m.parameters, "n", 0) == 1 && m.continues);
    CHECK_STR(get_string(m.parameters, "s"), "\xe2\x82\xac \xc3\xa9");
    seam_message_free(&m);
    CHECK_RC(seam_next(c, slow(5000), &m, &err), SEAM_OK, &err);
    CHECK(get_int(m.parameters, "n", 0) == 2 && !m.continues);
    seam_message_free(&m);
    CHECK(child_ok(child));
    seam_close(c);

    /* 3 MiB in one frame, with the default limit: the buffer grows to it. */
    c = pair_client(&server);
    CHECK(c);
    size_t big = 3 * 1024 * 1024;
    char *frame = malloc(big + 64);
    CHECK(frame);
    int head = sprintf(frame, "{\"id\":1,\"parameters\":{\"blob\":\"");
    memset(frame + head, 'x', big);
    int tail = sprintf(frame + head + big, "\"}}");
    size_t n = (size_t)head + big + (size_t)tail + 1;  /* with the NUL */
    child = serve_in_child(server, frame, n, 65536, 0);
    free(frame);
    json_object *reply = NULL;
    CHECK_RC(seam_call(c, "a.B", NULL, &reply, &err), SEAM_OK, &err);
    CHECK(json_object_get_string_len(get(reply, "blob")) == (int)big);
    json_object_put(reply);
    CHECK(child_ok(child));
    CHECK_RC(seam_next(c, slow(2000), &m, &err), SEAM_E_DISCONNECTED, &err);
    seam_close(c);
    return PASS;
}

/* A frame of exactly the limit is fine; one byte more finishes the connection. */
static int test_frame_limit(void)
{
    int server = -1;
    seam_client *c = pair_client(&server);
    CHECK(c);
    CHECK_RC(seam_set_max_frame(c, 1024), SEAM_OK, (seam_error *)NULL);
    char frame[2048];
    int head = sprintf(frame, "{\"id\":1,\"parameters\":{\"pad\":\"");
    int tail = (int)strlen("\"}}");
    memset(frame + head, 'p', (size_t)(1024 - head - tail));
    strcpy(frame + 1024 - tail, "\"}}");
    CHECK(strlen(frame) == 1024);
    CHECK(write_all(server, frame, 1025) == 0);  /* exactly 1024 bytes and the NUL */
    seam_error err;
    json_object *reply = NULL;
    CHECK_RC(seam_call(c, "a.B", NULL, &reply, &err), SEAM_OK, &err);
    json_object_put(reply);

    /* 1025 bytes and a NUL: complete, yet too large. */
    head = sprintf(frame, "{\"id\":2,\"parameters\":{\"pad\":\"");
    memset(frame + head, 'p', (size_t)(1025 - head - tail));
    strcpy(frame + 1025 - tail, "\"}}");
    CHECK(strlen(frame) == 1025);
    CHECK(write_all(server, frame, 1026) == 0);
    CHECK_RC(seam_call(c, "a.B", NULL, &reply, &err), SEAM_E_TOO_LARGE, &err);
    CHECK(reply == NULL);
    int r = check_finished(c, SEAM_E_TOO_LARGE);
    seam_close(c);
    close(server);
    return r;
}

/* By default a reply as large as PROTOCOL.md says clients should accept is taken: one of
 * 17 MiB (the old default limit was 16 MiB) arrives whole. */
static int test_default_limit(void)
{
    int server = -1;
    seam_client *c = pair_client(&server);
    CHECK(c);
    size_t n = (size_t)17 * 1024 * 1024;
    char *frame = malloc(n + 1);
    CHECK(frame);
    int head = sprintf(frame, "{\"id\":1,\"parameters\":{\"pad\":\"");
    memset(frame + head, 'p', n - (size_t)head - 3);
    memcpy(frame + n - 3, "\"}}", 4);  /* and the NUL */
    pid_t child = serve_in_child(server, frame, n + 1, 1 << 20, 0);
    free(frame);
    seam_error err;
    json_object *reply = NULL;
    int rc = seam_call(c, "a.B", NULL, &reply, &err);
    if (rc != SEAM_OK)
        kill(child, SIGKILL);  /* it would wait for ever to write the rest */
    CHECK_RC(rc, SEAM_OK, &err);
    CHECK(json_object_get_string_len(get(reply, "pad")) == (int)(n - (size_t)head - 3));
    json_object_put(reply);
    CHECK(child_ok(child));
    seam_close(c);
    return PASS;
}

/* A frame larger than the limit, never terminated: detected without waiting for its end. */
static int test_frame_too_large(void)
{
    int server = -1;
    seam_client *c = pair_client(&server);
    CHECK(c);
    CHECK_RC(seam_set_max_frame(c, 1024), SEAM_OK, (seam_error *)NULL);
    char junk[4096];
    memset(junk, ' ', sizeof junk);
    junk[0] = '{';
    CHECK(write_all(server, junk, sizeof junk) == 0);
    seam_error err;
    seam_message m;
    CHECK_RC(seam_next(c, slow(2000), &m, &err), SEAM_E_TOO_LARGE, &err);
    CHECK(strstr(err.message, "1024") != NULL);
    int r = check_finished(c, SEAM_E_TOO_LARGE);
    seam_close(c);
    close(server);
    return r;
}

static int test_invalid_utf8(void)
{
    /* A byte that is never UTF-8, an overlong '/', a surrogate, a sequence cut short by the
     * string's end, a code point above U+10FFFF, a lone continuation byte. */
    static const struct canned_reply replies[] = {
        REPLY("{\"parameters\":{\"s\":\"a\xff" "b\"},\"id\":1}\0"),
        REPLY("{\"parameters\":{\"s\":\"\xc0\xaf\"},\"id\":1}\0"),
        REPLY("{\"parameters\":{\"s\":\"\xed\xa0\x80\"},\"id\":1}\0"),
        REPLY("{\"parameters\":{\"s\":\"\xe2\x82\"},\"id\":1}\0"),
        REPLY("{\"parameters\":{\"s\":\"\xf4\x90\x80\x80\"},\"id\":1}\0"),
        REPLY("{\"parameters\":{\"\x80\":1},\"id\":1}\0"),
    };
    return EXPECT_ALL_FAIL(replies, SEAM_E_MALFORMED);
}

static int test_malformed_json(void)
{
    static const struct canned_reply replies[] = {
        REPLY("{\"parameters\":{,\"id\":1}\0"),
        REPLY("{\"parameters\":{},\"id\":1\0"), /* cut short, but with its NUL */
        REPLY("{\"parameters\":{},\"id\":1} {}\0"), /* a second value after the object */
        REPLY("\0"),
        REPLY("not json at all\0"),
    };
    return EXPECT_ALL_FAIL(replies, SEAM_E_MALFORMED);
}

static int test_not_an_object(void)
{
    static const struct canned_reply replies[] = {
        REPLY("[{\"parameters\":{},\"id\":1}]\0"),
        REPLY("\"parameters\"\0"),
        REPLY("42\0"),
        REPLY("null\0"),
    };
    return EXPECT_ALL_FAIL(replies, SEAM_E_MALFORMED);
}

static int test_bad_fields(void)
{
    static const struct canned_reply replies[] = {
        REPLY("{\"parameters\":[1,2],\"id\":1}\0"),
        REPLY("{\"parameters\":\"x\",\"id\":1}\0"),
        REPLY("{\"parameters\":null,\"id\":1}\0"),
        REPLY("{\"error\":5,\"parameters\":{},\"id\":1}\0"),
        REPLY("{\"parameters\":{},\"continues\":\"yes\",\"id\":1}\0"),
        REPLY("{\"parameters\":{},\"id\":1.5}\0"),
        REPLY("{\"parameters\":{},\"id\":[1]}\0"),
        REPLY("{\"id\":1}\0"),
    };
    return EXPECT_ALL_FAIL(replies, SEAM_E_MALFORMED);
}

/* A reply without its NUL, then the end of the stream. */
static int test_truncated(void)
{
    static const char bytes[] = "{\"parameters\":{\"rows\":[]},\"id\":1";
    int server = -1;
    seam_client *c = canned(bytes, sizeof bytes - 1, 0, &server);
    CHECK(c);
    seam_error err;
    int64_t id = 0;
    CHECK_RC(seam_send(c, "a.B", NULL, 0, &id, &err), SEAM_OK, &err);
    json_object *request = read_request(server);  /* (unread data would make it a reset) */
    CHECK(request);
    json_object_put(request);
    close(server);
    seam_message m;
    CHECK_RC(seam_next(c, slow(2000), &m, &err), SEAM_E_DISCONNECTED, &err);
    CHECK(strstr(err.message, "middle") != NULL);
    int r = check_finished(c, SEAM_E_DISCONNECTED);
    seam_close(c);
    return r;
}

/* The peer has gone before the call is written: no SIGPIPE, DISCONNECTED. */
static int test_peer_gone(void)
{
    int server = -1;
    seam_client *c = pair_client(&server);
    CHECK(c);
    close(server);
    seam_error err;
    CHECK_RC(seam_call(c, "a.B", NULL, NULL, &err), SEAM_E_DISCONNECTED, &err);
    int r = check_finished(c, SEAM_E_DISCONNECTED);
    seam_close(c);
    return r;
}

static int test_timeouts(void)
{
    int server = -1;
    seam_client *c = pair_client(&server);
    CHECK(c);
    seam_error err;
    seam_message m;
    CHECK_RC(seam_next(c, 0, &m, &err), SEAM_E_TIMEOUT, &err);
    CHECK_RC(seam_next(c, 30, &m, &err), SEAM_E_TIMEOUT, &err);

    /* Half a frame, a timeout, then the rest: nothing lost. */
    CHECK(put(server, "{\"parameters\":{\"half\":", 0) == 0);
    CHECK_RC(seam_next(c, 30, &m, &err), SEAM_E_TIMEOUT, &err);
    CHECK(put(server, "true},\"id\":9}", 1) == 0);
    CHECK_RC(seam_next(c, 1000, &m, &err), SEAM_OK, &err);
    CHECK(m.id == 9 && json_object_get_boolean(get(m.parameters, "half")));
    seam_message_free(&m);

    /* A call that times out; its late reply comes from seam_next. */
    CHECK_RC(seam_set_call_timeout(c, 30), SEAM_OK, (seam_error *)NULL);
    json_object *reply = NULL;
    CHECK_RC(seam_call(c, "a.B", NULL, &reply, &err), SEAM_E_TIMEOUT, &err);
    CHECK(reply == NULL);
    json_object *request = read_request(server);
    CHECK(request);
    int64_t id = get_int(request, "id", -1);
    json_object_put(request);
    char late[64];
    snprintf(late, sizeof late, "{\"parameters\":{\"late\":true},\"id\":%lld}", (long long)id);
    CHECK(put(server, late, 1) == 0);
    CHECK_RC(seam_next(c, 1000, &m, &err), SEAM_OK, &err);
    CHECK(m.id == id && json_object_get_boolean(get(m.parameters, "late")));
    seam_message_free(&m);
    seam_close(c);
    close(server);
    return PASS;
}

/* SEAM_FD: seam_connect(NULL) uses the inherited descriptor, marks it close-on-exec, and the
 * test plays the broker on the other end. Then bad SEAM_FD values, and the fallbacks. */
static int test_seam_fd_fake(void)
{
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    char number[16];
    snprintf(number, sizeof number, "%d", sv[0]);
    setenv("SEAM_FD", number, 1);
    setenv("SEAM_SOCKET", "/nonexistent/ignored.sock", 1);
    seam_error err;
    seam_client *c = seam_connect(NULL, &err);
    CHECK(c);
    CHECK(seam_fd(c) == sv[0]);
    CHECK(fcntl(sv[0], F_GETFD) & FD_CLOEXEC);
    CHECK(put(sv[1], "{\"parameters\":{\"version\":1,\"role\":\"plugin\"},\"id\":1}", 1) == 0);
    json_object *reply = NULL;
    CHECK_RC(seam_hello(c, "plugin", "fake", NULL, NULL, &reply, &err), SEAM_OK, &err);
    CHECK_STR(get_string(reply, "role"), "plugin");
    json_object_put(reply);
    json_object *request = read_request(sv[1]);
    CHECK(request);
    CHECK_STR(get_string(request, "method"), "org.seam.Store.Hello");
    CHECK_STR(get_string(get(request, "parameters"), "name"), "fake");
    json_object_put(request);
    seam_close(c);  /* closes sv[0] */
    CHECK(fcntl(sv[0], F_GETFD) < 0);
    close(sv[1]);

    /* The same number again: taken by the first client, so SEAM_SOCKET is next. */
    CHECK(seam_connect(NULL, &err) == NULL);
    CHECK(err.code == SEAM_E_CONNECT);
    CHECK(strstr(err.message, "/nonexistent/ignored.sock") != NULL);

    setenv("SEAM_FD", "3x", 1);
    CHECK(seam_connect(NULL, &err) == NULL && err.code == SEAM_E_CONNECT);
    CHECK(strstr(err.message, "SEAM_FD") != NULL);
    /* Not a socket, on a number no client took (pipe() could reuse sv[0]'s). */
    int p[2];
    CHECK(pipe(p) == 0);
    int high = fcntl(p[0], F_DUPFD, 500);
    CHECK(high >= 500);
    close(p[0]);
    p[0] = high;
    snprintf(number, sizeof number, "%d", p[0]);
    setenv("SEAM_FD", number, 1);
    CHECK(seam_connect(NULL, &err) == NULL && err.code == SEAM_E_CONNECT);
    CHECK(strstr(err.message, "SEAM_FD") != NULL);
    close(p[0]);
    close(p[1]);

    /* Empty SEAM_FD counts as unset: SEAM_SOCKET is next. */
    setenv("SEAM_FD", "", 1);
    CHECK(seam_connect(NULL, &err) == NULL && err.code == SEAM_E_CONNECT);
    CHECK(strstr(err.message, "/nonexistent/ignored.sock") != NULL);
    unsetenv("SEAM_FD");
    unsetenv("SEAM_SOCKET");
    setenv("XDG_RUNTIME_DIR", "/nonexistent-xdg", 1);
    CHECK(seam_connect(NULL, &err) == NULL && err.code == SEAM_E_CONNECT);
    CHECK(strstr(err.message, "/nonexistent-xdg/seam/seamd.sock") != NULL);
    unsetenv("XDG_RUNTIME_DIR");
    return PASS;
}

static int test_connect_errors(void)
{
    seam_error err;
    CHECK(seam_connect("/nonexistent/seamd.sock", &err) == NULL);
    CHECK(err.code == SEAM_E_CONNECT && err.sys_errno == ENOENT);
    CHECK(strstr(err.message, "/nonexistent/seamd.sock") != NULL);
    char longpath[300];
    memset(longpath, 'a', sizeof longpath - 1);
    longpath[0] = '/';
    longpath[sizeof longpath - 1] = '\0';
    CHECK(seam_connect(longpath, &err) == NULL && err.code == SEAM_E_CONNECT);
    CHECK(seam_connect("", &err) == NULL && err.code == SEAM_E_CONNECT);
    CHECK(seam_connect("/nonexistent/x", NULL) == NULL);
    return PASS;
}

/* ---- the real broker ------------------------------------------------------------------------ */

static char broker_dir[256];
static char broker_socket[300];
static pid_t broker_pid = -1;
static char broker_problem[512];

static int can_connect(const char *path)
{
    seam_client *c = seam_connect(path, NULL);
    if (!c)
        return 0;
    int ok = seam_call(c, "org.varlink.service.GetInfo", NULL, NULL, NULL) == SEAM_OK;
    seam_close(c);
    return ok;
}

static void start_broker(void)
{
    const char *seamd = getenv("SEAMD");
    if (!seamd || !*seamd)
        seamd = "../../.build/release/seamd";
    if (access(seamd, X_OK) != 0) {
        snprintf(broker_problem, sizeof broker_problem,
                 "no seamd at %s (set SEAMD to its path)", seamd);
        return;
    }
    snprintf(broker_dir, sizeof broker_dir, "/tmp/seam-c-test-XXXXXX");
    if (!mkdtemp(broker_dir)) {
        snprintf(broker_problem, sizeof broker_problem, "mkdtemp: %s", strerror(errno));
        broker_dir[0] = '\0';
        return;
    }
    snprintf(broker_socket, sizeof broker_socket, "%s/s.sock", broker_dir);
    char log[320];
    snprintf(log, sizeof log, "%s/seamd.log", broker_dir);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execl(seamd, seamd, "--data-dir", broker_dir, "--socket", broker_socket, "--no-roles",
              (char *)NULL);
        _exit(127);
    }
    if (pid < 0) {
        snprintf(broker_problem, sizeof broker_problem, "fork: %s", strerror(errno));
        return;
    }
    broker_pid = pid;
    for (int i = 0; i < 300; i++) {
        if (can_connect(broker_socket))
            return;
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            broker_pid = -1;
            snprintf(broker_problem, sizeof broker_problem,
                     "seamd exited at once (status %d); see %s", status, log);
            return;
        }
        usleep(50 * 1000);
    }
    snprintf(broker_problem, sizeof broker_problem, "seamd did not answer on %s within 15 s",
             broker_socket);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

static void stop_broker(void)
{
    if (broker_pid > 0) {
        kill(broker_pid, SIGKILL);
        waitpid(broker_pid, NULL, 0);
        broker_pid = -1;
    }
    if (broker_dir[0] && !getenv("SEAM_TEST_KEEP"))
        nftw(broker_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static seam_client *broker_client(void)
{
    seam_error err;
    seam_client *c = seam_connect(broker_socket, &err);
    if (!c)
        printf("    connect: %s\n", err.message);
    return c;
}

#define NEEDS_BROKER()                                                 \
    do {                                                               \
        if (broker_pid <= 0) {                                         \
            printf("    no broker: %s\n", broker_problem);             \
            return FAILED;                                             \
        }                                                              \
    } while (0)

static const char *const test_entities[] = { "Timer", "Session", NULL };

static int test_broker_hello(void)
{
    NEEDS_BROKER();
    seam_client *c = broker_client();
    CHECK(c);
    seam_error err;
    json_object *reply = NULL;
    CHECK_RC(seam_hello(c, "plugin", "c-sdk-test", test_entities, test_entities, &reply, &err),
             SEAM_OK, &err);
    CHECK(get_int(reply, "version", 0) == 1);
    CHECK_STR(get_string(reply, "role"), "plugin");
    CHECK_STR(get_string(reply, "author"), "plugin:c-sdk-test");
    CHECK(get_int(reply, "sequence", -1) >= 0);
    json_object_put(reply);

    /* A protocol version the broker does not speak. */
    json_object *p = parse("{\"version\":99}");
    CHECK_RC(seam_call(c, "org.seam.Store.Hello", p, &reply, &err), SEAM_E_REMOTE, &err);
    json_object_put(p);
    CHECK_STR(err.name, "org.seam.Store.UnsupportedVersion");
    CHECK(json_object_is_type(get(reply, "supported"), json_type_array));
    json_object_put(reply);
    seam_close(c);
    return PASS;
}

static int test_broker_save_fetch(void)
{
    NEEDS_BROKER();
    seam_client *c = broker_client();
    CHECK(c);
    seam_error err;
    CHECK_RC(seam_hello(c, "plugin", "c-sdk-test", test_entities, test_entities, NULL, &err),
             SEAM_OK, &err);
    json_object *save = parse("{\"inserts\":[{\"entity\":\"Timer\",\"values\":{\"name\":\"c-sdk\","
                              "\"steps\":[{\"label\":\"a\",\"seconds\":60}]}}]}");
    json_object *reply = NULL;
    CHECK_RC(seam_call(c, "org.seam.Store.Save", save, &reply, &err), SEAM_OK, &err);
    json_object_put(save);
    CHECK(get_int(reply, "sequence", 0) > 0);
    json_object *changes = get(reply, "changes");
    CHECK(json_object_array_length(changes) == 1);
    const char *uuid = get_string(json_object_array_get_idx(changes, 0), "uuid");
    CHECK(uuid && strlen(uuid) == 36);
    char saved[40];
    snprintf(saved, sizeof saved, "%s", uuid);
    json_object_put(reply);

    json_object *fetch = parse("{\"entity\":\"Timer\",\"predicate\":\"name == \\\"c-sdk\\\"\"}");
    CHECK_RC(seam_call(c, "org.seam.Store.Fetch", fetch, &reply, &err), SEAM_OK, &err);
    json_object_put(fetch);
    json_object *rows = get(reply, "rows");
    CHECK(json_object_array_length(rows) == 1);
    json_object *row = json_object_array_get_idx(rows, 0);
    CHECK_STR(get_string(row, "uuid"), saved);
    CHECK_STR(get_string(row, "name"), "c-sdk");
    json_object *step = json_object_array_get_idx(get(row, "steps"), 0);
    CHECK_STR(get_string(step, "label"), "a");
    CHECK(get_int(step, "seconds", 0) == 60);
    json_object_put(reply);

    /* As deep as the broker reads (one more is refused before it is sent: test_arguments). */
    json_object *deep = nested_params(30);
    CHECK_RC(seam_call(c, "org.seam.Store.Fetch", deep, &reply, &err), SEAM_OK, &err);
    json_object_put(deep);
    json_object_put(reply);
    seam_close(c);
    return PASS;
}

static int test_broker_remote_error(void)
{
    NEEDS_BROKER();
    seam_client *c = broker_client();
    CHECK(c);
    seam_error err;
    CHECK_RC(seam_hello(c, "plugin", "c-sdk-test", test_entities, test_entities, NULL, &err),
             SEAM_OK, &err);
    json_object *p = parse("{\"timer\":\"00000000-0000-4000-8000-000000000000\"}");
    json_object *reply = NULL;
    CHECK_RC(seam_call(c, "org.seam.Timers.Start", p, &reply, &err), SEAM_E_REMOTE, &err);
    json_object_put(p);
    CHECK_STR(err.name, "org.seam.Timers.NotFound");
    CHECK(err.message[0] != '\0');
    CHECK_STR(get_string(reply, "uuid"), "00000000-0000-4000-8000-000000000000");
    json_object_put(reply);

    CHECK_RC(seam_call(c, "org.seam.Store.Frobnicate", NULL, NULL, &err), SEAM_E_REMOTE, &err);
    CHECK_STR(err.name, "org.varlink.service.MethodNotFound");

    /* The connection goes on. */
    CHECK_RC(seam_call(c, "org.varlink.service.GetInfo", NULL, &reply, &err), SEAM_OK, &err);
    CHECK(get_string(reply, "product") != NULL);
    json_object_put(reply);
    seam_close(c);
    return PASS;
}

/* A plugin that declares it writes nothing may not save (once the broker enforces
 * capabilities; until then this test says so and skips). */
static int test_broker_capabilities(void)
{
    NEEDS_BROKER();
    seam_client *c = broker_client();
    CHECK(c);
    seam_error err;
    const char *reads[] = { "Session", NULL };
    json_object *reply = NULL;
    CHECK_RC(seam_hello(c, "plugin", "c-sdk-reader", reads, NULL, &reply, &err), SEAM_OK, &err);
    json_object_put(reply);
    json_object *save = parse("{\"inserts\":[{\"entity\":\"Timer\",\"values\":{\"name\":\"c-sdk-denied\"}}]}");
    int rc = seam_call(c, "org.seam.Store.Save", save, &reply, &err);
    json_object_put(save);
    json_object_put(reply);
    seam_close(c);
    if (rc == SEAM_OK)
        return skip("this seamd does not enforce capabilities yet");
    CHECK_RC(rc, SEAM_E_REMOTE, &err);
    CHECK_STR(err.name, "org.seam.Store.PermissionDenied");
    return PASS;
}

/* Subscribe to Session: the result, then a diff after a Flash on the same connection (whose
 * reply may come before or after the diff), then Unsubscribe and the end. */
static int test_broker_subscribe(void)
{
    NEEDS_BROKER();
    seam_client *c = broker_client();
    CHECK(c);
    seam_error err;
    CHECK_RC(seam_hello(c, "plugin", "c-sdk-test", test_entities, test_entities, NULL, &err),
             SEAM_OK, &err);
    int64_t sub = 0;
    CHECK_RC(seam_subscribe(c, "Session", NULL, "name", &sub, &err), SEAM_OK, &err);
    CHECK(sub > 0);
    seam_message m;
    CHECK_RC(seam_next(c, slow(5000), &m, &err), SEAM_OK, &err);
    CHECK(m.id == sub && m.continues && !m.error);
    CHECK_STR(m.kind, "result");
    CHECK(m.sequence >= 0);
    CHECK(json_object_is_type(get(m.parameters, "rows"), json_type_array));
    int64_t subscription = get_int(m.parameters, "subscription", -1);
    int64_t result_sequence = m.sequence;
    seam_message_free(&m);
    CHECK(subscription >= 0);

    json_object *flash = parse("{\"seconds\":60,\"name\":\"x\"}");
    json_object *reply = NULL;
    CHECK_RC(seam_call(c, "org.seam.Timers.Flash", flash, &reply, &err), SEAM_OK, &err);
    json_object_put(flash);
    char session[40];
    CHECK(get_string(reply, "session"));
    snprintf(session, sizeof session, "%s", get_string(reply, "session"));
    json_object_put(reply);

    CHECK_RC(seam_next(c, slow(5000), &m, &err), SEAM_OK, &err);
    CHECK(m.id == sub && m.continues && !m.error);
    CHECK_STR(m.kind, "diff");
    CHECK(m.sequence > result_sequence);
    json_object *inserted = get(m.parameters, "inserted");
    CHECK(json_object_array_length(inserted) == 1);
    json_object *entry = json_object_array_get_idx(inserted, 0);
    CHECK_STR(get_string(entry, "uuid"), session);
    CHECK_STR(get_string(get(entry, "row"), "name"), "x");
    CHECK_STR(get_string(get(entry, "row"), "state"), "running");
    seam_message_free(&m);

    /* Unsubscribe: the subscription's last reply ("end", no continues) comes before the
     * Unsubscribe reply, so seam_call keeps it for seam_next. */
    json_object *un = json_object_new_object();
    json_object_object_add(un, "subscription", json_object_new_int64(subscription));
    CHECK_RC(seam_call(c, "org.seam.Store.Unsubscribe", un, NULL, &err), SEAM_OK, &err);
    json_object_put(un);
    CHECK_RC(seam_next(c, 0, &m, &err), SEAM_OK, &err);
    CHECK(m.id == sub && !m.continues);
    CHECK_STR(m.kind, "end");
    seam_message_free(&m);
    CHECK_RC(seam_next(c, 0, &m, &err), SEAM_E_TIMEOUT, &err);
    seam_close(c);
    return PASS;
}

/* Many calls sent before reading any reply: replies matched by id. */
static int test_broker_pipelining(void)
{
    NEEDS_BROKER();
    seam_client *c = broker_client();
    CHECK(c);
    seam_error err;
    enum { N = 200 };
    int64_t ids[N];
    json_object *count = parse("{\"entity\":\"Timer\"}");
    for (int i = 0; i < N; i++)
        CHECK_RC(seam_send(c, i % 2 ? "org.seam.Store.Count" : "org.varlink.service.GetInfo",
                           i % 2 ? count : NULL, 0, &ids[i], &err), SEAM_OK, &err);
    json_object_put(count);
    for (int i = 0; i < N; i++) {
        seam_message m;
        CHECK_RC(seam_next(c, slow(5000), &m, &err), SEAM_OK, &err);
        CHECK(m.id == ids[i] && !m.error);
        CHECK(i % 2 ? get_int(m.parameters, "count", -1) >= 1 : get(m.parameters, "product") != NULL);
        seam_message_free(&m);
    }
    seam_close(c);
    return PASS;
}

/* SEAM_FD set to a socket connected to seamd; SEAM_SOCKET; $XDG_RUNTIME_DIR/seam/seamd.sock. */
static int test_broker_environment(void)
{
    NEEDS_BROKER();
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(fd >= 0);
    struct sockaddr_un addr;
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    CHECK(strlen(broker_socket) < sizeof addr.sun_path);
    memcpy(addr.sun_path, broker_socket, strlen(broker_socket));
    CHECK(connect(fd, (struct sockaddr *)&addr, sizeof addr) == 0);
    /* A number no earlier client of this process took (each is taken once). */
    int high = fcntl(fd, F_DUPFD, 600);
    CHECK(high >= 600);
    close(fd);
    fd = high;
    char number[16];
    snprintf(number, sizeof number, "%d", fd);
    setenv("SEAM_FD", number, 1);
    setenv("SEAM_SOCKET", "/nonexistent/ignored.sock", 1);
    seam_error err;
    seam_client *c = seam_connect(NULL, &err);
    unsetenv("SEAM_FD");
    CHECK(c);
    CHECK(seam_fd(c) == fd);
    json_object *reply = NULL;
    CHECK_RC(seam_call(c, "org.varlink.service.GetInfo", NULL, &reply, &err), SEAM_OK, &err);
    CHECK_STR(get_string(reply, "product"), "seamd");
    json_object_put(reply);
    seam_close(c);

    setenv("SEAM_SOCKET", broker_socket, 1);
    c = seam_connect(NULL, &err);
    unsetenv("SEAM_SOCKET");
    CHECK(c);
    CHECK_RC(seam_call(c, "org.varlink.service.GetInfo", NULL, NULL, &err), SEAM_OK, &err);
    seam_close(c);

    char xdg[300], link[320];
    snprintf(xdg, sizeof xdg, "%s/xdg", broker_dir);
    snprintf(link, sizeof link, "%s/seam", xdg);
    CHECK(mkdir(xdg, 0700) == 0 && mkdir(link, 0700) == 0);
    snprintf(link, sizeof link, "%s/seam/seamd.sock", xdg);
    CHECK(symlink(broker_socket, link) == 0);
    setenv("XDG_RUNTIME_DIR", xdg, 1);
    c = seam_connect(NULL, &err);
    unsetenv("XDG_RUNTIME_DIR");
    CHECK(c);
    CHECK_RC(seam_call(c, "org.varlink.service.GetInfo", NULL, NULL, &err), SEAM_OK, &err);
    seam_close(c);
    return PASS;
}

/* The broker dies (SIGKILL) under a subscriber: DISCONNECTED, for good, without a crash. */
static int test_broker_killed(void)
{
    NEEDS_BROKER();
    seam_client *c = broker_client();
    CHECK(c);
    seam_error err;
    int64_t sub = 0;
    CHECK_RC(seam_subscribe(c, "Session", "state == \"running\"", NULL, &sub, &err), SEAM_OK, &err);
    seam_message m;
    CHECK_RC(seam_next(c, slow(5000), &m, &err), SEAM_OK, &err);
    CHECK_STR(m.kind, "result");
    seam_message_free(&m);

    CHECK(kill(broker_pid, SIGKILL) == 0);
    CHECK(waitpid(broker_pid, NULL, 0) == broker_pid);
    broker_pid = -1;
    CHECK_RC(seam_next(c, slow(5000), &m, &err), SEAM_E_DISCONNECTED, &err);
    int r = check_finished(c, SEAM_E_DISCONNECTED);
    seam_close(c);
    return r;
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* This process must not find a broker of its own through the environment. */
    unsetenv("SEAM_FD");
    unsetenv("SEAM_SOCKET");
    unsetenv("XDG_RUNTIME_DIR");

    run("strerror: a distinct message per code", test_strerror);
    run("arguments: refused before anything is sent", test_arguments);
    run("wire: calls, ids, more, oneway and Hello as written", test_wire_format);
    run("remote errors: name, message, parameters; connection goes on", test_remote_errors);
    run("interleaved replies kept for seam_next in order", test_interleaved_replies);
    run("frames in pieces, several per read, 3 MiB in one", test_partial_reads);
    run("frame limit: exactly the limit passes, one byte more fails", test_frame_limit);
    run("frame larger than the limit without its NUL: TOO_LARGE", test_frame_too_large);
    run("a 17 MiB reply is taken by default (PROTOCOL.md: up to 512 MiB)", test_default_limit);
    run("invalid UTF-8 in a string: MALFORMED", test_invalid_utf8);
    run("malformed JSON: MALFORMED", test_malformed_json);
    run("a JSON array or scalar instead of an object: MALFORMED", test_not_an_object);
    run("parameters not an object, mistyped fields: MALFORMED", test_bad_fields);
    run("a reply without its NUL then EOF: DISCONNECTED", test_truncated);
    run("writing to a closed peer: DISCONNECTED, no SIGPIPE", test_peer_gone);
    run("timeouts leave the connection usable", test_timeouts);
    run("SEAM_FD with a fake broker; bad values; fallbacks", test_seam_fd_fake);
    run("connect errors name the path", test_connect_errors);

    start_broker();
    if (broker_pid <= 0)
        printf("note: %s\n", broker_problem);
    run("seamd: Hello as a plugin with capabilities", test_broker_hello);
    run("seamd: Save a Timer and Fetch it back", test_broker_save_fetch);
    run("seamd: a remote error (org.seam.Timers.NotFound)", test_broker_remote_error);
    run("seamd: capabilities refuse a save outside them", test_broker_capabilities);
    run("seamd: Subscribe to Session, result then diff after Flash, end", test_broker_subscribe);
    run("seamd: 200 pipelined calls matched by id", test_broker_pipelining);
    run("seamd: SEAM_FD, SEAM_SOCKET, XDG_RUNTIME_DIR", test_broker_environment);
    run("seamd: killed under a subscriber: DISCONNECTED, no crash", test_broker_killed);
    stop_broker();

    printf("%d tests: %d passed, %d failed, %d skipped\n", run_count,
           run_count - fail_count - skip_count, fail_count, skip_count);
    return fail_count ? 1 : 0;
}
