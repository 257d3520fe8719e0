/*
 * .htaccess access rules (htaccess.h). Lines as httpd reads them (a
 * trailing backslash joins the next, `#` starts a comment line, words in
 * "quotes"); sections nest. <IfModule x> is read as if x were loaded, as
 * Debian's Apache has the access modules; <IfModule !x> is skipped.
 */
#include "htaccess.h"
#include "rewrite_internal.h"
#include "vc_util.h"

#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_WORDS 16
#define MAX_DEPTH 8

typedef struct files_rule {
    char *glob;     /* <Files "x">: fnmatch() pattern, or */
    pcre2_code *re; /* <FilesMatch "re">, <Files ~ "re"> (PCRE, as Apache's) */
    htaccess_verdict_t verdict;
} files_rule_t;

struct htaccess {
    htaccess_verdict_t dir;
    int no_scripts; /* PHP is turned off here (Drupal's files/: SetHandler, php_flag engine off) */
    files_rule_t *files;
    size_t nfiles;
    rewrite_set_t *rewrite; /* its mod_rewrite directives, or NULL */
    char *unreadable;
    char *ignored[HTACCESS_MAX_IGNORED];
    size_t nignored;
};

typedef struct parse {
    htaccess_t *h;
    const char *file;
    int line;
} parse_t;

static void deny_all(parse_t *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Something here cannot be read: the directory is closed, and why is the
 * first reason. */
static void deny_all(parse_t *p, const char *fmt, ...)
{
    if (p->h->unreadable)
        return;
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    p->h->unreadable = vc_asprintf("%s:%d: %s", p->file, p->line, msg);
}

static int split(char *s, char **w)
{
    int n = 0;
    for (char *q = s; *q && n < MAX_WORDS;) {
        while (*q == ' ' || *q == '\t')
            q++;
        if (!*q)
            break;
        char quote = *q == '"' || *q == '\'' ? *q++ : 0;
        w[n++] = q;
        while (*q && (quote ? *q != quote : (*q != ' ' && *q != '\t')))
            q++;
        if (*q)
            *q++ = '\0';
    }
    return n;
}

/* An access directive: its verdict, UNSET if it is not one, or -1 for one
 * that cannot be read (the directory is closed). */
static int access_verdict(char **w, int n)
{
    if (!strcasecmp(w[0], "Require"))
        return n == 3 && !strcasecmp(w[1], "all") ? (!strcasecmp(w[2], "denied")    ? HTACCESS_DENIED
                                                     : !strcasecmp(w[2], "granted") ? HTACCESS_GRANTED
                                                                                    : -1)
                                                  : -1;
    if (!strcasecmp(w[0], "Deny") || !strcasecmp(w[0], "Allow"))
        return n == 3 && !strcasecmp(w[1], "from") && !strcasecmp(w[2], "all")
                   ? (!strcasecmp(w[0], "Deny") ? HTACCESS_DENIED : HTACCESS_GRANTED)
                   : -1;
    static const char *const unreadable[] = {"AuthType",          "AuthName", "AuthUserFile", "AuthGroupFile",
                                             "AuthBasicProvider", "Satisfy",  "AuthMerging",  NULL};
    for (const char *const *u = unreadable; *u; u++)
        if (!strcasecmp(w[0], *u))
            return -1;
    return HTACCESS_UNSET;
}

static void set_verdict(parse_t *p, files_rule_t *in, htaccess_verdict_t v, const char *order)
{
    htaccess_verdict_t *into = in ? &in->verdict : &p->h->dir;
    /* mod_access_compat: with `Order allow,deny`, a Deny wins over an
     * Allow; a Require always replaces what came before. Either way a
     * denial is never undone by a later grant of the old kind. */
    if (order && *into == HTACCESS_DENIED && v == HTACCESS_GRANTED)
        return;
    *into = v;
}

static int read_lines(parse_t *p, char **text, files_rule_t *in, const char *closing, int depth);

/* <Files>, <FilesMatch>, <IfModule>: 0, or -1 when it cannot go on. */
static int section(parse_t *p, char **text, char **w, int n, files_rule_t *in, int depth)
{
    char *name = w[0] + 1;
    if (!strcasecmp(name, "IfModule") && n == 2) {
        if (w[1][0] != '!')
            return read_lines(p, text, in, "IfModule", depth + 1);
        parse_t skip = {.h = htaccess_compile("", "", 0), .file = p->file, .line = p->line}; /* read, not applied */
        int rc = read_lines(&skip, text, NULL, "IfModule", depth + 1);
        p->line = skip.line;
        htaccess_free(skip.h);
        return rc;
    }
    int files = !strcasecmp(name, "Files"),
        regex = !strcasecmp(name, "FilesMatch") || (files && n == 3 && !strcmp(w[1], "~"));
    int well_formed = files && regex ? n == 3 : n == 2;
    if ((files || regex) && well_formed && !in) {
        p->h->files = vc_realloc(p->h->files, (p->h->nfiles + 1) * sizeof(*p->h->files));
        files_rule_t *r = &p->h->files[p->h->nfiles];
        memset(r, 0, sizeof(*r));
        const char *pat = w[n - 1];
        if (regex && !(r->re = rewrite_compile(pat, 0, NULL, 0))) {
            deny_all(p, "<%s \"%s\">: a pattern this server cannot read", name, pat);
            return read_lines(p, text, NULL, name, depth + 1);
        }
        r->glob = regex ? NULL : vc_strdup(pat);
        p->h->nfiles++;
        return read_lines(p, text, r, name, depth + 1);
    }
    /* <Limit>, <LimitExcept>, <If>, ...: access by method or expression. */
    deny_all(p, "<%s>: a section whose access rules this server does not apply", name);
    return read_lines(p, text, NULL, name, depth + 1);
}

static int directive(parse_t *p, char **w, int n, files_rule_t *in, const char **order)
{
    if (!strcasecmp(w[0], "Order")) {
        *order = n == 2 && !strcasecmp(w[1], "allow,deny") ? "allow,deny" : "deny,allow";
        return 0;
    }
    /* What stops scripts running here: another handler for every file,
     * PHP's engine off, the handler removed. */
    if (!strcasecmp(w[0], "SetHandler") || !strcasecmp(w[0], "RemoveHandler") ||
        ((!strcasecmp(w[0], "php_flag") || !strcasecmp(w[0], "php_admin_flag")) && n == 3 &&
         !strcasecmp(w[1], "engine") && !strcasecmp(w[2], "off"))) {
        if (n >= 2 && (strncmp(w[1], "proxy:", 6) == 0 || strstr(w[1], "php") != NULL) &&
            strcasecmp(w[0], "RemoveHandler") && strcasecmp(w[0], "php_flag") && strcasecmp(w[0], "php_admin_flag"))
            return 0; /* a handler that runs PHP: as the suite does */
        p->h->no_scripts = 1;
        return 0;
    }
    int v = access_verdict(w, n);
    if (v < 0) {
        deny_all(p, "%s: an access rule this server does not apply", w[0]);
    } else if (v != HTACCESS_UNSET) {
        set_verdict(p, in, (htaccess_verdict_t)v, *order);
    } else if (p->h->nignored < HTACCESS_MAX_IGNORED) {
        p->h->ignored[p->h->nignored++] = vc_asprintf("%s:%d: %s", p->file, p->line, w[0]);
    }
    return 0;
}

/* A mod_rewrite directive (rewrite.h reads its own arguments): 1 if the
 * line was one. */
static int rewrite_line(parse_t *p, char *line, files_rule_t *in)
{
    char *name = line + strspn(line, " \t");
    if (strncasecmp(name, "Rewrite", 7) != 0)
        return 0;
    char *args = name + strcspn(name, " \t");
    if (*args)
        *args++ = '\0';
    char why[300];
    if (in)
        deny_all(p, "%s inside <Files>: not applied by this server", name);
    else if (rewrite_directive(&p->h->rewrite, name, args, why, sizeof(why)) < 0)
        deny_all(p, "%s", why);
    return 1;
}

/* Lines until </closing> (or the end). *text moves on. */
static int read_lines(parse_t *p, char **text, files_rule_t *in, const char *closing, int depth)
{
    const char *order = NULL;
    if (depth > MAX_DEPTH) {
        deny_all(p, "sections nested deeper than %d", MAX_DEPTH);
        return -1;
    }
    while (**text) {
        char *line = *text, *nl = strchr(line, '\n');
        *text = nl ? nl + 1 : line + strlen(line);
        if (nl)
            *nl = '\0';
        p->line++;
        /* A trailing backslash joins the next line (in place). */
        for (size_t l = strlen(line); l && line[l - 1] == '\\' && **text;) {
            line[l - 1] = ' ';
            char *next = *text, *nl2 = strchr(next, '\n');
            *text = nl2 ? nl2 + 1 : next + strlen(next);
            if (nl2)
                *nl2 = '\0';
            memmove(line + l, next, strlen(next) + 1);
            p->line++;
            l = strlen(line);
        }
        if (rewrite_line(p, line, in))
            continue;
        char *w[MAX_WORDS];
        int n = split(line, w);
        if (n == 0 || w[0][0] == '#')
            continue;
        size_t last = strlen(w[n - 1]);
        if (w[0][0] == '<' && w[0][1] == '/') {
            if (closing && !strncasecmp(w[0] + 2, closing, strlen(closing)))
                return 0;
            deny_all(p, "%s closes no open section", w[0]);
            return -1;
        }
        if (w[0][0] == '<') {
            if (last && w[n - 1][last - 1] == '>')
                w[n - 1][last - 1] = '\0';
            if (!*w[n - 1] && n > 1)
                n--;
            if (section(p, text, w, n, in, depth) < 0)
                return -1;
            continue;
        }
        directive(p, w, n, in, &order);
    }
    if (closing)
        deny_all(p, "<%s> is not closed", closing);
    return closing ? -1 : 0;
}

htaccess_t *htaccess_compile(const char *file, const char *text, size_t len)
{
    htaccess_t *h = vc_calloc(1, sizeof(*h));
    parse_t p = {.h = h, .file = file};
    if (memchr(text, '\0', len)) {
        deny_all(&p, "a NUL byte");
        return h;
    }
    char *copy = vc_strndup(text, len), *cursor = copy;
    read_lines(&p, &cursor, NULL, NULL, 0);
    free(copy);
    return h;
}

htaccess_t *htaccess_closed(const char *file, const char *why)
{
    htaccess_t *h = vc_calloc(1, sizeof(*h));
    h->unreadable = vc_asprintf("%s: %s", file, why);
    return h;
}

void htaccess_free(htaccess_t *h)
{
    if (h == NULL)
        return;
    for (size_t i = 0; i < h->nfiles; i++) {
        pcre2_code_free(h->files[i].re);
        free(h->files[i].glob);
    }
    free(h->files);
    rewrite_set_free(h->rewrite);
    free(h->unreadable);
    for (size_t i = 0; i < h->nignored; i++)
        free(h->ignored[i]);
    free(h);
}

const char *htaccess_unreadable(const htaccess_t *h)
{
    return h->unreadable;
}

const char *htaccess_ignored(const htaccess_t *h, size_t i)
{
    return i < h->nignored ? h->ignored[i] : NULL;
}

const rewrite_set_t *htaccess_rewrite_rules(const htaccess_t *h)
{
    return h->rewrite;
}

int htaccess_no_scripts(const htaccess_t *h)
{
    return h->no_scripts;
}

htaccess_verdict_t htaccess_dir_verdict(const htaccess_t *h)
{
    return h->unreadable ? HTACCESS_DENIED : h->dir;
}

htaccess_verdict_t htaccess_file_verdict(const htaccess_t *h, const char *name)
{
    htaccess_verdict_t v = HTACCESS_UNSET;
    for (size_t i = 0; i < h->nfiles; i++) {
        const files_rule_t *r = &h->files[i];
        int match = r->re ? rewrite_match(r->re, name, NULL) : fnmatch(r->glob, name, 0) == 0;
        if (match && r->verdict != HTACCESS_UNSET)
            v = r->verdict;
    }
    return v;
}
