/*
 * Apache httpd's configuration syntax (apache_conf.h): one directive a
 * line (a trailing backslash joins the next), words split as
 * ap_getword_conf() splits them ("double" or 'single' quotes, \" inside),
 * `#` comment lines, <Section args> ... </Section> blocks, and Include /
 * IncludeOptional followed (globs, directories, relative to the server
 * root).
 */
#include "apache_conf.h"
#include "vc_util.h"

#include <errno.h>
#include <glob.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define MAX_DEPTH 16
#define MAX_WORDS 256

typedef struct reader {
    conf_tree_t *c;
    const char *p, *end;
    const char *file;
    int line; /* of the next physical line */
    char *err;
    size_t errlen;
} reader_t;

static int fail(reader_t *r, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(reader_t *r, int line, const char *fmt, ...)
{
    int n = snprintf(r->err, r->errlen, "%s:%d: ", r->file, line);
    if (n >= 0 && (size_t)n < r->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->err + n, r->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* The next logical line (continuations joined), to free, or NULL at the
 * end; *line is where it began. */
static char *next_line(reader_t *r, int *line)
{
    if (r->p >= r->end)
        return NULL;
    *line = r->line;
    size_t cap = 128, n = 0;
    char *out = vc_malloc(cap);
    while (r->p < r->end) {
        const char *nl = memchr(r->p, '\n', (size_t)(r->end - r->p));
        const char *stop = nl ? nl : r->end;
        size_t len = (size_t)(stop - r->p);
        if (len && r->p[len - 1] == '\r')
            len--;
        int more = len && r->p[len - 1] == '\\';
        if (more)
            len--;
        if (n + len + 2 > cap) {
            while (n + len + 2 > cap)
                cap *= 2;
            out = vc_realloc(out, cap);
        }
        memcpy(out + n, r->p, len);
        n += len;
        r->p = nl ? nl + 1 : r->end;
        r->line++;
        if (!more)
            break;
        out[n++] = ' ';
    }
    out[n] = '\0';
    return out;
}

/* The words of s, as ap_getword_conf() reads them, each to free. Returns
 * how many, or -1 past MAX_WORDS. */
static int split(const char *s, char **words)
{
    int n = 0;
    for (const char *p = s;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p)
            return n;
        if (n == MAX_WORDS)
            return -1;
        char quote = (*p == '"' || *p == '\'') ? *p++ : 0;
        char *w = vc_malloc(strlen(p) + 1), *o = w;
        while (*p && (quote ? *p != quote : (*p != ' ' && *p != '\t'))) {
            if (quote && *p == '\\' && (p[1] == quote || p[1] == '\\'))
                p++;
            *o++ = *p++;
        }
        if (quote && *p == quote)
            p++;
        *o = '\0';
        words[n++] = w;
    }
}

static int read_text(reader_t *parent, conf_node_t *into, const char *file, const char *text, size_t len, int depth);

static int include(reader_t *r, conf_node_t *into, const char *pattern, int optional, int line, int depth)
{
    if (depth >= MAX_DEPTH)
        return fail(r, line, "includes nested deeper than %d", MAX_DEPTH);
    char *full = pattern[0] == '/' ? vc_strdup(pattern) : vc_asprintf("%s/%s", r->c->prefix, pattern);
    struct stat st;
    if (stat(full, &st) == 0 && S_ISDIR(st.st_mode)) { /* a directory: every file in it */
        char *all = vc_asprintf("%s/*", full);
        free(full);
        full = all;
    }
    glob_t g;
    int rc = glob(full, 0, NULL, &g);
    if (rc != 0 && !optional && strpbrk(full, "*?[") == NULL) {
        fail(r, line, "Include %s: no such file", full);
        free(full);
        return -1;
    }
    free(full);
    for (size_t i = 0; rc == 0 && i < g.gl_pathc; i++) {
        if (stat(g.gl_pathv[i], &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        size_t len;
        char *text = vc_read_file(g.gl_pathv[i], &len);
        int res = text ? read_text(r, into, conf_tree_file(r->c, g.gl_pathv[i]), text, len, depth + 1)
                       : fail(r, line, "Include %s: %s", g.gl_pathv[i], strerror(errno));
        free(text);
        if (res < 0) {
            globfree(&g);
            return -1;
        }
    }
    if (rc == 0)
        globfree(&g);
    return 0;
}

/* Lines into `into` until </closing> (or the end, if closing is NULL). */
static int read_block(reader_t *r, conf_node_t *into, const char *closing, int open_line, int depth)
{
    char *words[MAX_WORDS];
    for (;;) {
        int line;
        char *text = next_line(r, &line);
        if (text == NULL)
            return closing ? fail(r, open_line, "<%s> is not closed", closing) : 0;
        char *s = text;
        while (*s == ' ' || *s == '\t')
            s++;
        if (*s == '\0' || *s == '#') {
            free(text);
            continue;
        }
        if (s[0] == '<' && s[1] == '/') {
            char *gt = strchr(s, '>');
            int ok = closing && gt && (size_t)(gt - s - 2) == strlen(closing) &&
                     !strncasecmp(s + 2, closing, strlen(closing));
            free(text);
            if (!ok)
                return fail(r, line, "an unexpected closing of a section (expected </%s>)", closing ? closing : "none");
            return 0;
        }
        int section = s[0] == '<';
        if (section) {
            size_t l = strlen(s);
            while (l && (s[l - 1] == ' ' || s[l - 1] == '\t'))
                s[--l] = '\0';
            if (l < 3 || s[l - 1] != '>') {
                free(text);
                return fail(r, line, "a section without its closing \">\"");
            }
            s[l - 1] = '\0';
            s++;
        }
        int n = split(s, words);
        free(text);
        if (n <= 0) {
            for (int i = 0; i < n; i++)
                free(words[i]);
            return fail(r, line, n < 0 ? "a line with more than %d words" : "an empty section", MAX_WORDS);
        }
        if (!section && (!strcasecmp(words[0], "Include") || !strcasecmp(words[0], "IncludeOptional")) && n == 2 &&
            r->c->prefix) {
            int rc = include(r, into, words[1], !strcasecmp(words[0], "IncludeOptional"), line, depth);
            for (int i = 0; i < n; i++)
                free(words[i]);
            if (rc < 0)
                return -1;
            continue;
        }
        conf_node_t *d = conf_tree_push(into, words, (size_t)n, r->file, line);
        if (section) {
            d->block = 1;
            if (depth >= MAX_DEPTH * 4)
                return fail(r, line, "sections nested too deep");
            if (read_block(r, d, d->name, line, depth + 1) < 0)
                return -1;
        }
    }
}

static int read_text(reader_t *parent, conf_node_t *into, const char *file, const char *text, size_t len, int depth)
{
    reader_t r = {.c = parent->c,
                  .p = text,
                  .end = text + len,
                  .file = file,
                  .line = 1,
                  .err = parent->err,
                  .errlen = parent->errlen};
    const char *nul = memchr(text, '\0', len);
    if (nul) {
        int line = 1;
        for (const char *q = text; q < nul; q++)
            line += *q == '\n';
        return fail(&r, line, "a NUL byte");
    }
    return read_block(&r, into, NULL, 1, depth);
}

int apache_conf_parse(conf_tree_t *c, const char *file, const char *text, size_t len, char *err, size_t errlen)
{
    reader_t top = {.c = c, .err = err, .errlen = errlen};
    return read_text(&top, &c->top, conf_tree_file(c, file), text, len, 0);
}

conf_tree_t *apache_conf_load(const char *path, char *err, size_t errlen)
{
    static const char *const names[] = {"apache2.conf", "httpd.conf", "conf/httpd.conf", NULL};
    return conf_tree_load(path, names, apache_conf_parse, err, errlen);
}
