/*
 * A worker's clock: one shared page per worker, which the worker writes
 * and the broker reads, saying since when the worker has been running a
 * request on a connection the front lent it (docs/php.md, "Lent
 * connections"). Those requests never pass the front's board, so without
 * the clock the pool's wall-clock limit (max_execution_time plus
 * kill_grace) could not see them, and a script that sleeps would keep
 * its worker for ever.
 *
 * Each worker has a page of its own (a memfd the broker makes and the
 * zygote hands to the worker it forks), so a worker can write nothing
 * but its own clock. What it writes is still the worker's word: the
 * broker reads a time in the future as a request just begun.
 */
#ifndef VC_PHP_WORKER_CLOCK_H
#define VC_PHP_WORKER_CLOCK_H

#include <stdint.h>

typedef struct worker_clock {
    uint64_t since_ms;       /* vc_mono_ms() when the request began; 0: none running */
    uint64_t refused_writes; /* writes the pool's wall refused its scripts (wall_notes.h) */
} worker_clock_t;

/* The broker: a new clock, mapped here (*clock), and its descriptor for
 * the zygote (close it once sent). -1 if it cannot be made. */
int worker_clock_create(worker_clock_t **clock);

/* The broker: since when the worker has run its request, 0 if it runs
 * none. */
uint64_t worker_clock_since(const worker_clock_t *clock);

/* The broker: how many writes the wall refused the worker's scripts. */
uint64_t worker_clock_refused(const worker_clock_t *clock);

/* Unmaps a clock (the broker's, once its worker has gone). */
void worker_clock_unmap(worker_clock_t **clock);

/* The worker, just forked: its clock from the zygote's descriptor (closed
 * here). Without one (fd < 0, or it cannot be mapped) the calls below do
 * nothing. */
void worker_clock_adopt(int fd);

/* The worker: a request on a lent connection begins, or has ended. */
void worker_clock_begin(void);
void worker_clock_end(void);
/* The worker: the wall refused one of its scripts' writes. */
void worker_clock_count_refused(void);

#endif
