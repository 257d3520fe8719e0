/*
 * vc_ctl: the control endpoint every daemon answers, and its client.
 *
 * A ROUTER socket takes Commands (proto/control.proto) from REQ clients and
 * answers each with a Reply. "ping" and "status" replies start with the
 * facts every daemon has (daemon, pid, version, uptime); the daemon's own
 * handler adds to them and answers its other verbs.
 */
#ifndef VC_CTL_H
#define VC_CTL_H

#include "control.pb-c.h"

#include <sys/types.h>

typedef struct vc_ctl vc_ctl_t;

/* Called once per command. reply starts as ok=true for ping/status and
 * ok=false "unknown command" otherwise; set it with the helpers below. The
 * command is borrowed for the duration of the call. */
typedef void (*vc_ctl_fn)(void *ctx, const Vc__Command *cmd, Vc__Reply *reply);

vc_ctl_t *vc_ctl_new(void *zctx, const char *endpoint, const char *daemon, vc_ctl_fn fn, void *ctx);

/* A daemon's control verbs, one table: each row's name, arguments and
 * help, and what runs it. A daemon's vc_ctl_fn hands every command to
 * vc_verbs_run(). */
typedef struct vc_verb {
    const char *name, *args, *help;
    vc_ctl_fn run;
} vc_verb_t;

/* Runs the row cmd->verb names. "help" answers with a record a row; any
 * other verb not in the table is refused, naming the daemon's verbs.
 * Returns 1 if a row ran. */
int vc_verbs_run(const vc_verb_t *verbs, size_t n, void *ctx, const Vc__Command *cmd, Vc__Reply *reply);
void vc_ctl_destroy(vc_ctl_t **ctl);
/* Puts an ipc:// control socket at its path (bound under a name of its own
 * until then): once the daemon is ready to answer. 0 or -1 (logged). */
int vc_ctl_publish(vc_ctl_t *ctl);
/* Over ipc://, commands other than ping and status only from root or
 * suite_uid (the kernel's word on who connected, SO_PEERCRED): a pool's
 * control socket is reachable by its own user, and so by its scripts,
 * which must not scale, reload or stop it. Without this call (a suite
 * started by a normal user, where every process is that user's, or a
 * daemon run alone) the socket's mode is the only wall. */
void vc_ctl_trust(vc_ctl_t *ctl, uid_t suite_uid);
/* The same, but a process of suite_uid may give a verb only if allow says
 * so (1) for its pid; root any: the supervisor's socket, where vc-fed may
 * ask a reload and vc-panel change site files, and no other process of
 * the suite's user either. */
typedef int (*vc_ctl_allow_fn)(void *ctx, pid_t pid, const char *verb);
void vc_ctl_trust_callers(vc_ctl_t *ctl, uid_t suite_uid, vc_ctl_allow_fn allow, void *ctx);
/* The socket to poll for ZMQ_POLLIN. Borrowed. */
void *vc_ctl_socket(vc_ctl_t *ctl);
/* Answers every command waiting; never blocks. Returns how many. */
int vc_ctl_handle(vc_ctl_t *ctl);

/* A reply given later, without holding up the daemon's loop (the
 * supervisor answers `vc restart` once the successors are ready): called
 * in the handler, vc_ctl_defer keeps who asked, and the reply the handler
 * filled is dropped; vc_ctl_answer sends one later and frees later. */
typedef struct vc_ctl_later vc_ctl_later_t;
vc_ctl_later_t *vc_ctl_defer(vc_ctl_t *ctl);
void vc_ctl_answer(vc_ctl_t *ctl, vc_ctl_later_t *later, const Vc__Reply *reply);

/* Reply builders; strings are copied. */
void vc_reply_ok(Vc__Reply *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void vc_reply_fail(Vc__Reply *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void vc_reply_field(Vc__Reply *r, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A new record appended to the reply; borrowed, owned by the reply. */
Vc__Record *vc_reply_record(Vc__Reply *r);
void vc_record_field(Vc__Record *rec, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The value of a field, or NULL. Borrowed from r. */
const char *vc_reply_get(const Vc__Reply *r, const char *key);
const char *vc_record_get(const Vc__Record *rec, const char *key);

/* A command of verb, args and payload (plen bytes, may be 0), pointing at
 * them (nothing copied): for the control socket and for another node's
 * vc-fed over NATS alike. */
Vc__Command vc_ctl_command(const char *verb, const char *const *args, size_t nargs, const void *payload, size_t plen);

/* Sends one command and waits up to timeout_ms for the reply. On success
 * *out is a reply the caller frees with vc__reply__free_unpacked(*out,
 * NULL). Errors: -VC_ERR_NOTRUNNING (no socket there), -VC_ERR_TIMEOUT,
 * -VC_ERR_PROTO, or a negative errno. */
int vc_ctl_call(void *zctx, const char *endpoint, const char *verb, const char *const *args, size_t nargs,
                long timeout_ms, Vc__Reply **out);
/* The same, with bytes the arguments cannot carry (Command.payload). */
int vc_ctl_call_payload(void *zctx, const char *endpoint, const char *verb, const char *const *args, size_t nargs,
                        const void *payload, size_t plen, long timeout_ms, Vc__Reply **out);

#endif
