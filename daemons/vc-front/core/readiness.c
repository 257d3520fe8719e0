/* readiness.h: each daemon's readiness, asked by a thread, answered on
 * the admin listener. */
#include "readiness.h"
#include "vc_ctl.h"
#include "vc_log.h"
#include "vc_settings.h"
#include "vc_util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK_EVERY_MS 1000
/* While nobody has asked for 30 s, a round every 10 s: a suite nobody
 * probes pays a few control calls a minute, and a first probe's answer
 * is at most that old. */
#define ASKED_WITHIN_MS 30000
#define CHECK_IDLE_MS 10000
#define CALL_MS 1000

typedef struct entry {
    char name[64];  /* "php.shop" */
    char *endpoint; /* its control endpoint */
    int self;       /* this front: ready while it answers */
    int ready;      /* from the last check */
    char why[160];  /* when not */
} entry_t;

struct readiness {
    void *zctx;
    entry_t *e;
    size_t n;
    pthread_t thread;
    pthread_mutex_t lock; /* e[].ready and e[].why */
    pthread_cond_t wake;
    int stop;
    uint64_t asked_ms; /* vc_mono_ms() of the last probe, under lock */
    int woken;         /* a probe after a quiet while: check now */
};

static void add(readiness_t *r, const vc_config_t *cfg, const char *name, const char *ctl, int self)
{
    r->e = vc_realloc(r->e, (r->n + 1) * sizeof(entry_t));
    entry_t *e = &r->e[r->n++];
    memset(e, 0, sizeof(*e));
    snprintf(e->name, sizeof(e->name), "%s", name);
    e->endpoint = vc_config_endpoint(cfg, ctl);
    e->self = self;
    e->ready = self;
    snprintf(e->why, sizeof(e->why), "not checked yet");
}

static void check(readiness_t *r, entry_t *e)
{
    Vc__Reply *rep = NULL;
    int ready = 0;
    char why[sizeof(e->why)];
    int rc = vc_ctl_call(r->zctx, e->endpoint, "status", NULL, 0, CALL_MS, &rep);
    if (rc < 0) {
        snprintf(why, sizeof(why), "not answering: %s", vc_strerror(rc));
    } else {
        const char *health = vc_reply_get(rep, "health");
        ready = rep->ok && health && strcmp(health, "ok") == 0;
        snprintf(why, sizeof(why), "%s", health ? health : rep->message);
        vc__reply__free_unpacked(rep, NULL);
    }
    pthread_mutex_lock(&r->lock);
    e->ready = ready;
    memcpy(e->why, why, sizeof(why));
    pthread_mutex_unlock(&r->lock);
}

static void *run(void *arg)
{
    readiness_t *r = arg;
    pthread_mutex_lock(&r->lock);
    while (!r->stop) {
        pthread_mutex_unlock(&r->lock);
        for (size_t i = 0; i < r->n && !r->stop; i++)
            if (!r->e[i].self)
                check(r, &r->e[i]);
        pthread_mutex_lock(&r->lock);
        int asked = r->asked_ms && vc_mono_ms() - r->asked_ms < ASKED_WITHIN_MS;
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += (asked ? CHECK_EVERY_MS : CHECK_IDLE_MS) / 1000;
        while (!r->stop && !r->woken && pthread_cond_timedwait(&r->wake, &r->lock, &until) == 0)
            ;
        r->woken = 0;
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

readiness_t *readiness_start(const vc_config_t *cfg, void *zctx)
{
    readiness_t *r = vc_calloc(1, sizeof(*r));
    r->zctx = zctx;
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->wake, NULL);
    for (size_t i = 0; vc_sections[i]; i++) {
        const vc_section_t *sec = vc_sections[i];
        size_t copies = vc_supervision_copies(cfg, sec);
        if (copies == 0)
            continue;
        const char *binary = sec->supervision->binary, *shortname = binary + 3; /* past "vc-" */
        char ctl[96];
        snprintf(ctl, sizeof(ctl), "ctl-%s", binary);
        if (sec->supervision->copies == VC_COPIES_PER_POOL) {
            add(r, cfg, shortname, ctl, 0);
            for (size_t p = 0; p < cfg->npools; p++) {
                char name[64], pctl[160];
                snprintf(name, sizeof(name), "%s.%s", shortname, cfg->pools[p].name);
                snprintf(pctl, sizeof(pctl), "%s.%s", ctl, cfg->pools[p].name);
                add(r, cfg, name, pctl, 0);
            }
            continue;
        }
        /* The front that answers is ready; the other fronts have no
         * control endpoint of their own to ask. */
        add(r, cfg, shortname, ctl, sec->supervision->serves_clients);
    }
    if (pthread_create(&r->thread, NULL, run, r) != 0) {
        vc_log(VC_LOG_ERR, "readiness", "pthread_create() failed while starting the readiness checks");
        r->stop = 1;
    }
    return r;
}

void readiness_stop(readiness_t **rp)
{
    readiness_t *r = *rp;
    if (r == NULL)
        return;
    pthread_mutex_lock(&r->lock);
    int started = !r->stop;
    r->stop = 1;
    pthread_cond_signal(&r->wake);
    pthread_mutex_unlock(&r->lock);
    if (started)
        pthread_join(r->thread, NULL);
    for (size_t i = 0; i < r->n; i++)
        free(r->e[i].endpoint);
    free(r->e);
    pthread_mutex_destroy(&r->lock);
    pthread_cond_destroy(&r->wake);
    free(r);
    *rp = NULL;
}

static void answer(h2o_req_t *req, int status, const char *body, size_t len)
{
    req->res.status = status;
    req->res.reason = status == 200 ? "OK" : status == 404 ? "Not Found" : "Service Unavailable";
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL,
                   H2O_STRLIT("text/plain; charset=utf-8"));
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CACHE_CONTROL, NULL, H2O_STRLIT("no-store"));
    h2o_iovec_t b = h2o_strdup(&req->pool, body, len);
    h2o_send_inline(req, b.base, b.len);
}

int readiness_answer(readiness_t *r, h2o_req_t *req)
{
    h2o_iovec_t path = req->path_normalized;
    int all = h2o_memis(path.base, path.len, H2O_STRLIT("/ready"));
    if (!all && !(path.len > 7 && memcmp(path.base, "/ready/", 7) == 0))
        return 0;
    const char *name = path.base + 7;
    size_t nlen = all ? 0 : path.len - 7;
    char *body = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&body, &len);
    int found = 0, ready = 1;
    pthread_mutex_lock(&r->lock);
    if (r->asked_ms == 0 || vc_mono_ms() - r->asked_ms >= ASKED_WITHIN_MS) {
        r->woken = 1; /* probes again: a round now, then one a second */
        pthread_cond_signal(&r->wake);
    }
    r->asked_ms = vc_mono_ms();
    for (size_t i = 0; i < r->n; i++) {
        entry_t *e = &r->e[i];
        if (!all && !(strlen(e->name) == nlen && memcmp(e->name, name, nlen) == 0))
            continue;
        found = 1;
        ready = ready && e->ready;
        if (e->ready)
            fprintf(out, "%s: ready\n", e->name);
        else
            fprintf(out, "%s: not ready: %s\n", e->name, e->why);
    }
    if (!found) {
        fprintf(out, "no daemon \"%.*s\" in this suite; these are:", (int)(nlen > 64 ? 64 : nlen), name);
        for (size_t i = 0; i < r->n; i++)
            fprintf(out, " %s", r->e[i].name);
        fputc('\n', out);
    }
    pthread_mutex_unlock(&r->lock);
    fclose(out);
    answer(req, !found ? 404 : ready ? 200 : 503, body, len);
    free(body);
    return 1;
}
