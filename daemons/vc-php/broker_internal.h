/*
 * What the broker's parts share (broker.c: the queue, fronts' and
 * workers' messages; lending.c: workers lent to fronts; exits.c: workers
 * that exit or crash; leaving.c: handing over to a successor; sizing.c: the pool's size, generations and time
 * limits; status.c: /proc samples and `vc status`). Only they include it.
 */
#ifndef VC_PHP_DISPATCH_INTERNAL_H
#define VC_PHP_DISPATCH_INTERNAL_H

#include "vc_queue.h"
#include "broker.h"
#include "fronts.h"
#include "pool.h"
#include "vc_log.h"
#include "vc_frames.h"
#include "vc_util.h"
#include "vc_wire.h"
#include "vc_link.h"
#include "worker_clock.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "request.pb-c.h"

/* Crash-loop guard: this many crashes inside the window slow spawning.
 * Only a worker's own faults count (a signal like SIGSEGV or SIGABRT, a
 * non-zero exit): SIGKILL comes from outside (an operator, the OOM killer,
 * our own time limit), and the pool refills at once after it. */
#define CRASH_WINDOW_MS 60000
#define CRASH_BURST 5
#define SPAWN_BACKOFF_MAX_MS 10000

typedef struct job {
    vc_frames_t fr; /* [front-id][FrontMessage][body...] while queued;
                     * afterwards [front-id] plus, for a retryable
                     * request, copies of the rest */
    uint64_t req_id;
    uint64_t enq_ms;
    int retries;
    int idempotent; /* GET or HEAD: may run again on another worker */
    char *what;     /* "GET /x.php" for logs */
    char *script;
    vc_qlink_t qlink; /* in the queue, while it waits for a worker */
} job_t;

/* W_RETIRED: of an older generation (a reload happened), told to exit.
 * W_LENT: its link is with a front, which sends it requests itself; what
 * it does is on that front's board (libcommon/vc_board.h). */
enum wstate { W_STARTING, W_IDLE, W_BUSY, W_FINISHING, W_RETIRED, W_LENT };
extern const char *const wstate_names[];
extern const char *const board_state_names[];

typedef struct worker {
    pid_t pid;
    int pidfd;        /* its process, whatever its pid is by now (zygote.h); -1: none */
    int fd;           /* the link (libcommon/vc_link.h); -1 once it is closed */
    int reading;      /* the link is in the epoll set with EPOLLIN */
    vc_link_buf_t in; /* what the worker sent, not yet handled */
    unsigned gen;     /* the zygote generation it was forked from */
    enum wstate state;
    job_t *job;        /* set while W_BUSY or W_FINISHING */
    int started;       /* the response has begun: no retry */
    int timed_out;     /* killed for running too long */
    int recycle;       /* over the memory ceiling: exits once idle */
    int retire;        /* the pool shrank: exits once idle */
    int dying;         /* exited: what it wrote is being read, no new work */
    uint64_t since_ms; /* start of the current state */
    uint64_t served;
    worker_clock_t *clock;      /* since when it runs a request on a lent connection */
    int smaps;                  /* its /proc/PID/smaps_rollup, which it sent (status.c); -1: none */
    int slot;                   /* its board slot; -1: none (never lent) */
    char lent_to[FRONT_ID_LEN]; /* W_LENT: the front */
    int recalled;               /* W_LENT: asked back */
    int front_said;             /* W_LENT: its link ended, the front said */
    int moving;                 /* recalled for the front in move_to */
    char move_to[FRONT_ID_LEN];
    Vc__Outcome front_outcome; /* what it did (see lent_exited) */
} worker_t;

/* Moves w to state to, asserting the move is one the broker makes
 * (broker.c's table). */
void broker_worker_state(worker_t *w, enum wstate to);
/* Sends sig to w's process, never to another that took its pid. */
void broker_signal(worker_t *w, int sig);

/* A lent worker that exited, its report waiting for its front's word. */
#define LOST_WAIT_MS 2000
typedef struct lost {
    char fid[FRONT_ID_LEN];
    int slot;
    pid_t pid;
    int clean, own_fault, recycled;
    int busy, finishing, started, timed_out, idempotent, retries; /* the board */
    char how[64], what[208], script[256];
    uint64_t due_ms;
} lost_t;

#define BROKER_MAGIC 0x64697370u /* "disp" */

struct broker {
    uint32_t magic;
    const vc_config_t *cfg;
    unsigned gen; /* new work goes only to workers of this generation */
    fronts_t *fronts;
    vc_bus_t *bus;
    int epfd; /* the workers' links: one descriptor for the broker's poll */
    worker_t *w;
    size_t nw, capw;
    vc_queue_t queue; /* job_t by qlink; max: php.queue_limit */
    int spawning;     /* asked of the zygote, not yet forked */
    uint64_t crashes[CRASH_BURST];
    size_t ncrash;
    uint64_t spawn_after_ms;
    unsigned backoff_ms;
    uint64_t run_limit_ms; /* 0: none */
    pool_size_t size;
    size_t sample_at; /* round robin of the memory samples */
    uint64_t last_sample_ms;
    int lending;                       /* not in fork mode */
    int leaving;                       /* leaving.c: no new request */
    uint8_t slot_used[VC_BOARD_SLOTS]; /* board slots, one per worker */
    size_t next_slot;                  /* given out in turn, so a slot is
                                        * not reused while a front may
                                        * still hold its last worker */
    lost_t *lost;
    size_t nlost;
    /* counters */
    uint64_t accepted, completed, rejected_503, timed_out_504, failed_502, retried, crashed, killed;
    uint64_t refused_writes_gone; /* writes the wall refused the scripts of workers now gone (worker_clock.h) */
};

/* broker.c */
worker_t *broker_by_pid(broker_t *d, pid_t pid);
void broker_link_close(broker_t *d, worker_t *w);
void broker_job_free(job_t *j);
void broker_to_front_id(broker_t *d, const void *fid, const Vc__BackMessage *bm, const char *body, size_t blen);
void broker_answer(broker_t *d, const vc_frame_t *fid, uint64_t req_id, unsigned status, const char *text,
                   const char *retry_after);
void broker_abort_stream(broker_t *d, const vc_frame_t *fid, uint64_t req_id);
void broker_enqueue(broker_t *d, job_t *j, int at_head);
job_t *broker_dequeue(broker_t *d);
/* The job that has waited longest, or NULL. */
static inline job_t *queue_first(const broker_t *d)
{
    return d->queue.head ? VC_QUEUE_ITEM(d->queue.head, job_t, qlink) : NULL;
}
void broker_make_idle(broker_t *d, worker_t *w);
void broker_pump(broker_t *d);
void broker_finish_job(broker_t *d, worker_t *w);
void broker_on_worker(broker_t *d, worker_t *w, int hangup);

/* lending.c */
vc_board_slot_t *broker_board_slot(broker_t *d, const worker_t *w);
void broker_lent_state(broker_t *d, const worker_t *w, vc_board_slot_t *out);
int broker_take_slot(broker_t *d);
void broker_lend(broker_t *d);
void broker_recall(broker_t *d, worker_t *w);
void broker_given_back(broker_t *d, worker_t *w, worker_t *kept);
worker_t *broker_lent_worker(broker_t *d, const void *fid, uint32_t slot);
void broker_move_one(broker_t *d, const void *fid);
void broker_on_front_change(void *arg, const void *fid, vc_board_t *board, int linked);

/* exits.c */
void broker_front_lost(broker_t *d, const void *fid, uint32_t slot, Vc__Outcome outcome);
void broker_report_overdue(broker_t *d, const void *gone_fid);

/* leaving.c */
/* Tells fid's front its request req_id never started here (it goes to the
 * successor). */
void broker_bounce(broker_t *d, const void *fid, uint64_t req_id);
void broker_bounce_queue(broker_t *d);

/* sizing.c */
uint64_t broker_run_limit(const vc_config_t *cfg);

/* status.c */
long broker_pss_kib(const worker_t *w, long *uss);
/* The descriptors a worker sent with a message: the first READY's is its
 * smaps_rollup (status.c), once checked; any other is closed, and after
 * the first READY none is taken any more. */
void broker_take_smaps(worker_t *w, int first_ready);
long broker_rss_kib(pid_t pid);
void broker_tally(broker_t *d, int *idle, int *busy, size_t *queued);

#endif
