#include "seam.h"
#include "vc_util.h"

#include <stdio.h>
#include <stdlib.h>

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
