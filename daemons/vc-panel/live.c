/*
 * The dashboard's live figures: front.metrics from the bus (summed over
 * the fronts) and each pool's busy and idle workers, one sample a
 * second, the last hour kept, and sent to every open dashboard over SSE
 * (GET /api/live). A sample is made once and sent to all: ten open
 * dashboards cost what one does, plus their writes.
 */
#include "live.h"
#include "sse.h"
#include "warm.h"
#include "vc_ctl.h"
#include "vc_events.h"
#include "vc_log.h"
#include "vc_util.h"
#include "vc_zmq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#define HISTORY 3600   /* samples: an hour */
#define CLIENTS_MAX 64 /* open dashboards; more are refused with 503 */
#define FIELDS_MAX 16
#define POOL_CALL_MS 500
#define POOLS_QUIET_MS 10000
#define WARM_TOPICS "cache.warm." /* a warm-up's progress, for warm.c */

typedef struct client {
    sse_t sse; /* first */
    live_t *live;
    struct client *prev_c, *next_c;
} client_t;

struct live {
    panel_t *p;
    char *ring[HISTORY]; /* sample JSON texts, oldest overwritten */
    size_t head, count;
    /* This second's sums of front.metrics fields. */
    char names[FIELDS_MAX][24];
    double sums[FIELDS_MAX]; /* counts add up over the fronts; a *_ms, a percentile, is their highest */
    size_t nfields;
    client_t *clients;
    size_t nclients;
    uint64_t pools_quiet_until; /* vc_mono_ms(): a pool did not answer */
    h2o_socket_t *sub_sock;
};

static void heard(live_t *l, const Vc__Envelope *e)
{
    for (size_t i = 0; i < e->n_fields; i++) {
        const char *k = e->fields[i]->key;
        size_t j = 0;
        while (j < l->nfields && strcmp(l->names[j], k) != 0)
            j++;
        if (j == l->nfields) {
            if (l->nfields == FIELDS_MAX || strlen(k) >= sizeof(l->names[0]))
                continue;
            strcpy(l->names[l->nfields++], k);
        }
        double v = strtod(e->fields[i]->value, NULL);
        size_t kl = strlen(k);
        if (kl > 3 && strcmp(k + kl - 3, "_ms") == 0)
            l->sums[j] = v > l->sums[j] ? v : l->sums[j];
        else
            l->sums[j] += v;
    }
}

/* Everything the bus has sent so far (the descriptor is edge-like). */
static void drain(live_t *l)
{
    for (;;) {
        zmq_msg_t topic, body;
        zmq_msg_init(&topic);
        if (zmq_msg_recv(&topic, l->p->sub, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&topic);
            return;
        }
        int more = zmq_msg_more(&topic);
        zmq_msg_init(&body);
        if (more && zmq_msg_recv(&body, l->p->sub, 0) >= 0) {
            Vc__Envelope *e = vc__envelope__unpack(NULL, zmq_msg_size(&body), zmq_msg_data(&body));
            if (e && strcmp(e->topic, VC_EVENT(FRONT_METRICS)) == 0)
                heard(l, e);
            else if (e && strncmp(e->topic, WARM_TOPICS, strlen(WARM_TOPICS)) == 0)
                warm_heard(e);
            if (e)
                vc__envelope__free_unpacked(e, NULL);
        }
        zmq_msg_close(&body);
        zmq_msg_close(&topic);
    }
}

static void on_bus(h2o_socket_t *sock, const char *err)
{
    drain(sock->data);
}

static void closed(sse_t *s)
{
    client_t *c = (client_t *)s;
    live_t *l = c->live;
    if (c->prev_c)
        c->prev_c->next_c = c->next_c;
    else
        l->clients = c->next_c;
    if (c->next_c)
        c->next_c->prev_c = c->prev_c;
    l->nclients--;
}

static void pools_into(live_t *l, json_t *sample)
{
    const vc_config_t *cfg = l->p->d.cfg;
    long busy = 0, idle = 0, queued = 0, workers = 0, pss = 0, measured = 0;
    /* A pool that did not answer is not asked for a while: each wait is
     * the panel's loop's (its pages and streams) too. */
    uint64_t now = vc_mono_ms();
    if (now < l->pools_quiet_until)
        return;
    for (size_t i = 0; i <= cfg->npools; i++) {
        char *ep = i == 0 ? vc_strdup("ctl-vc-php") : vc_asprintf("ctl-vc-php.%s", cfg->pools[i - 1].name);
        Vc__Reply *rep = NULL;
        if (panel_call(l->p, ep, "status", NULL, 0, POOL_CALL_MS, &rep) == 0) {
            const char *b = vc_reply_get(rep, "busy"), *d = vc_reply_get(rep, "idle"), *q = vc_reply_get(rep, "queued");
            const char *w = vc_reply_get(rep, "workers");
            busy += b ? atol(b) : 0;
            idle += d ? atol(d) : 0;
            queued += q ? atol(q) : 0;
            workers += w ? atol(w) : 0;
            for (size_t k = 0; k < rep->n_records; k++) {
                const char *kib = vc_record_get(rep->records[k], "pss_kib");
                if (kib && atol(kib) > 0) {
                    pss += atol(kib);
                    measured++;
                }
            }
            vc__reply__free_unpacked(rep, NULL);
        } else {
            l->pools_quiet_until = now + POOLS_QUIET_MS;
        }
        free(ep);
    }
    json_object_set_new(sample, "busy", json_integer(busy));
    json_object_set_new(sample, "idle", json_integer(idle));
    json_object_set_new(sample, "queued", json_integer(queued));
    json_object_set_new(sample, "workers", json_integer(workers));
    json_object_set_new(sample, "pss_kib_per_worker", json_integer(measured ? pss / measured : 0));
}

void live_tick(live_t *l)
{
    drain(l);
    json_t *sample = json_pack("{s:I}", "t", (json_int_t)(vc_wall_ms() / 1000));
    for (size_t i = 0; i < l->nfields; i++) {
        json_object_set_new(sample, l->names[i], json_real(l->sums[i]));
        l->sums[i] = 0;
    }
    pools_into(l, sample);
    char *text = json_dumps(sample, JSON_COMPACT);
    json_decref(sample);
    size_t slot = (l->head + l->count) % HISTORY;
    if (l->count == HISTORY) {
        free(l->ring[l->head]);
        l->head = (l->head + 1) % HISTORY;
    } else {
        l->count++;
    }
    l->ring[slot] = text;
    char *event = vc_asprintf("event: sample\ndata: %s\n\n", text);
    for (client_t *c = l->clients; c; c = c->next_c)
        sse_send(&c->sse, event);
    free(event);
}

void live_subscribe(preq_t *r)
{
    live_t *l = r->p->live;
    if (l->nclients >= CLIENTS_MAX) {
        http_error(r, 503, "%d dashboards are open already", CLIENTS_MAX);
        return;
    }
    client_t *c = (client_t *)sse_open(r, sizeof(client_t), 0, closed);
    c->live = l;
    c->next_c = l->clients;
    if (l->clients)
        l->clients->prev_c = c;
    l->clients = c;
    l->nclients++;
    /* The hour so far, in one event, then a sample a second. */
    size_t len = 0;
    char *hist = NULL;
    FILE *out = open_memstream(&hist, &len);
    fputs("retry: 2000\nevent: history\ndata: [", out);
    for (size_t i = 0; i < l->count; i++)
        fprintf(out, "%s%s", i ? "," : "", l->ring[(l->head + i) % HISTORY]);
    fputs("]\n\n", out);
    fclose(out);
    sse_send(&c->sse, hist);
    free(hist);
}

size_t live_clients(const live_t *l)
{
    return l->nclients;
}

live_t *live_new(panel_t *p)
{
    live_t *l = vc_calloc(1, sizeof(*l));
    l->p = p;
    const char *topics[] = {VC_EVENT(FRONT_METRICS), WARM_TOPICS};
    l->sub_sock = panel_bus_watch(p, &p->sub, topics, VC_ARRAY_SIZE(topics), on_bus, l);
    if (l->sub_sock == NULL)
        vc_log(VC_LOG_WARN, "live", "no link to the bus: the dashboard shows no traffic");
    return l;
}

void live_destroy(live_t **lp)
{
    live_t *l = *lp;
    if (l == NULL)
        return;
    panel_bus_unwatch(&l->sub_sock, &l->p->sub);
    for (size_t i = 0; i < l->count; i++)
        free(l->ring[(l->head + i) % HISTORY]);
    free(l);
    *lp = NULL;
}
