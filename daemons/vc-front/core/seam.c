#include "seam.h"
#include "vc_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const seam_backend_t *backends[SEAM_MAX_BACKENDS];
static size_t nbackends;

/* Runs before main (a constructor in each backend's file): kept sorted by
 * stage, then order, so dispatch walks one array. */
void seam_register(const seam_backend_t *b)
{
    if (nbackends == SEAM_MAX_BACKENDS) {
        fprintf(stderr, "vc-front: more than %d backends registered (%s): raise SEAM_MAX_BACKENDS\n", SEAM_MAX_BACKENDS,
                b->name);
        abort();
    }
    size_t i = nbackends++;
    while (i > 0 && (backends[i - 1]->stage > b->stage ||
                     (backends[i - 1]->stage == b->stage && backends[i - 1]->order > b->order))) {
        backends[i] = backends[i - 1];
        i--;
    }
    backends[i] = b;
}

int seam_init_sites(front_t *f)
{
    VC_CHECK_OBJ(f, FRONT_MAGIC);
    for (size_t k = 0; k < f->nsites; k++) {
        site_rt_t *s = &f->sites[k];
        s->backend_state = vc_calloc(SEAM_MAX_BACKENDS, sizeof(void *));
        for (size_t i = 0; i < nbackends; i++)
            if (backends[i]->site_init && backends[i]->site_init(f, s, &s->backend_state[i]) < 0)
                return -1;
    }
    return 0;
}

void *seam_state(const site_rt_t *s, const seam_backend_t *b)
{
    for (size_t i = 0; i < nbackends; i++)
        if (backends[i] == b)
            return s->backend_state ? s->backend_state[i] : NULL;
    return NULL;
}

int seam_dispatch(seam_stage_t stage, const seam_request_t *r)
{
    return seam_dispatch_after(stage, r, NULL);
}

int seam_dispatch_after(seam_stage_t stage, const seam_request_t *r, const seam_backend_t *after)
{
    size_t i = 0;
    if (after)
        while (i < nbackends && backends[i++] != after)
            ;
    for (; i < nbackends; i++)
        if (backends[i]->stage == stage && backends[i]->take(r, r->site->backend_state[i]))
            return 1;
    return 0;
}

const seam_backend_t *const *seam_backends(size_t *n)
{
    *n = nbackends;
    return backends;
}

int seam_start(front_t *f)
{
    VC_CHECK_OBJ(f, FRONT_MAGIC);
    for (size_t i = 0; i < nbackends; i++)
        if (backends[i]->start && backends[i]->start(f) < 0)
            return -1;
    return 0;
}

void seam_tick(front_t *f)
{
    VC_CHECK_OBJ(f, FRONT_MAGIC);
    for (size_t i = 0; i < nbackends; i++)
        if (backends[i]->tick)
            backends[i]->tick(f);
}

void seam_stop(front_t *f)
{
    VC_CHECK_OBJ(f, FRONT_MAGIC);
    for (size_t i = 0; i < nbackends; i++)
        if (backends[i]->stop)
            backends[i]->stop(f);
}

size_t seam_inflight(const front_t *f)
{
    VC_CHECK_OBJ(f, FRONT_MAGIC);
    size_t n = 0;
    for (size_t i = 0; i < nbackends; i++)
        if (backends[i]->inflight)
            n += backends[i]->inflight(f);
    return n;
}

uint64_t seam_counter_value(const front_t *f, const seam_counter_t *c)
{
    VC_CHECK_OBJ(f, FRONT_MAGIC);
    if (c->stat)
        return *(const uint64_t *)((const char *)&f->stats + c->stat - 1);
    return c->value ? *c->value : c->read ? c->read() : 0;
}

void seam_status(front_t *f, const seam_counter_t *core, size_t ncore, Vc__Reply *reply)
{
    VC_CHECK_OBJ(f, FRONT_MAGIC);
    for (size_t k = 0; k < ncore; k++)
        if (core[k].field)
            vc_reply_field(reply, core[k].field, "%llu", (unsigned long long)seam_counter_value(f, &core[k]));
    for (size_t i = 0; i < nbackends; i++) {
        const seam_backend_t *b = backends[i];
        for (size_t k = 0; k < b->ncounters; k++)
            if (b->counters[k].field)
                vc_reply_field(reply, b->counters[k].field, "%llu",
                               (unsigned long long)seam_counter_value(f, &b->counters[k]));
        if (b->status)
            b->status(f, reply);
    }
}

void seam_command(front_t *f, const vc_verb_t *core, size_t ncore, const Vc__Command *cmd, Vc__Reply *reply)
{
    VC_CHECK_OBJ(f, FRONT_MAGIC);
    /* Made once: the backends are all registered before main() runs. */
    static vc_verb_t *all;
    static size_t nall;
    if (all == NULL) {
        nall = ncore;
        for (size_t i = 0; i < nbackends; i++)
            nall += backends[i]->nverbs;
        all = vc_calloc(nall, sizeof(*all));
        memcpy(all, core, ncore * sizeof(*core));
        for (size_t i = 0, at = ncore; i < nbackends; at += backends[i]->nverbs, i++)
            if (backends[i]->nverbs)
                memcpy(all + at, backends[i]->verbs, backends[i]->nverbs * sizeof(*all));
    }
    vc_verbs_run(all, nall, f, cmd, reply);
}

void seam_admin(front_t *f, h2o_pathconf_t *pc)
{
    VC_CHECK_OBJ(f, FRONT_MAGIC);
    for (size_t i = 0; i < nbackends; i++)
        if (backends[i]->admin)
            backends[i]->admin(f, pc);
}

size_t seam_php_params(const site_rt_t *s, Vc__Header *h, Vc__Header **hp)
{
    size_t n = 0;
    for (size_t i = 0; i < nbackends; i++)
        if (backends[i]->php_params)
            n += backends[i]->php_params(s, h + n, hp + n, SEAM_PHP_PARAMS - n);
    return n;
}

void seam_php_publish(const char *site, const Vc__Publish *p)
{
    for (size_t i = 0; i < nbackends; i++)
        if (backends[i]->php_publish)
            backends[i]->php_publish(site, p);
}
