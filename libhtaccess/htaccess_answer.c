/*
 * The response directives of a .htaccess (htaccess_answer.h), read as
 * Apache reads them: mod_headers's Header, mod_expires's codes
 * (check_code()), mod_mime's AddType, core's AddDefaultCharset.
 */
#include "htaccess_answer.h"
#include "vc_util.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static htaccess_answer_t *made(htaccess_answer_t **a)
{
    if (*a == NULL) {
        *a = vc_calloc(1, sizeof(**a));
        (*a)->expires_active = -1;
    }
    return *a;
}

static char *lower_dup(const char *s)
{
    char *d = vc_strdup(s);
    for (char *p = d; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    return d;
}

/* The next word of text (spaces between), into word: its length. */
static size_t next_word(const char **text, char *word, size_t len)
{
    const char *p = *text + strspn(*text, " \t");
    size_t n = strcspn(p, " \t");
    snprintf(word, len, "%.*s", (int)n, p);
    *text = p + n;
    return n;
}

/* A unit as check_code() knows one by its first letters: seconds, or 0. */
static long unit_seconds(const char *w)
{
    static const struct {
        const char *name;
        size_t at_least; /* letters that tell it apart */
        long seconds;
    } units[] = {
        {"years", 1, 365L * 86400}, {"months", 2, 30L * 86400}, {"weeks", 1, 7L * 86400}, {"days", 1, 86400},
        {"hours", 1, 3600},         {"minutes", 2, 60},         {"seconds", 1, 1},
    };
    for (size_t i = 0; i < VC_ARRAY_SIZE(units); i++)
        if (strlen(w) >= units[i].at_least && !strncasecmp(w, units[i].name, units[i].at_least))
            return units[i].seconds;
    return 0;
}

int htaccess_expires_code(const char *text, expires_code_t *out)
{
    if (text[0] == 'A' || text[0] == 'M') { /* the old form: A3600 */
        char *end;
        long s = strtol(text + 1, &end, 10);
        if (end == text + 1 || *end || s < 0)
            return -1;
        *out = (expires_code_t){text[0], s};
        return 0;
    }
    char word[64];
    if (!next_word(&text, word, sizeof(word)))
        return -1;
    char base = !strncasecmp(word, "now", 1) || !strncasecmp(word, "access", 1) ? 'A'
                : !strncasecmp(word, "modification", 1)                         ? 'M'
                                                                                : 0;
    if (!base)
        return -1;
    next_word(&text, word, sizeof(word));
    if (!strncasecmp(word, "plus", 1))
        next_word(&text, word, sizeof(word));
    long total = 0;
    while (word[0]) {
        if (!isdigit((unsigned char)word[0]))
            return -1;
        long num = atol(word), unit;
        if (!next_word(&text, word, sizeof(word)) || !(unit = unit_seconds(word)))
            return -1;
        if (num > 100L * 365 * 86400 / unit)
            return -1; /* more than a century: a mistake */
        total += num * unit;
        next_word(&text, word, sizeof(word));
    }
    *out = (expires_code_t){base, total};
    return 0;
}

/* A Header value as written: "%%" is '%'; any other '%' is a format
 * (%t, %D, %{VAR}e, ...) this server does not expand. NULL then. */
static char *header_value(const char *v)
{
    char *out = vc_malloc(strlen(v) + 1), *o = out;
    for (const char *p = v; *p; p++) {
        if (*p == '%' && p[1] != '%') {
            free(out);
            return NULL;
        }
        *o++ = *p;
        p += *p == '%';
    }
    *o = '\0';
    return out;
}

static int header_directive(htaccess_answer_t **a, char **w, int n, char *why, size_t whylen)
{
    int i = 1, always = 0;
    if (i < n && (!strcasecmp(w[i], "always") || !strcasecmp(w[i], "onsuccess")))
        always = !strcasecmp(w[i++], "always");
    if (i + 1 >= n) {
        snprintf(why, whylen, "Header: an action and a header name are wanted");
        return -1;
    }
    static const struct {
        const char *name;
        header_action_t action;
    } actions[] = {{"set", HEADER_SET},       {"setifempty", HEADER_SETIFEMPTY},
                   {"append", HEADER_APPEND}, {"merge", HEADER_MERGE},
                   {"add", HEADER_ADD},       {"unset", HEADER_UNSET}};
    const char *verb = w[i++], *name = w[i++];
    size_t k = 0;
    while (k < VC_ARRAY_SIZE(actions) && strcasecmp(verb, actions[k].name))
        k++;
    if (k == VC_ARRAY_SIZE(actions)) {
        snprintf(why, whylen, "Header %s: an action this server does not take", verb);
        return -1;
    }
    int unset = actions[k].action == HEADER_UNSET;
    if (!unset && i >= n) {
        snprintf(why, whylen, "Header %s %s: no value", verb, name);
        return -1;
    }
    const char *raw = unset ? NULL : w[i++];
    if (i < n) { /* early, env=[!]VAR, expr=...: when to apply it */
        snprintf(why, whylen, "Header %s %s: a condition (%s) this server does not apply", verb, name, w[i]);
        return -1;
    }
    char *value = raw ? header_value(raw) : NULL;
    if (raw && (value == NULL || !strncasecmp(raw, "expr=", 5))) {
        free(value);
        snprintf(why, whylen, "Header %s %s: a value with a format this server does not expand", verb, name);
        return -1;
    }
    if (strspn(name, "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") != strlen(name)) {
        free(value);
        snprintf(why, whylen, "Header %s: \"%s\" is not a header's name", verb, name);
        return -1;
    }
    static const char *const framing[] = {
        "content-length", "transfer-encoding", "connection", "keep-alive", "upgrade", "te", "trailer"};
    for (size_t f = 0; f < VC_ARRAY_SIZE(framing); f++)
        if (!strcasecmp(name, framing[f])) {
            free(value);
            snprintf(why, whylen, "Header %s %s: the front frames the answer itself", verb, name);
            return -1;
        }
    htaccess_answer_t *h = made(a);
    h->headers = vc_realloc(h->headers, (h->nheaders + 1) * sizeof(*h->headers));
    h->headers[h->nheaders++] = (header_rule_t){actions[k].action, always, lower_dup(name), value};
    return 1;
}

static int expires_directive(htaccess_answer_t **a, char **w, int n, char *why, size_t whylen)
{
    expires_code_t code;
    if (!strcasecmp(w[0], "ExpiresActive")) {
        if (n != 2 || (strcasecmp(w[1], "on") && strcasecmp(w[1], "off"))) {
            snprintf(why, whylen, "ExpiresActive: On or Off");
            return -1;
        }
        made(a)->expires_active = !strcasecmp(w[1], "on");
        return 1;
    }
    const char *text = !strcasecmp(w[0], "ExpiresDefault") ? (n == 2 ? w[1] : NULL) : (n == 3 ? w[2] : NULL);
    if (text == NULL || htaccess_expires_code(text, &code) < 0) {
        snprintf(why, whylen, "%s: a code this server cannot read", w[0]);
        return -1;
    }
    htaccess_answer_t *h = made(a);
    if (!strcasecmp(w[0], "ExpiresDefault")) {
        h->expires_default = code;
        return 1;
    }
    char *type = lower_dup(w[1]);
    size_t t = 0;
    while (t < h->nby_type && strcmp(h->by_type[t].type, type))
        t++;
    if (t == h->nby_type) {
        h->by_type = vc_realloc(h->by_type, (t + 1) * sizeof(*h->by_type));
        h->by_type[h->nby_type++].type = type;
    } else {
        free(type);
    }
    h->by_type[t].code = code;
    return 1;
}

static int add_type(htaccess_answer_t **a, char **w, int n, char *why, size_t whylen)
{
    if (n < 3 || !strchr(w[1], '/')) {
        snprintf(why, whylen, "AddType: a media type and extensions are wanted");
        return -1;
    }
    htaccess_answer_t *h = made(a);
    for (int i = 2; i < n; i++) {
        char *ext = lower_dup(w[i] + (w[i][0] == '.'));
        size_t t = 0;
        while (t < h->ntypes && strcmp(h->types[t].ext, ext))
            t++;
        if (t == h->ntypes) {
            h->types = vc_realloc(h->types, (t + 1) * sizeof(*h->types));
            h->types[h->ntypes++] = (mime_by_ext_t){ext, NULL};
        } else {
            free(ext);
            free(h->types[t].type);
        }
        h->types[t].type = vc_strdup(w[1]);
    }
    return 1;
}

/* A URL as ap_is_url() sees one: a scheme, then ':'. */
static int is_url(const char *u)
{
    size_t n = strspn(u, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-");
    return n > 0 && u[n] == ':' && isalpha((unsigned char)*u);
}

/* set_error_document(): a path, a URL, or else a message. */
static int error_document(htaccess_answer_t **a, char **w, int n, char *why, size_t whylen)
{
    int status = n == 3 ? atoi(w[1]) : 0;
    if (n != 3 || status < 400 || status > 599 || strspn(w[1], "0123456789") != strlen(w[1])) {
        snprintf(why, whylen, "ErrorDocument: an error status (4xx, 5xx) and one document are wanted");
        return -1;
    }
    const char *v = w[2];
    error_doc_kind_t kind = !strcasecmp(v, "default") ? ERROR_DOC_DEFAULT
                            : strchr(v, ' ')          ? ERROR_DOC_TEXT
                            : v[0] == '/'             ? ERROR_DOC_PATH
                            : is_url(v)               ? ERROR_DOC_URL
                                                      : ERROR_DOC_TEXT;
    if (kind == ERROR_DOC_URL && status == 401) { /* Apache ignores it: a client would never see the 401 */
        snprintf(why, whylen, "ErrorDocument 401 to a URL: ignored, as Apache does");
        return -1;
    }
    htaccess_answer_t *h = made(a);
    size_t i = 0;
    while (i < h->nerrors && h->errors[i].status != status)
        i++;
    if (i == h->nerrors) {
        h->errors = vc_realloc(h->errors, (i + 1) * sizeof(*h->errors));
        h->errors[h->nerrors++].value = NULL;
    }
    free(h->errors[i].value);
    h->errors[i] = (error_doc_t){status, kind, vc_strdup(v)};
    return 1;
}

int htaccess_answer_directive(htaccess_answer_t **a, char **w, int n, char *why, size_t whylen)
{
    if (!strcasecmp(w[0], "ErrorDocument"))
        return error_document(a, w, n, why, whylen);
    if (!strcasecmp(w[0], "Header"))
        return header_directive(a, w, n, why, whylen);
    if (!strcasecmp(w[0], "ExpiresActive") || !strcasecmp(w[0], "ExpiresByType") || !strcasecmp(w[0], "ExpiresDefault"))
        return expires_directive(a, w, n, why, whylen);
    if (!strcasecmp(w[0], "AddType"))
        return add_type(a, w, n, why, whylen);
    if (!strcasecmp(w[0], "AddDefaultCharset")) {
        if (n != 2) {
            snprintf(why, whylen, "AddDefaultCharset: On, Off or a charset");
            return -1;
        }
        htaccess_answer_t *h = made(a);
        free(h->charset);
        h->charset = vc_strdup(!strcasecmp(w[1], "on") ? "iso-8859-1" : !strcasecmp(w[1], "off") ? "" : w[1]);
        return 1;
    }
    return 0;
}

void htaccess_answer_free(htaccess_answer_t *a)
{
    if (a == NULL)
        return;
    for (size_t i = 0; i < a->nheaders; i++) {
        free(a->headers[i].name);
        free(a->headers[i].value);
    }
    free(a->headers);
    for (size_t i = 0; i < a->nby_type; i++)
        free(a->by_type[i].type);
    free(a->by_type);
    for (size_t i = 0; i < a->ntypes; i++) {
        free(a->types[i].ext);
        free(a->types[i].type);
    }
    free(a->types);
    free(a->charset);
    for (size_t i = 0; i < a->nerrors; i++)
        free(a->errors[i].value);
    free(a->errors);
    free(a);
}
