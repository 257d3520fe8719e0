/*
 * A worker: a child of the zygote that serves requests one at a time.
 * It opens ZeroMQ after the fork (never inherits it), says READY, and runs
 * each request through the SAPI.
 */
#ifndef VC_PHP_WORKER_H
#define VC_PHP_WORKER_H

#include "vc_config.h"

/* Never returns: exits when told, after max_requests, or on a broken
 * connection to the broker. */
void worker_main(const vc_config_t *cfg) __attribute__((noreturn));

#endif
