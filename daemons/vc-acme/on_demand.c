/* On-demand TLS's queue, refusals, rate limit and ask URL (on_demand.h). */
#include "on_demand.h"
#include "vc_events.h"
#include "vc_acme.h"
#include "vc_log.h"
#include "vc_util.h"
#include "vc_zmq.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#define MAX_QUEUED 64
#define MAX_REFUSED 256
#define REFUSED_FOR_MS 60000
#define ASK_TIMEOUT_S 5

typedef struct refused {
    char host[254];
    uint64_t until_ms;
} refused_t;

struct on_demand {
    void *sub;
    char queue[MAX_QUEUED][254];
    size_t nqueue;
    refused_t refused[MAX_REFUSED];
    size_t nrefused;
    double tokens; /* the rate limit: a bucket of per_hour, refilled evenly */
    uint64_t filled_ms;
};

on_demand_t *on_demand_new(void *zctx, const char *bus_out)
{
    on_demand_t *od = vc_calloc(1, sizeof(*od));
    od->sub = vc_socket(zctx, ZMQ_SUB, bus_out, 0);
    if (od->sub)
        zmq_setsockopt(od->sub, ZMQ_SUBSCRIBE, VC_EVENT(TLS_ON_DEMAND_WANTED), strlen(VC_EVENT(TLS_ON_DEMAND_WANTED)));
    od->tokens = -1; /* full at the first question */
    return od;
}

void on_demand_free(on_demand_t **pod)
{
    on_demand_t *od = *pod;
    if (od == NULL)
        return;
    if (od->sub)
        zmq_close(od->sub);
    free(od);
    *pod = NULL;
}

void *on_demand_socket(on_demand_t *od)
{
    return od->sub;
}

static int is_refused(on_demand_t *od, const char *host, uint64_t now)
{
    for (size_t i = 0; i < od->nrefused; i++)
        if (od->refused[i].until_ms > now && strcmp(od->refused[i].host, host) == 0)
            return 1;
    return 0;
}

static void queue(on_demand_t *od, const char *host)
{
    if (is_refused(od, host, vc_mono_ms()) || od->nqueue == MAX_QUEUED)
        return;
    for (size_t i = 0; i < od->nqueue; i++)
        if (strcmp(od->queue[i], host) == 0)
            return;
    snprintf(od->queue[od->nqueue++], sizeof(od->queue[0]), "%s", host);
}

/* An event's "host", checked as the front checked it: the bus carries
 * what any local process publishes. */
static void on_event(on_demand_t *od, zmq_msg_t *body)
{
    Vc__Envelope *e = vc__envelope__unpack(NULL, zmq_msg_size(body), zmq_msg_data(body));
    if (e == NULL)
        return;
    char host[254];
    for (size_t i = 0; i < e->n_fields; i++)
        if (strcmp(e->fields[i]->key, "host") == 0 &&
            vc_acme_on_demand_host(e->fields[i]->value, strlen(e->fields[i]->value), host, sizeof(host)))
            queue(od, host);
    vc__envelope__free_unpacked(e, NULL);
}

void on_demand_read(on_demand_t *od)
{
    if (od->sub == NULL)
        return;
    for (;;) {
        zmq_msg_t topic, body;
        zmq_msg_init(&topic);
        if (zmq_msg_recv(&topic, od->sub, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&topic);
            return;
        }
        int more = zmq_msg_more(&topic);
        zmq_msg_close(&topic);
        if (!more)
            continue; /* the bus's welcome */
        zmq_msg_init(&body);
        if (zmq_msg_recv(&body, od->sub, ZMQ_DONTWAIT) >= 0) {
            if (!zmq_msg_more(&body))
                on_event(od, &body);
            else /* not an event: the rest of it goes */
                for (int m = 1; m;) {
                    zmq_msg_close(&body);
                    zmq_msg_init(&body);
                    m = zmq_msg_recv(&body, od->sub, ZMQ_DONTWAIT) >= 0 && zmq_msg_more(&body);
                }
        }
        zmq_msg_close(&body);
    }
}

void on_demand_refuse(on_demand_t *od, vc_bus_t *bus, const char *host, const char *why)
{
    uint64_t now = vc_mono_ms();
    vc_log(VC_LOG_WARN, "on-demand", "\"%s\": no certificate: %s", host, why);
    vc_bus_publish(bus, VC_EVENT(ACME_ON_DEMAND_REFUSED), VC__SEVERITY__WARNING, "host", host, "why", why, NULL);
    refused_t *r = NULL;
    for (size_t i = 0; i < od->nrefused && r == NULL; i++)
        if (od->refused[i].until_ms <= now)
            r = &od->refused[i];
    if (r == NULL)
        r = od->nrefused < MAX_REFUSED ? &od->refused[od->nrefused++] : &od->refused[now % MAX_REFUSED];
    snprintf(r->host, sizeof(r->host), "%s", host);
    r->until_ms = now + REFUSED_FOR_MS;
}

char *on_demand_next(on_demand_t *od, vc_bus_t *bus, int64_t per_hour, int (*known)(void *arg, const char *host),
                     void *arg)
{
    uint64_t now = vc_mono_ms();
    if (od->tokens < 0)
        od->tokens = (double)per_hour;
    else
        od->tokens += (double)(now - od->filled_ms) * (double)per_hour / 3600000.0;
    if (od->tokens > (double)per_hour)
        od->tokens = (double)per_hour;
    od->filled_ms = now;
    while (od->nqueue > 0) {
        char host[254];
        snprintf(host, sizeof(host), "%s", od->queue[0]);
        memmove(od->queue[0], od->queue[1], (od->nqueue - 1) * sizeof(od->queue[0]));
        od->nqueue--;
        if (known(arg, host))
            continue;
        if (od->tokens < 1) {
            char why[96];
            snprintf(why, sizeof(why), "over the rate limit (acme.on_demand_per_hour = %lld)", (long long)per_hour);
            on_demand_refuse(od, bus, host, why);
            continue;
        }
        return vc_strdup(host);
    }
    return NULL;
}

void on_demand_take(on_demand_t *od)
{
    od->tokens -= 1;
}

static size_t discard(char *p, size_t size, size_t n, void *arg)
{
    (void)p;
    (void)arg;
    return size * n;
}

int on_demand_ask(const char *url, const char *host, char *err, size_t errlen)
{
    CURL *c = curl_easy_init();
    if (c == NULL) {
        snprintf(err, errlen, "the ask URL could not be asked: curl_easy_init() failed");
        return -1;
    }
    char *q = curl_easy_escape(c, host, 0);
    char *full = vc_asprintf("%s%sdomain=%s", url, strchr(url, '?') ? "&" : "?", q);
    curl_free(q);
    curl_easy_setopt(c, CURLOPT_URL, full);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, (long)ASK_TIMEOUT_S);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    CURLcode rc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    int out = 1;
    if (rc != CURLE_OK) {
        snprintf(err, errlen, "the ask URL %s could not be asked: %s", url, curl_easy_strerror(rc));
        out = -1;
    } else if (status != 200) {
        snprintf(err, errlen, "the ask URL %s answered %ld", url, status);
        out = 0;
    }
    free(full);
    return out;
}
