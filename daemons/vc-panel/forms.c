/* forms.h: the panel's checks on what a client sends. */
#include "forms.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

/* RFC 6265 4.1.1: cookie-octet, no quotes, commas, semicolons, spaces or
 * backslashes. */
static int cookie_octet(unsigned char c)
{
    return c == 0x21 || (c >= 0x23 && c <= 0x2b) || (c >= 0x2d && c <= 0x3a) || (c >= 0x3c && c <= 0x5b) ||
           (c >= 0x5d && c <= 0x7e);
}

int form_cookie(const char *header, size_t len, const char *name, size_t *pos, char *out, size_t outlen)
{
    size_t nlen = strlen(name), i = *pos;
    while (i < len) {
        while (i < len && (header[i] == ' ' || header[i] == '\t' || header[i] == ';'))
            i++;
        size_t start = i;
        while (i < len && header[i] != ';')
            i++;
        /* [start, i): "name=value" */
        const char *pair = header + start;
        size_t plen = i - start;
        if (plen > nlen && memcmp(pair, name, nlen) == 0 && pair[nlen] == '=') {
            *pos = i;
            const char *v = pair + nlen + 1;
            size_t vlen = plen - nlen - 1;
            while (vlen > 0 && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
                vlen--;
            if (vlen == 0 || vlen >= outlen)
                return -1;
            for (size_t k = 0; k < vlen; k++)
                if (!cookie_octet((unsigned char)v[k]))
                    return -1;
            memcpy(out, v, vlen);
            out[vlen] = '\0';
            return (int)vlen;
        }
    }
    *pos = len;
    return -1;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int form_query(const char *query, size_t len, const char *name, char *out, size_t outlen)
{
    size_t nlen = strlen(name), i = 0;
    while (i < len) {
        size_t start = i;
        while (i < len && query[i] != '&')
            i++;
        const char *pair = query + start;
        size_t plen = i - start;
        i++; /* past '&' */
        if (!(plen > nlen && memcmp(pair, name, nlen) == 0 && pair[nlen] == '='))
            continue;
        size_t o = 0;
        for (size_t k = nlen + 1; k < plen; k++) {
            int c = (unsigned char)pair[k];
            if (c == '+') {
                c = ' ';
            } else if (c == '%') {
                int hi = k + 2 < plen ? hexval(pair[k + 1]) : -1, lo = k + 2 < plen ? hexval(pair[k + 2]) : -1;
                if (hi < 0 || lo < 0)
                    return -1;
                c = hi * 16 + lo;
                k += 2;
            }
            if (c < 0x20 || c == 0x7f || o + 1 >= outlen)
                return -1;
            out[o++] = (char)c;
        }
        out[o] = '\0';
        return (int)o;
    }
    return -1;
}

json_t *form_json(const char *body, size_t len, char *why, size_t whylen)
{
    if (len > FORM_BODY_MAX) {
        snprintf(why, whylen, "the body is over %d bytes", FORM_BODY_MAX);
        return NULL;
    }
    json_error_t e;
    /* JSON_REJECT_DUPLICATES: {"role":"viewer","role":"admin"} is not
     * read one way here and another way by a proxy that checked it. */
    json_t *j = json_loadb(body, len, JSON_REJECT_DUPLICATES, &e);
    if (j == NULL) {
        snprintf(why, whylen, "not JSON: %s (at %d)", e.text, e.position);
        return NULL;
    }
    if (!json_is_object(j)) {
        json_decref(j);
        snprintf(why, whylen, "not a JSON object");
        return NULL;
    }
    return j;
}

const char *form_str(const json_t *obj, const char *key, size_t max)
{
    const json_t *v = json_object_get(obj, key);
    if (!json_is_string(v))
        return NULL;
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    if (n > max || strlen(s) != n) /* a "\u0000" inside */
        return NULL;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return NULL;
    return s;
}

int form_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63 || s[0] == '.' || s[0] == '-')
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == '-' || c == '@'))
            return 0;
    }
    return strstr(s, "..") == NULL;
}

int form_forwarded_for(const char *header, size_t len, char *out, size_t outlen)
{
    size_t end = len;
    while (end > 0 && (header[end - 1] == ' ' || header[end - 1] == '\t'))
        end--;
    size_t start = end;
    while (start > 0 && header[start - 1] != ',')
        start--;
    while (start < end && (header[start] == ' ' || header[start] == '\t'))
        start++;
    char buf[INET6_ADDRSTRLEN];
    size_t n = end - start;
    if (n == 0 || n >= sizeof(buf) || n >= outlen)
        return -1;
    memcpy(buf, header + start, n);
    buf[n] = '\0';
    unsigned char addr[sizeof(struct in6_addr)];
    if (inet_pton(AF_INET, buf, addr) != 1 && inet_pton(AF_INET6, buf, addr) != 1)
        return -1;
    memcpy(out, buf, n + 1);
    return (int)n;
}
