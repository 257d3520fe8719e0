/*
 * The node's LMDB environment (DATA/state) as the front opens it: once,
 * at first use, since LMDB allows one handle a process.
 */
#include "vc_util.h"
#include "node_store.h"
#include "vc_log.h"
#include "vc_store.h"

vc_store_t *front_store(front_t *f)
{
    VC_CHECK_OBJ(f, FRONT_MAGIC);
    static vc_store_t *store;
    if (store == NULL) {
        char err[512];
        store = vc_store_open(f->d.cfg->state_dir, (size_t)f->d.cfg->store.map_size, err, sizeof(err));
        if (store == NULL)
            vc_log(VC_LOG_ERR, "store", "the node's state is not read: %s", err);
    }
    return store;
}
