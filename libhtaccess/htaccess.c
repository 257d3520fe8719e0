/*
 * .htaccess access rules (htaccess.h). Lines as httpd reads them (a
 * trailing backslash joins the next, `#` starts a comment line, words in
 * "quotes"); sections nest. <IfModule x> is read as if x were loaded, as
 * Debian's Apache has the access modules; <IfModule !x> is skipped.
 */
#include "htaccess.h"
#include "htaccess_answer.h"
#include "rewrite_internal.h"
#include "vc_util.h"

#include <ctype.h>
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
    htaccess_answer_t *answer; /* its Header, Expires, ... directives, or NULL */
    int runs_php;              /* SetHandler or ForceType to PHP inside: Apache would run its files */
} files_rule_t;

typedef struct redirect_rule {
    pcre2_code *re; /* RedirectMatch's pattern, or */
    char *path;     /* Redirect's URL-path; NULL: every request here (the directory's own form) */
    char *url;      /* NULL: no Location (410 and the other non-3xx) */
    int status;
} redirect_rule_t;

struct htaccess {
    htaccess_verdict_t dir;
    int no_scripts; /* PHP is turned off here (Drupal's files/: SetHandler, php_flag engine off) */
    int runs_php;   /* SetHandler or ForceType to PHP: Apache would run every file here and below */
    files_rule_t *files;
    size_t nfiles;
    rewrite_set_t *rewrite;     /* its mod_rewrite directives, or NULL */
    redirect_rule_t *redirects; /* mod_alias's Redirect and RedirectMatch, in order */
    size_t nredirects;
    char **php_names, **php_values; /* php_value and php_flag, the last for a name */
    size_t nphp;
    htaccess_answer_t *answer; /* Header, Expires*, AddType, AddDefaultCharset, or NULL */
    char **index;              /* DirectoryIndex's names, in order (none: disabled) */
    size_t nindex;
    int index_set;
    int answers; /* answer, or some <Files>'s, is set */
    char *unreadable;
    char *ignored[HTACCESS_MAX_IGNORED];
    size_t nignored;
};

#define MAX_ACTIONS 8

typedef struct parse {
    htaccess_t *h;
    const char *file;
    int line;
    char *actions[MAX_ACTIONS]; /* handlers and types an Action line gave a CGI program */
    size_t nactions;
} parse_t;

static void deny_all(parse_t *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void parse_free(parse_t *p)
{
    for (size_t i = 0; i < p->nactions; i++)
        free(p->actions[i]);
    p->nactions = 0;
}

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
static void ignore(parse_t *p, const char *what);

/* <Files>, <FilesMatch>, <IfModule>: 0, or -1 when it cannot go on. */
static int section(parse_t *p, char **text, char **w, int n, files_rule_t *in, int depth)
{
    char *name = w[0] + 1;
    if (!strcasecmp(name, "IfModule") && n == 2) {
        if (w[1][0] != '!')
            return read_lines(p, text, in, "IfModule", depth + 1);
        int start = p->line;
        parse_t skip = {.h = htaccess_compile("", "", 0), .file = p->file, .line = p->line}; /* read, not applied */
        int rc = read_lines(&skip, text, NULL, "IfModule", depth + 1);
        p->line = skip.line;
        /* But a handler that runs PHP holds where the module is missing
         * (<IfModule !mod_php.c> on an Apache with php-fpm): fail closed. */
        int runs_php = skip.h->runs_php;
        for (size_t i = 0; i < skip.h->nfiles; i++)
            runs_php |= skip.h->files[i].runs_php;
        if (runs_php) {
            int end = p->line;
            p->line = start;
            p->h->runs_php = 1;
            char what[200];
            snprintf(what, sizeof(what),
                     "<IfModule %s> holds a handler that runs PHP where the module is missing "
                     "(files but .php ones are refused here, not run as PHP)",
                     w[1]);
            ignore(p, what);
            p->line = end;
        }
        parse_free(&skip);
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
    /* <Limit>, <LimitExcept>, <If>, ...: access by method or expression.
     * Read on inside the same <Files> (in), if any: a <Files> within may
     * not add a rule, which would move the one in points to. */
    deny_all(p, "<%s>: a section whose access rules this server does not apply", name);
    return read_lines(p, text, in, name, depth + 1);
}

/* A URL as ap_is_url() sees one: a scheme, then ':'. */
static int is_url(const char *u)
{
    size_t n = strspn(u, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-");
    return n > 0 && u[n] == ':' && ((*u | 32) >= 'a' && (*u | 32) <= 'z');
}

/* mod_alias's Redirect, RedirectMatch, RedirectTemp and RedirectPermanent
 * (add_redirect_internal()): 1 if the line was one. */
static int redirect_directive(parse_t *p, char **w, int n)
{
    int regex = !strcasecmp(w[0], "RedirectMatch"), plain = !strcasecmp(w[0], "Redirect");
    int temp = !strcasecmp(w[0], "RedirectTemp"), permanent = !strcasecmp(w[0], "RedirectPermanent");
    if (!regex && !plain && !temp && !permanent)
        return 0;
    if ((temp || permanent) ? n != 3 : (n < 2 || n > 4)) {
        deny_all(p, "%s: wrong number of arguments", w[0]);
        return 1;
    }
    const char *a1 = w[1], *a2 = n > 2 ? w[2] : NULL, *a3 = n > 3 ? w[3] : NULL;
    int status = permanent ? 301 : 302, grok = 1;
    if (temp || permanent)
        grok = 0;
    else if (!strcasecmp(a1, "permanent"))
        status = 301;
    else if (!strcasecmp(a1, "temp"))
        status = 302;
    else if (!strcasecmp(a1, "seeother"))
        status = 303;
    else if (!strcasecmp(a1, "gone")) {
        status = 410;
        grok = -1;
    } else if (isdigit((unsigned char)*a1)) {
        status = atoi(a1);
        grok = status >= 300 && status < 400 ? 1 : -1;
    } else
        grok = 0;
    redirect_rule_t r = {.status = status};
    const char *fake = a2, *url = a3;
    if (a3 && !grok) {
        deny_all(p, "%s: invalid first argument (of three)", w[0]);
        return 1;
    }
    if ((grok > 0 && a2 && !a3) || (!grok && !a2)) {
        url = grok ? a2 : a1; /* every request here goes to url */
        if (strstr(url, "%{")) {
            deny_all(p, "%s %s: an expression this server does not apply", w[0], url);
            return 1;
        }
        fake = NULL;
    } else if (grok < 0 && !a2) {
        fake = url = NULL; /* every request here answers status */
    } else if (!a3 && !grok) {
        fake = a1;
        url = a2;
    }
    int redirect = status >= 300 && status < 400;
    if (redirect ? !url || (!regex && fake && !is_url(url) && url[0] != '/') : url != NULL) {
        deny_all(p, "%s: %s", w[0],
                 redirect ? "the URL to redirect to is missing or not a URL"
                          : "a URL for a status that is not a redirect");
        return 1;
    }
    if (fake && regex && !(r.re = rewrite_compile(fake, 0, NULL, 0))) {
        deny_all(p, "%s \"%s\": a pattern this server cannot read", w[0], fake);
        return 1;
    }
    r.path = fake && !regex ? vc_strdup(fake) : NULL;
    r.url = url ? vc_strdup(url) : NULL;
    p->h->redirects = vc_realloc(p->h->redirects, (p->h->nredirects + 1) * sizeof(*p->h->redirects));
    p->h->redirects[p->h->nredirects++] = r;
    return 1;
}

/* php_value NAME VALUE, php_flag NAME on|off (mod_php's): 1 if the line
 * was one. php_admin_* is not a directory's to set: Apache refuses it. */
static int php_directive(parse_t *p, char **w, int n)
{
    int value = !strcasecmp(w[0], "php_value"), flag = !strcasecmp(w[0], "php_flag");
    if (!value && !flag) {
        if (!strcasecmp(w[0], "php_admin_value") || !strcasecmp(w[0], "php_admin_flag")) {
            deny_all(p, "%s: not allowed in a .htaccess file", w[0]);
            return 1;
        }
        return 0;
    }
    if (n != 3 || strspn(w[1], "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.") != strlen(w[1])) {
        deny_all(p, "%s: takes a setting's name and its value", w[0]);
        return 1;
    }
    const char *v = w[2];
    if (flag)
        v = !strcasecmp(v, "on") || !strcmp(v, "1") ? "1" : "0";
    else if (!strcasecmp(v, "none"))
        v = "";
    size_t i = 0;
    while (i < p->h->nphp && strcmp(p->h->php_names[i], w[1]))
        i++;
    if (i == p->h->nphp) {
        p->h->php_names = vc_realloc(p->h->php_names, (i + 1) * sizeof(char *));
        p->h->php_values = vc_realloc(p->h->php_values, (i + 1) * sizeof(char *));
        p->h->php_names[i] = vc_strdup(w[1]);
        p->h->php_values[i] = NULL;
        p->h->nphp++;
    }
    free(p->h->php_values[i]);
    p->h->php_values[i] = vc_strdup(v);
    return 1;
}

static void ignore(parse_t *p, const char *what)
{
    if (p->h->nignored < HTACCESS_MAX_IGNORED)
        p->h->ignored[p->h->nignored++] = vc_asprintf("%s:%d: %s", p->file, p->line, what);
}

/* Whether a handler or type runs code in Apache: PHP's (mod_php's
 * application/x-httpd-php, php-fpm's "proxy:unix:...|fcgi://..."), or one
 * an Action line gave a CGI program. */
static int runs_code(const parse_t *p, const char *handler)
{
    if (strcasestr(handler, "php") || !strncasecmp(handler, "proxy:", 6))
        return 1;
    for (size_t i = 0; i < p->nactions; i++)
        if (!strcasecmp(p->actions[i], handler))
            return 1;
    return 0;
}

/* Action HANDLER /cgi-bin/program: the server runs no CGI, and the files
 * given that handler would be sent as they are (a PHP file's source), so
 * the handler is remembered as one that runs code. 1 if the line was one. */
static int action_line(parse_t *p, char **w, int n)
{
    if (strcasecmp(w[0], "Action") || n < 3)
        return 0;
    if (p->nactions < MAX_ACTIONS)
        p->actions[p->nactions++] = vc_strdup(w[1]);
    char what[200];
    snprintf(what, sizeof(what), "Action %s (a CGI program: not run; files given its handler are refused)", w[1]);
    ignore(p, what);
    return 1;
}

/* SetHandler or ForceType to PHP (or a CGI program of an Action): Apache
 * runs every file of the directory, or of the <Files> section, as PHP. The
 * suite runs .php files only, so the others are refused (403), never sent
 * as they are: page.html with PHP inside would show its source, and its
 * database password. 1 if the line was one. */
static int php_for_every_file(parse_t *p, char **w, int n, files_rule_t *in)
{
    if ((strcasecmp(w[0], "SetHandler") && strcasecmp(w[0], "ForceType")) || n < 2 || !runs_code(p, w[1]))
        return 0;
    if (in)
        in->runs_php = 1;
    else
        p->h->runs_php = 1;
    char what[200];
    snprintf(what, sizeof(what), "%s %s (files but .php ones are refused here, not run as PHP)", w[0], w[1]);
    ignore(p, what);
    return 1;
}

/* AddType or AddHandler that would have PHP run files by extension
 * (AddType application/x-httpd-php .html): 1 if the line was one. The
 * suite runs only .php scripts; sending such files as they are would
 * show their source, so they are refused, as an access rule would. */
static int php_by_extension(parse_t *p, char **w, int n, files_rule_t *in)
{
    if ((strcasecmp(w[0], "AddType") && strcasecmp(w[0], "AddHandler")) || n < 3 || !runs_code(p, w[1]))
        return 0;
    if (in) {
        deny_all(p, "%s %s inside <Files>: not applied by this server", w[0], w[1]);
        return 1;
    }
    int refused = 0;
    for (int i = 2; i < n; i++) {
        if (!strcasecmp(w[i] + (w[i][0] == '.'), "php"))
            continue; /* what the suite runs anyway (shared hosts' AddHandler php82 .php) */
        refused = 1;
        char re[160] = "\\.", *o = re + 2;
        for (const char *e = w[i] + (w[i][0] == '.'); *e && o + 4 < re + sizeof(re); e++) {
            if (!isalnum((unsigned char)*e))
                *o++ = '\\';
            *o++ = *e;
        }
        snprintf(o, (size_t)(re + sizeof(re) - o), "(\\.|$)"); /* mod_mime: an extension anywhere after the name */
        p->h->files = vc_realloc(p->h->files, (p->h->nfiles + 1) * sizeof(*p->h->files));
        files_rule_t *r = &p->h->files[p->h->nfiles];
        memset(r, 0, sizeof(*r));
        if (!(r->re = rewrite_compile(re, 1, NULL, 0))) {
            deny_all(p, "%s %s: an extension this server cannot read", w[0], w[i]);
            return 1;
        }
        r->verdict = HTACCESS_DENIED;
        p->h->nfiles++;
    }
    char what[200];
    snprintf(what, sizeof(what), "%s %s (its files are refused, not run as PHP)", w[0], w[1]);
    if (refused)
        ignore(p, what);
    return 1;
}

static int directive(parse_t *p, char **w, int n, files_rule_t *in, const char **order)
{
    int engine = n == 3 && !strcasecmp(w[1], "engine") && strncasecmp(w[0], "php_", 4) == 0; /* below */
    if (!engine && php_directive(p, w, n)) {
        if (in)
            deny_all(p, "%s inside <Files>: not applied by this server", w[0]);
        return 0;
    }
    if (redirect_directive(p, w, n)) {
        if (in)
            deny_all(p, "%s inside <Files>: not applied by this server", w[0]);
        return 0;
    }
    if (action_line(p, w, n) || php_for_every_file(p, w, n, in) || php_by_extension(p, w, n, in))
        return 0;
    if (!strcasecmp(w[0], "DirectoryIndex")) {
        if (in) {
            deny_all(p, "DirectoryIndex inside <Files>: not applied by this server");
        } else if (n == 2 && !strcasecmp(w[1], "disabled")) {
            p->h->index_set = 1;
            for (size_t i = 0; i < p->h->nindex; i++)
                free(p->h->index[i]);
            p->h->nindex = 0;
        } else {
            /* Apache 2.4: lines in one file add to the list. */
            p->h->index_set = 1;
            p->h->index = vc_realloc(p->h->index, (p->h->nindex + (size_t)n) * sizeof(char *));
            for (int i = 1; i < n; i++)
                p->h->index[p->h->nindex++] = vc_strdup(w[i]);
        }
        return 0;
    }
    if (in && !strcasecmp(w[0], "ErrorDocument")) {
        ignore(p, "ErrorDocument inside <Files>");
        return 0;
    }
    char why[300];
    int answer = htaccess_answer_directive(in ? &in->answer : &p->h->answer, w, n, why, sizeof(why));
    if (answer > 0 && strcasecmp(w[0], "ErrorDocument")) /* asked only for an error: htaccess_errors.c */
        p->h->answers = 1;
    if (answer < 0)
        ignore(p, why);
    if (answer)
        return 0;
    if (!strcasecmp(w[0], "Order")) {
        *order = n == 2 && !strcasecmp(w[1], "allow,deny") ? "allow,deny" : "deny,allow";
        return 0;
    }
    /* What stops scripts running here: another handler for every file,
     * PHP's engine off, the handler removed. */
    if (!strcasecmp(w[0], "SetHandler") || !strcasecmp(w[0], "RemoveHandler") ||
        ((!strcasecmp(w[0], "php_flag") || !strcasecmp(w[0], "php_admin_flag")) && n == 3 &&
         !strcasecmp(w[1], "engine") && !strcasecmp(w[2], "off"))) {
        p->h->no_scripts = 1; /* (a handler that runs PHP was php_for_every_file's) */
        return 0;
    }
    int v = access_verdict(w, n);
    if (v < 0) {
        deny_all(p, "%s: an access rule this server does not apply", w[0]);
    } else if (v != HTACCESS_UNSET) {
        set_verdict(p, in, (htaccess_verdict_t)v, *order);
    } else {
        ignore(p, w[0]);
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
    parse_free(&p);
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
        htaccess_answer_free(h->files[i].answer);
    }
    free(h->files);
    rewrite_set_free(h->rewrite);
    for (size_t i = 0; i < h->nredirects; i++) {
        pcre2_code_free(h->redirects[i].re);
        free(h->redirects[i].path);
        free(h->redirects[i].url);
    }
    free(h->redirects);
    for (size_t i = 0; i < h->nphp; i++) {
        free(h->php_names[i]);
        free(h->php_values[i]);
    }
    free(h->php_names);
    free(h->php_values);
    htaccess_answer_free(h->answer);
    for (size_t i = 0; i < h->nindex; i++)
        free(h->index[i]);
    free(h->index);
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

size_t htaccess_php_settings(const htaccess_t *h, const char *const **names, const char *const **values)
{
    *names = (const char *const *)h->php_names;
    *values = (const char *const *)h->php_values;
    return h->nphp;
}

int htaccess_has_redirects(const htaccess_t *h)
{
    return h->nredirects > 0;
}

/* alias_matches(): how much of uri the URL-path covers, runs of slashes
 * counting as one, whole segments only; 0 if it does not. */
static size_t alias_matches(const char *uri, const char *alias)
{
    const char *a = alias, *u = uri;
    if (!*a)
        return 0;
    while (*a) {
        if (*a == '/') {
            if (*u != '/')
                return 0;
            while (*a == '/')
                a++;
            while (*u == '/')
                u++;
        } else if (*u++ != *a++) {
            return 0;
        }
    }
    if (a[-1] != '/' && *u != '\0' && *u != '/')
        return 0;
    return (size_t)(u - uri);
}

/* ap_pregsub(): $N from the match, \c for c. */
static void substitute(const char *tmpl, const rewrite_refs_t *refs, char *out, size_t outlen)
{
    size_t o = 0;
    for (const char *p = tmpl; *p && o + 1 < outlen; p++) {
        if (*p == '$' && isdigit((unsigned char)p[1])) {
            int n = *++p - '0';
            if (n < refs->n && refs->ov[2 * n] != PCRE2_UNSET) {
                size_t len = refs->ov[2 * n + 1] - refs->ov[2 * n];
                len = len < outlen - 1 - o ? len : outlen - 1 - o;
                memcpy(out + o, refs->source + refs->ov[2 * n], len);
                o += len;
            }
            continue;
        }
        if (*p == '\\' && p[1])
            p++;
        out[o++] = *p;
    }
    out[o] = '\0';
}

int htaccess_redirect(const htaccess_t *h, const char *uri, int *status, char *out, size_t outlen)
{
    for (size_t i = 0; i < h->nredirects; i++) {
        const redirect_rule_t *r = &h->redirects[i];
        rewrite_refs_t refs;
        size_t covered = 0;
        if (r->re ? !rewrite_match(r->re, uri, &refs) : r->path && !(covered = alias_matches(uri, r->path)))
            continue;
        *status = r->status;
        out[0] = '\0';
        if (r->url == NULL)
            return 1;
        if (r->path == NULL && r->re == NULL) { /* the directory's own: the URL as it is */
            snprintf(out, outlen, "%s", r->url);
            return 1;
        }
        char target[8192];
        if (r->re) {
            /* the substitution's path escaped, not its query or fragment */
            substitute(r->url, &refs, target, sizeof(target));
            size_t cut = strcspn(target, "?#");
            char tail[8192];
            snprintf(tail, sizeof(tail), "%s", target + cut);
            target[cut] = '\0';
            size_t n = rewrite_escape_path(target, out, outlen);
            if (n < outlen)
                snprintf(out + n, outlen - n, "%s", tail);
        } else {
            size_t n = (size_t)snprintf(out, outlen, "%s", r->url);
            if (n < outlen)
                rewrite_escape_path(uri + covered, out + n, outlen - n);
        }
        return 1;
    }
    return 0;
}

int htaccess_dir_index(const htaccess_t *h, const char *const **names, size_t *n)
{
    *names = (const char *const *)h->index;
    *n = h->nindex;
    return h->index_set;
}

int htaccess_has_answers(const htaccess_t *h)
{
    return h->answers;
}

const htaccess_answer_t *htaccess_answer(const htaccess_t *h)
{
    return h->answer;
}

const htaccess_answer_t *htaccess_file_answer(const htaccess_t *h, const char *name, size_t *at)
{
    for (; *at < h->nfiles; (*at)++) {
        const files_rule_t *r = &h->files[*at];
        if (r->answer && (r->re ? rewrite_match(r->re, name, NULL) : fnmatch(r->glob, name, 0) == 0))
            return h->files[(*at)++].answer;
    }
    return NULL;
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

int htaccess_runs_php(const htaccess_t *h, const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || (n >= 4 && strcmp(name + n - 4, ".php") == 0))
        return 0; /* a directory's own request, or what the suite runs */
    if (h->runs_php)
        return 1;
    for (size_t i = 0; i < h->nfiles; i++) {
        const files_rule_t *r = &h->files[i];
        if (r->runs_php && (r->re ? rewrite_match(r->re, name, NULL) : fnmatch(r->glob, name, 0) == 0))
            return 1;
    }
    return 0;
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
