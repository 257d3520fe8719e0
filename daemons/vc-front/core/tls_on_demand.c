/*
 * On-demand TLS's table of hosts (tls_on_demand.h). The table is bounded:
 * a client can name any host, and random names must neither grow memory
 * nor push out the hosts that have a certificate (a host without one goes
 * first, then the least recently used).
 */
#include "tls_on_demand.h"
#include "vc_events.h"
#include "vc_acme.h"
#include "vc_log.h"
#include "vc_util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_HOSTS 1024
#define LOOK_EVERY_MS 1000
#define ASK_EVERY_MS 10000
#define ASKS_PER_SECOND 20

typedef struct od_host {
    char name[254];
    SSL_CTX *ctx; /* NULL: no pair yet */
    ino_t ino;    /* of the certificate in service */
    struct timespec mtime;
    uint64_t looked_ms, asked_ms, used_ms;
} od_host_t;

struct tls_on_demand {
    char *data_dir;
    vc_bus_t *bus;
    od_host_t *h;
    size_t n;
    uint64_t second; /* the budget of asks: this second's, and how many so far */
    unsigned asks;
};

tls_on_demand_t *tls_on_demand_new(const char *data_dir)
{
    tls_on_demand_t *od = vc_calloc(1, sizeof(*od));
    od->data_dir = vc_strdup(data_dir);
    od->h = vc_calloc(MAX_HOSTS, sizeof(*od->h));
    return od;
}

void tls_on_demand_destroy(tls_on_demand_t **pod)
{
    tls_on_demand_t *od = *pod;
    if (od == NULL)
        return;
    for (size_t i = 0; i < od->n; i++)
        if (od->h[i].ctx)
            SSL_CTX_free(od->h[i].ctx);
    free(od->h);
    free(od->data_dir);
    free(od);
    *pod = NULL;
}

void tls_on_demand_set_bus(tls_on_demand_t *od, vc_bus_t *bus)
{
    od->bus = bus;
}

/* host's entry, made if need be (in place of another when full). */
static od_host_t *entry(tls_on_demand_t *od, const char *host)
{
    for (size_t i = 0; i < od->n; i++)
        if (strcmp(od->h[i].name, host) == 0)
            return &od->h[i];
    od_host_t *e;
    if (od->n < MAX_HOSTS) {
        e = &od->h[od->n++];
    } else {
        e = &od->h[0];
        for (size_t i = 1; i < od->n; i++) {
            od_host_t *c = &od->h[i];
            if ((c->ctx == NULL) != (e->ctx == NULL) ? c->ctx == NULL : c->used_ms < e->used_ms)
                e = c;
        }
        if (e->ctx)
            SSL_CTX_free(e->ctx);
    }
    memset(e, 0, sizeof(*e));
    snprintf(e->name, sizeof(e->name), "%s", host);
    return e;
}

/* A pair vc-acme installed or renewed for the host: served from now on. */
static void look(tls_on_demand_t *od, od_host_t *e)
{
    char *site = vc_asprintf(VC_ACME_ON_DEMAND_PREFIX "%s", e->name);
    char *crt = vc_acme_cert_path(od->data_dir, site, "crt"), *key = vc_acme_cert_path(od->data_dir, site, "key");
    struct stat cs, ks;
    if (stat(crt, &cs) == 0 && stat(key, &ks) == 0 &&
        (cs.st_ino != e->ino || cs.st_mtim.tv_sec != e->mtime.tv_sec || cs.st_mtim.tv_nsec != e->mtime.tv_nsec)) {
        /* A pair half written (the key comes first) is tried again later. */
        SSL_CTX *ctx = tls_ctx_from_files(crt, key, 1);
        if (ctx) {
            if (e->ctx)
                SSL_CTX_free(e->ctx);
            e->ctx = ctx;
            e->ino = cs.st_ino;
            e->mtime = cs.st_mtim;
            vc_log(VC_LOG_NOTICE, "tls", "serving the on-demand certificate for \"%s\"", e->name);
        }
    }
    free(crt);
    free(key);
    free(site);
}

SSL_CTX *tls_on_demand_ctx(tls_on_demand_t *od, const char *sni)
{
    char host[254];
    if (!vc_acme_on_demand_host(sni, strlen(sni), host, sizeof(host)))
        return NULL;
    uint64_t now = vc_mono_ms();
    od_host_t *e = entry(od, host);
    e->used_ms = now;
    if (e->looked_ms == 0 || now - e->looked_ms >= LOOK_EVERY_MS) {
        e->looked_ms = now;
        look(od, e);
    }
    if (e->ctx == NULL && od->bus && (e->asked_ms == 0 || now - e->asked_ms >= ASK_EVERY_MS)) {
        if (now / 1000 != od->second) {
            od->second = now / 1000;
            od->asks = 0;
        }
        if (od->asks < ASKS_PER_SECOND) {
            od->asks++;
            e->asked_ms = now;
            vc_bus_publish(od->bus, VC_EVENT(TLS_ON_DEMAND_WANTED), VC__SEVERITY__INFO, "host", host, NULL);
        }
    }
    return e->ctx;
}
