/*
 * The mod_rewrite rules of a site's .htaccess files, applied to a request
 * before it is routed, as Apache applies them (rewrite.h): the rules of
 * the directory the path maps to (its files merged from the root down),
 * and after each internal redirect, those of the new path's, until no
 * rule changes it (at most 10 times, Apache's LimitInternalRecursion).
 * Each pass also asks the directories' Redirects (mod_alias, after the
 * rules, as Apache's fixups run) and mod_dir's trailing slash; the last
 * one's directories give the script its php_value settings.
 *
 * The result is a path to route instead of the client's, the query PHP
 * sees, and the variables the rules set, as Apache hands them to PHP
 * after its internal redirects (REDIRECT_STATUS, REDIRECT_URL, E=
 * variables, REDIRECT_-prefixed once a redirect followed). REQUEST_URI
 * stays the client's, as with Apache.
 */
#ifndef VC_FRONT_HTACCESS_REWRITE_H
#define VC_FRONT_HTACCESS_REWRITE_H

#include "front.h"

#define HTACCESS_MAX_PHP 64 /* php_value and php_flag settings a request carries */

typedef struct htaccess_rewritten {
    h2o_iovec_t path; /* decoded and normalised, to route; base NULL: the client's */
    int query_set;    /* query replaces the client's (base NULL: none) */
    h2o_iovec_t query;
    const char **names, **values; /* for $_SERVER, in req->pool */
    size_t nvars;
    /* php_value and php_flag of the final path's directories, the nearest
     * one's for a name (the files' own strings: valid for the request). */
    const char *ini_names[HTACCESS_MAX_PHP], *ini_values[HTACCESS_MAX_PHP];
    size_t nini;
    int answers; /* the final path's directories have response directives (htaccess_respond.h) */
    /* DirectoryIndex of the final path's nearest directory that has one
     * (the file's strings: valid until the request is routed). */
    const char *const *index;
    size_t nindex;
    int index_set;
} htaccess_rewritten_t;

/* 1 if the rules answered req (a redirect, [F], [G], an error), else 0
 * with *out filled in (all empty when no rule applied). */
int htaccess_rewrite(front_t *f, site_rt_t *s, h2o_req_t *req, int https, htaccess_rewritten_t *out);

/* Requests the rules sent to another path, and those they answered (a
 * redirect, a status), since the start. */
uint64_t htaccess_rewrite_count_internal(void);
uint64_t htaccess_rewrite_count_answered(void);

#endif
