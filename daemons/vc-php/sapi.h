/*
 * Our SAPI over libphp 8.2: module startup in the zygote, one PHP request
 * per vc_request_t in a worker.
 *
 * The SAPI calls its transport through vc_request_t.emit whenever response
 * bytes must leave (a full buffer, flush(), fastcgi_finish_request(), the
 * end): the transport sends the response head first, then the buffered
 * body, and owns nothing of the request.
 */
#ifndef VC_PHP_SAPI_H
#define VC_PHP_SAPI_H

#include <stddef.h>

#include "params.h"
#include "request.pb-c.h"
#include "vc_config.h"
#include "vc_frames.h"

typedef struct vc_request vc_request_t;
struct vc_request {
    const Vc__RequestHead *head; /* borrowed for the request */
    const vc_frame_t *body;      /* borrowed body frames */
    size_t nbody;
    size_t body_i, body_off; /* read_post cursor */

    vc_params_t params; /* the $_SERVER the request sees */

    /* The response as PHP builds it. */
    Vc__ResponseHead *resp; /* set by send_headers, owned here */
    char *out;              /* buffered body bytes */
    size_t out_len, out_cap;
    int head_sent;  /* emit() sent resp already */
    int final_sent; /* fastcgi_finish_request() or the end */
    int ending;     /* the final emit is the request's end */
    int aborted;    /* the client went away */

    /* Sends resp (once) and out[0..out_len) and empties out. final: this
     * is the last of the response. May take out (set it to NULL). */
    void (*emit)(vc_request_t *r, int final);
    /* vc_publish(), vc_mercure_publish(): sends pub (its id is set here)
     * on the worker's link, now. 0, or -1 (no link: the worker's boot). */
    int (*publish)(vc_request_t *r, Vc__Publish *pub);
    void *transport;
};

/* The request PHP runs now, or NULL (a worker script's boot). */
vc_request_t *vc_sapi_current(void);

/* Starts PHP in this process (the zygote): ini from cfg, opcache's shared
 * memory created here. 0 or -1 with a log line. */
int vc_sapi_startup(const vc_config_t *cfg);
void vc_sapi_shutdown(void);

/* Runs the script named by r->head->script_filename as one PHP request and
 * emits the whole response (final included). Returns 0, or -1 if PHP could
 * not start the request (the transport answers 500). */
int vc_sapi_run(vc_request_t *r);

/* The pieces of vc_sapi_run, for worker mode, which runs many requests
 * inside one long PHP request: bind makes r the request PHP sees (params,
 * SG(request_info)); auth reads its Authorization header (after request
 * startup); finish sends the end of the response; unbind forgets r. */
void vc_sapi_bind(vc_request_t *r);
void vc_sapi_auth(vc_request_t *r);
void vc_sapi_finish(vc_request_t *r);
void vc_sapi_unbind(vc_request_t *r);

#endif
