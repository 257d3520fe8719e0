/* A signed change to the trusted keys (vc_trust_change.h). */
#include "vc_trust_change.h"
#include "vc_util.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int vc_trust_name_ok(const char *name)
{
    size_t n = strlen(name);
    return n > 0 && n <= VC_RELEASE_NAME_MAX &&
           strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.@") == n;
}

char *vc_trust_change_format(const vc_trust_change_t *c, size_t *len)
{
    char b64[sodium_base64_ENCODED_LEN(VC_RELEASE_PUBLIC, sodium_base64_VARIANT_ORIGINAL)];
    if (c->add)
        sodium_bin2base64(b64, sizeof(b64), c->key, sizeof(c->key), sodium_base64_VARIANT_ORIGINAL);
    char *text = c->add ? vc_asprintf("velocity-trust 1\nadd %s %s\nat %lld\nsigner %s\n", c->name, b64,
                                      (long long)c->at_ms, c->signer)
                        : vc_asprintf("velocity-trust 1\nremove %s\nat %lld\nsigner %s\n", c->name, (long long)c->at_ms,
                                      c->signer);
    *len = strlen(text);
    return text;
}

int vc_trust_change_parse(const char *text, size_t len, vc_trust_change_t *out)
{
    memset(out, 0, sizeof(*out));
    if (len == 0 || len > VC_TRUST_CHANGE_MAX || memchr(text, '\0', len))
        return -1;
    char buf[VC_TRUST_CHANGE_MAX + 1];
    memcpy(buf, text, len);
    buf[len] = '\0';
    char *line[4], *save = NULL;
    size_t n = 0;
    if (buf[len - 1] != '\n')
        return -1;
    for (char *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        if (n == 4)
            return -1;
        line[n++] = l;
    }
    if (n != 4 || strcmp(line[0], "velocity-trust 1"))
        return -1;
    /* Exactly the lines format writes: each line's words checked. */
    char name[VC_RELEASE_NAME_MAX + 2], b64[64], signer[VC_RELEASE_NAME_MAX + 2], extra;
    long long at;
    if (strncmp(line[1], "add ", 4) == 0) {
        size_t pklen = 0;
        if (sscanf(line[1], "add %65s %63s %c", name, b64, &extra) != 2 ||
            sodium_base642bin(out->key, sizeof(out->key), b64, strlen(b64), NULL, &pklen, NULL,
                              sodium_base64_VARIANT_ORIGINAL) != 0 ||
            pklen != sizeof(out->key))
            return -1;
        out->add = 1;
    } else if (sscanf(line[1], "remove %65s %c", name, &extra) != 1) {
        return -1;
    }
    if (sscanf(line[2], "at %lld %c", &at, &extra) != 1 || at <= 0 ||
        sscanf(line[3], "signer %65s %c", signer, &extra) != 1)
        return -1;
    if (!vc_trust_name_ok(name) || !vc_trust_name_ok(signer))
        return -1;
    memcpy(out->name, name, strlen(name) + 1); /* vc_trust_name_ok: it fits */
    memcpy(out->signer, signer, strlen(signer) + 1);
    out->at_ms = at;
    /* What parses prints back to the same bytes: nothing else is signed. */
    size_t again_len;
    char *again = vc_trust_change_format(out, &again_len);
    int same = again_len == len && memcmp(again, text, len) == 0;
    free(again);
    return same ? 0 : -1;
}
