/*
 * The logs page: the access log, the error log and the bus's events,
 * followed over SSE, each line or event as JSON text (the page shows it
 * as text, never as markup). A filter keeps the lines that contain its
 * text (any case) and, for events, whose topic starts with a prefix.
 *
 * Files are read from where the last read ended, once a second (as
 * `tail -f` does), and opened again when rotated (another inode, or
 * shorter than what was read). They are opened without following a
 * symlink: one planted in the log directory would show a viewer any file
 * the suite's user can read. Events come from bus-out, subscribed to while
 * someone follows them, with the journal's newest as a start.
 *
 * A page that does not read costs at most FOLLOWER_CAP bytes; what did not
 * fit is counted and said (sse.c), never dropped silently.
 */
#include "follow.h"
#include "forms.h"
#include "sse.h"
#include "vc_bus.h"
#include "vc_config.h"
#include "vc_log.h"
#include "vc_util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#define FOLLOWERS_MAX 32
#define FOLLOWER_CAP (256 * 1024)
#define START_LINES 100         /* shown at the start: the newest lines or events */
#define START_BYTES (64 * 1024) /* a file's tail read for them */
#define TICK_BYTES (256 * 1024) /* read a tick at most; the rest the next */
#define LINE_MAX_SHOWN 4096     /* longer lines are cut */

enum { FOLLOW_EVENTS, FOLLOW_ACCESS, FOLLOW_ERROR };
static const char *const kinds[] = {"events", "access", "error"};

typedef struct follower {
    sse_t sse; /* first */
    follow_t *f;
    int kind;
    char q[128];    /* "": every line */
    char topic[64]; /* events: a topic prefix */
    char *path;
    int fd;
    dev_t dev;
    ino_t ino;
    off_t off;
    char partial[LINE_MAX_SHOWN]; /* a line not ended yet */
    size_t npartial;
    struct follower *prev, *next;
} follower_t;

struct follow {
    panel_t *p;
    void *sub; /* bus-out: every topic while an events follower is open */
    h2o_socket_t *sub_sock;
    follower_t *list;
    size_t n, nevents;
};

static int contains(const char *text, const char *q)
{
    if (q[0] == '\0')
        return 1;
    size_t n = strlen(q);
    for (const char *t = text; *t; t++)
        if (strncasecmp(t, q, n) == 0)
            return 1;
    return 0;
}

/* One line (NUL-terminated, changed in place) as an SSE event whose data
 * is a JSON string, if it passes the filter; bytes that are not UTF-8
 * become '?' rather than losing the line. */
static void send_line(follower_t *w, char *line)
{
    if (!contains(line, w->q)) /* the line as written, not as encoded */
        return;
    json_t *s = json_string(line);
    if (s == NULL) {
        for (char *c = line; *c; c++)
            if ((unsigned char)*c >= 0x80)
                *c = '?';
        s = json_string(line);
    }
    char *text = s ? json_dumps(s, JSON_ENCODE_ANY) : NULL;
    json_decref(s);
    if (text) {
        char *ev = vc_asprintf("data: %s\n\n", text);
        sse_send(&w->sse, ev);
        free(ev);
    }
    free(text);
}

/* Splits what was read into lines; the last, unended, waits. */
static void lines_in(follower_t *w, const char *buf, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (buf[i] == '\n') {
            w->partial[w->npartial] = '\0';
            send_line(w, w->partial);
            w->npartial = 0;
        } else if (w->npartial < sizeof(w->partial) - 1) {
            w->partial[w->npartial++] = buf[i];
        }
    }
}

/* Opens the file; at the start, from its last START_LINES lines. 0, or -1
 * with errno. */
static int file_open(follower_t *w, int at_start)
{
    int fd = open(w->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        errno = EINVAL; /* not a file: a fifo would block, a directory has no lines */
        return -1;
    }
    if (w->fd >= 0)
        close(w->fd);
    w->fd = fd;
    w->dev = st.st_dev;
    w->ino = st.st_ino;
    w->off = 0;
    w->npartial = 0;
    if (!at_start)
        return 0;
    off_t from = st.st_size > START_BYTES ? st.st_size - START_BYTES : 0;
    char *buf = vc_malloc(START_BYTES);
    ssize_t got = pread(fd, buf, START_BYTES, from);
    w->off = from + (got > 0 ? got : 0);
    /* The newest START_LINES whole lines (the first may be cut). */
    size_t n = got > 0 ? (size_t)got : 0, start = 0, seen = 0;
    for (size_t i = n; i-- > 0;)
        if (buf[i] == '\n' && i + 1 < n && ++seen == START_LINES) {
            start = i + 1;
            break;
        }
    if (seen < START_LINES && from > 0) {
        const char *nl = memchr(buf, '\n', n);
        start = nl ? (size_t)(nl - buf) + 1 : n;
    }
    lines_in(w, buf + start, n - start);
    free(buf);
    return 0;
}

static void file_tick(follower_t *w)
{
    struct stat st;
    if (stat(w->path, &st) == 0 && (st.st_ino != w->ino || st.st_dev != w->dev)) {
        if (file_open(w, 0) < 0) /* rotated, the new one not there yet */
            return;
    } else if (w->fd < 0) {
        return;
    }
    if (fstat(w->fd, &st) == 0 && st.st_size < w->off) /* cut short: read again from the start */
        w->off = w->npartial = 0;
    char *buf = vc_malloc(TICK_BYTES);
    ssize_t got = pread(w->fd, buf, TICK_BYTES, w->off);
    if (got > 0) {
        w->off += got;
        lines_in(w, buf, (size_t)got);
    }
    free(buf);
}

/* An event as JSON: its time, topic, severity, source and fields. */
static char *event_text(const Vc__Envelope *e)
{
    json_t *fields = json_object();
    for (size_t i = 0; i < e->n_fields; i++)
        json_object_set_new(fields, e->fields[i]->key, json_string(e->fields[i]->value));
    json_t *o = json_pack("{s:I,s:s,s:s,s:s,s:I,s:o}", "time_ms", (json_int_t)(e->time_us / 1000), "topic", e->topic,
                          "severity", vc_bus_severity_name(e->severity), "source", e->source, "pid", (json_int_t)e->pid,
                          "fields", fields);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return text;
}

static void event_to(follower_t *w, const Vc__Envelope *e, const char *text)
{
    if (strncmp(e->topic, w->topic, strlen(w->topic)) != 0 || !contains(text, w->q))
        return;
    char *ev = vc_asprintf("data: %s\n\n", text);
    sse_send(&w->sse, ev);
    free(ev);
}

static void on_bus(h2o_socket_t *sock, const char *err)
{
    follow_t *f = sock->data;
    for (;;) {
        zmq_msg_t topic, body;
        zmq_msg_init(&topic);
        if (zmq_msg_recv(&topic, f->sub, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&topic);
            return;
        }
        int more = zmq_msg_more(&topic);
        zmq_msg_init(&body);
        Vc__Envelope *e = more && zmq_msg_recv(&body, f->sub, 0) >= 0
                              ? vc__envelope__unpack(NULL, zmq_msg_size(&body), zmq_msg_data(&body))
                              : NULL;
        char *text = e ? event_text(e) : NULL;
        for (follower_t *w = f->list; w && text; w = w->next)
            if (w->kind == FOLLOW_EVENTS)
                event_to(w, e, text);
        free(text);
        if (e)
            vc__envelope__free_unpacked(e, NULL);
        zmq_msg_close(&body);
        zmq_msg_close(&topic);
    }
}

typedef struct journal_walk {
    follower_t *w;
    char *texts[START_LINES];
    size_t n;
} journal_walk_t;

/* The journal's newest events that pass the follower's filter. */
static int journal_take(const Vc__Envelope *e, void *arg)
{
    journal_walk_t *jw = arg;
    char *text = strncmp(e->topic, jw->w->topic, strlen(jw->w->topic)) == 0 ? event_text(e) : NULL;
    if (text && contains(text, jw->w->q))
        jw->texts[jw->n++] = text;
    else
        free(text);
    return jw->n >= START_LINES;
}

static void subscribe_all(follow_t *f, int on)
{
    if (f->sub)
        zmq_setsockopt(f->sub, on ? ZMQ_SUBSCRIBE : ZMQ_UNSUBSCRIBE, "", 0);
}

static void closed(sse_t *s)
{
    follower_t *w = (follower_t *)s;
    follow_t *f = w->f;
    if (w->prev)
        w->prev->next = w->next;
    else
        f->list = w->next;
    if (w->next)
        w->next->prev = w->prev;
    f->n--;
    if (w->kind == FOLLOW_EVENTS && --f->nevents == 0)
        subscribe_all(f, 0);
    if (w->fd >= 0)
        close(w->fd);
    free(w->path);
}

void follow_subscribe(preq_t *r)
{
    follow_t *f = r->p->follow;
    const vc_config_t *cfg = r->p->d.cfg;
    char what[16] = "", q[128] = "", topic[64] = "";
    size_t ql = strlen(r->query);
    form_query(r->query, ql, "what", what, sizeof(what));
    form_query(r->query, ql, "q", q, sizeof(q));
    form_query(r->query, ql, "topic", topic, sizeof(topic));
    int kind = -1;
    for (int i = 0; i < (int)VC_ARRAY_SIZE(kinds); i++)
        if (strcmp(what, kinds[i]) == 0)
            kind = i;
    if (kind < 0) {
        http_error(r, 400, "follow needs ?what=events, access or error");
        return;
    }
    if (f->n >= FOLLOWERS_MAX) {
        http_error(r, 503, "%d logs are followed already", FOLLOWERS_MAX);
        return;
    }
    char *path = kind == FOLLOW_ACCESS                             ? vc_asprintf("%s/access.log", cfg->log_dir)
                 : kind == FOLLOW_ERROR && r->p->cfg->error_log[0] ? vc_strdup(r->p->cfg->error_log)
                 : kind == FOLLOW_ERROR                            ? vc_asprintf("%s/vc.log", cfg->log_dir)
                                                                   : NULL;
    follower_t probe = {.fd = -1, .path = path};
    if (path && file_open(&probe, 0) < 0) {
        http_error(r, 404, "%s cannot be read: %s", path, strerror(errno));
        free(path);
        return;
    }
    if (probe.fd >= 0)
        close(probe.fd);
    follower_t *w = (follower_t *)sse_open(r, sizeof(follower_t), FOLLOWER_CAP, closed);
    w->f = f;
    w->kind = kind;
    w->fd = -1;
    w->path = path;
    snprintf(w->q, sizeof(w->q), "%s", q);
    snprintf(w->topic, sizeof(w->topic), "%s", topic);
    w->next = f->list;
    if (f->list)
        f->list->prev = w;
    f->list = w;
    f->n++;
    sse_send(&w->sse, "retry: 2000\n\n");
    if (path) {
        file_open(w, 1);
        return;
    }
    if (f->nevents++ == 0)
        subscribe_all(f, 1);
    journal_walk_t jw = {.w = w};
    panel_journal_newest(r->p, journal_take, &jw);
    for (size_t i = jw.n; i-- > 0;) { /* oldest first */
        char *ev = vc_asprintf("data: %s\n\n", jw.texts[i]);
        sse_send(&w->sse, ev);
        free(ev);
        free(jw.texts[i]);
    }
}

void follow_tick(follow_t *f)
{
    if (f->sub_sock && f->nevents)
        on_bus(f->sub_sock, NULL); /* ZeroMQ's descriptor tells of changes, not of what waits */
    for (follower_t *w = f->list; w; w = w->next)
        if (w->kind != FOLLOW_EVENTS)
            file_tick(w);
}

size_t follow_clients(const follow_t *f)
{
    return f->n;
}

follow_t *follow_new(panel_t *p)
{
    follow_t *f = vc_calloc(1, sizeof(*f));
    f->p = p;
    /* Subscribed to nothing until an events follower comes. */
    f->sub_sock = panel_bus_watch(p, &f->sub, NULL, 0, on_bus, f);
    if (f->sub_sock == NULL)
        vc_log(VC_LOG_WARN, "follow", "no link to the bus: the logs page shows no events");
    return f;
}

void follow_destroy(follow_t **fp)
{
    follow_t *f = *fp;
    if (f == NULL)
        return;
    panel_bus_unwatch(&f->sub_sock, &f->sub);
    free(f);
    *fp = NULL;
}
