/*
 * vc-mesh's calls to this node's other daemons over their control
 * sockets (a purge to vc-cache, a certificate to vc-acme).
 */
#include "mesh.h"
#include "vc_util.h"

#include <stdio.h>
#include <stdlib.h>

const char *mesh_call(mesh_t *m, const char *daemon, const char *verb, const char *const *args, size_t nargs,
                      int timeout_ms, char *err, size_t errlen)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    char name[64];
    snprintf(name, sizeof(name), "ctl-%s", daemon);
    char *ep = vc_config_endpoint(m->d.cfg, name);
    Vc__Reply *r = NULL;
    int rc = vc_ctl_call(m->d.zctx, ep, verb, args, nargs, timeout_ms, &r);
    free(ep);
    const char *why = NULL;
    if (rc < 0)
        why = vc_strerror(rc);
    else if (r && !r->ok)
        why = r->message;
    if (why)
        snprintf(err, errlen, "%s", why);
    if (r)
        vc__reply__free_unpacked(r, NULL);
    return why ? err : NULL;
}
