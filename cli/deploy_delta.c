/*
 * What vc deploy sends as librsync deltas (libcommon/vc_delta.h): the
 * manifest against the current release's, and each changed file against
 * the file vc-fed has at its path, when vc-fed offers a signature and the
 * delta is less than half the bytes. vc-fed checks what a delta rebuilds
 * as if it had come whole.
 */
#include "deploy.h"
#include "vc_config.h"
#include "vc_ctl.h"
#include "vc_delta.h"
#include "vc_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int deploy_manifest_delta(void *zctx, const vc_config_t *cfg, const deploy_t *d, vc_delta_out_t *delta, char *base,
                          size_t blen, uint64_t *received)
{
    Vc__Reply *r = NULL;
    const char *args[] = {d->site};
    int rc = deploy_call(zctx, cfg, "manifest", args, 1, NULL, 0, &r, 1); /* none yet: sent whole */
    vc_delta_in_t in = {-1, d->text, d->len};
    if (rc == 0)
        *received += r->payload.len;
    if (rc == 0 && r->payload.len && vc_reply_get(r, "release"))
        rc = vc_delta_make(r->payload.data, r->payload.len, in, d->len / 2, delta);
    else
        rc = -1;
    if (rc == 0)
        snprintf(base, blen, "%s", vc_reply_get(r, "release"));
    if (r)
        vc__reply__free_unpacked(r, NULL);
    return rc;
}

int deploy_send_delta(void *zctx, const vc_config_t *cfg, const deploy_t *d, int fd, const Vc__Record *need,
                      const Vc__Reply *stage, uint64_t *sent)
{
    const char *off = vc_record_get(need, "sig_off"), *len = vc_record_get(need, "sig_len");
    struct stat st;
    if (off == NULL || len == NULL || fstat(fd, &st) != 0)
        return -1;
    size_t o = strtoull(off, NULL, 10), n = strtoull(len, NULL, 10);
    if (o > stage->payload.len || n > stage->payload.len - o)
        return -1;
    vc_delta_out_t delta = {0};
    vc_delta_in_t in = {fd, NULL, 0};
    if (vc_delta_make(stage->payload.data + o, n, in, (size_t)st.st_size / 2, &delta) < 0)
        return -1;
    const char *args[] = {d->site, d->rel.id, vc_record_get(need, "hash")};
    Vc__Reply *r = NULL;
    int rc = deploy_call(zctx, cfg, "delta", args, 3, delta.data, delta.len, &r, 1);
    if (rc == 0)
        *sent += delta.len;
    if (r)
        vc__reply__free_unpacked(r, NULL);
    free(delta.data);
    if (rc < 0)
        lseek(fd, 0, SEEK_SET); /* whole, from the start */
    return rc;
}
