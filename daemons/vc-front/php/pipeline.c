/*
 * Pipelined lent workers: while requests wait here for a lent worker, a
 * busy one may hold the next in its link, behind the request it runs.
 * It then finds that request when it ends the one before, instead of
 * sleeping in poll() until the front reads its answer and writes the
 * next: one wakeup less a request for the worker, and for the front
 * (docs/php.md, "Workers lent to the front").
 *
 * A request held behind another waits for it: head-of-line blocking,
 * which a queue here does not have (any worker free first takes the
 * queue's head). So a request is held only behind a job that is usually
 * short (its script and path took under php.pipeline_below on average
 * lately) and began less than that ago. And only one that may run again
 * (a GET or HEAD not tried yet): if the worker dies first, or is recycled
 * after the job (php.max_requests), it goes to another worker as the
 * retry rules have it, never a 502.
 */
#include "vc_util.h"
#include "backend_internal.h"

#include <string.h>
#include <time.h>

uint64_t pipeline_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static uint64_t fnv1a(uint64_t h, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

pipeline_key_t pipeline_key(const preq_t *p)
{
    const h2o_req_t *req = p->req;
    size_t plen = req->query_at != SIZE_MAX ? req->query_at : req->path.len;
    uint64_t script = fnv1a(0xcbf29ce484222325ull, p->script, strlen(p->script));
    uint64_t path = fnv1a(script, req->path.base, plen);
    return (pipeline_key_t){path ? path : 1, script ? script : 1};
}

static struct pipeline_cost *entry(const backend_t *be, uint64_t key)
{
    return (struct pipeline_cost *)&be->cost[key % (sizeof(be->cost) / sizeof(be->cost[0]))];
}

static void record(backend_t *be, uint64_t key, uint64_t us)
{
    struct pipeline_cost *c = entry(be, key);
    uint32_t took = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
    if (c->key != key) { /* another key had the entry: this one's now */
        c->key = key;
        c->us = took;
        return;
    }
    /* An average over about the last 8. What is measured is the front's
     * view (from the job written, or the one before it read, to its end
     * read), which takes in the front's own delays: a front preempted for
     * a few milliseconds makes every job it reads then look slow, and an
     * average that jumped to each such sample held nothing for a while.
     * A script that turns slow still weighs at once: one 20 ms sample
     * puts a 0.2 ms average over 2 ms. */
    c->us = c->us - c->us / 8 + took / 8;
}

void pipeline_record(backend_t *be, pipeline_key_t key, uint64_t us)
{
    record(be, key.path, us);
    record(be, key.script, us);
}

/* By its script and path if known, else by its script: a front
 * controller's paths with ids in them are each seen once, but a slow one
 * seen lately is known as such. */
static int usually_below(const backend_t *be, pipeline_key_t key, uint64_t below)
{
    const struct pipeline_cost *c = entry(be, key.path);
    if (key.path != 0 && c->key == key.path)
        return c->us < below;
    c = entry(be, key.script);
    return key.script != 0 && c->key == key.script && c->us < below;
}

int pipeline_may(const backend_t *be, const lent_t *l, const preq_t *head, uint64_t now_us)
{
    VC_CHECK_OBJ(l, LENT_MAGIC);
    if (!l->busy || l->finishing || l->nahead >= PIPELINE_DEPTH || l->recalled || l->owed || be->nowed > 0 ||
        be->leaving || l->job == NULL)
        return 0;
    if (head == NULL || !head->idempotent || head->retries > 0 || head->packed == NULL)
        return 0;
    /* php.pipeline_below, 2 ms by default: ten times hello-world's cost in
     * worker mode on a slow virtual machine, a tenth of a request that
     * waits on I/O or sleeps (bench/run's mixed-worker: 20 ms). Every
     * request it would wait for counts. */
    uint64_t below = (uint64_t)be->pool->conf->pipeline_below_ms * 1000u;
    if (!usually_below(be, l->job_key, below) || now_us - l->job_began_us >= below)
        return 0;
    for (int i = 0; i < l->nahead; i++)
        if (!usually_below(be, l->ahead_key[i], below))
            return 0;
    return 1;
}
