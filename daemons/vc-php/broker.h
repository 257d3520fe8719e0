/*
 * The broker: the ZeroMQ guide's load-balancing pattern, over our own
 * links. Fronts send requests over their links (fronts.h); a request goes
 * only to an idle worker, or waits in one queue (bounded: 503 past
 * queue_limit, 504 past queue_timeout). A worker that dies mid-request
 * costs its client a 502, or for a GET/HEAD whose answer had not started,
 * a retry elsewhere (libcommon/vc_wire.h has the rule).
 *
 * In parts, as php-fpm splits its pool: broker.c (the queue, messages
 * from fronts and workers), lending.c (workers lent to fronts), exits.c
 * (exits and crashes), sizing.c (size, generations, time limits) and
 * status.c (what `vc status` shows), sharing broker_internal.h.
 */
#ifndef VC_PHP_DISPATCH_H
#define VC_PHP_DISPATCH_H

#include <stdint.h>
#include <sys/types.h>
#include <zmq.h>

#include "fronts.h"
#include "vc_bus.h"
#include "vc_config.h"
#include "vc_ctl.h"

typedef struct broker broker_t;

/* fronts is borrowed; bus may be NULL. Workers are reached over their
 * links (libcommon/vc_link.h). NULL if the epoll set cannot be made. */
broker_t *broker_new(const vc_config_t *cfg, fronts_t *fronts, vc_bus_t *bus);
void broker_destroy(broker_t **d);

/* A message from a front (a fronts_message_cb; arg is the broker_t). */
void broker_on_front(void *d, const void *fid, const struct iovec *frames, int n);
/* The workers' links are in an epoll set: poll its descriptor for
 * POLLIN. broker_watch() before each poll stops reading held-back
 * workers and resumes the others; broker_on_workers() after it reads
 * the links that are ready. */
int broker_poll_fd(broker_t *d);
void broker_watch(broker_t *d);
void broker_on_workers(broker_t *d);
/* Timeouts: queued too long (504), running too long (kill). */
void broker_on_tick(broker_t *d);

/* The zygote forked a worker / a worker exited (waitpid status). */
struct worker_clock;
/* pidfd: its process (zygote.h), taken, or -1; fd: its link; clock: its
 * clock (worker_clock.h, taken), or NULL. */
void broker_worker_forked(broker_t *d, pid_t pid, int pidfd, unsigned gen, int fd, struct worker_clock *clock);
void broker_worker_exited(broker_t *d, pid_t pid, int status);

/* A reload: new work goes to workers of generation gen (forked by a new
 * zygote, with cfg); older idle workers are told to exit now, busy ones
 * when they finish. cfg is borrowed until the next call. */
void broker_new_generation(broker_t *d, unsigned gen, const vc_config_t *cfg);
/* Workers of a generation still alive (an old zygote can go at 0). */
int broker_generation_alive(broker_t *d, unsigned gen);

/* `vc scale N`: a fixed pool size from now on. */
void broker_scale(broker_t *d, int64_t n);
/* Recycles the current worker with that pid: 0, or -1 if there is none
 * (or it is already leaving). */
int broker_recycle(broker_t *d, pid_t pid);

/* How many workers should be forked now (the pool is below size and the
 * crash backoff allows it). The caller asks the zygote and reports each
 * fork with broker_worker_forked. */
int broker_wanted(broker_t *d);
void broker_spawn_requested(broker_t *d);
/* Milliseconds until the next timer is due. */
long broker_next_timeout(broker_t *d);

/* Adds pool facts and one record per worker to a status reply. */
void broker_status(broker_t *d, Vc__Reply *reply);
/* Workers alive, of any generation. */
int broker_alive(broker_t *d);
/* Stopping: idle workers exit now, busy ones once their request is done. */
void broker_drain(broker_t *d);
/* SIGTERM (leaving.c): the fronts are told to send new requests to the
 * successor, queued ones go back to them, and the workers drain. */
void broker_leave(broker_t *d);
/* While leaving: closes each front's link once nothing of its is here. */
void broker_release_fronts(broker_t *d);
/* While leaving: 1 once no worker runs and every front has said Left and
 * been let go, so the process may exit without losing a request. */
int broker_has_left(broker_t *d);
/* The grace is over. */
void broker_kill_workers(broker_t *d);

#endif
