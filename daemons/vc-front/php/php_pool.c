/*
 * A PHP pool as the front sees it (backend.h): the link to its current
 * process, and those to processes that are leaving. When `vc restart php`
 * starts a successor, the old process says Leaving on its link
 * (proto/request.proto); from then on new requests go to a new link, to
 * the successor, while the old link still carries the answers of what the
 * old process runs and the give-backs of its lent workers. What it had
 * not started comes back and moves over. The old link goes once the old
 * process has closed it and nothing of it is in use.
 */
#include "backend_internal.h"
#include "vc_log.h"
#include "vc_util.h"

#include <stdlib.h>

php_pool_t *php_pool_new(front_t *f, const vc_pool_t *conf, const char *endpoint)
{
    VC_CHECK_OBJ(f, FRONT_MAGIC);
    php_pool_t *pool = vc_calloc(1, sizeof(*pool));
    pool->f = f;
    pool->conf = conf;
    pool->endpoint = vc_strdup(endpoint);
    pool->cur = backend_new(pool);
    if (pool->cur == NULL) {
        free(pool->endpoint);
        free(pool);
        return NULL;
    }
    return pool;
}

void php_pool_destroy(php_pool_t **ppool)
{
    php_pool_t *pool = *ppool;
    if (pool == NULL)
        return;
    while (pool->older) {
        backend_t *be = pool->older;
        pool->older = be->older;
        backend_destroy(&be);
    }
    backend_destroy(&pool->cur);
    free(pool->endpoint);
    free(pool);
    *ppool = NULL;
}

void php_pool_succeed(php_pool_t *pool, backend_t *be)
{
    /* Only the current process can say Leaving first: the others have. */
    VC_ASSERT(be == pool->cur && !be->leaving);
    backend_t *next = backend_new(pool);
    if (next == NULL)
        return; /* the endpoint resolved a moment ago: not expected; be stays current */
    be->leaving = 1;
    pool->cur = next;
    be->older = pool->older;
    pool->older = be;
    /* What waited here for a lent worker never started. */
    for (vc_qlink_t *l; (l = be->queue.head) != NULL;) {
        preq_t *p = VC_QUEUE_ITEM(l, preq_t, qlink);
        lent_unqueue(be, p);
        backend_move(p, pool->cur);
    }
}

int php_pool_submit(php_pool_t *pool, site_rt_t *s, h2o_req_t *req, Vc__RequestHead *head)
{
    return backend_submit(pool->cur, s, req, head);
}

void php_pool_tick(php_pool_t *pool)
{
    backend_tick(pool->cur);
    for (backend_t **pp = &pool->older; *pp;) {
        backend_t *be = *pp;
        if (backend_done(be)) {
            *pp = be->older;
            backend_destroy(&be);
            continue;
        }
        backend_tick(be);
        pp = &be->older;
    }
}

size_t php_pool_inflight(const php_pool_t *pool)
{
    size_t n = pool->cur->inflight;
    for (const backend_t *be = pool->older; be; be = be->older)
        n += be->inflight;
    return n;
}
