/*
 * vc-cache in a cluster (libcommon/vc_mesh.h): each purge done on this
 * node, by an operator, a site's PHP or an unsafe method's invalidation,
 * is handed to vc-mesh on "mesh-in", and vc-mesh sends it to every other
 * node, where it comes back through the `replay` verb and is not handed
 * on again. On a machine alone (no cluster.node) nothing is opened.
 */
#ifndef VC_CACHE_CLUSTER_H
#define VC_CACHE_CLUSTER_H

#include "vc_config.h"

#include <stddef.h>
#include <stdint.h>

typedef struct cache_cluster {
    void *out; /* a PUSH to mesh-in; NULL: no cluster */
    uint64_t handed, dropped;
} cache_cluster_t;

/* Opens the PUSH when the configuration names this node; 0, or -1. */
int cache_cluster_open(cache_cluster_t *cl, void *zctx, const vc_config_t *cfg);
/* Hands vc-mesh one purge done here (kind as MeshPurge's). Never blocks:
 * with vc-mesh away past the queue's bound it is dropped and counted. */
void cache_cluster_hand(cache_cluster_t *cl, const char *id, const char *kind, const char *value, size_t vlen, int soft,
                        char *const *hosts, size_t nhosts);
void cache_cluster_close(cache_cluster_t *cl);

#endif
