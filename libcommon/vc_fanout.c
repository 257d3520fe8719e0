/* One thread a peer (vc_fanout.h). */
#include "vc_fanout.h"
#include "vc_util.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#define FANOUT_MAGIC 0x66616e6fu /* "fano" */

typedef struct call {
    vc_fanout_t *fo;
    void *item;
    pthread_t thread;
    int started;
} call_t;

struct vc_fanout {
    unsigned magic;
    void (*run)(void *item);
    void (*last)(void *arg);
    void *arg;
    call_t *calls;
    size_t n;
    atomic_size_t left;
};

static void ended(vc_fanout_t *fo)
{
    if (atomic_fetch_sub(&fo->left, 1) == 1 && fo->last)
        fo->last(fo->arg);
}

static void *call_thread(void *arg)
{
    call_t *c = arg;
    c->fo->run(c->item);
    ended(c->fo);
    return NULL;
}

vc_fanout_t *vc_fanout_start(void *items, size_t n, size_t size, void (*run)(void *item),
                             void (*failed)(void *item, int err), void (*last)(void *arg), void *arg)
{
    vc_fanout_t *fo = vc_calloc(1, sizeof(*fo));
    fo->magic = FANOUT_MAGIC;
    fo->run = run;
    fo->last = last;
    fo->arg = arg;
    fo->calls = vc_calloc(n ? n : 1, sizeof(*fo->calls));
    fo->n = n;
    atomic_store(&fo->left, n);
    /* Every call is set up before the first thread runs: the last to end
     * may be any of them. */
    for (size_t i = 0; i < n; i++)
        fo->calls[i] = (call_t){.fo = fo, .item = (char *)items + i * size};
    for (size_t i = 0; i < n; i++) {
        int err = pthread_create(&fo->calls[i].thread, NULL, call_thread, &fo->calls[i]);
        fo->calls[i].started = err == 0;
        if (err) {
            if (failed)
                failed(fo->calls[i].item, err);
            ended(fo);
        }
    }
    return fo;
}

int vc_fanout_over(const vc_fanout_t *fo)
{
    VC_CHECK_OBJ(fo, FANOUT_MAGIC);
    return atomic_load(&fo->left) == 0;
}

void vc_fanout_end(vc_fanout_t *fo)
{
    if (fo == NULL)
        return;
    VC_CHECK_OBJ(fo, FANOUT_MAGIC);
    for (size_t i = 0; i < fo->n; i++)
        if (fo->calls[i].started)
            pthread_join(fo->calls[i].thread, NULL);
    fo->magic = 0;
    free(fo->calls);
    free(fo);
}
