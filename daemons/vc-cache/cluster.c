#include "cluster.h"
#include "mesh.pb-c.h"
#include "vc_log.h"
#include "vc_mesh.h"
#include "vc_util.h"
#include "vc_zmq.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Purges waiting for vc-mesh while it restarts; past this they are dropped
 * (and vc-mesh, back, replays what the others did; this node's own purges
 * in that window stay local: counted as dropped in vc cache stats). */
#define OUT_HWM 100000

int cache_cluster_open(cache_cluster_t *cl, void *zctx, const vc_config_t *cfg)
{
    if (vc_mesh_settings_of(cfg)->node[0] == '\0')
        return 0;
    char *ep = vc_config_endpoint(cfg, "mesh-in");
    cl->out = vc_socket_hwm(zctx, ZMQ_PUSH, ep, 0, OUT_HWM, 0);
    if (cl->out == NULL) {
        vc_log(VC_LOG_ERR, "cluster", "zmq_connect() failed for \"%s\": %s", ep, zmq_strerror(errno));
        free(ep);
        return -1;
    }
    free(ep);
    return 0;
}

void cache_cluster_hand(cache_cluster_t *cl, const char *id, const char *kind, const char *value, size_t vlen, int soft,
                        char *const *hosts, size_t nhosts)
{
    if (cl->out == NULL)
        return;
    char *v = vc_strndup(value, vlen);
    Vc__MeshPurge p = VC__MESH_PURGE__INIT;
    p.id = (char *)id;
    p.kind = (char *)kind;
    p.value = v;
    p.soft = soft;
    p.hosts = (char **)hosts;
    p.n_hosts = nhosts;
    p.at_ms = vc_wall_ms();
    if (vc_send_proto(cl->out, &p.base, ZMQ_DONTWAIT) == 0) {
        cl->handed++;
    } else if (cl->dropped++ == 0) {
        vc_log(VC_LOG_WARN, "cluster", "vc-mesh is not taking purges: this node's purges stay local until it is back");
    }
    free(v);
}

void cache_cluster_close(cache_cluster_t *cl)
{
    if (cl->out)
        zmq_close(cl->out);
    cl->out = NULL;
}
