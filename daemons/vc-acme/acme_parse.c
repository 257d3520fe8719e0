#include "acme_parse.h"
#include "vc_httpdate.h"
#include "vc_util.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

char *acme_header_value(const char *line, size_t len, const char *name)
{
    size_t nl = strlen(name);
    if (len <= nl || strncasecmp(line, name, nl) != 0 || line[nl] != ':')
        return NULL;
    const char *v = line + nl + 1, *end = line + len;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && isspace((unsigned char)end[-1]))
        end--;
    char *out = vc_malloc((size_t)(end - v) + 1);
    memcpy(out, v, (size_t)(end - v));
    out[end - v] = '\0';
    return out;
}

long acme_retry_after_value(const char *v, long fallback)
{
    if (v == NULL || *v == '\0')
        return fallback;
    char *end;
    long s = strtol(v, &end, 10);
    if (end != v && *end == '\0')
        return s < 0 ? fallback : s;
    int64_t at = vc_httpdate_parse(v, strlen(v));
    if (at < 0)
        return fallback;
    long d = (long)(at - time(NULL));
    return d < 0 ? 0 : d;
}

void acme_problem_text(const json_t *json, long status, const char *url, char *err, size_t errlen)
{
    const char *type = json_string_value(json_object_get(json, "type"));
    const char *detail = json_string_value(json_object_get(json, "detail"));
    if (type)
        snprintf(err, errlen, "%s answered %ld: %s%s%s", url, status, type, detail ? ": " : "", detail ? detail : "");
    else
        snprintf(err, errlen, "%s answered %ld", url, status);
}

int acme_challenge_of(const json_t *authz, const char *want, const char **host, const char **token, const char **url)
{
    const json_t *ch, *http = NULL;
    size_t i;
    json_array_foreach(json_object_get(authz, "challenges"), i, ch)
    {
        const char *type = json_string_value(json_object_get(ch, "type"));
        if (type && strcmp(type, want) == 0)
            http = ch;
    }
    *host = json_string_value(json_object_get(json_object_get(authz, "identifier"), "value"));
    *token = json_string_value(json_object_get(http, "token"));
    *url = json_string_value(json_object_get(http, "url"));
    if (*host == NULL || *token == NULL || *url == NULL)
        return -1;
    /* The host becomes a record's name and a hook's argument: a DNS name. */
    size_t hl = strlen(*host);
    if (hl == 0 || hl > 253 || (*host)[0] == '-' || (*host)[0] == '.' ||
        strspn(*host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.") != hl)
        return -1;
    size_t n = strlen(*token);
    if (n == 0 || n > 256 || strspn(*token, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") != n)
        return -1;
    return 0;
}

/* n decimal digits at p, or -1. */
static int digits(const char *p, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)p[i]))
            return -1;
        v = v * 10 + (p[i] - '0');
    }
    return v;
}

int acme_rfc3339(const char *v, int64_t *out)
{
    /* date-time = full-date "T" full-time (RFC 3339 5.6; "t" and "z" too) */
    if (v == NULL || strnlen(v, 20) < 20 || v[4] != '-' || v[7] != '-' || (v[10] != 'T' && v[10] != 't') ||
        v[13] != ':' || v[16] != ':')
        return -1;
    struct tm tm = {
        .tm_year = digits(v, 4) - 1900,
        .tm_mon = digits(v + 5, 2) - 1,
        .tm_mday = digits(v + 8, 2),
        .tm_hour = digits(v + 11, 2),
        .tm_min = digits(v + 14, 2),
        .tm_sec = digits(v + 17, 2),
    };
    if (tm.tm_year < 0 || tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour < 0 ||
        tm.tm_hour > 23 || tm.tm_min < 0 || tm.tm_min > 59 || tm.tm_sec < 0 || tm.tm_sec > 60)
        return -1;
    const char *p = v + 19;
    if (*p == '.') { /* fractions of a second: dropped */
        if (!isdigit((unsigned char)p[1]))
            return -1;
        for (p++; isdigit((unsigned char)*p); p++)
            ;
    }
    long offset = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if ((*p == '+' || *p == '-') && digits(p + 1, 2) >= 0 && p[3] == ':' && digits(p + 4, 2) >= 0) {
        offset = digits(p + 1, 2) * 3600L + digits(p + 4, 2) * 60L;
        if (*p == '+')
            offset = -offset;
        p += 6;
    } else {
        return -1;
    }
    if (*p != '\0')
        return -1;
    *out = (int64_t)timegm(&tm) + offset;
    return 0;
}

int acme_renewal_window(const json_t *info, int64_t *start, int64_t *end)
{
    const json_t *w = json_object_get(info, "suggestedWindow");
    if (acme_rfc3339(json_string_value(json_object_get(w, "start")), start) < 0 ||
        acme_rfc3339(json_string_value(json_object_get(w, "end")), end) < 0 || *end <= *start)
        return -1;
    return 0;
}
