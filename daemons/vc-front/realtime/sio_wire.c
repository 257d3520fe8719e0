/* Engine.IO v4 and Socket.IO v5 packets (sio_wire.h). */
#include "sio_wire.h"

#include <ctype.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RECORD_SEPARATOR '\x1e'

int eio_decode(const char *s, size_t n, eio_packet_t *p, uint8_t *buf, size_t cap)
{
    memset(p, 0, sizeof(*p));
    if (n == 0)
        return -1;
    if (s[0] == 'b') {
        size_t out = 0;
        /* Base64 as Node's Buffer.from(..., "base64") takes it from a
         * client: with its padding, or without. */
        if (sodium_base642bin(buf, cap, s + 1, n - 1, NULL, &out, NULL, sodium_base64_VARIANT_ORIGINAL) != 0 &&
            sodium_base642bin(buf, cap, s + 1, n - 1, NULL, &out, NULL, sodium_base64_VARIANT_ORIGINAL_NO_PADDING) != 0)
            return -1;
        p->type = EIO_MESSAGE;
        p->binary = 1;
        p->data = (const char *)buf;
        p->len = out;
        return 0;
    }
    if (s[0] < '0' || s[0] > '6')
        return -1;
    p->type = s[0] - '0';
    p->data = s + 1;
    p->len = n - 1;
    return 0;
}

int eio_split(const char *body, size_t n, eio_part_t *parts, size_t max)
{
    size_t count = 0, start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && body[i] != RECORD_SEPARATOR)
            continue;
        if (count == max)
            return -1;
        parts[count].off = start;
        parts[count].len = i - start;
        count++;
        start = i + 1;
    }
    return (int)count;
}

static void grow(char **out, size_t *len, size_t *cap, size_t more)
{
    if (*len + more + 1 <= *cap)
        return;
    size_t want = *cap ? *cap : 256;
    while (want < *len + more + 1)
        want *= 2;
    char *bigger = realloc(*out, want);
    if (bigger == NULL)
        abort();
    *out = bigger;
    *cap = want;
}

void eio_append(char **out, size_t *len, size_t *cap, int type, int binary, const void *data, size_t dlen)
{
    size_t b64 = binary ? sodium_base64_ENCODED_LEN(dlen, sodium_base64_VARIANT_ORIGINAL) : 0;
    grow(out, len, cap, 2 + (binary ? b64 : dlen));
    if (*len > 0)
        (*out)[(*len)++] = RECORD_SEPARATOR;
    if (binary) {
        (*out)[(*len)++] = 'b';
        sodium_bin2base64(*out + *len, b64, data, dlen, sodium_base64_VARIANT_ORIGINAL);
        *len += strlen(*out + *len);
    } else {
        (*out)[(*len)++] = (char)('0' + type);
        if (dlen)
            memcpy(*out + *len, data, dlen);
        *len += dlen;
    }
    (*out)[*len] = '\0';
}

int sio_reserved_event(const char *name)
{
    static const char *const reserved[] = {"connect",       "connect_error", "disconnect",
                                           "disconnecting", "newListener",   "removeListener"};
    for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
        if (strcmp(name, reserved[i]) == 0)
            return 1;
    return 0;
}

/* Whether data is what a packet of type may carry (as socket.io-parser's
 * check of a decoded payload). */
static int data_fits(int type, const json_t *d)
{
    switch (type) {
    case SIO_CONNECT: return json_is_object(d);
    case SIO_DISCONNECT: return 0; /* none at all */
    case SIO_CONNECT_ERROR: return json_is_string(d) || json_is_object(d);
    case SIO_EVENT:
    case SIO_BINARY_EVENT: {
        const json_t *first = json_is_array(d) ? json_array_get(d, 0) : NULL;
        return first &&
               (json_is_number(first) || (json_is_string(first) && !sio_reserved_event(json_string_value(first))));
    }
    default: return json_is_array(d); /* ACK, BINARY_ACK */
    }
}

#define FAIL(...)                                                                                                      \
    do {                                                                                                               \
        snprintf(why, wlen, __VA_ARGS__);                                                                              \
        return -1;                                                                                                     \
    } while (0)

/* The reference reads the type, the attachments and the ack id with
 * JavaScript's Number(), so a space (Number(" ") is 0) counts as a digit
 * there; these helpers read them the same way (ASCII whitespace only). */
static int js_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

static int js_digit_like(char c)
{
    return (c >= '0' && c <= '9') || js_space(c);
}

/* Number(s) for s[0..n): 1 and *v if it is a number (decimal, with a
 * sign, a fraction or an exponent; 0x, 0o, 0b; an empty or blank string is
 * 0), 0 if NaN. Infinity and the rest are NaN here: no packet of the
 * reference's own makes them. */
static int js_number(const char *s, size_t n, double *v)
{
    while (n && js_space(*s))
        s++, n--;
    while (n && js_space(s[n - 1]))
        n--;
    char text[64];
    if (n >= sizeof(text))
        return 0;
    memcpy(text, s, n);
    text[n] = '\0';
    if (n == 0) {
        *v = 0;
        return 1;
    }
    char *end = NULL;
    if (n > 2 && text[0] == '0' && strchr("xXoObB", text[1])) {
        int base = strchr("xX", text[1]) ? 16 : strchr("oO", text[1]) ? 8 : 2;
        unsigned long long x = strtoull(text + 2, &end, base);
        if (*end || !(isxdigit((unsigned char)text[2])))
            return 0;
        *v = (double)x;
        return 1;
    }
    /* strtod takes more than JavaScript (hex floats, "inf", "nan"): only
     * a decimal literal's characters pass first. */
    for (size_t i = 0; i < n; i++)
        if (!strchr("0123456789+-.eE", text[i]))
            return 0;
    *v = strtod(text, &end);
    return *end == '\0' && end != text;
}

int sio_decode(const char *s, size_t n, sio_packet_t *p, char *why, size_t wlen)
{
    memset(p, 0, sizeof(*p));
    strcpy(p->nsp, "/");
    size_t i = 0;
    /* The type: its first character as Number() reads it (an empty
     * message, or a space, is a CONNECT, as the reference reads it). */
    if (n > 0) {
        if (js_space(s[0]))
            p->type = SIO_CONNECT;
        else if (s[0] >= '0' && s[0] <= '6')
            p->type = s[0] - '0';
        else
            FAIL("unknown packet type");
    }
    if (p->type == SIO_BINARY_EVENT || p->type == SIO_BINARY_ACK) {
        size_t start = 1, dash = start;
        while (dash < n && s[dash] != '-')
            dash++;
        double count = 0;
        if (dash >= n || !js_number(s + start, dash - start, &count))
            FAIL("illegal attachments");
        /* Not an integer, or below 1 (a double this large is an integer,
         * and too many: never converted). */
        if (count < 1 || (count < 1e15 && count != (double)(uint64_t)count))
            FAIL("illegal attachments");
        if (count > SIO_ATTACHMENTS_MAX)
            FAIL("too many attachments");
        p->attachments = (unsigned)count;
        i = dash + 1;
    } else {
        i = n > 0 ? 1 : 0;
    }
    if (i < n && s[i] == '/') {
        size_t start = i;
        while (i < n && s[i] != ',')
            i++;
        if (i - start > SIO_NSP_MAX)
            FAIL("namespace too long");
        if (memchr(s + start, '\0', i - start))
            FAIL("namespace holds a NUL");
        memcpy(p->nsp, s + start, i - start);
        p->nsp[i - start] = '\0';
        if (i < n)
            i++; /* the comma */
    }
    /* The ack id: a run of digits and spaces, read by Number(): spaces
     * around it go, one inside makes it NaN (kept: the reference answers
     * such an event's ack with "NaN" as its id). */
    if (i < n && js_digit_like(s[i])) {
        size_t start = i;
        while (i < n && js_digit_like(s[i]))
            i++;
        double id = 0;
        p->has_id = 1;
        if (!js_number(s + start, i - start, &id))
            p->id_nan = 1;
        else if (id >= 9007199254740992.0)
            FAIL("ack id too large");
        else
            p->id = (uint64_t)id;
    }
    if (i < n) {
        json_error_t err;
        json_t *d = json_loadb(s + i, n - i, JSON_DECODE_ANY | JSON_DECODE_INT_AS_REAL | JSON_ALLOW_NUL, &err);
        if (d == NULL || !data_fits(p->type, d)) {
            json_decref(d);
            FAIL("invalid payload");
        }
        p->data = d;
        p->json = s + i;
        p->json_len = n - i;
    }
    return 0;
}

void sio_packet_clear(sio_packet_t *p)
{
    json_decref(p->data);
    p->data = NULL;
}

char *sio_encode(int type, unsigned attachments, const char *nsp, int has_id, uint64_t id, const char *json,
                 size_t jlen, size_t *len)
{
    int named = nsp && strcmp(nsp, "/") != 0;
    char head[SIO_NSP_MAX + 64], count[16] = "";
    if (type == SIO_BINARY_EVENT || type == SIO_BINARY_ACK)
        snprintf(count, sizeof(count), "%u-", attachments);
    int h = snprintf(head, sizeof(head), "%c%s%s%s", '0' + type, count, named ? nsp : "", named ? "," : "");
    if (has_id && h < (int)sizeof(head))
        h += id == SIO_ID_NAN ? snprintf(head + h, sizeof(head) - (size_t)h, "NaN")
                              : snprintf(head + h, sizeof(head) - (size_t)h, "%llu", (unsigned long long)id);
    if (h >= (int)sizeof(head))
        h = (int)sizeof(head) - 1; /* a namespace longer than SIO_NSP_MAX: cut, never overrun */
    size_t n = (size_t)h + (json ? jlen : 0);
    char *out = malloc(n + 1);
    if (out == NULL)
        abort();
    memcpy(out, head, (size_t)h);
    if (json && jlen)
        memcpy(out + h, json, jlen);
    out[n] = '\0';
    *len = n;
    return out;
}
