/*
 * One rule list over a request (rewrite.h), as mod_rewrite's
 * apply_rewrite_list() does it in a directory: each rule's pattern
 * against the path below the directory, then its conditions, then its
 * substitution with $N (the rule's groups), %N (the last matched
 * condition's) and %{VARIABLE} expanded, its flags carried out.
 */
#include "rewrite_internal.h"
#include "vc_util.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#define MAX_EXPANSION 16384 /* Apache: twice its request line limit */

typedef rewrite_refs_t refs_t;

typedef struct ctx {
    rewrite_request_t *r;
    const char *perdir;
    const char *uri; /* what the rule matched */
    refs_t rule, cond;
    int in_cond;  /* a condition is being tested */
    int redirect; /* the last [R]'s status */
} ctx_t;

static pcre2_match_context *limits(void)
{
    static pcre2_match_context *mc;
    if (mc == NULL) {
        mc = pcre2_match_context_create(NULL);
        pcre2_set_match_limit(mc, 100000);
        pcre2_set_depth_limit(mc, 5000);
        pcre2_set_heap_limit(mc, 4096); /* KiB */
    }
    return mc;
}

int rewrite_match(const pcre2_code *re, const char *s, refs_t *refs)
{
    static pcre2_match_data *md;
    if (md == NULL)
        md = pcre2_match_data_create(REWRITE_REFS, NULL);
    int rc = pcre2_match(re, (PCRE2_SPTR)s, strlen(s), 0, 0, md, limits()); /* JIT-compiled where it could be */
    if (rc < 0)
        return 0; /* no match, or over a limit */
    if (refs) {
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        refs->n = rc == 0 ? REWRITE_REFS : rc;
        memcpy(refs->ov, ov, sizeof(refs->ov[0]) * 2 * (size_t)refs->n);
        refs->source = s;
    }
    return 1;
}

typedef struct out {
    char buf[MAX_EXPANSION];
    size_t len;
    int full;
} out_t;

static void put(out_t *o, const char *s, size_t n)
{
    if (o->len + n >= sizeof(o->buf)) {
        o->full = 1;
        n = sizeof(o->buf) - 1 - o->len;
    }
    memcpy(o->buf + o->len, s, n);
    o->len += n;
}

static const char *header(ctx_t *c, const char *name)
{
    const char *v = c->r->header ? c->r->header(c->r->header_ctx, name) : NULL;
    /* The response varies on a header a condition read (Apache adds it
     * to Vary when the rule applies; not one a substitution reads). */
    rewrite_request_t *r = c->r;
    if (c->in_cond && r->nvary_pending < REWRITE_MAX_VARY)
        r->vary[r->nvary_pending++] = rewrite_strdup(r, name);
    return v;
}

/* %{TIME...}: the local time, or a part of it. */
static const char *time_part(char *buf, size_t len, const char *name)
{
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    const struct {
        const char *name;
        int value;
    } parts[] = {{"TIME_YEAR", tm.tm_year + 1900}, {"TIME_MON", tm.tm_mon + 1}, {"TIME_DAY", tm.tm_mday},
                 {"TIME_HOUR", tm.tm_hour},        {"TIME_MIN", tm.tm_min},     {"TIME_SEC", tm.tm_sec},
                 {"TIME_WDAY", tm.tm_wday}};
    if (!strcasecmp(name, "TIME")) {
        snprintf(buf, len, "%04d%02d%02d%02d%02d%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                 tm.tm_min, tm.tm_sec);
        return buf;
    }
    for (size_t i = 0; i < VC_ARRAY_SIZE(parts); i++)
        if (!strcasecmp(name, parts[i].name)) {
            snprintf(buf, len, strcmp(parts[i].name, "TIME_WDAY") ? "%02d" : "%d", parts[i].value);
            return buf;
        }
    return NULL;
}

/* The variables mod_rewrite knows by name (lookup_variable()), in the
 * order of their enum: the parser marks each use with its index
 * (rewrite_mark_variables), so that a request never compares names. */
enum var {
    V_HTTP_HOST,
    V_HTTP_ACCEPT,
    V_HTTP_COOKIE,
    V_HTTP_REFERER,
    V_HTTP_FORWARDED,
    V_HTTP_USER_AGENT,
    V_HTTP_PROXY_CONNECTION,
    V_HTTPS,
    V_IS_SUBREQ,
    V_PATH_INFO,
    V_SERVER_NAME,
    V_REMOTE_ADDR,
    V_CONN_REMOTE_ADDR,
    V_REMOTE_HOST,
    V_REMOTE_PORT,
    V_SERVER_ADDR,
    V_SERVER_PORT,
    V_THE_REQUEST,
    V_REQUEST_URI,
    V_QUERY_STRING,
    V_DOCUMENT_ROOT,
    V_CONTEXT_DOCUMENT_ROOT,
    V_CONTEXT_PREFIX,
    V_REQUEST_METHOD,
    V_REQUEST_SCHEME,
    V_SCRIPT_FILENAME,
    V_REQUEST_FILENAME,
    V_SERVER_PROTOCOL,
    V_SERVER_SOFTWARE,
    V_IPV6,
    V_TIME,
    V_TIME_YEAR,
    V_TIME_MON,
    V_TIME_DAY,
    V_TIME_HOUR,
    V_TIME_MIN,
    V_TIME_SEC,
    V_TIME_WDAY,
    V_COUNT
};
static const char *const var_names[V_COUNT] = {
    "HTTP_HOST",
    "HTTP_ACCEPT",
    "HTTP_COOKIE",
    "HTTP_REFERER",
    "HTTP_FORWARDED",
    "HTTP_USER_AGENT",
    "HTTP_PROXY_CONNECTION",
    "HTTPS",
    "IS_SUBREQ",
    "PATH_INFO",
    "SERVER_NAME",
    "REMOTE_ADDR",
    "CONN_REMOTE_ADDR",
    "REMOTE_HOST",
    "REMOTE_PORT",
    "SERVER_ADDR",
    "SERVER_PORT",
    "THE_REQUEST",
    "REQUEST_URI",
    "QUERY_STRING",
    "DOCUMENT_ROOT",
    "CONTEXT_DOCUMENT_ROOT",
    "CONTEXT_PREFIX",
    "REQUEST_METHOD",
    "REQUEST_SCHEME",
    "SCRIPT_FILENAME",
    "REQUEST_FILENAME",
    "SERVER_PROTOCOL",
    "SERVER_SOFTWARE",
    "IPV6",
    "TIME",
    "TIME_YEAR",
    "TIME_MON",
    "TIME_DAY",
    "TIME_HOUR",
    "TIME_MIN",
    "TIME_SEC",
    "TIME_WDAY",
};

int rewrite_variable_index(const char *name, size_t len)
{
    for (int i = 0; i < V_COUNT; i++)
        if (strlen(var_names[i]) == len && !strncasecmp(name, var_names[i], len))
            return i;
    return -1;
}

static const char *lazy(rewrite_request_t *r, const char *v, const char *name)
{
    v = v == NULL && r->lazy ? r->lazy(r->header_ctx, name) : v;
    return v ? v : "";
}

static const char *value(ctx_t *c, enum var v, char *buf, size_t buflen)
{
    rewrite_request_t *r = c->r;
    static const char *const headers[] = {"Host",      "Accept",     "Cookie",          "Referer",
                                          "Forwarded", "User-Agent", "Proxy-Connection"};
    if (v <= V_HTTP_PROXY_CONNECTION)
        return header(c, headers[v]);
    if (v >= V_TIME)
        return time_part(buf, buflen, var_names[v]);
    switch (v) {
    case V_HTTPS: return r->https ? "on" : "off";
    case V_IS_SUBREQ: return "false";
    case V_PATH_INFO: return r->path_info;
    case V_SERVER_NAME: return r->server_name;
    case V_REMOTE_ADDR:
    case V_CONN_REMOTE_ADDR:
    case V_REMOTE_HOST: return lazy(r, r->remote_addr, "REMOTE_ADDR"); /* no name lookups, as Apache's default */
    case V_REMOTE_PORT: return lazy(r, r->remote_port, "REMOTE_PORT");
    case V_SERVER_ADDR: return lazy(r, r->server_addr, "SERVER_ADDR");
    case V_SERVER_PORT: return r->server_port;
    case V_THE_REQUEST: return lazy(r, r->the_request, "THE_REQUEST");
    case V_REQUEST_URI: return r->uri;
    case V_QUERY_STRING: return r->args;
    case V_DOCUMENT_ROOT:
    case V_CONTEXT_DOCUMENT_ROOT: return r->document_root;
    case V_REQUEST_METHOD: return r->method;
    case V_REQUEST_SCHEME: return r->scheme;
    case V_SCRIPT_FILENAME:
    case V_REQUEST_FILENAME: return r->filename;
    case V_SERVER_PROTOCOL: return r->protocol;
    case V_SERVER_SOFTWARE: return "Velocity";
    case V_IPV6: {
        const char *a = lazy(r, r->remote_addr, "REMOTE_ADDR");
        return strchr(a, ':') && strncmp(a, "::ffff:", 7) ? "on" : "off";
    }
    default: return ""; /* CONTEXT_PREFIX */
    }
}

/* %{NAME}: lookup_variable(). Names the parser knew come marked with
 * their index. */
static const char *variable(ctx_t *c, const char *name, size_t len, char *buf, size_t buflen)
{
    if (len == 2 && name[0] == REWRITE_VAR_MARK && (unsigned char)name[1] <= V_COUNT)
        return value(c, (enum var)(name[1] - 1), buf, buflen);
    char part[128]; /* the name after "ENV:" or "HTTP:", cut to fit */
    size_t plen = len > 5 ? (len - 5 < sizeof(part) ? len - 5 : sizeof(part) - 1) : 0;
    if (len > 4 && !strncasecmp(name, "ENV:", 4)) {
        plen = len - 4 < sizeof(part) ? len - 4 : sizeof(part) - 1;
        memcpy(part, name + 4, plen);
        part[plen] = '\0';
        return rewrite_getenv(c->r, part);
    }
    if (len > 5 && !strncasecmp(name, "HTTP:", 5)) {
        memcpy(part, name + 5, plen);
        part[plen] = '\0';
        return header(c, part);
    }
    int v = rewrite_variable_index(name, len);
    return v < 0 ? "" : value(c, (enum var)v, buf, buflen); /* AUTH_TYPE, REMOTE_USER, unknown: empty, as Apache */
}

/* [B]: a back-reference escaped before it is put in the URL. */
static void put_escaped(out_t *o, const char *s, size_t n, const rewrite_rule_t *rule)
{
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        int escape = rule->escapes ? strchr(rule->escapes, ch) != NULL : !isalnum(ch) && ch != '_';
        if (!escape) {
            put(o, (const char *)&ch, 1);
        } else if (ch == ' ' && !(rule->flags & RULE_NOPLUS)) {
            put(o, "+", 1);
        } else {
            char e[3] = {'%', hex[ch >> 4], hex[ch & 15]};
            put(o, e, 3);
        }
    }
}

/* do_expand(): with qmark set, whether the first '?' came from an
 * expansion (1), from the text itself (0), or is not there (-1). */
static char *expand(ctx_t *c, const char *in, const rewrite_rule_t *rule, int *qmark)
{
    static out_t o;
    o.len = 0;
    o.full = 0;
    int tracking = qmark != NULL;
    if (qmark)
        *qmark = -1;
    for (const char *p = in; *p;) {
        size_t before = o.len;
        int expanded = 0;
        if (*p == '\\' && p[1]) {
            put(&o, p + 1, 1);
            p += 2;
        } else if (*p == '%' && p[1] == '{' && strchr(p + 2, '}')) {
            const char *end = strchr(p + 2, '}');
            char buf[32];
            const char *v = variable(c, p + 2, (size_t)(end - p - 2), buf, sizeof(buf));
            if (v)
                put(&o, v, strlen(v));
            expanded = 1;
            p = end + 1;
        } else if ((*p == '$' || *p == '%') && isdigit((unsigned char)p[1])) {
            const refs_t *refs = *p == '$' ? &c->rule : &c->cond;
            int n = p[1] - '0';
            if (refs->source && n < refs->n && refs->ov[2 * n] != PCRE2_UNSET &&
                refs->ov[2 * n + 1] > refs->ov[2 * n]) {
                const char *s = refs->source + refs->ov[2 * n];
                size_t len = refs->ov[2 * n + 1] - refs->ov[2 * n];
                if (rule && (rule->flags & RULE_ESCAPEREF))
                    put_escaped(&o, s, len, rule);
                else
                    put(&o, s, len);
                expanded = 1;
            }
            p += 2;
        } else if (*p == '?') {
            if (tracking) {
                *qmark = 0; /* a '?' of the text itself: safe */
                tracking = rule && (rule->flags & RULE_QSLAST);
            }
            put(&o, p, 1);
            p++;
        } else { /* text, up to what may start something else */
            size_t run = 1 + strcspn(p + 1, "\\%$?");
            put(&o, p, run);
            p += run;
        }
        if (tracking && expanded && memchr(o.buf + before, '?', o.len - before)) {
            *qmark = 1;
            tracking = rule && (rule->flags & RULE_QSLAST);
        }
    }
    if (o.full)
        c->r->out_of_room = 1;
    return rewrite_strndup(c->r, o.buf, o.len);
}

static int compare_lexically(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la != lb)
        return la > lb ? 1 : -1;
    int d = memcmp(a, b, la);
    return d > 0 ? 1 : d < 0 ? -1 : 0;
}

static int cond_holds(ctx_t *c, const rewrite_cond_t *cond)
{
    c->in_cond = 1;
    const char *in = expand(c, cond->input, NULL, NULL);
    c->in_cond = 0;
    struct stat st;
    int rc = 0;
    switch (cond->type) {
    case COND_FILE: rc = rewrite_stat(c->r, in, &st) && S_ISREG(st.st_mode); break;
    case COND_SIZE: rc = rewrite_stat(c->r, in, &st) && S_ISREG(st.st_mode) && st.st_size > 0; break;
    case COND_DIR: rc = rewrite_stat(c->r, in, &st) && S_ISDIR(st.st_mode); break;
    case COND_LINK: rc = lstat(in, &st) == 0 && S_ISLNK(st.st_mode); break;
    case COND_EXEC: rc = rewrite_stat(c->r, in, &st) && (st.st_mode & 0111); break;
    case COND_STR_EQ: rc = cond->nocase ? !strcasecmp(in, cond->operand) : !strcmp(in, cond->operand); break;
    case COND_STR_LT:
    case COND_STR_GT:
    case COND_STR_LE:
    case COND_STR_GE: {
        int d = cond->nocase ? strcasecmp(in, cond->operand) : compare_lexically(in, cond->operand);
        rc = cond->type == COND_STR_LT   ? d < 0
             : cond->type == COND_STR_GT ? d > 0
             : cond->type == COND_STR_LE ? d <= 0
                                         : d >= 0;
        break;
    }
    case COND_INT_EQ: rc = atoi(in) == atoi(cond->operand); break;
    case COND_INT_LT: rc = atoi(in) < atoi(cond->operand); break;
    case COND_INT_GT: rc = atoi(in) > atoi(cond->operand); break;
    case COND_INT_LE: rc = atoi(in) <= atoi(cond->operand); break;
    case COND_INT_GE: rc = atoi(in) >= atoi(cond->operand); break;
    case COND_REGEX: {
        refs_t refs;
        rc = rewrite_match(cond->re, in, &refs);
        if (rc && !cond->negate)
            c->cond = refs;
        break;
    }
    }
    return cond->negate ? !rc : rc;
}

static int conds_hold(ctx_t *c, const rewrite_rule_t *rule)
{
    rewrite_request_t *r = c->r;
    for (size_t i = 0; i < rule->nconds; i++) {
        const rewrite_cond_t *cond = &rule->conds[i];
        size_t vary_from = r->nvary_pending;
        int rc = cond_holds(c, cond);
        if (cond->ornext) {
            if (!rc) {
                r->nvary_pending = vary_from; /* a failed [OR] adds nothing to Vary */
                continue;
            }
            while (i < rule->nconds && rule->conds[i].ornext)
                i++; /* the rest of the [OR] chain (Apache also passes its last one) */
        } else if (!rc) {
            return 0;
        }
    }
    return 1;
}

/* The scheme's length ("http://" is 7), or 0 for a path; *query: whether
 * a query string belongs to such a URL. is_absolute_uri(). */
size_t rewrite_scheme_len(const char *uri, int *query)
{
    static const struct {
        const char *prefix;
        int query;
    } schemes[] = {{"ajp://", 1},   {"balancer://", 1}, {"ftp://", 0}, {"fcgi://", 1}, {"gopher://", 0}, {"http://", 1},
                   {"https://", 1}, {"h2://", 1},       {"h2c://", 1}, {"ldap://", 0}, {"mailto:", 1},   {"news:", 0},
                   {"nntp://", 0},  {"scgi://", 1},     {"ws://", 1},  {"wss://", 1}};
    /* Most are paths: every scheme starts with a letter and has its ':'
     * within the first 10 bytes (asked several times a rule). */
    if (!isalpha((unsigned char)uri[0]) || memchr(uri, ':', strnlen(uri, 11)) == NULL)
        return 0;
    for (size_t i = 0; i < VC_ARRAY_SIZE(schemes); i++)
        if (!strncasecmp(uri, schemes[i].prefix, strlen(schemes[i].prefix))) {
            if (query)
                *query = schemes[i].query;
            return strlen(schemes[i].prefix);
        }
    if (!strncasecmp(uri, "unix:", 5)) {
        if (query)
            *query = 1;
        return uri[5] == '/' && uri[6] == '/' ? 7 : 5;
    }
    return 0;
}

/* splitout_queryargs(): the query the substitution names, if any. */
static void split_query(rewrite_request_t *r, unsigned flags)
{
    int query = 0;
    size_t skip = rewrite_scheme_len(r->filename, &query);
    if (skip && !query) {
        r->args = NULL;
        return;
    }
    if (flags & RULE_QSDISCARD)
        r->args = NULL;
    const char *q = flags & RULE_QSLAST ? strrchr(r->filename + skip, '?') : strchr(r->filename + skip, '?');
    if (q == NULL)
        return;
    const char *tail = q + 1;
    const char *args;
    if (flags & RULE_QSAPPEND) {
        if (!*tail)
            args = r->args;
        else if (r->args) {
            size_t a = strlen(tail), b = strlen(r->args);
            char *joined = rewrite_alloc(r, a + b + 2);
            memcpy(joined, tail, a);
            joined[a] = '&';
            memcpy(joined + a + 1, r->args, b + 1);
            args = joined;
        } else {
            args = tail;
        }
    } else {
        args = tail;
    }
    r->filename = rewrite_strndup(r, r->filename, (size_t)(q - r->filename));
    if (args && !*args)
        args = NULL;
    else if (args && args[strlen(args) - 1] == '&')
        args = rewrite_strndup(r, args, strlen(args) - 1);
    r->args = args;
}

/* A http(s)://host[:port] prefix that names this server is dropped:
 * reduce_uri(). */
static void reduce(rewrite_request_t *r)
{
    size_t skip = rewrite_scheme_len(r->filename, NULL);
    const char *scheme = r->https ? "https://" : "http://";
    if (!skip || strncasecmp(r->filename, scheme, strlen(scheme)) != 0)
        return;
    const char *host = r->filename + skip, *end = host + strcspn(host, "/:");
    const char *port_end = *end == ':' ? end + 1 + strcspn(end + 1, "/") : end;
    if (!r->server_name || strlen(r->server_name) != (size_t)(end - host) ||
        strncasecmp(host, r->server_name, (size_t)(end - host)) != 0)
        return;
    if (*end == ':') {
        char port[16];
        snprintf(port, sizeof(port), "%.*s", (int)(port_end - end - 1), end + 1);
        if (strcmp(port, r->server_port ? r->server_port : "") != 0)
            return;
    }
    r->filename = *port_end ? port_end : "/";
}

/* fully_qualify_uri(): a redirect to a path gets this server's URL. */
static void qualify(rewrite_request_t *r)
{
    if (rewrite_scheme_len(r->filename, NULL))
        return;
    int dflt = !r->server_port || !strcmp(r->server_port, r->https ? "443" : "80");
    size_t len = strlen(r->filename) + strlen(r->server_name ? r->server_name : "") + 32;
    char *u = rewrite_alloc(r, len);
    snprintf(u, len, "%s://%s%s%s%s%s", r->https ? "https" : "http", r->server_name ? r->server_name : "",
             dflt ? "" : ":", dflt ? "" : r->server_port, r->filename[0] == '/' ? "" : "/", r->filename);
    r->filename = u;
}

static void set_env(ctx_t *c, const rewrite_rule_t *rule)
{
    for (size_t i = 0; i < rule->nenv; i++) {
        char *name = expand(c, rule->env[i], NULL, NULL);
        if (*name == '!') {
            rewrite_setenv(c->r, name + 1, NULL);
            continue;
        }
        char *value = strchr(name, ':');
        if (value)
            *value++ = '\0';
        rewrite_setenv(c->r, name, value ? value : "");
    }
}

enum { NOMATCH, MATCHED, NOSUB, STATUS_SET };

static int apply_rule(ctx_t *c, const rewrite_rule_t *rule, int *status)
{
    rewrite_request_t *r = c->r;
    const char *uri = r->filename;
    if (r->path_info && *r->path_info) {
        size_t a = strlen(uri), b = strlen(r->path_info);
        char *joined = rewrite_alloc(r, a + b + 1);
        memcpy(joined, uri, a);
        memcpy(joined + a, r->path_info, b + 1);
        uri = joined;
    }
    size_t dirlen = strlen(c->perdir);
    if (strncmp(uri, c->perdir, dirlen) == 0)
        uri += dirlen;
    refs_t refs;
    int matched = rewrite_match(rule->re, uri, &refs);
    if (matched == !!(rule->flags & RULE_NEGATE))
        return NOMATCH;
    c->uri = uri;
    c->cond.source = NULL;
    c->rule = rule->flags & RULE_NEGATE ? (refs_t){0} : refs;
    if (!conds_hold(c, rule))
        return NOMATCH;
    const char *to = NULL;
    if (!(rule->flags & RULE_NOSUB)) {
        int qmark;
        to = expand(c, rule->output, rule, rule->flags & RULE_ALLOW3F ? NULL : &qmark);
        if (!(rule->flags & RULE_ALLOW3F) && qmark > 0) {
            /* A '?' that came from the request, decoded: Apache 2.4.60's
             * refusal (CVE-2024-38474). */
            *status = 403;
            return STATUS_SET;
        }
    }
    set_env(c, rule);
    if (rule->flags & RULE_NOSUB) {
        if (rule->flags & RULE_STATUS)
            *status = rule->status;
        return NOSUB;
    }
    int prefixed = 0;
    if (to[0] != '/' && !rewrite_scheme_len(to, NULL)) {
        size_t a = strlen(c->perdir), b = strlen(to);
        char *joined = rewrite_alloc(r, a + b + 1);
        memcpy(joined, c->perdir, a);
        memcpy(joined + a, to, b + 1);
        to = joined;
        prefixed = 1;
    }
    r->filename = to;
    if (rule->flags & RULE_DPI)
        r->path_info = NULL;
    split_query(r, rule->flags);
    if (rule->flags & RULE_REDIRECT) {
        qualify(r);
        c->redirect = rule->status;
        return MATCHED;
    }
    reduce(r);
    if (rewrite_scheme_len(r->filename, NULL)) {
        c->redirect = 0; /* a URL of another server: 302 */
        return MATCHED;
    }
    if (!(rule->flags & RULE_UNC) && !prefixed && !(rule->output[0] == '/' && rule->output[1] == '/'))
        while (r->filename[0] == '/' && r->filename[1] == '/')
            r->filename++;
    return MATCHED;
}

int rewrite_apply(const rewrite_conf_t *conf, rewrite_request_t *r, int *status, int *noescape)
{
    ctx_t c = {.r = r, .perdir = conf->directory};
    int changed = 0, round = 1;
    *status = 0;
    *noescape = 0;
again:
    for (size_t i = 0; i < conf->nrules; i++) {
        const rewrite_rule_t *rule = conf->rules[i];
        r->nvary_pending = r->nvary;
        int rc = apply_rule(&c, rule, status);
        if (rc == NOMATCH) {
            while (i < conf->nrules && (conf->rules[i]->flags & RULE_CHAIN))
                i++;
            continue;
        }
        r->nvary = r->nvary_pending;
        if (strlen(r->filename) > MAX_EXPANSION || r->out_of_room) {
            *status = 500;
            return -1;
        }
        if (rc == STATUS_SET)
            return -1;
        if (rule->flags & RULE_STATUS) {
            *status = rule->status;
            return -1;
        }
        if (rc != NOSUB) {
            changed = 1;
            *noescape = (rule->flags & RULE_NOESCAPE) != 0;
        }
        if (rule->flags & RULE_END) {
            r->end = 1;
            break;
        }
        if (rule->flags & (RULE_LAST | RULE_PASSTHROUGH))
            break;
        if (rule->flags & RULE_NEXT) {
            if (++round >= rule->maxrounds) {
                *status = 500;
                return -1;
            }
            goto again;
        }
        for (int s = rule->skip; s > 0 && i < conf->nrules; s--)
            i++;
    }
    if (changed)
        *status = c.redirect;
    return changed;
}
