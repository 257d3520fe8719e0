#include "vc_ctl.h"
#include "vc_log.h"
#include "vc_zmq.h"
#include "vc_util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

struct vc_ctl {
    void *sock;
    char *daemon;
    vc_ctl_fn fn;
    void *ctx;
    uint64_t started_ms;
    vc_zparts_t fr;
    int deferred; /* the handler called vc_ctl_defer */
    int ipc;      /* bound to ipc://: senders have a uid */
    int trusting; /* vc_ctl_trust was called: commands only from trusted */
    uid_t suite_uid;
    vc_ctl_allow_fn allow; /* vc_ctl_trust_callers: what each process of the suite's user may give */
    void *allow_ctx;
    char *path; /* an ipc:// endpoint's file, bound as PATH.PID until published */
    char *hidden;
    ino_t ino; /* the published file, removed at the end if still ours */
};

struct vc_ctl_later {
    zmq_msg_t id; /* the asker's routing id */
};

/* An ipc:// control socket is bound as PATH.PID and renamed onto PATH
 * once the daemon is ready (vc_ctl_publish), as its request link is
 * (vc_link_listen_hidden): during `vc restart` the running process answers
 * until its successor can. */
vc_ctl_t *vc_ctl_new(void *zctx, const char *endpoint, const char *daemon, vc_ctl_fn fn, void *ctx)
{
    char *path = NULL, *hidden = NULL, *bind_at = NULL;
    /* PATH.PID must fit a Unix socket's path (108 bytes with its NUL); a
     * longer one is bound in place, as before. */
    if (strncmp(endpoint, "ipc://", 6) == 0 &&
        strlen(endpoint + 6) + 1 + 10 < sizeof(((struct sockaddr_un *)0)->sun_path)) {
        path = vc_strdup(endpoint + 6);
        hidden = vc_asprintf("%s.%d", path, (int)getpid());
        bind_at = vc_asprintf("ipc://%s", hidden);
    }
    void *s = vc_socket(zctx, ZMQ_ROUTER, bind_at ? bind_at : endpoint, 1);
    free(bind_at);
    if (s == NULL) {
        free(path);
        free(hidden);
        vc_log(VC_LOG_ERR, "ctl", "zmq_bind() failed while opening the control endpoint \"%s\": %s", endpoint,
               zmq_strerror(errno));
        return NULL;
    }
    vc_ctl_t *c = vc_calloc(1, sizeof(*c));
    c->path = path;
    c->hidden = hidden;
    c->ipc = strncmp(endpoint, "ipc://", 6) == 0;
    c->sock = s;
    c->daemon = vc_strdup(daemon);
    c->fn = fn;
    c->ctx = ctx;
    c->started_ms = vc_mono_ms();
    return c;
}

int vc_ctl_publish(vc_ctl_t *c)
{
    if (c->hidden == NULL)
        return 0;
    struct stat st;
    if (rename(c->hidden, c->path) < 0 || lstat(c->path, &st) < 0) {
        vc_log(VC_LOG_ERR, "ctl", "could not put the control socket at \"%s\": %s", c->path, strerror(errno));
        return -1;
    }
    c->ino = st.st_ino;
    free(c->hidden);
    c->hidden = NULL;
    return 0;
}

void vc_ctl_destroy(vc_ctl_t **pc)
{
    vc_ctl_t *c = *pc;
    if (c == NULL)
        return;
    zmq_close(c->sock);
    /* Our file only: a successor's, renamed over it, stays. */
    struct stat st;
    if (c->ino && lstat(c->path, &st) == 0 && st.st_ino == c->ino)
        unlink(c->path);
    if (c->hidden)
        unlink(c->hidden);
    free(c->path);
    free(c->hidden);
    vc_zparts_fini(&c->fr);
    free(c->daemon);
    free(c);
    *pc = NULL;
}

void *vc_ctl_socket(vc_ctl_t *c)
{
    return c->sock;
}

static char *vfmt(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
static char *vfmt(const char *fmt, va_list ap)
{
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        VC_ASSERT(!"out of memory");
    return s;
}

static void set_message(Vc__Reply *r, int ok, const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));
static void set_message(Vc__Reply *r, int ok, const char *fmt, va_list ap)
{
    if (r->message && r->message != protobuf_c_empty_string)
        free(r->message);
    r->ok = ok;
    r->message = vfmt(fmt, ap);
}

void vc_reply_ok(Vc__Reply *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_message(r, 1, fmt, ap);
    va_end(ap);
}

void vc_reply_fail(Vc__Reply *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_message(r, 0, fmt, ap);
    va_end(ap);
}

static void add_field(Vc__Field ***fields, size_t *n, const char *key, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));
static void add_field(Vc__Field ***fields, size_t *n, const char *key, const char *fmt, va_list ap)
{
    Vc__Field *f = vc_malloc(sizeof(*f));
    vc__field__init(f);
    f->key = vc_strdup(key);
    f->value = vfmt(fmt, ap);
    *fields = vc_realloc(*fields, (*n + 1) * sizeof(**fields));
    (*fields)[(*n)++] = f;
}

void vc_reply_field(Vc__Reply *r, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add_field(&r->fields, &r->n_fields, key, fmt, ap);
    va_end(ap);
}

Vc__Record *vc_reply_record(Vc__Reply *r)
{
    Vc__Record *rec = vc_malloc(sizeof(*rec));
    vc__record__init(rec);
    r->records = vc_realloc(r->records, (r->n_records + 1) * sizeof(*r->records));
    r->records[r->n_records++] = rec;
    return rec;
}

void vc_record_field(Vc__Record *rec, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add_field(&rec->fields, &rec->n_fields, key, fmt, ap);
    va_end(ap);
}

static const char *get(Vc__Field *const *fields, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(fields[i]->key, key) == 0)
            return fields[i]->value;
    return NULL;
}

const char *vc_reply_get(const Vc__Reply *r, const char *key)
{
    return get(r->fields, r->n_fields, key);
}

const char *vc_record_get(const Vc__Record *rec, const char *key)
{
    return get(rec->fields, rec->n_fields, key);
}

/* One command: [identity][empty][Command] in, [identity][empty][Reply] out. */
void vc_ctl_trust(vc_ctl_t *c, uid_t suite_uid)
{
    c->trusting = c->ipc; /* tcp:// is CurveZMQ's */
    c->suite_uid = suite_uid;
}

void vc_ctl_trust_callers(vc_ctl_t *c, uid_t suite_uid, vc_ctl_allow_fn allow, void *ctx)
{
    vc_ctl_trust(c, suite_uid);
    c->allow = allow;
    c->allow_ctx = ctx;
}

/* 1 if the caller may give verb; 0 if it is not root nor the suite's user;
 * -1 if it is the suite's user, but not the process this verb is for. */
static int trusted(const vc_ctl_t *c, zmq_msg_t *m, const char *verb)
{
    if (!c->trusting)
        return 1;
    uid_t uid;
    pid_t pid;
    if (vc_zmsg_peer(m, &uid, &pid) != 0 || (uid != 0 && uid != c->suite_uid))
        return 0;
    if (uid == 0 || c->allow == NULL)
        return 1;
    return c->allow(c->allow_ctx, pid, verb) ? 1 : -1;
}

static void handle_one(vc_ctl_t *c)
{
    vc_zparts_t *fr = &c->fr;
    c->deferred = 0;
    Vc__Reply *reply = vc_malloc(sizeof(*reply));
    vc__reply__init(reply);
    Vc__Command *cmd = NULL;
    int trust;
    if (fr->n != 3 || zmq_msg_size(&fr->f[1]) != 0) {
        vc_log(VC_LOG_WARN, "ctl", "dropped a control message of %zu frames: not [id][][command]", fr->n);
        vc__reply__free_unpacked(reply, NULL);
        return;
    }
    cmd = vc__command__unpack(NULL, zmq_msg_size(&fr->f[2]), zmq_msg_data(&fr->f[2]));
    if (cmd == NULL) {
        vc_reply_fail(reply, "malformed command");
    } else if ((trust = trusted(c, &fr->f[2], cmd->verb)) != 1 && strcmp(cmd->verb, "ping") != 0 &&
               strcmp(cmd->verb, "status") != 0) {
        vc_log(VC_LOG_WARN, "ctl", "refused the command \"%.32s\": it came from %s", cmd->verb,
               trust == 0 ? "a user that is not the suite's" : "a process of the suite's user it is not for");
        if (trust == 0)
            vc_reply_fail(reply, "refused: only the suite's user and root may give this command");
        else
            vc_reply_fail(reply, "refused: only root, or the one daemon it is for, may give this command "
                                 "(docs/SECURITY.md)");
    } else if (strcmp(cmd->verb, "ping") == 0 || strcmp(cmd->verb, "status") == 0) {
        vc_reply_ok(reply, "%s is running", c->daemon);
        vc_reply_field(reply, "daemon", "%s", c->daemon);
        vc_reply_field(reply, "pid", "%d", (int)getpid());
        vc_reply_field(reply, "version", "%s", VC_VERSION);
        vc_reply_field(reply, "uptime_ms", "%llu", (unsigned long long)(vc_mono_ms() - c->started_ms));
        c->fn(c->ctx, cmd, reply);
    } else {
        vc_reply_fail(reply, "unknown command \"%s\"", cmd->verb);
        c->fn(c->ctx, cmd, reply);
    }
    if (c->deferred) {
        c->deferred = 0; /* answered later (vc_ctl_answer) */
        vc__command__free_unpacked(cmd, NULL);
        vc__reply__free_unpacked(reply, NULL);
        return;
    }
    /* Send the envelope back: identity and delimiter, then the reply. */
    if (zmq_msg_send(&fr->f[0], c->sock, ZMQ_SNDMORE) < 0 || zmq_msg_send(&fr->f[1], c->sock, ZMQ_SNDMORE) < 0 ||
        vc_send_proto(c->sock, &reply->base, 0) < 0)
        vc_log(VC_LOG_WARN, "ctl", "zmq_send() failed while answering \"%s\": %s", cmd ? cmd->verb : "?",
               zmq_strerror(errno));
    if (cmd)
        vc__command__free_unpacked(cmd, NULL);
    vc__reply__free_unpacked(reply, NULL);
}

vc_ctl_later_t *vc_ctl_defer(vc_ctl_t *c)
{
    if (c->fr.n != 3)
        return NULL; /* not inside a handler */
    vc_ctl_later_t *l = vc_calloc(1, sizeof(*l));
    zmq_msg_init(&l->id);
    zmq_msg_copy(&l->id, &c->fr.f[0]);
    c->deferred = 1;
    return l;
}

void vc_ctl_answer(vc_ctl_t *c, vc_ctl_later_t *l, const Vc__Reply *reply)
{
    zmq_msg_t empty;
    zmq_msg_init(&empty);
    if (zmq_msg_send(&l->id, c->sock, ZMQ_SNDMORE) < 0 || zmq_msg_send(&empty, c->sock, ZMQ_SNDMORE) < 0 ||
        vc_send_proto(c->sock, &reply->base, 0) < 0)
        vc_log(VC_LOG_WARN, "ctl", "zmq_send() failed while answering later: %s", zmq_strerror(errno));
    zmq_msg_close(&empty);
    zmq_msg_close(&l->id);
    free(l);
}

int vc_ctl_handle(vc_ctl_t *c)
{
    int handled = 0;
    for (;;) {
        int n = vc_zparts_recv(c->sock, &c->fr, ZMQ_DONTWAIT);
        if (n < 0)
            break;
        /* The first two frames are sent back as they are; the command frame
         * is closed with the rest. */
        handle_one(c);
        vc_zparts_close(&c->fr);
        handled++;
    }
    return handled;
}

int vc_ctl_call(void *zctx, const char *endpoint, const char *verb, const char *const *args, size_t nargs,
                long timeout_ms, Vc__Reply **out)
{
    return vc_ctl_call_payload(zctx, endpoint, verb, args, nargs, NULL, 0, timeout_ms, out);
}

/* Waits for the answer: > 0 when it is there. A daemon that dies leaves
 * the request unanswered, and ZeroMQ would wait the whole bound (minutes
 * for a deploy's switch): on ipc, a socket file gone or made anew (the
 * daemon restarted) means the one asked is gone. */
static int wait_answer(void *s, const char *path, const struct stat *was, long timeout_ms)
{
    enum { SLICE_MS = 500 };
    uint64_t deadline = vc_mono_ms() + (uint64_t)timeout_ms;
    for (;;) {
        uint64_t now = vc_mono_ms();
        if (now >= deadline)
            return -VC_ERR_TIMEOUT;
        long left = (long)(deadline - now);
        int r = vc_wait_readable(s, path && left > SLICE_MS ? SLICE_MS : left);
        if (r != 0)
            return r;
        struct stat st;
        if (path && (stat(path, &st) != 0 || st.st_ino != was->st_ino || st.st_dev != was->st_dev))
            return -VC_ERR_GONE;
    }
}

Vc__Command vc_ctl_command(const char *verb, const char *const *args, size_t nargs, const void *payload, size_t plen)
{
    Vc__Command cmd = VC__COMMAND__INIT;
    cmd.verb = (char *)verb;
    cmd.args = (char **)args;
    cmd.n_args = nargs;
    cmd.payload.data = (uint8_t *)payload;
    cmd.payload.len = plen;
    return cmd;
}

int vc_ctl_call_payload(void *zctx, const char *endpoint, const char *verb, const char *const *args, size_t nargs,
                        const void *payload, size_t plen, long timeout_ms, Vc__Reply **out)
{
    *out = NULL;
    /* ZeroMQ connects lazily and would wait for a socket that never comes:
     * a missing ipc file means nobody listens. */
    struct stat st = {0};
    int ipc = strncmp(endpoint, "ipc://", 6) == 0;
    if (ipc && stat(endpoint + 6, &st) != 0)
        return -VC_ERR_NOTRUNNING;
    void *s = vc_socket(zctx, ZMQ_REQ, endpoint, 0);
    if (s == NULL)
        return -errno;
    Vc__Command cmd = vc_ctl_command(verb, args, nargs, payload, plen);
    int r = vc_send_proto(s, &cmd.base, 0);
    if (r == 0)
        r = wait_answer(s, ipc ? endpoint + 6 : NULL, &st, timeout_ms);
    if (r > 0) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, s, 0) < 0) {
            r = -errno;
        } else {
            *out = vc__reply__unpack(NULL, zmq_msg_size(&m), zmq_msg_data(&m));
            r = *out ? 0 : -VC_ERR_PROTO;
        }
        zmq_msg_close(&m);
    }
    zmq_close(s);
    return r;
}

int vc_verbs_run(const vc_verb_t *verbs, size_t n, void *ctx, const Vc__Command *cmd, Vc__Reply *reply)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(verbs[i].name, cmd->verb) == 0) {
            verbs[i].run(ctx, cmd, reply);
            return 1;
        }
    char names[512] = "";
    for (size_t i = 0; i < n; i++)
        snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", i ? ", " : "", verbs[i].name);
    if (strcmp(cmd->verb, "help") == 0) {
        vc_reply_ok(reply, "%s", names);
        for (size_t i = 0; i < n; i++) {
            Vc__Record *rec = vc_reply_record(reply);
            vc_record_field(rec, "verb", "%s", verbs[i].name);
            vc_record_field(rec, "args", "%s", verbs[i].args);
            vc_record_field(rec, "help", "%s", verbs[i].help);
        }
        return 0;
    }
    vc_reply_fail(reply, "unknown command \"%s\" (this daemon takes %s, and help)", cmd->verb, names);
    return 0;
}
