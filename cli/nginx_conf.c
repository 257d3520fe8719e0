/*
 * nginx's configuration syntax (nginx_conf.h): words, "quoted" and
 * 'quoted' strings with backslash escapes, `#` comments from the start of
 * a word to the end of the line, `;` ending a directive, `{ }` a block.
 */
#include "nginx_conf.h"
#include "vc_util.h"

#include <errno.h>
#include <glob.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_DEPTH 16

typedef struct lexer {
    const char *p, *end;
    const char *file;
    int line;
    char *err;
    size_t errlen;
} lexer_t;

typedef enum tok { T_WORD, T_SEMI, T_OPEN, T_CLOSE, T_EOF, T_ERROR } tok_t;

static int fail(lexer_t *lx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(lexer_t *lx, const char *fmt, ...)
{
    int n = snprintf(lx->err, lx->errlen, "%s:%d: ", lx->file, lx->line);
    if (n >= 0 && (size_t)n < lx->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(lx->err + n, lx->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* The next token; a word's text (unescaped) in *word, to free. */
static tok_t next(lexer_t *lx, char **word)
{
    for (;;) {
        while (lx->p < lx->end && is_space(*lx->p))
            lx->line += *lx->p++ == '\n';
        if (lx->p < lx->end && *lx->p == '#') {
            while (lx->p < lx->end && *lx->p != '\n')
                lx->p++;
            continue;
        }
        break;
    }
    if (lx->p >= lx->end)
        return T_EOF;
    char c = *lx->p;
    if (c == ';' || c == '{' || c == '}') {
        lx->p++;
        return c == ';' ? T_SEMI : c == '{' ? T_OPEN : T_CLOSE;
    }
    size_t cap = 64, n = 0;
    char *w = vc_malloc(cap);
    char quote = (c == '"' || c == '\'') ? c : 0;
    if (quote)
        lx->p++;
    for (;;) {
        if (lx->p >= lx->end) {
            if (quote) {
                free(w);
                fail(lx, "a quoted string is not closed");
                return T_ERROR;
            }
            break;
        }
        c = *lx->p;
        if (quote && c == quote) {
            lx->p++;
            break;
        }
        if (!quote && (is_space(c) || c == ';' || c == '{' || c == '}'))
            break;
        /* As ngx_conf_read_token(): \" \' \\ \t \r \n are unescaped, any
         * other backslash stays (a regular expression's "\.php"). */
        if (c == '\\' && lx->p + 1 < lx->end && strchr("\"'\\trn", lx->p[1])) {
            lx->p++;
            c = *lx->p;
            c = c == 't' ? '\t' : c == 'r' ? '\r' : c == 'n' ? '\n' : c;
        }
        if (c == '\0') {
            free(w);
            fail(lx, "a NUL byte");
            return T_ERROR;
        }
        lx->line += *lx->p == '\n'; /* a newline in the text, not an escaped one */
        if (n + 2 > cap)
            w = vc_realloc(w, cap *= 2);
        w[n++] = c;
        lx->p++;
    }
    w[n] = '\0';
    *word = w;
    return T_WORD;
}

static int parse_text(conf_tree_t *c, conf_node_t *into, const char *file, const char *text, size_t len, int depth,
                      char *err, size_t errlen);

/* `include PATTERN`: each file it matches, in order, read in place. */
static int include(conf_tree_t *c, conf_node_t *into, lexer_t *lx, const char *pattern, int depth)
{
    if (depth >= MAX_DEPTH)
        return fail(lx, "includes nested deeper than %d", MAX_DEPTH);
    char *full = pattern[0] == '/' ? vc_strdup(pattern) : vc_asprintf("%s/%s", c->prefix, pattern);
    glob_t g;
    int rc = glob(full, 0, NULL, &g);
    if (rc == GLOB_NOMATCH && strpbrk(full, "*?[") == NULL) {
        fail(lx, "include %s: no such file", full);
        free(full);
        return -1;
    }
    free(full);
    for (size_t i = 0; rc == 0 && i < g.gl_pathc; i++) {
        size_t len;
        char *text = vc_read_file(g.gl_pathv[i], &len);
        if (text == NULL) {
            fail(lx, "include %s: %s", g.gl_pathv[i], strerror(errno));
            globfree(&g);
            return -1;
        }
        const char *name = conf_tree_file(c, g.gl_pathv[i]);
        int r = parse_text(c, into, name, text, len, depth + 1, lx->err, lx->errlen);
        free(text);
        if (r < 0) {
            globfree(&g);
            return -1;
        }
    }
    if (rc == 0)
        globfree(&g);
    return 0;
}

static void free_words(char **words, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(words[i]);
}

/* Directives until the block's `}` (closing) or the end of the text. */
static int parse_block(conf_tree_t *c, conf_node_t *into, lexer_t *lx, int closing, int depth)
{
    char *words[256];
    size_t n = 0;
    int line = lx->line;
    for (;;) {
        char *w = NULL;
        tok_t t = next(lx, &w);
        if (t == T_ERROR)
            goto fail;
        if (t == T_WORD) {
            if (n == 0)
                line = lx->line;
            if (n == VC_ARRAY_SIZE(words)) {
                free(w);
                fail(lx, "a directive with more than %zu words", VC_ARRAY_SIZE(words));
                goto fail;
            }
            words[n++] = w;
            continue;
        }
        if ((t == T_SEMI || t == T_OPEN) && n == 0) {
            fail(lx, "unexpected \"%c\"", t == T_SEMI ? ';' : '{');
            goto fail;
        }
        if (t == T_SEMI) {
            if (strcmp(words[0], "include") == 0 && n == 2 && c->prefix) {
                int rc = include(c, into, lx, words[1], depth);
                free_words(words, n);
                n = 0;
                if (rc < 0)
                    return -1;
                continue;
            }
            conf_tree_push(into, words, n, lx->file, line);
            n = 0;
            continue;
        }
        if (t == T_OPEN) {
            conf_node_t *d = conf_tree_push(into, words, n, lx->file, line);
            n = 0;
            d->block = 1;
            if (depth >= MAX_DEPTH * 4)
                return fail(lx, "blocks nested too deep");
            if (parse_block(c, d, lx, 1, depth + 1) < 0)
                return -1;
            continue;
        }
        if (n > 0) {
            fail(lx, "unexpected %s: \"%s\" has no \";\"", t == T_EOF ? "end of file" : "\"}\"", words[0]);
            goto fail;
        }
        if (t == T_CLOSE && !closing)
            return fail(lx, "unexpected \"}\"");
        if (t == T_EOF && closing)
            return fail(lx, "unexpected end of file, expecting \"}\"");
        return 0;
    }
fail:
    free_words(words, n);
    return -1;
}

static int parse_text(conf_tree_t *c, conf_node_t *into, const char *file, const char *text, size_t len, int depth,
                      char *err, size_t errlen)
{
    lexer_t lx = {.p = text, .end = text + len, .file = file, .line = 1, .err = err, .errlen = errlen};
    return parse_block(c, into, &lx, 0, depth);
}

int nginx_conf_parse(conf_tree_t *c, const char *file, const char *text, size_t len, char *err, size_t errlen)
{
    return parse_text(c, &c->top, conf_tree_file(c, file), text, len, 0, err, errlen);
}

conf_tree_t *nginx_conf_load(const char *path, char *err, size_t errlen)
{
    static const char *const names[] = {"nginx.conf", NULL};
    return conf_tree_load(path, names, nginx_conf_parse, err, errlen);
}
