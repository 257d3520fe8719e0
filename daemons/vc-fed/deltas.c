/*
 * What changed is sent as a librsync delta (libcommon/vc_delta.h): the
 * manifest against the current release's (`manifest` gives its
 * signature), and a changed file against the file at the same path in the
 * current release (its signature comes with `stage`'s answer). What a
 * delta rebuilds is then checked as if it had come whole: the manifest by
 * its signature, a file by its hash.
 */
#include "fed.h"
#include "vc_delta.h"
#include "vc_log.h"
#include "vc_util.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* All the signatures one answer carries, at most. */
#define SIGNATURES_MAX (64 << 20)

void manifest_verb(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    fed_t *f = arg;
    const vc_site_t *s = fed_site_arg(f, cmd, "manifest SITE", reply);
    if (s == NULL)
        return;
    char current[VC_RELEASE_ID_MAX + 1];
    fed_current(s, current, sizeof(current));
    Vc__Release *r = current[0] ? releases_get(f, s->name, current) : NULL;
    vc_delta_out_t sig = {0};
    vc_delta_in_t in = {-1, r ? r->manifest.data : NULL, r ? r->manifest.len : 0};
    if (r == NULL)
        vc_reply_fail(reply, "site \"%s\" has no current release", s->name);
    else if (vc_delta_signature(in, &sig) < 0)
        vc_reply_fail(reply, "the signature of release %s's manifest could not be made", r->id);
    else {
        vc_reply_ok(reply, "the signature of release %s's manifest", r->id);
        vc_reply_field(reply, "release", "%s", r->id);
        reply->payload.data = sig.data;
        reply->payload.len = sig.len;
    }
    if (r)
        vc__release__free_unpacked(r, NULL);
}

char *deltas_manifest(fed_t *f, const char *site, const char *base, const void *delta, size_t len, size_t *out_len,
                      char *why, size_t wlen)
{
    VC_CHECK_OBJ(f, FED_MAGIC);
    Vc__Release *r = releases_get(f, site, base);
    if (r == NULL) {
        snprintf(why, wlen, "the manifest came as a delta against release %s, which is not here", base);
        return NULL;
    }
    vc_delta_out_t out = {0};
    int rc = vc_delta_apply_mem(r->manifest.data, r->manifest.len, delta, len, VC_RELEASE_MAX_BYTES, &out);
    vc__release__free_unpacked(r, NULL);
    if (rc < 0) {
        snprintf(why, wlen, "the manifest's delta against release %s does not apply", base);
        return NULL;
    }
    /* Text: one NUL more, as a string. */
    char *text = vc_realloc(out.data, out.len + 1);
    text[out.len] = '\0';
    *out_len = out.len;
    return text;
}

void deltas_signatures(fed_staging_t *s, Vc__Reply *reply)
{
    VC_CHECK_OBJ(s, STAGING_MAGIC);
    vc_delta_out_t all = {0};
    size_t cap = 0;
    for (size_t i = 0; i < s->nneed && i < reply->n_records; i++) {
        if (s->need[i].base == NULL)
            continue;
        int fd = open(s->need[i].base, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        vc_delta_out_t sig = {0};
        vc_delta_in_t in = {fd, NULL, 0};
        if (fd >= 0 && vc_delta_signature(in, &sig) == 0 && all.len + sig.len <= SIGNATURES_MAX) {
            all.data = vc_grow(all.data, &cap, all.len + sig.len, 1, 65536);
            memcpy(all.data + all.len, sig.data, sig.len);
            vc_record_field(reply->records[i], "sig_off", "%zu", all.len);
            vc_record_field(reply->records[i], "sig_len", "%zu", sig.len);
            all.len += sig.len;
        } else {
            free(s->need[i].base); /* it comes whole */
            s->need[i].base = NULL;
        }
        free(sig.data);
        if (fd >= 0)
            close(fd);
    }
    reply->payload.data = all.data;
    reply->payload.len = all.len;
}
