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

#include "seam.h"

/* For r's answer (a static file or a PHP script that r->route names, or
 * the front's own answer for the path), when the .htaccess files of its
 * directories have response directives (r->rewritten->answers). */
void htaccess_respond_attach(const seam_request_t *r);

/* The answer is one the front makes itself (an error page, a redirect):
 * only `Header always` applies to it, as with Apache. */
void htaccess_respond_made_here(h2o_req_t *req);

/* The status the answer has, when the caller shows h2o's filters another
 * while they are set up (php/backend.c, so that h2o compresses a 404). */
void htaccess_respond_status(h2o_req_t *req, int status);

#endif
