/*
 * Worker mode: the application boots once, in the zygote, and every worker
 * forked from it serves many requests inside that one booted PHP state.
 *
 * The worker script may
 *   - call frankenphp_handle_request($handler) in a loop (FrankenPHP's
 *     worker scripts run unmodified): the first call, in the zygote, is
 *     where workers are forked; in a worker each call serves one request;
 *   - return a callable: the handler, called once per request;
 *   - return ['on_worker_start' => fn, 'handler' => fn]: the first is
 *     called once in each new worker.
 * Between requests the superglobals, output buffers, headers and status are
 * reset, and (unless the site turns it off) the global variables and every
 * user class's static properties go back to their post-boot values.
 */
#ifndef VC_PHP_WORKER_MODE_H
#define VC_PHP_WORKER_MODE_H

#include <php.h>

#include "vc_config.h"

/* Boots the worker script in this process (the zygote, PHP started) and
 * forks workers from the booted state through zygote_serve(). Never
 * returns. */
void worker_mode_main(const vc_config_t *cfg, int zsock, int sigfd) __attribute__((noreturn));

ZEND_FUNCTION(frankenphp_handle_request);

#endif
