/* libFuzzer: what vc-fed reads from the cluster's "vc_fed" bucket
 * (daemons/vc-fed/bucket_wire.c), which anyone with the cluster's
 * credentials can write: a key, a site's pointer, a node's report. What
 * passes must be what together.c relies on (a site's name without NUL, a
 * node's name, a release id, a known mode or word, a reason without
 * control characters), and what passes, written again, reads the same.
 * A trust change (libcommon/vc_trust_change.c) that parses names keys by
 * their rules and prints back to the same bytes: nothing but what was
 * signed is believed. The first byte picks: 0 mod 4 a key, 1 a pointer,
 * 2 a report, 3 a trust change's value. */
#include "bucket_wire.h"
#include "vc_trust_change.h"

#include <stdlib.h>
#include <string.h>

static void key(const uint8_t *data, size_t size)
{
    char text[FED_KEY_MAX + 64];
    if (size >= sizeof(text))
        return;
    memcpy(text, data, size);
    text[size] = '\0';
    fed_key_t k;
    if (fed_key_read(text, &k) < 0)
        return;
    if (!k.site[0] || (k.kind == FED_KEY_REPORT && !vc_mesh_node_name_ok(k.node)))
        abort();
    char again[FED_KEY_MAX];
    int rc = k.kind == FED_KEY_TRUST
                 ? fed_key_write_trust(again, sizeof(again), k.site)
                 : fed_key_write(again, sizeof(again), k.site, k.kind == FED_KEY_REPORT ? k.node : NULL);
    if (rc < 0)
        abort();
    /* Hex is read in either case and written lower: compare what it names. */
    fed_key_t k2;
    if (fed_key_read(again, &k2) < 0 || k2.kind != k.kind || strcmp(k2.site, k.site) || strcmp(k2.node, k.node))
        abort();
}

static void pointer(const uint8_t *data, size_t size)
{
    fed_pointer_value_t v, v2;
    if (fed_pointer_read(data, size, &v) < 0)
        return;
    if (!vc_release_id_ok(v.id) || !vc_mesh_node_name_ok(v.origin))
        abort();
    char text[FED_VALUE_MAX];
    fed_pointer_write(text, sizeof(text), &v);
    if (fed_pointer_read(text, strlen(text), &v2) < 0 || memcmp(&v, &v2, sizeof(v)))
        abort();
}

static void report(const uint8_t *data, size_t size)
{
    fed_report_value_t v, v2;
    if (fed_report_read(data, size, &v) < 0)
        return;
    if (!vc_release_id_ok(v.id) || v.rev == 0 ||
        (strcmp(v.word, "ok") && strcmp(v.word, "failed") && strcmp(v.word, "missing")))
        abort();
    for (const char *p = v.why; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            abort();
    char text[FED_VALUE_MAX + 64];
    fed_report_write(text, sizeof(text), &v);
    if (fed_report_read(text, strlen(text), &v2) < 0 || v2.rev != v.rev || strcmp(v2.id, v.id) ||
        strcmp(v2.word, v.word))
        abort();
}

static void trust(const uint8_t *data, size_t size)
{
    unsigned char sig[VC_RELEASE_SIGNATURE];
    const char *text;
    size_t len;
    vc_trust_change_t c;
    if (fed_trust_read(data, size, sig, &text, &len) < 0 || vc_trust_change_parse(text, len, &c) < 0)
        return;
    if (!vc_trust_name_ok(c.name) || !vc_trust_name_ok(c.signer) || c.at_ms <= 0 || (c.add != 0 && c.add != 1))
        abort();
    size_t again_len;
    char *again = vc_trust_change_format(&c, &again_len);
    if (again_len != len || memcmp(again, text, len))
        abort();
    free(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    switch (data[0] % 4) {
    case 0: key(data + 1, size - 1); break;
    case 1: pointer(data + 1, size - 1); break;
    case 2: report(data + 1, size - 1); break;
    default: trust(data + 1, size - 1); break;
    }
    return 0;
}
