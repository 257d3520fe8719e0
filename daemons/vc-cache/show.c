/*
 * vc cache show URL: what is stored for a URL (both schemes), each entry a
 * record: its key (a variant's shown with its headers' values), status,
 * size, age, how long it stays fresh, may be served stale, stands in on
 * errors, and its tags and headers. Read in one read transaction.
 */
#include "store_internal.h"
#include "vc_ctl.h"
#include "vc_util.h"

#include <errno.h>
#include <string.h>

typedef struct show_ctx {
    const cache_settings_t *cfg;
    const char *url;
    Vc__Reply *reply;
    int64_t now;
} show_ctx_t;

/* A key as text: the variant separators as " | ". */
static void key_text(const char *key, size_t klen, char *out, size_t cap)
{
    size_t at = 0;
    for (size_t i = 0; i < klen && at + 4 < cap; i++) {
        if (key[i] == VC_CACHE_VARIANT_SEP) {
            memcpy(out + at, " | ", 3);
            at += 3;
        } else {
            out[at++] = key[i];
        }
    }
    out[at] = '\0';
}

static void one(show_ctx_t *s, const char *key, size_t klen, const vc_cache_entry_t *e)
{
    Vc__Record *rec = vc_reply_record(s->reply);
    char text[2 * VC_CACHE_KEY_MAX];
    key_text(key, klen, text, sizeof(text));
    vc_record_field(rec, "key", "%s", text);
    if (e->status == 0) {
        vc_cache_header_t h;
        size_t pos = 0;
        uint32_t i = 0;
        vc_record_field(rec, "kind", "marker");
        if (vc_cache_entry_header(e, &pos, &i, &h))
            vc_record_field(rec, "vary", "%.*s", (int)h.value_len, h.value);
        return;
    }
    vc_record_field(rec, "kind", "%s", memchr(key, VC_CACHE_VARIANT_SEP, klen) ? "variant" : "entry");
    vc_record_field(rec, "status", "%u", e->status);
    vc_record_field(rec, "bytes", "%zu", e->body_len);
    vc_record_field(rec, "age_s", "%lld", (long long)((s->now - e->stored_ms) / 1000));
    vc_record_field(rec, "fresh_s", "%lld", (long long)((e->fresh_ms - s->now) / 1000));
    vc_record_field(rec, "stale_s", "%lld", (long long)((e->stale_ms - s->now) / 1000));
    vc_record_field(rec, "error_s", "%lld", (long long)((e->error_ms - s->now) / 1000));
    char tags[1024] = "";
    size_t at = 0, pos = 0, tl;
    uint32_t i = 0;
    const char *tag;
    while (vc_cache_entry_tag(e, &pos, &i, &tag, &tl) && at + tl + 2 < sizeof(tags))
        at += (size_t)snprintf(tags + at, sizeof(tags) - at, "%s%.*s", at ? " " : "", (int)tl, tag);
    vc_record_field(rec, "tags", "%s", tags);
    vc_cache_header_t h;
    pos = 0;
    i = 0;
    while (vc_cache_entry_header(e, &pos, &i, &h))
        vc_record_field(rec, "header", "%.*s: %.*s", (int)h.name_len, h.name, (int)h.value_len, h.value);
}

static int show_txn(MDB_txn *txn, MDB_dbi dbi, void *arg)
{
    show_ctx_t *s = arg;
    const char *p = strstr(s->url, "://");
    if (p == NULL)
        return -EINVAL;
    const char *host = p + 3, *slash = strchr(host, '/');
    const char *path = slash ? slash : "/";
    const char *q = slash ? strchr(slash, '?') : NULL;
    size_t hlen = slash ? (size_t)(slash - host) : strlen(host), plen = q ? (size_t)(q - path) : strlen(path);
    static const char *const schemes[] = {"http", "https"};
    MDB_cursor *cur;
    if (mdb_cursor_open(txn, dbi, &cur) != 0)
        return -EIO;
    for (size_t sc = 0; sc < 2; sc++) {
        char key[VC_CACHE_KEY_MAX + 1];
        /* As a front makes it for a request of this URL. */
        size_t klen = vc_cache_key(schemes[sc], host, hlen, path, plen, q ? q + 1 : "", q ? strlen(q + 1) : 0,
                                   s->cfg->strip_params, s->cfg->nstrip_params, key, VC_CACHE_KEY_MAX);
        if (klen == 0)
            continue;
        MDB_val k = {klen, key}, v;
        /* The page's entry or marker, then its variants (key SEP ...). */
        for (int rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
            if (k.mv_size < klen || memcmp(k.mv_data, key, klen) != 0 ||
                (k.mv_size > klen && ((const char *)k.mv_data)[klen] != VC_CACHE_VARIANT_SEP))
                break;
            vc_cache_entry_t e;
            if (vc_cache_entry_parse(v.mv_data, v.mv_size, &e) == 0)
                one(s, k.mv_data, k.mv_size, &e);
        }
    }
    mdb_cursor_close(cur);
    return 0;
}

int cache_store_show(cache_store_t *cs, const char *url, Vc__Reply *reply)
{
    VC_CHECK_OBJ(cs, CACHE_STORE_MAGIC);
    show_ctx_t s = {.cfg = cs->cfg, .url = url, .reply = reply, .now = vc_wall_ms()};
    return vc_store_read(cs->st, VC_DB_CACHE, show_txn, &s);
}
