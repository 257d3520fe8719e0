/*
 * A worker's connection to the broker: a child of the zygote inherits its
 * end of the link the broker made for it (libcommon/vc_link.h), says READY, and takes
 * one request at a time. Classic mode loops here in C; worker mode drives the same calls
 * from PHP (frankenphp_handle_request or a returned handler).
 */
#ifndef VC_PHP_WORKER_LINK_H
#define VC_PHP_WORKER_LINK_H

#include "sapi.h"
#include "vc_config.h"

typedef struct worker_conn worker_conn_t;

/* Takes the link fd and says READY. Exits the process if the broker is gone. */
worker_conn_t *worker_connect(const vc_config_t *cfg, int fd);

/* Blocks for the next request and fills r (head, body, emit). Returns 0,
 * or -1 when the worker should stop (recycled, or the broker is gone). */
int worker_next(worker_conn_t *w, vc_request_t *r);

/* After the request's final emit: releases what worker_next gave r and
 * says READY unless the final message already did. Returns 1 to go on, 0
 * when this worker has served its max_requests. */
int worker_done(worker_conn_t *w, vc_request_t *r);

/* The current request is this worker's last (it is about to exit): its
 * final message must not tell the broker it is ready for more. */
void worker_set_last(worker_conn_t *w);

void worker_close(worker_conn_t **w);

/* Classic and fork modes: connect, run each request as a fresh PHP request,
 * exit when done. Never returns. */
void worker_main(const vc_config_t *cfg, int fd) __attribute__((noreturn));

#endif
