/*
 * The response directives of a site's .htaccess files (htaccess_answer.h)
 * applied to what a backend sends: a per-request h2o prefilter, set up
 * by the backend that serves the file or runs the script, which runs
 * when the answer starts, before the cache stores it, as Apache's output
 * filters run before a cache in front of it sees the answer. In Apache's
 * order: mod_mime's type for a file, then mod_expires, then
 * mod_headers, then AddDefaultCharset. A cache hit is served as it was
 * stored, never changed twice.
 */
#ifndef VC_FRONT_HTACCESS_RESPOND_H
#define VC_FRONT_HTACCESS_RESPOND_H

#include "htaccess.h"
#include "seam.h"

/* For r's answer (a static file or a PHP script that r->route names, or
 * the front's own answer for the path), when the .htaccess files of its
 * directories have response directives (r->rewritten->answers). */
void htaccess_respond_attach(const seam_request_t *r);

/* The answer is one the front makes itself (an error page, a redirect):
 * only `Header always` applies to it, as with Apache. */
void htaccess_respond_made_here(h2o_req_t *req);

/* The status the answer has, when the caller shows h2o's filters another
 * while they are set up (php/backend.c, so that h2o compresses a 404).
 * Returns the status to send: an ErrorDocument script's 200 is the
 * error's status, as with Apache and php-fpm (a script that sets none
 * keeps the error's). */
int htaccess_respond_status(h2o_req_t *req, int status);

/* req now serves an ErrorDocument for status: file (the script or file,
 * under the root of root_len bytes) is what the directives apply to. */
void htaccess_respond_error(h2o_req_t *req, int status, const char *file, size_t root_len);
/* The status of the ErrorDocument req serves, or 0. */
int htaccess_respond_error_status(h2o_req_t *req);

/* The response directive sets that apply to file (under the root of
 * root_len bytes), in Apache's merge order, into sets (max): how many.
 * Valid until the .htaccess cache is next asked. */
size_t htaccess_answer_chain(const char *file, size_t root_len, const htaccess_answer_t **sets, size_t max);

#endif
