/*
 * Files PHP hands back to the front: an answer carrying X-Accel-Redirect
 * (nginx) or X-Sendfile (Apache's mod_xsendfile) is served by the front
 * from the file it names, as static files are (ranges, ETag, conditional
 * requests, sendfile), opened beneath the directory that allows it
 * (beneath.h), while the worker goes on to its next request.
 *
 * X-Accel-Redirect: a URI, followed as nginx follows it. Under one of the
 * site's internal_locations ("/PREFIX/ DIR", nginx's `location /PREFIX/
 * { internal; alias DIR/; }`) it is DIR and the rest; clients asking for
 * an internal prefix themselves get 404. Any other URI is the static file
 * the site's root has there (route.h), never a script. The answer's
 * status is the file's (200, 206, 304, 404); of PHP's headers only those
 * nginx keeps stay: Content-Type, Content-Disposition, Set-Cookie,
 * Cache-Control, Expires, Accept-Ranges.
 *
 * X-Sendfile: an absolute path, as it is (Debian's mod_xsendfile decodes
 * nothing), followed only when the site
 * lists sendfile_paths and PHP answered 200 (as mod_xsendfile; otherwise
 * the header is an ordinary one). It must lie inside one of those paths;
 * a relative one is looked for in each. PHP's headers all stay but the
 * body's framing (Content-Length, Content-Encoding); its Last-Modified
 * and ETag, if it set them, stand for the file's.
 */
#ifndef VC_FRONT_HANDOFF_H
#define VC_FRONT_HANDOFF_H

#include "front.h"

typedef enum handoff_kind {
    HANDOFF_NONE,
    HANDOFF_ACCEL,    /* X-Accel-Redirect */
    HANDOFF_SENDFILE, /* X-Sendfile */
} handoff_kind_t;

/* What PHP's header `name` (any case) asks of the front answering with
 * status for site s: a handoff, or HANDOFF_NONE (an ordinary header). */
handoff_kind_t handoff_header(const site_rt_t *s, const char *name, int status);

/* Whether PHP's header `name` stays on the answer of a handoff of kind k. */
int handoff_keeps(handoff_kind_t k, const char *name);

/* Serves on req the file that value (len bytes, as PHP sent it) names.
 * req->res.headers hold PHP's headers that stay. Always answers: 404 when
 * the file is not there or not allowed (logged). */
void handoff_serve(front_t *f, site_rt_t *s, h2o_req_t *req, handoff_kind_t k, const char *value, size_t len);

#endif
