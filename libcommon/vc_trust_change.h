/*
 * A change to the keys the nodes trust (docs/deploys.md), signed by a key
 * they already trust, so that it can travel through the cluster: the
 * cluster's credentials alone cannot make a node trust a key. Text, one
 * fact a line, as a release's manifest:
 *
 *   velocity-trust 1
 *   add bob BASE64-PUBLIC-KEY        (or: remove bob)
 *   at 1764897300123                  (ms: an older change never wins)
 *   signer alice
 */
#ifndef VC_TRUST_CHANGE_H
#define VC_TRUST_CHANGE_H

#include "vc_release.h"

#include <stddef.h>
#include <stdint.h>

#define VC_TRUST_CHANGE_MAX 512

typedef struct vc_trust_change {
    int add; /* 1: add (key set), 0: remove */
    char name[VC_RELEASE_NAME_MAX + 1];
    unsigned char key[VC_RELEASE_PUBLIC];
    int64_t at_ms;
    char signer[VC_RELEASE_NAME_MAX + 1];
} vc_trust_change_t;

/* Whether name is a key's name: up to VC_RELEASE_NAME_MAX letters,
 * digits, '-', '_', '.', '@'. */
int vc_trust_name_ok(const char *name);
/* The change's text (NUL-terminated; *len without it), freed by the caller. */
char *vc_trust_change_format(const vc_trust_change_t *c, size_t *len);
/* 0, or -1 if it is not exactly such a text. */
int vc_trust_change_parse(const char *text, size_t len, vc_trust_change_t *out);

#endif
