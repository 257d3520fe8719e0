#include "acme_parse.h"
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
    struct tm tm = {0};
    const char *rest = strptime(v, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    if (rest == NULL || *rest != '\0')
        return fallback;
    long d = (long)(timegm(&tm) - time(NULL));
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
    size_t n = strlen(*token);
    if (n == 0 || n > 256 || strspn(*token, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") != n)
        return -1;
    return 0;
}
