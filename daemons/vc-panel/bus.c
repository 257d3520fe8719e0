/*
 * The panel's side of the bus: subscriptions to its events (bus-out),
 * the dashboard's figures (live.c) and the logs page's events (follow.c),
 * each a ZeroMQ SUB socket read on h2o's loop; and its journal in LMDB,
 * read newest first (the audit page, the logs page's start).
 */
#include "panel.h"
#include "event.pb-c.h"
#include "vc_config.h"
#include "vc_store.h"
#include "vc_util.h"
#include "vc_zmq.h"

#include <stdlib.h>
#include <string.h>
#include <zmq.h>

h2o_socket_t *panel_bus_watch(panel_t *p, void **sub, const char *const *topics, size_t ntopics, h2o_socket_cb cb,
                              void *data)
{
    char *ep = vc_config_endpoint(p->d.cfg, "bus-out");
    *sub = vc_socket(p->d.zctx, ZMQ_SUB, ep, 0);
    free(ep);
    if (*sub == NULL)
        return NULL;
    for (size_t i = 0; i < ntopics; i++)
        zmq_setsockopt(*sub, ZMQ_SUBSCRIBE, topics[i], strlen(topics[i]));
    int fd;
    size_t fdlen = sizeof(fd);
    zmq_getsockopt(*sub, ZMQ_FD, &fd, &fdlen);
    h2o_socket_t *s = h2o_evloop_socket_create(p->ctx.loop, fd, H2O_SOCKET_FLAG_DONT_READ);
    s->data = data;
    h2o_socket_read_start(s, cb);
    return s;
}

void panel_bus_unwatch(h2o_socket_t **s, void **sub)
{
    if (*s) {
        /* The descriptor is ZeroMQ's: h2o lets go of it without closing. */
        h2o_socket_export_t exp;
        h2o_socket_export(*s, &exp);
        *s = NULL;
    }
    zmq_close(*sub);
    *sub = NULL;
}

typedef struct walk {
    int (*take)(const Vc__Envelope *e, void *arg);
    void *arg;
} walk_t;

static int walk_fn(MDB_txn *txn, MDB_dbi dbi, void *arg)
{
    walk_t *w = arg;
    MDB_cursor *cur;
    if (mdb_cursor_open(txn, dbi, &cur) != 0)
        return -VC_ERR_STORE;
    MDB_val k, v;
    int enough = 0;
    /* The journal is bounded (bus.journal_max), so is this walk. */
    for (int rc = mdb_cursor_get(cur, &k, &v, MDB_LAST); rc == 0 && !enough;
         rc = mdb_cursor_get(cur, &k, &v, MDB_PREV)) {
        Vc__Envelope *e = vc__envelope__unpack(NULL, v.mv_size, v.mv_data); /* copied out of the map */
        if (e == NULL)
            continue;
        enough = w->take(e, w->arg);
        vc__envelope__free_unpacked(e, NULL);
    }
    mdb_cursor_close(cur);
    return 0;
}

void panel_journal_newest(panel_t *p, int (*take)(const Vc__Envelope *e, void *arg), void *arg)
{
    walk_t w = {take, arg};
    vc_store_read(p->store, VC_DB_EVENTS, walk_fn, &w);
}
