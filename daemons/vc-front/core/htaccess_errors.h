/*
 * ErrorDocument in a site's .htaccess files: what the front's own error
 * answer for a path becomes (htaccess_answer.h reads the directive). As
 * Apache's core: a text is sent with the error's status; a URL is
 * redirected to (302); a local URL is served or run in its place, with
 * the error's status unless its script sets another. Only the front's
 * own answers: a script's 404 is its own, as with Apache and php-fpm
 * (no ProxyErrorOverride). An error while serving one is the plain
 * answer. The directories asked are those of the path the client asked
 * for.
 */
#ifndef VC_FRONT_HTACCESS_ERRORS_H
#define VC_FRONT_HTACCESS_ERRORS_H

#include "front.h"

/* 1 if an ErrorDocument answered (or will answer) req for status. */
int htaccess_error_document(front_t *f, site_rt_t *s, h2o_req_t *req, int status);

#endif
