/*
 * seam.h — a small C client for seamd, the Seam store broker.
 *
 * seamd speaks varlink over a Unix stream socket: each message is one JSON object followed by
 * a NUL byte. Seam adds one extension, an "id" on each call that every reply echoes, so one
 * connection can carry many calls and subscriptions at once. The wire contract is
 * Protocol/PROTOCOL.md; the methods are in org.seam.Store.varlink and org.seam.Timers.varlink.
 *
 * This library does the connection, the framing, the ids and the error handling; parameters
 * and replies are json-c objects (https://github.com/json-c/json-c), so any method of the
 * broker can be called without this library knowing about it.
 *
 *     seam_error err;
 *     seam_client *c = seam_connect(NULL, &err);
 *     if (!c) { fprintf(stderr, "%s\n", err.message); return 1; }
 *     if (seam_hello(c, "cli", NULL, NULL, NULL, NULL, &err) != SEAM_OK) { ... }
 *     json_object *p = json_tokener_parse("{\"entity\":\"Timer\"}"), *reply = NULL;
 *     int rc = seam_call(c, "org.seam.Store.Fetch", p, &reply, &err);
 *     json_object_put(p);
 *     if (rc == SEAM_OK) { ... use reply ...; json_object_put(reply); }
 *     seam_close(c);
 *
 * Conventions
 *   - Functions that can fail return an int: SEAM_OK (0) or one of the negative SEAM_E_* codes.
 *   - Every `seam_error *err` argument may be NULL. When given, it is filled on every return:
 *     code SEAM_OK and empty strings on success, else the code, errno (if a system call failed)
 *     and a message.
 *   - json_object arguments are borrowed: the library takes its own reference when it needs
 *     one and never releases yours. json_object results (`json_object **` out parameters) are
 *     owned by the caller, who releases them with json_object_put(). Out parameters are set to
 *     NULL whenever there is nothing to return.
 *   - A seam_client is used by one thread at a time. It is never left in an undefined state:
 *     after SEAM_E_DISCONNECTED, SEAM_E_TOO_LARGE, SEAM_E_MALFORMED or SEAM_E_IO the connection
 *     is finished, and every later call returns that same code (without touching the socket)
 *     until seam_close(). Other codes leave the connection usable.
 *   - SIGPIPE is never raised by this library (it writes with MSG_NOSIGNAL); EINTR is retried.
 *
 * Link with `pkg-config --cflags --libs seam` (which brings json-c).
 */
#ifndef SEAM_H
#define SEAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this library, and the protocol version it speaks (sent by seam_hello). */
#define SEAM_LIBRARY_VERSION "0.1.0"
#define SEAM_PROTOCOL_VERSION 1

/* The largest reply frame accepted by default: what PROTOCOL.md says clients should accept
 * (see seam_set_max_frame). */
#define SEAM_DEFAULT_MAX_FRAME ((size_t)512 * 1024 * 1024)

/* The largest request frame the broker accepts; bigger requests fail with SEAM_E_ARGUMENT
 * before anything is sent. */
#define SEAM_BROKER_MAX_FRAME ((size_t)4 * 1024 * 1024)

/* Result codes. */
enum {
    SEAM_OK = 0,
    /* seam_connect: no broker at the socket, a bad SEAM_FD, a path too long, … */
    SEAM_E_CONNECT = -1,
    /* The broker closed the connection (also in the middle of a frame) or reset it. Final. */
    SEAM_E_DISCONNECTED = -2,
    /* A reply frame was larger than the client's limit (seam_set_max_frame). Final. */
    SEAM_E_TOO_LARGE = -3,
    /* A reply frame was not valid UTF-8, not JSON, not a JSON object, or lacked or mistyped
     * a field ("parameters" must be an object, "error" a string, "continues" a boolean,
     * "id" an integer or a string; a reply has "parameters" or "error"). Final. */
    SEAM_E_MALFORMED = -4,
    /* The broker answered the call with a varlink error: err->name is its name,
     * err->message its message. The connection goes on. */
    SEAM_E_REMOTE = -5,
    /* Nothing arrived in time. The connection goes on; a late reply is returned by
     * seam_next. */
    SEAM_E_TIMEOUT = -6,
    /* A system call on the socket failed (err->sys_errno says how). Final. */
    SEAM_E_IO = -7,
    /* A NULL client, a bad method name, parameters that are not an object, a request too
     * large for the broker, … Nothing was sent. */
    SEAM_E_ARGUMENT = -8,
    /* Out of memory. Nothing was sent; when a message already read could not be kept, the
     * connection is finished. */
    SEAM_E_NOMEM = -9,
};

/* An open connection to seamd. Opaque. */
typedef struct seam_client seam_client;

/* What went wrong. Plain storage: nothing to free; strings are truncated to fit. */
typedef struct seam_error {
    int code;           /* a SEAM_* code */
    int sys_errno;      /* errno of the failed system call, else 0 */
    char name[256];     /* SEAM_E_REMOTE: the varlink error, e.g. "org.seam.Store.NotFound" */
    char message[512];  /* a sentence for people; for SEAM_E_REMOTE the error's "message"
                           parameter, else its parameters as JSON */
} seam_error;

/* One message from the broker: a reply to a call, or one reply of a call made with "more"
 * (each result, diff, resync and the end of a subscription). */
typedef struct seam_message {
    int64_t id;               /* the id of the call it answers (from seam_send, seam_subscribe,
                                 seam_call), or 0 when the broker sent none (a message to the
                                 whole connection, such as ShuttingDown) */
    bool continues;           /* more replies to this call follow */
    const char *error;        /* NULL, or the varlink error name (e.g.
                                 "org.seam.Store.ShuttingDown"); then parameters are the
                                 error's parameters */
    json_object *parameters;  /* always an object (empty when the reply had none) */
    const char *kind;         /* parameters' "kind" when it is a string, else NULL: for
                                 subscriptions "result", "diff", "resync" or "end" */
    int64_t sequence;         /* parameters' "sequence" when it is an integer, else -1 */
    json_object *frame;       /* the whole reply; the fields above point into it */
} seam_message;

/* Flags of seam_send. */
enum {
    SEAM_CALL_MORE = 1,    /* the call may have several replies (required for Subscribe) */
    SEAM_CALL_ONEWAY = 2,  /* the broker sends no reply */
};

/*
 * Connects to seamd.
 *
 * socket_path: the socket to connect to, or NULL for the broker of this session, found as
 * PROTOCOL.md says: the descriptor in $SEAM_FD when set (a socket seamd handed to a process
 * it started; it is marked close-on-exec, and cannot be reopened once closed; the first client
 * of the process takes it, and later ones go on to the next place), else
 * $SEAM_SOCKET, else $XDG_RUNTIME_DIR/seam/seamd.sock, else /tmp/seam-$UID/seamd.sock. Empty
 * variables count as unset.
 *
 * Returns a client to release with seam_close(), or NULL with err filled: SEAM_E_CONNECT
 * (no broker there, a SEAM_FD that is not an open stream socket, a path too long),
 * SEAM_E_NOMEM.
 */
seam_client *seam_connect(const char *socket_path, seam_error *err);

/*
 * Makes a client of a connected stream socket (socket activation, a socketpair in tests).
 * On success the client owns fd and closes it in seam_close(); its flags are not changed.
 * On failure (SEAM_E_CONNECT when fd is not a stream socket, SEAM_E_NOMEM) fd stays the
 * caller's, open.
 */
seam_client *seam_connect_fd(int fd, seam_error *err);

/* Closes the connection and frees the client with the messages it still holds. NULL is
 * fine. */
void seam_close(seam_client *c);

/*
 * The socket, for poll() loops (wait for POLLIN), or -1 for NULL. Do not read or write it
 * yourself. The client may already hold messages the socket no longer signals (seam_call
 * keeps the other calls' replies it reads while waiting for its own, and one read may bring
 * several messages), so after poll() wakes you, and after each seam_call, take messages with
 * seam_next(c, 0, …) until it returns SEAM_E_TIMEOUT.
 */
int seam_fd(const seam_client *c);

/*
 * Sets the largest reply frame this client accepts, in bytes without the NUL (default
 * SEAM_DEFAULT_MAX_FRAME, 512 MiB, the most the broker sends). A bigger frame finishes the
 * connection with SEAM_E_TOO_LARGE, since the stream cannot be resynchronised. Lower it to
 * bound what one reply may make this process hold. The read buffer grows only as frames
 * need it. Returns SEAM_OK, or SEAM_E_ARGUMENT for a NULL client or 0 bytes.
 */
int seam_set_max_frame(seam_client *c, size_t bytes);

/*
 * Sets how long seam_call and seam_hello wait for their reply, in milliseconds; negative
 * (the default) waits for ever. A call that times out returns SEAM_E_TIMEOUT; its reply,
 * when it comes, is returned by seam_next. Returns SEAM_OK, or SEAM_E_ARGUMENT for NULL.
 */
int seam_set_call_timeout(seam_client *c, int timeout_ms);

/*
 * Calls org.seam.Store.Hello: says which protocol version the client speaks and who it is.
 * A connection the client opened that never says Hello may read but not save; one seamd handed
 * to a plugin it starts (SEAM_FD) may do neither until its Hello declares what it touches.
 *
 * role: "cli" or "plugin" (NULL: the broker's default, "cli"). name: the plugin's name
 * (required by the broker for "plugin"; NULL omits it). reads, writes: NULL-terminated arrays
 * of the entity names the client reads and writes; when either is non-NULL the call carries
 * "capabilities": {"reads": […], "writes": […]} (a NULL array is sent as empty), and a
 * broker that enforces them answers calls outside them with org.seam.Store.PermissionDenied.
 * When both are NULL, no capabilities are sent.
 *
 * reply (may be NULL): the Hello reply's parameters (version, role, author, product,
 * sequence), owned by the caller. Returns what seam_call returns.
 */
int seam_hello(seam_client *c, const char *role, const char *name,
               const char *const *reads, const char *const *writes,
               json_object **reply, seam_error *err);

/*
 * Calls a method and waits for its reply (see seam_set_call_timeout). Replies to other calls
 * (subscriptions) that arrive meanwhile are kept, in order, for seam_next.
 *
 * method: "INTERFACE.Member", e.g. "org.seam.Store.Fetch". parameters: an object, or NULL
 * for none; borrowed.
 * reply (may be NULL): set to the reply's parameters (an object, owned by the caller) on
 * SEAM_OK, and on SEAM_E_REMOTE to the error's parameters (e.g. NotFound's uuid); else NULL.
 *
 * Returns SEAM_OK; SEAM_E_REMOTE (err->name, err->message); SEAM_E_TIMEOUT; SEAM_E_ARGUMENT;
 * SEAM_E_NOMEM; or a final SEAM_E_DISCONNECTED, SEAM_E_TOO_LARGE, SEAM_E_MALFORMED, SEAM_E_IO.
 * SEAM_E_REMOTE with err->name "org.seam.Store.ShuttingDown" also ends a call when seamd,
 * stopping, tells the whole connection so (without an id): it answers nothing after that.
 */
int seam_call(seam_client *c, const char *method, json_object *parameters,
              json_object **reply, seam_error *err);

/*
 * Sends a call without waiting for its reply; replies come from seam_next with this call's id.
 * flags: 0, SEAM_CALL_MORE (several replies, the last one without continues), or
 * SEAM_CALL_ONEWAY (none). call_id (may be NULL): set to the call's id, a positive integer
 * unique on this connection. This is how to subscribe with parameters seam_subscribe does
 * not take (limit, fields, since, predicate parameters): org.seam.Store.Subscribe with
 * SEAM_CALL_MORE.
 *
 * Returns SEAM_OK, SEAM_E_ARGUMENT, SEAM_E_NOMEM, or a final SEAM_E_DISCONNECTED/SEAM_E_IO.
 */
int seam_send(seam_client *c, const char *method, json_object *parameters, unsigned flags,
              int64_t *call_id, seam_error *err);

/*
 * Subscribes to a live query: org.seam.Store.Subscribe with "more". entity is required;
 * predicate (in the language of Protocol/predicates.md) and sort ("name,-startedAt") may be
 * NULL. call_id (may be NULL) receives the call's id; its replies come from seam_next: first
 * the "result" (all rows), then a "diff" per commit that changes the result (deleted,
 * inserted, updated, moved), a "resync" (all rows again) after the client fell behind, and an
 * "end" without continues after org.seam.Store.Unsubscribe. A subscription the broker
 * refuses (an unknown entity, a predicate that does not parse) gets an error reply instead.
 * Returns what seam_send returns.
 */
int seam_subscribe(seam_client *c, const char *entity, const char *predicate, const char *sort,
                   int64_t *call_id, seam_error *err);

/*
 * Takes the next message: one kept by an earlier seam_call, else one read from the socket,
 * waiting up to timeout_ms milliseconds (0: only what has arrived; negative: for ever).
 *
 * On SEAM_OK, *out is filled (an error reply is a message too: check out->error) and must be
 * released with seam_message_free(). On any other return *out is zeroed (safe to free).
 * Returns SEAM_OK; SEAM_E_TIMEOUT; SEAM_E_ARGUMENT; or a final SEAM_E_DISCONNECTED,
 * SEAM_E_TOO_LARGE, SEAM_E_MALFORMED, SEAM_E_IO (messages already kept are returned first).
 */
int seam_next(seam_client *c, int timeout_ms, seam_message *out, seam_error *err);

/* Releases a message from seam_next and zeroes it. NULL and zeroed messages are fine. To keep
 * its parameters, take a reference first: json_object_get(m->parameters). */
void seam_message_free(seam_message *m);

/* A short description of a SEAM_* code ("the broker closed the connection"). Never NULL. */
const char *seam_strerror(int code);

#ifdef __cplusplus
}
#endif

#endif /* SEAM_H */
