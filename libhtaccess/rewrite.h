/*
 * mod_rewrite's per-directory rules, as a site's .htaccess files hold
 * them (RewriteEngine, RewriteBase, RewriteOptions, RewriteCond and
 * RewriteRule), read once when the file changes (rewrite_parse.c) and
 * applied as Apache 2.4 applies them in a directory (rewrite.c: one rule
 * list; rewrite_round.c: one pass of a request through its directory's
 * merged rules, and what the result means: an internal redirect, a
 * redirect, a status).
 *
 * Patterns are PCRE2, compiled with Apache's defaults (DOTALL,
 * DOLLAR_ENDONLY) and bounded in what a match may cost, since a site's
 * own PHP may write its .htaccess. What Apache would run that this engine
 * does not (a proxy [P], a handler [H], RewriteMap, expressions, lookahead
 * variables) is refused when the file is read: the directory then closes
 * (htaccess.h), never rewriting another way. The text is outside input:
 * fuzz/fuzz_htaccess.c.
 */
#ifndef VC_FRONT_REWRITE_H
#define VC_FRONT_REWRITE_H

#include <stddef.h>
#include <sys/stat.h>

typedef struct rewrite_set rewrite_set_t;   /* one .htaccess's directives */
typedef struct rewrite_rule rewrite_rule_t; /* one RewriteRule and its conditions */

/* Reads one directive into *set (made on first use): name, and the rest
 * of its line (mod_rewrite splits its arguments itself; args is changed).
 * 0 if it is not mod_rewrite's, 1 if read, -1 if it cannot be applied,
 * with why. */
int rewrite_directive(rewrite_set_t **set, const char *name, char *args, char *why, size_t why_len);
void rewrite_set_free(rewrite_set_t *set);

#define REWRITE_MAX_RULES 256 /* in one directory, inherited ones included */
#define REWRITE_MAX_ENV 32    /* variables a request may carry (E=, REDIRECT_*) */
#define REWRITE_MAX_VARY 8    /* request headers the answer varies on */

/* The rules that apply in one directory: its .htaccess files from the
 * root down, merged as Apache merges them (a file with any mod_rewrite
 * directive replaces its parents' rules, unless RewriteOptions Inherit). */
typedef struct rewrite_conf {
    int on;
    char directory[4096]; /* the last merged file's directory, with a trailing '/' */
    const char *base;     /* RewriteBase, or NULL */
    unsigned options;
    const rewrite_rule_t *rules[REWRITE_MAX_RULES];
    size_t nrules;
    int overflow; /* more rules than fit: the request answers 500 */
} rewrite_conf_t;

void rewrite_conf_init(rewrite_conf_t *c);
/* set: the .htaccess of dir (len bytes, no trailing '/'), or NULL. */
void rewrite_conf_merge(rewrite_conf_t *c, const rewrite_set_t *set, const char *dir, size_t len);
int rewrite_conf_allow_no_slash(const rewrite_conf_t *c);

typedef struct rewrite_env {
    const char *name, *value;
} rewrite_env_t;

/* A request as the rules see it, in one pass. Strings live in the arena
 * (rewrite_strdup) or outlive the request. */
typedef struct rewrite_request {
    /* %{...} */
    const char *method, *protocol, *scheme, *remote_addr, *remote_port, *server_name, *server_addr, *server_port,
        *document_root, *the_request;
    int https;
    const char *(*header)(void *ctx, const char *name); /* a request header's value, or NULL */
    /* What costs a system call or an allocation to know (REMOTE_ADDR,
     * REMOTE_PORT, SERVER_ADDR, THE_REQUEST), asked when a rule reads it
     * and the field above is NULL. */
    const char *(*lazy)(void *ctx, const char *name);
    void *header_ctx; /* for both */
    /* This pass's: the URL path (decoded), its query, the file it maps to
     * and what follows that file. */
    const char *uri, *args, *filename, *path_info;
    rewrite_env_t env[REWRITE_MAX_ENV]; /* %{ENV:x}, E=x:y; PHP's $_SERVER */
    size_t nenv;
    int end; /* [END] was applied: no more passes */
    /* Headers that applied rules read (the answer's Vary), and those read
     * by the rule being tried (kept if it applies). */
    const char *vary[REWRITE_MAX_VARY];
    size_t nvary, nvary_pending;
    /* The files its rules and passes asked about, asked once. */
    struct {
        const char *path;
        int found;
        struct stat st;
    } stats[4];
    size_t nstats;
    /* Where its strings live: the arena, then blocks of their own. */
    char *arena;
    size_t arena_size, arena_used;
    void *blocks;
    int out_of_room; /* an expansion, or the variables, outgrew their bounds: 500 */
} rewrite_request_t;

char *rewrite_alloc(rewrite_request_t *r, size_t len);
/* Frees what the request's strings took beyond its arena. */
void rewrite_release(rewrite_request_t *r);
char *rewrite_strndup(rewrite_request_t *r, const char *s, size_t len);
char *rewrite_strdup(rewrite_request_t *r, const char *s);
const char *rewrite_getenv(const rewrite_request_t *r, const char *name);
/* stat() of path, remembered for the request: 1 if found, with *st. */
int rewrite_stat(rewrite_request_t *r, const char *path, struct stat *st);
void rewrite_setenv(rewrite_request_t *r, const char *name, const char *value);

typedef enum rewrite_action {
    REWRITE_NONE,     /* no rule changed the path */
    REWRITE_INTERNAL, /* serve *uri (undecoded, with '?' and the query if any) instead */
    REWRITE_REDIRECT, /* answer status with Location: *uri */
    REWRITE_STATUS,   /* answer status ([F], [G], R=4xx, or an error) */
} rewrite_action_t;

/* One pass of r through c, as Apache's mod_rewrite does it in a
 * directory (its fixup hook). r->filename and r->path_info must be set. */
rewrite_action_t rewrite_round(const rewrite_conf_t *c, rewrite_request_t *r, const char **uri, int *status);

/* One rule list over r (rewrite.c): 0 if nothing changed, else 1, with
 * r->filename and r->args the new ones and *status the redirect's code
 * ([R=3xx]) or 0, or -1 with *status to answer. *noescape: the last rule
 * that changed it had [NE]. */
int rewrite_apply(const rewrite_conf_t *c, rewrite_request_t *r, int *status, int *noescape);

/* The length of uri's scheme ("http://" is 7), or 0 for a path; *query:
 * whether such a URL takes a query string. May be NULL. */
size_t rewrite_scheme_len(const char *uri, int *query);

/* ap_escape_uri(): what may not stand in a URL path, %-escaped. */
const char *rewrite_escape_uri(rewrite_request_t *r, const char *s);
/* The same into out (outlen bytes, NUL-terminated, cut if short):
 * the length it needs, without the NUL. */
size_t rewrite_escape_path(const char *s, char *out, size_t outlen);

/* An internal redirect's URL path (len bytes, no query) as Apache makes
 * it a request's: dot segments and repeated slashes taken out, then
 * %-decoded, into out (outlen bytes, NUL-terminated, *outl long). 0, or
 * the status to answer: 400 (a bad escape, a path above the root) or 404
 * (an encoded '/' or NUL). */
int rewrite_decode_path(const char *in, size_t len, char *out, size_t outlen, size_t *outl);

#endif
