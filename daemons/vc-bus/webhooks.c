#include "webhooks.h"
#include "vc_log.h"
#include "vc_queue.h"
#include "vc_realtime.h"
#include "vc_util.h"

#include <curl/curl.h>
#include <pthread.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_QUEUE 10000
#define MAX_BATCH 100
#define POST_TIMEOUT_MS 5000
#define FIRST_RETRY_MS 1000
#define LAST_RETRY_MS 60000
#define GIVE_UP_MS (5 * 60 * 1000)

typedef struct item {
    vc_qlink_t link;
    char *json; /* one event, as it goes in "events" */
} item_t;

typedef struct target {
    vc_rt_app_t app;
    vc_rt_webhook_t hook;
    vc_queue_t q;           /* item_t by link, at most MAX_QUEUE */
    int overflowing;        /* said once until the queue has room again */
    uint64_t next_try_ms;   /* after a failure */
    uint64_t failing_since; /* the first failure of the events at the head; 0: none */
    uint64_t retry_ms;      /* the next wait after a failure */
} target_t;

struct webhooks {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    target_t *t;
    size_t nt;
    atomic_int stopping;
    webhooks_counts_t counts;
};

static void items_free(vc_queue_t *q)
{
    for (vc_qlink_t *l; (l = vc_queue_pop(q)) != NULL;) {
        item_t *it = VC_QUEUE_ITEM(l, item_t, link);
        free(it->json);
        free(it);
    }
}

/* Each app of each site with webhooks, with each of its webhooks. */
static void targets_of(const vc_config_t *cfg, target_t **out, size_t *nout)
{
    *out = NULL;
    *nout = 0;
    for (size_t s = 0; s < cfg->nsites; s++) {
        const vc_site_t *site = &cfg->sites[s];
        if (site->nrealtime_webhooks == 0)
            continue;
        vc_rt_app_t *apps = vc_calloc(site->nrealtime_apps + 1, sizeof(*apps));
        size_t napps = 0;
        char why[512];
        for (size_t a = 0; a < site->nrealtime_apps; a++)
            if (vc_rt_app_parse(site->realtime_apps[a], &apps[napps], why, sizeof(why)) == 0)
                napps++;
        /* The default site's app made at first start (vc_realtime.h). */
        if (napps == 0 && site->is_default) {
            if (vc_rt_default_app(cfg->state_dir, &apps[0], why, sizeof(why)) == 0)
                napps = 1;
            else
                vc_log(VC_LOG_ERR, "webhooks", "site \"%s\": %s; its webhooks are not sent", site->name, why);
        }
        for (size_t a = 0; a < napps; a++)
            for (size_t h = 0; h < site->nrealtime_webhooks; h++) {
                target_t t = {.app = apps[a], .retry_ms = FIRST_RETRY_MS, .q.max = MAX_QUEUE};
                if (vc_rt_webhook_parse(site->realtime_webhooks[h], &t.hook, why, sizeof(why)) < 0)
                    continue; /* refused with the configuration already */
                *out = vc_realloc(*out, (*nout + 1) * sizeof(**out));
                (*out)[(*nout)++] = t;
            }
        free(apps);
    }
}

static target_t *find(webhooks_t *w, const char *app_id, const char *url)
{
    for (size_t i = 0; i < w->nt; i++)
        if (strcmp(w->t[i].app.id, app_id) == 0 && strcmp(w->t[i].hook.url, url) == 0)
            return &w->t[i];
    return NULL;
}

void webhooks_configure(webhooks_t *w, const vc_config_t *cfg)
{
    target_t *t;
    size_t n;
    targets_of(cfg, &t, &n);
    pthread_mutex_lock(&w->mu);
    for (size_t i = 0; i < n; i++) {
        target_t *old = find(w, t[i].app.id, t[i].hook.url);
        if (old == NULL)
            continue;
        t[i].q = old->q;
        t[i].next_try_ms = old->next_try_ms;
        t[i].failing_since = old->failing_since;
        t[i].retry_ms = old->retry_ms;
        old->q = (vc_queue_t){.max = MAX_QUEUE};
    }
    for (size_t i = 0; i < w->nt; i++) {
        w->counts.queued -= w->t[i].q.len;
        w->counts.dropped += w->t[i].q.len;
        items_free(&w->t[i].q);
    }
    free(w->t);
    w->t = t;
    w->nt = n;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

void webhooks_event(webhooks_t *w, const char *room, const char *name, json_t *fields)
{
    if (w->nt == 0) { /* set only on the bus's loop, as this is */
        json_decref(fields);
        return;
    }
    const char *colon = strchr(room, ':');
    unsigned bit = vc_rt_webhook_event(name);
    char app_id[VC_RT_FIELD_MAX];
    size_t idl = colon ? (size_t)(colon - room) : 0;
    if (idl == 0 || idl >= sizeof(app_id) || bit == 0) {
        json_decref(fields);
        return;
    }
    memcpy(app_id, room, idl);
    app_id[idl] = '\0';
    json_t *e = fields ? fields : json_object();
    json_object_set_new(e, "name", json_string(name));
    json_object_set_new(e, "channel", json_string(colon + 1));
    char *text = NULL;
    pthread_mutex_lock(&w->mu);
    for (size_t i = 0; i < w->nt; i++) {
        target_t *t = &w->t[i];
        if (strcmp(t->app.id, app_id) != 0 || !(t->hook.events & bit))
            continue;
        if (vc_queue_full(&t->q)) {
            if (!t->overflowing++)
                vc_log(VC_LOG_WARN, "webhooks", "%s: %d events wait already; later ones are dropped until it answers",
                       t->hook.url, MAX_QUEUE);
            w->counts.dropped++;
            continue;
        }
        if (text == NULL)
            text = json_dumps(e, JSON_COMPACT);
        item_t *it = vc_calloc(1, sizeof(*it));
        it->json = vc_strdup(text);
        vc_queue_push(&t->q, &it->link);
        w->counts.queued++;
        pthread_cond_signal(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    free(text);
    json_decref(e);
}

void webhooks_counts(webhooks_t *w, webhooks_counts_t *c)
{
    pthread_mutex_lock(&w->mu);
    *c = w->counts;
    pthread_mutex_unlock(&w->mu);
}

/* ---- the posting thread ---------------------------------------------------- */

static size_t discard(char *p, size_t size, size_t n, void *arg)
{
    (void)p;
    (void)arg;
    return size * n;
}

/* A POST on its way is abandoned when the bus stops. */
static int on_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
    (void)a, (void)b, (void)c, (void)d;
    return atomic_load(&((webhooks_t *)arg)->stopping) != 0;
}

/* {"time_ms":..,"events":[..]} */
static char *body_of(const vc_queue_t *batch)
{
    size_t len = 64;
    for (const vc_qlink_t *l = batch->head; l; l = l->next)
        len += strlen(VC_QUEUE_ITEM(l, item_t, link)->json) + 1;
    char *b = vc_malloc(len);
    size_t at = (size_t)snprintf(b, len, "{\"time_ms\":%lld,\"events\":[", (long long)vc_wall_ms());
    for (const vc_qlink_t *l = batch->head; l; l = l->next) {
        const char *json = VC_QUEUE_ITEM(l, item_t, link)->json;
        size_t n = strlen(json);
        memcpy(b + at, json, n);
        at += n;
        b[at++] = l->next ? ',' : ']';
    }
    b[at++] = '}';
    b[at] = '\0';
    return b;
}

/* 0, or -1 with why (the status, or curl's error). */
static int post(webhooks_t *w, CURL *curl, const target_t *t, const char *body, char *why, size_t whylen)
{
    unsigned char mac[crypto_auth_hmacsha256_BYTES];
    crypto_auth_hmacsha256_state st;
    crypto_auth_hmacsha256_init(&st, (const unsigned char *)t->app.secret, strlen(t->app.secret));
    crypto_auth_hmacsha256_update(&st, (const unsigned char *)body, strlen(body));
    crypto_auth_hmacsha256_final(&st, mac);
    char hex[2 * sizeof(mac) + 1];
    sodium_bin2hex(hex, sizeof(hex), mac, sizeof(mac));
    char key_h[VC_RT_FIELD_MAX + 32], sig_h[sizeof(hex) + 32];
    snprintf(key_h, sizeof(key_h), "X-Pusher-Key: %s", t->app.key);
    snprintf(sig_h, sizeof(sig_h), "X-Pusher-Signature: %s", hex);
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    h = curl_slist_append(h, key_h);
    h = curl_slist_append(h, sig_h);
    h = curl_slist_append(h, "Expect:"); /* no 100-continue round trip */
    char errbuf[CURL_ERROR_SIZE] = "";
    curl_easy_reset(curl);
    curl_easy_setopt(curl, CURLOPT_URL, t->hook.url);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(curl, CURLOPT_USERAGENT, "vc-bus webhooks");
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, (long)POST_TIMEOUT_MS);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, w);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
    CURLcode rc = curl_easy_perform(curl);
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(h);
    if (rc != CURLE_OK) {
        snprintf(why, whylen, "%s", errbuf[0] ? errbuf : curl_easy_strerror(rc));
        return -1;
    }
    if (status < 200 || status > 299) {
        snprintf(why, whylen, "answered %ld", status);
        return -1;
    }
    return 0;
}

/* The webhook to post to now, or NULL and when one will be (*wake). */
static target_t *next_due(webhooks_t *w, uint64_t now, uint64_t *wake)
{
    *wake = UINT64_MAX;
    for (size_t i = 0; i < w->nt; i++) {
        target_t *t = &w->t[i];
        if (t->q.head == NULL)
            continue;
        if (t->next_try_ms <= now)
            return t;
        if (t->next_try_ms < *wake)
            *wake = t->next_try_ms;
    }
    return NULL;
}

static void wait_until(webhooks_t *w, uint64_t wake)
{
    if (wake == UINT64_MAX) {
        pthread_cond_wait(&w->cv, &w->mu);
        return;
    }
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t now = vc_mono_ms(), ms = wake > now ? wake - now : 0;
    ts.tv_sec += (time_t)(ms / 1000);
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&w->cv, &w->mu, &ts);
}

/* What came back from a POST of batch to (app, url): with the mutex held,
 * the webhook looked up again, since a reload may have replaced it. */
static void settle(webhooks_t *w, const target_t *sent, vc_queue_t *batch, int ok, const char *why)
{
    size_t n = batch->len;
    target_t *t = find(w, sent->app.id, sent->hook.url);
    uint64_t now = vc_mono_ms();
    if (ok) {
        w->counts.posted++;
        items_free(batch);
        if (t && t->failing_since) {
            vc_log(VC_LOG_NOTICE, "webhooks", "%s answers again", t->hook.url);
            t->failing_since = 0;
            t->retry_ms = FIRST_RETRY_MS;
        }
        return;
    }
    w->counts.failed++;
    if (t == NULL) { /* a reload took it away */
        w->counts.dropped += n;
        items_free(batch);
        return;
    }
    if (t->failing_since && now - t->failing_since >= GIVE_UP_MS) {
        vc_log(VC_LOG_ERR, "webhooks", "%s: %zu events dropped after %d minutes of failures (the last: %s)",
               sent->hook.url, n, GIVE_UP_MS / 60000, why);
        w->counts.dropped += n;
        items_free(batch);
        t->failing_since = now; /* the next events get their 5 minutes */
        t->next_try_ms = now;
        return;
    }
    if (t->failing_since == 0) {
        t->failing_since = now;
        vc_log(VC_LOG_WARN, "webhooks", "POST to %s failed (%s); tried again with a growing wait", t->hook.url, why);
    }
    /* Back at the head, in order. */
    vc_queue_put_back(&t->q, batch);
    w->counts.queued += n;
    t->next_try_ms = now + t->retry_ms;
    t->retry_ms = t->retry_ms * 2 > LAST_RETRY_MS ? LAST_RETRY_MS : t->retry_ms * 2;
}

static void *run(void *arg)
{
    webhooks_t *w = arg;
    CURL *curl = curl_easy_init();
    pthread_mutex_lock(&w->mu);
    while (!atomic_load(&w->stopping)) {
        uint64_t wake;
        target_t *t = next_due(w, vc_mono_ms(), &wake);
        if (t == NULL) {
            wait_until(w, wake);
            continue;
        }
        /* Up to MAX_BATCH from the head, ours while the lock is let go. */
        vc_queue_t batch;
        vc_queue_take(&t->q, MAX_BATCH, &batch);
        w->counts.queued -= batch.len;
        if (t->overflowing && !vc_queue_full(&t->q))
            t->overflowing = 0;
        target_t sent = *t;
        pthread_mutex_unlock(&w->mu);
        char *body = body_of(&batch);
        char why[CURL_ERROR_SIZE + 64] = "";
        int ok = curl && post(w, curl, &sent, body, why, sizeof(why)) == 0;
        if (curl == NULL)
            snprintf(why, sizeof(why), "curl_easy_init() failed");
        free(body);
        pthread_mutex_lock(&w->mu);
        settle(w, &sent, &batch, ok, why);
    }
    pthread_mutex_unlock(&w->mu);
    if (curl)
        curl_easy_cleanup(curl);
    return NULL;
}

webhooks_t *webhooks_new(const vc_config_t *cfg)
{
    webhooks_t *w = vc_calloc(1, sizeof(*w));
    curl_global_init(CURL_GLOBAL_DEFAULT);
    pthread_mutex_init(&w->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);
    targets_of(cfg, &w->t, &w->nt);
    if (pthread_create(&w->thread, NULL, run, w) != 0) {
        vc_log(VC_LOG_CRIT, "webhooks", "pthread_create() failed: webhooks are not sent");
        atomic_store(&w->stopping, 2);
    }
    return w;
}

void webhooks_destroy(webhooks_t **wp)
{
    webhooks_t *w = *wp;
    if (w == NULL)
        return;
    int started = atomic_load(&w->stopping) == 0;
    pthread_mutex_lock(&w->mu);
    atomic_store(&w->stopping, 1);
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    if (started)
        pthread_join(w->thread, NULL);
    for (size_t i = 0; i < w->nt; i++)
        items_free(&w->t[i].q);
    free(w->t);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    curl_global_cleanup();
    free(w);
    *wp = NULL;
}
