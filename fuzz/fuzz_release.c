/* libFuzzer: what vc-fed reads from a deployer (and, in a cluster, from
 * another node). An input starting with 'D' is a librsync delta
 * (libcommon/vc_delta.c) applied to a fixed basis: it never rebuilds more
 * than the bound, whatever its commands ask. Any other input is a
 * release's manifest (libcommon/vc_release.c): what is accepted has paths
 * inside the release, each entry's directory listed before it, links that
 * stay inside, entries sorted and once each; and it prints back to the
 * same bytes, which parse to the same release. */
#include "vc_delta.h"
#include "vc_release.h"

#include <stdlib.h>
#include <string.h>

static void check(const vc_release_t *r)
{
    for (size_t i = 0; i < r->n; i++) {
        const vc_rel_entry_t *e = &r->entries[i];
        if (!vc_release_path_ok(e->path) || e->mode > 0777 || (i && strcmp(r->entries[i - 1].path, e->path) >= 0))
            abort();
        if (e->kind == VC_REL_LINK && (e->target == NULL || !vc_release_target_ok(e->path, e->target)))
            abort();
        const char *slash = strrchr(e->path, '/');
        if (slash) {
            size_t n = (size_t)(slash - e->path);
            int found = 0;
            for (size_t k = 0; k < i && !found; k++)
                found = r->entries[k].kind == VC_REL_DIR && strlen(r->entries[k].path) == n &&
                        memcmp(r->entries[k].path, e->path, n) == 0;
            if (!found)
                abort();
        }
    }
}

static void delta(const uint8_t *data, size_t size)
{
    static const char basis[] = "velocity-release 1\nsite s\nid a\ncreated 1\nsigner k\nmessage \nd 755 public\n";
    vc_delta_out_t out = {0};
    if (vc_delta_apply_mem(basis, sizeof(basis) - 1, data, size, 4096, &out) == 0 && out.len > 4096)
        abort();
    free(out.data);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 0 && data[0] == 'D') {
        delta(data + 1, size - 1);
        return 0;
    }
    vc_release_t r, again;
    char why[256];
    if (vc_release_parse((const char *)data, size, &r, why, sizeof(why)) < 0)
        return 0;
    check(&r);
    size_t len = 0;
    char *text = vc_release_format(&r, &len);
    if (vc_release_parse(text, len, &again, why, sizeof(why)) < 0 || again.n != r.n)
        abort();
    size_t len2 = 0;
    char *text2 = vc_release_format(&again, &len2);
    if (len2 != len || memcmp(text, text2, len) != 0)
        abort();
    free(text);
    free(text2);
    vc_release_free(&r);
    vc_release_free(&again);
    return 0;
}
