/*
 * What vc-fed keeps in the cluster's "vc_fed" bucket (together.c), as
 * text, written and read here. Anyone with the cluster's credentials can
 * put a value there, so reading is parsing outside input
 * (fuzz/fuzz_fed_bucket.c):
 *
 *   ptr.HEX          "RELEASE MODE ORIGIN"          a site's pointer
 *   at.HEX.NODE      "REVISION RELEASE WORD [WHY]"   what NODE made of it
 *   trust.HEX        "SIGNATURE\nCHANGE"             a signed change to the
 *                                                    trusted keys (HEX: the
 *                                                    key's name)
 *
 * HEX is the site's name in hex (a name may hold what a key may not);
 * MODE is "switch" or "back"; WORD is "ok", "failed" or "missing".
 */
#ifndef VC_FED_BUCKET_WIRE_H
#define VC_FED_BUCKET_WIRE_H

#include "vc_mesh.h"
#include "vc_release.h"

#include <stddef.h>
#include <stdint.h>

#define FED_SITE_MAX 255
#define FED_KEY_MAX (4 + 2 * FED_SITE_MAX + 1 + VC_MESH_NODE_MAX + 1)
#define FED_VALUE_MAX 1200
#define FED_WHY_MAX 1024

typedef enum { FED_KEY_POINTER, FED_KEY_REPORT, FED_KEY_TRUST } fed_key_kind_t;

typedef struct fed_key {
    fed_key_kind_t kind;
    char site[FED_SITE_MAX + 1];     /* a trust change's: the key's name */
    char node[VC_MESH_NODE_MAX + 1]; /* a report's */
} fed_key_t;

typedef struct fed_pointer_value {
    char id[VC_RELEASE_ID_MAX + 1];
    int back;
    char origin[VC_MESH_NODE_MAX + 1];
} fed_pointer_value_t;

typedef struct fed_report_value {
    uint64_t rev;
    char id[VC_RELEASE_ID_MAX + 1];
    char word[8];
    char why[FED_WHY_MAX + 1]; /* "" if none */
} fed_report_value_t;

/* The key: 0, or -1 if the site's name is too long (or node is not a
 * node's name). node NULL: the pointer's. */
int fed_key_write(char *key, size_t len, const char *site, const char *node);
int fed_key_read(const char *key, fed_key_t *out);
int fed_key_write_trust(char *key, size_t len, const char *name);

/* The values, as text (NUL-terminated, at most FED_VALUE_MAX bytes); a
 * value read is 0 or -1. */
void fed_pointer_write(char *text, size_t len, const fed_pointer_value_t *v);
int fed_pointer_read(const void *data, size_t len, fed_pointer_value_t *out);
void fed_report_write(char *text, size_t len, const fed_report_value_t *v);
int fed_report_read(const void *data, size_t len, fed_report_value_t *out);

/* A trust change's value: its signature and where its text is in data
 * (checked by vc_trust_change_parse, not here). 0 or -1. */
int fed_trust_read(const void *data, size_t len, unsigned char sig[VC_RELEASE_SIGNATURE], const char **text,
                   size_t *tlen);

#endif
