/*
 * A session's handler calls (sio_handler.h), one at a time so that a
 * socket's events reach PHP in the order they were sent, and what their
 * answers mean: a connect let in or refused, an event's ack.
 */
#include "sio_session.h"
#include "vc_log.h"
#include "vc_util.h"

#include <stdio.h>
#include <string.h>

static const char *const job_kinds[] = {"connect", "event", "disconnect"};

static void run_next(sio_conn_t *c);

static void job_free(sio_job_t *j)
{
    if (j) {
        free(j->body);
        free(j);
    }
}

/* Queues a handler call (body taken); 0, or -1 (and the connection
 * closed) if too many wait. */
int sio_job_add(sio_conn_t *c, int kind, const char *id, json_t *body, const sio_packet_t *p)
{
    char *text = json_dumps(body, JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(body);
    if (c->njobs == MAX_JOBS || text == NULL) {
        free(text);
        sio_close_as(c, "forced server close", "its handler calls are too far behind");
        return -1;
    }
    sio_job_t *j = vc_calloc(1, sizeof(*j));
    j->kind = kind;
    snprintf(j->id, sizeof(j->id), "%s", id);
    j->body = text;
    if (p && p->has_id) {
        j->has_ack = 1;
        j->ack = p->id_nan ? SIO_ID_NAN : p->id;
    }
    if (c->jobs_tail)
        c->jobs_tail->next = j;
    else
        c->jobs = j;
    c->jobs_tail = j;
    c->njobs++;
    run_next(c);
    return 0;
}

json_t *sio_disconnect_json(const sio_nsp_t *n, const char *reason)
{
    return json_pack("{s:s, s:s, s:s, s:s}", "type", "disconnect", "socket", n->sock->id, "namespace", n->name,
                     "reason", reason);
}

char *sio_disconnect_body(const sio_nsp_t *n, const char *reason)
{
    json_t *j = sio_disconnect_json(n, reason);
    char *text = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    return text;
}

/* The connect handler's word: 2xx lets the socket in; anything else
 * refuses it with the handler's {"message", "data"}, as a socket.io
 * middleware's next(err) does. */
static void connect_answered(sio_conn_t *c, sio_nsp_t *n, int status, const char *body, size_t len)
{
    if (status >= 200 && status <= 299) {
        n->pending = 0;
        sio_send_connect(c, n);
        return;
    }
    json_t *answer = json_loadb(body, len, 0, NULL), *err = json_object();
    json_t *msg = json_object_get(answer, "message");
    if (!json_is_string(msg) && status != 401 && status != 403)
        vc_log(VC_LOG_NOTICE, "socketio", "%s's handler answered %d to a connect: refused", c->conf->name, status);
    json_object_set_new(err, "message",
                        json_is_string(msg)              ? json_incref(msg)
                        : status == 401 || status == 403 ? json_string("Forbidden")
                                                         : json_string("Handler failed"));
    if (json_object_get(answer, "data"))
        json_object_set(err, "data", json_object_get(answer, "data"));
    char *text = json_dumps(err, JSON_COMPACT);
    sio_send_sio(c, SIO_CONNECT_ERROR, n->name, text);
    free(text);
    json_decref(err);
    json_decref(answer);
    sio_nsp_leave(c, n, NULL);
}

/* An event handler's answer is the ack's arguments: a JSON array as it
 * is, any other JSON value as the one argument, nothing as none. */
static void ack_answered(sio_conn_t *c, sio_nsp_t *n, const sio_job_t *j, int status, const char *body, size_t len)
{
    if (status < 200 || status > 299) {
        vc_log(VC_LOG_NOTICE, "socketio", "%s's handler answered %d to an event: no ack", c->conf->name, status);
        return;
    }
    size_t at = 0;
    while (at < len && strchr(" \t\r\n", body[at]))
        at++;
    json_error_t e;
    json_t *v = at < len ? json_loadb(body + at, len - at, JSON_DECODE_ANY, &e) : json_array();
    if (v == NULL) {
        vc_log(VC_LOG_NOTICE, "socketio", "%s's handler answered an event with no JSON: no ack", c->conf->name);
        return;
    }
    char *args;
    if (json_is_array(v)) {
        args = json_dumps(v, JSON_COMPACT);
    } else {
        json_t *one = json_pack("[O]", v);
        args = json_dumps(one, JSON_COMPACT | JSON_ENCODE_ANY);
        json_decref(one);
    }
    json_decref(v);
    size_t plen;
    char *packet = sio_encode(SIO_ACK, 0, n->name, 1, j->ack, args, strlen(args), &plen);
    sio_send_packet(c, EIO_MESSAGE, packet, plen);
    free(packet);
    free(args);
}

static void on_answer(void *owner, int status, const char *body, size_t len)
{
    sio_conn_t *c = owner;
    sio_job_t *j = c->running;
    c->running = NULL;
    sio_nsp_t *n = sio_by_id(c, j->id);
    if (n && j->kind == JOB_CONNECT && n->pending)
        connect_answered(c, n, status, body, len);
    else if (n && j->kind == JOB_EVENT && j->has_ack && !n->pending)
        ack_answered(c, n, j, status, body, len);
    else if (j->kind == JOB_DISCONNECT && (status < 200 || status > 299))
        vc_log(VC_LOG_NOTICE, "socketio", "%s's handler answered %d to a disconnect", c->conf->name, status);
    job_free(j);
    run_next(c);
}

static void run_next(sio_conn_t *c)
{
    if (c->running || c->jobs == NULL || c->ended)
        return;
    sio_job_t *j = c->jobs;
    c->jobs = j->next;
    if (c->jobs == NULL)
        c->jobs_tail = NULL;
    c->njobs--;
    c->running = j;
    char *body = j->body;
    j->body = NULL;
    sio_call(c->hs, job_kinds[j->kind], body, on_answer, c, &c->call);
}

/* The connection is gone: what waited still reaches the handler, with no
 * one to answer (events, then each namespace's disconnect), each on its
 * own; the call running is let finish unheard. */
void sio_jobs_after_close(sio_conn_t *c)
{
    if (c->call)
        sio_call_forget(c->call);
    job_free(c->running);
    for (sio_job_t *j = c->jobs, *next; j; j = next) {
        next = j->next;
        if (j->kind != JOB_CONNECT) {
            sio_call(c->hs, job_kinds[j->kind], j->body, NULL, NULL, NULL);
            j->body = NULL;
        }
        job_free(j);
    }
    c->jobs = c->jobs_tail = c->running = NULL;
}
