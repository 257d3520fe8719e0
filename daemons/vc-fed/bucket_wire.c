/* The "vc_fed" bucket's keys and values (bucket_wire.h). */
#include "bucket_wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int key_write(char *key, size_t len, const char *kind, const char *site, const char *node)
{
    size_t n = strlen(site);
    if (n == 0 || n > FED_SITE_MAX || len < FED_KEY_MAX || (node && !vc_mesh_node_name_ok(node)))
        return -1;
    size_t at = (size_t)snprintf(key, len, "%s.", kind);
    for (size_t i = 0; i < n; i++)
        at += (size_t)snprintf(key + at, len - at, "%02x", (unsigned char)site[i]);
    if (node)
        snprintf(key + at, len - at, ".%s", node);
    return 0;
}

int fed_key_write(char *key, size_t len, const char *site, const char *node)
{
    return key_write(key, len, node ? "at" : "ptr", site, node);
}

int fed_key_write_trust(char *key, size_t len, const char *name)
{
    return key_write(key, len, "trust", name, NULL);
}

static int unhex(const char *hex, size_t n, char *out, size_t cap)
{
    if (n == 0 || n % 2 || n / 2 >= cap)
        return -1;
    for (size_t i = 0; i < n / 2; i++) {
        char pair[3] = {hex[2 * i], hex[2 * i + 1], '\0'};
        char *end;
        unsigned long v = strtoul(pair, &end, 16);
        if (*end || v == 0 || pair[0] == '+' || pair[0] == '-' || pair[0] == ' ')
            return -1;
        out[i] = (char)v;
    }
    out[n / 2] = '\0';
    return 0;
}

int fed_key_read(const char *key, fed_key_t *out)
{
    memset(out, 0, sizeof(*out));
    const char *hex;
    if (strncmp(key, "ptr.", 4) == 0) {
        out->kind = FED_KEY_POINTER;
        hex = key + 4;
    } else if (strncmp(key, "at.", 3) == 0) {
        out->kind = FED_KEY_REPORT;
        hex = key + 3;
    } else if (strncmp(key, "trust.", 6) == 0) {
        out->kind = FED_KEY_TRUST;
        hex = key + 6;
    } else {
        return -1;
    }
    const char *dot = strchr(hex, '.');
    if ((out->kind != FED_KEY_REPORT) != (dot == NULL))
        return -1;
    size_t n = dot ? (size_t)(dot - hex) : strlen(hex);
    if (unhex(hex, n, out->site, sizeof(out->site)) < 0)
        return -1;
    if (dot && (!vc_mesh_node_name_ok(dot + 1) || strlen(dot + 1) >= sizeof(out->node)))
        return -1;
    if (dot)
        memcpy(out->node, dot + 1, strlen(dot + 1) + 1);
    return 0;
}

/* The words of a value, split at single spaces: at most max, the last one
 * keeping the rest. A copy, NUL-terminated, in buf. */
static size_t words(const void *data, size_t len, char *buf, char **w, size_t max)
{
    memcpy(buf, data, len);
    buf[len] = '\0';
    if (memchr(data, '\0', len))
        return 0;
    size_t n = 0;
    for (char *p = buf; n < max;) {
        w[n++] = p;
        char *sp = n < max ? strchr(p, ' ') : NULL;
        if (sp == NULL)
            break;
        *sp = '\0';
        p = sp + 1;
    }
    return n;
}

void fed_pointer_write(char *text, size_t len, const fed_pointer_value_t *v)
{
    snprintf(text, len, "%s %s %s", v->id, v->back ? "back" : "switch", v->origin);
}

int fed_pointer_read(const void *data, size_t len, fed_pointer_value_t *out)
{
    char buf[FED_VALUE_MAX + 1], *w[3];
    memset(out, 0, sizeof(*out));
    if (len > FED_VALUE_MAX || words(data, len, buf, w, 3) != 3)
        return -1;
    if (!vc_release_id_ok(w[0]) || (strcmp(w[1], "switch") && strcmp(w[1], "back")) || !vc_mesh_node_name_ok(w[2]))
        return -1;
    snprintf(out->id, sizeof(out->id), "%s", w[0]);
    out->back = strcmp(w[1], "back") == 0;
    snprintf(out->origin, sizeof(out->origin), "%s", w[2]);
    return 0;
}

void fed_report_write(char *text, size_t len, const fed_report_value_t *v)
{
    snprintf(text, len, "%llu %s %s%s%s", (unsigned long long)v->rev, v->id, v->word, v->why[0] ? " " : "", v->why);
}

int fed_report_read(const void *data, size_t len, fed_report_value_t *out)
{
    char buf[FED_VALUE_MAX + 1], *w[4];
    memset(out, 0, sizeof(*out));
    if (len > FED_VALUE_MAX)
        return -1;
    size_t n = words(data, len, buf, w, 4);
    if (n < 3)
        return -1;
    char *end;
    unsigned long long rev = strtoull(w[0], &end, 10);
    if (*end || w[0][0] < '0' || w[0][0] > '9' || rev == 0 || !vc_release_id_ok(w[1]) ||
        (strcmp(w[2], "ok") && strcmp(w[2], "failed") && strcmp(w[2], "missing")))
        return -1;
    out->rev = rev;
    snprintf(out->id, sizeof(out->id), "%s", w[1]);
    snprintf(out->word, sizeof(out->word), "%s", w[2]);
    if (n == 4) {
        /* A reason is shown to the operator: no control characters. */
        for (char *p = w[3]; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f)
                *p = ' ';
        snprintf(out->why, sizeof(out->why), "%s", w[3]);
    }
    return 0;
}

int fed_trust_read(const void *data, size_t len, unsigned char sig[VC_RELEASE_SIGNATURE], const char **text,
                   size_t *tlen)
{
    const char *p = data;
    char hex[2 * VC_RELEASE_SIGNATURE + 1];
    if (len < sizeof(hex) || p[sizeof(hex) - 1] != '\n')
        return -1;
    memcpy(hex, p, sizeof(hex) - 1);
    hex[sizeof(hex) - 1] = '\0';
    if (vc_release_unhex(hex, sig, VC_RELEASE_SIGNATURE) < 0)
        return -1;
    *text = p + sizeof(hex);
    *tlen = len - sizeof(hex);
    return 0;
}
