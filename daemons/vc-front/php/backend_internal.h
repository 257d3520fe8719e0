/*
 * What backend.c (requests to PHP, their answers, the link to the broker)
 * and lent.c (workers the pool lends this front) share. Only those two
 * include it.
 */
#ifndef VC_FRONT_BACKEND_INTERNAL_H
#define VC_FRONT_BACKEND_INTERNAL_H

#include "backend.h"
#include "vc_keys.h"
#include "vc_queue.h"
#include "vc_board.h"
#include "vc_lent_quiet.h"
#include "vc_link.h"
#include "vc_link_auth.h"
#include "vc_frames.h"

#define NBUCKETS 4096

typedef struct lent lent_t;

/* How many requests a busy lent worker may hold behind its job
 * (pipeline.c). The front reads a worker's ends between the other
 * workers' answers and its clients: with one held, a worker that ended
 * its job and the one behind before the front came back to it slept once
 * every two requests (0.6 switches a request); two, 0.4; four, 0.26
 * (docs/BENCHMARKS.md, "Pipelined lent workers"). */
#define PIPELINE_DEPTH 4

/* What a request usually costs is looked up by its script and path, and,
 * for a path not seen lately (an id in it), by its script alone
 * (pipeline.c). 0: none. */
typedef struct pipeline_key {
    uint64_t path, script;
} pipeline_key_t;

#define PREQ_MAGIC 0x70726571u    /* "preq" */
#define LENT_MAGIC 0x6c656e74u    /* "lent" */
#define BACKEND_MAGIC 0x6261636bu /* "back" */

/* One request waiting on PHP. A shared chunk linked to the request's pool:
 * when h2o frees the request, for any reason, on_dispose runs. */
typedef struct preq {
    h2o_generator_t super; /* first: h2o hands it back as the generator */
    uint32_t magic;
    backend_t *be;
    h2o_req_t *req; /* NULL once disposed */
    uint64_t id;
    vc_keyed_t link;    /* in the backend's table of requests, by id */
    int started;        /* h2o_start_response called */
    int sending;        /* an h2o_send waits for proceed */
    int final_seen;     /* the last message arrived */
    int aborted;        /* the worker died mid-answer */
    conn_state_t *conn; /* the client connection's budgets; a reference */
    uint64_t sent_ms;   /* when it left for PHP */
    int given_up;       /* answered by us (504, 502): PHP's answer is dropped */
    int bodiless;       /* 204 or 304: PHP's output is dropped */
    /* The body on its way (stream.c): */
    vc_frames_t queue;    /* frames not yet handed to h2o */
    vc_frames_t inflight; /* handed to h2o, until proceed */
    size_t held;          /* bytes of queue, inflight and after (not the file's) */
    int spill_fd;         /* the temporary file, or -1 */
    uint64_t spill_wr, spill_rd;
    int spill_broken;  /* it failed once: not used again */
    char *spill_buf;   /* what one send gives h2o from the file */
    vc_frames_t after; /* frames behind the file, which could not take them */
    int full;          /* over both bounds: the link is not read */
    int throttled;     /* the worker's link read no more, or the answer cut */
    /* For a worker lent to this front: */
    lent_t *lw;      /* the worker running it, or holding it behind its job */
    uint8_t *packed; /* its FrontMessage, until a worker took it (or,
                      * for a GET or HEAD, until the answer began) */
    size_t packed_len;
    int queued;       /* waiting for a lent worker */
    vc_qlink_t qlink; /* in its backend's queue, waiting for a lent worker */
    uint64_t queued_ms;
    int idempotent;
    int retries;
    pipeline_key_t cost_key; /* for what it usually costs (pipeline.c) */
    const char *script;      /* in the request's pool */
    const char *site;        /* its site's name, in the request's pool (vc_publish()) */
    site_rt_t *srt;          /* and the site (the front's for its life) */
} preq_t;

/* Messages for a socket written by h2o: those of one turn of the loop
 * leave in one write; new ones wait in out while wbuf is written. */
typedef struct outbox {
    h2o_socket_t *sock;
    int writing;
    vc_link_buf_t out, wbuf;
} outbox_t;

/* The board the pool shares with this front (libcommon/vc_board.h):
 * counted, since workers of a pool that went away may outlive the next
 * pool's first lend. */
typedef struct board_ref {
    vc_board_t *map;
    int refs;
} board_ref_t;

/* A worker the pool lent this front: its link, read and written here. */
struct lent {
    uint32_t magic;
    backend_t *be;
    uint32_t slot;
    int pid;
    board_ref_t *board;
    vc_board_slot_t *bs;
    outbox_t ob;
    vc_link_buf_t in;
    int busy;      /* from a request until "D", or "R" after "F" */
    int finishing; /* its answer is whole ("F"): busy until "R" */
    int recalled;  /* given back once idle */
    int paused;    /* its answer's client is behind: not read */
    int owed;      /* recalled with any while busy: the first worker idle
                      here goes back in its place */
    preq_t *job;   /* what it runs, while its client waits */
    /* Requests written behind job while requests wait here, so the worker
     * finds the next without sleeping (pipeline.c), in order. One is NULL
     * once its client left: the worker skips it unless it has begun. */
    int nahead;
    preq_t *ahead[PIPELINE_DEPTH];
    pipeline_key_t ahead_key[PIPELINE_DEPTH];
    pipeline_key_t job_key; /* for the cost of what it runs */
    uint64_t job_began_us;
    /* Clients' connections it serves itself (lend_conn.c), at most the
     * pool's lend_connections: busy, with no job, until it has handed
     * each back or closed it. */
    struct conn_lend **conns;
    int nconns;
    size_t capconns;
    vc_lent_quiet_t *quiet; /* which are quiet, the worker says (vc_lent_quiet.h) */
    int conns_asked;        /* "H" sent: they all come back, none is lent */
    int leaving;            /* it exits (it said so with its connection, or it was gone when one was lent):
                               busy, finishing, until its link ends */
};

/* The link to one process of a pool (php_pool.c keeps the current one and
 * those leaving). */
struct backend {
    uint32_t magic;
    front_t *f;
    php_pool_t *pool;
    int leaving;           /* it said Leaving: nothing new goes to it */
    struct backend *older; /* php_pool.c: the next one leaving */
    char *endpoint;
    struct sockaddr_storage addr;
    socklen_t addrlen;
    h2o_socket_t *link; /* connecting or connected; NULL between tries */
    int was_linked;     /* for the log: lost, or never reached */
    int told_absent;    /* "not reachable" logged for this outage */
    int authing;        /* 1: awaiting the pool's challenge, 2: its proof
                           (TCP with link_key, vc_link_auth.h); ob.sock is
                           set once it is done */
    int told_key;       /* a key refusal logged for this outage */
    int key_refused;    /* this read: the exchange failed, close quietly */
    vc_link_auth_t auth;
    vc_link_buf_t in;
    outbox_t ob; /* ob.sock: the link once connected; messages wait in
                    ob.out meanwhile */
    h2o_timeout_entry_t flush_entry;
    h2o_timeout_t retry_timeout;
    h2o_timeout_entry_t retry_entry;
    vc_keys_t preqs; /* the requests in flight, by id */
    size_t inflight;
    vc_frames_t fr;
    /* Workers lent by the pool, and requests waiting for one of them. */
    lent_t **lent;
    size_t nlent, caplent;
    size_t nowed; /* lent workers with owed set */
    board_ref_t *board;
    vc_queue_t queue;   /* preq_t by qlink: requests waiting for a lent worker */
    uint64_t need_ms;   /* the last Need sent */
    uint64_t waited_ms; /* when a request last waited for a lent worker (lend_conn.c) */
    h2o_timeout_t need_timeout;
    h2o_timeout_entry_t need_entry; /* asks again while requests wait */
    struct pipeline_cost {
        uint64_t key;
        uint32_t us; /* a moving average */
    } cost[512];     /* pipeline.c: by script and path, and by script */
};

/* What the PHP backend counts (php_backend.c lists them). */
typedef struct php_stats {
    uint64_t requests;          /* passed to PHP */
    uint64_t errors_5xx;        /* 5xx answers: PHP's own, or ours for it (502, 503, 504) */
    uint64_t answers_spilled;   /* answers that went to a temporary file (stream.c) */
    uint64_t answers_throttled; /* times a worker's link was paused for a slow client */
    uint64_t answers_cut;       /* relayed answers cut for a slow client */
    uint64_t pipelined;         /* held behind a lent worker's job (pipeline.c) */
    uint64_t conns_lent;        /* client connections lent to a worker (lend_conn.c) */
    uint64_t conns_back;        /* and handed back to the front */
    uint64_t conns_rescued;     /* taken back quiet from a worker that died */
    uint64_t conn_requests;     /* requests the workers served on them */
} php_stats_t;
extern php_stats_t php_stats; /* backend.c */

/* php_pool.c */

struct php_pool {
    front_t *f;
    const vc_pool_t *conf; /* its settings: the php block, or its own under pools */
    char *endpoint;
    backend_t *cur;   /* new requests go here */
    backend_t *older; /* processes leaving, finishing what they hold */
    uint64_t next_id; /* request ids, unique across them: a request moves */
};
/* be said Leaving: a link to its successor becomes current, and what
 * waited in be for its lent workers moves there. */
void php_pool_succeed(php_pool_t *pool, backend_t *be);

/* backend.c */

backend_t *backend_new(php_pool_t *pool);
/* php_pool_submit, for the current process. */
int backend_submit(backend_t *be, site_rt_t *s, h2o_req_t *req, Vc__RequestHead *head);
void backend_destroy(backend_t **be);
/* p (packed, tracked nowhere) goes to be: a lent worker or the broker.
 * -1 once it answered p's client itself (503). */
int backend_forward(backend_t *be, preq_t *p);
/* p, not started, leaves its process for be (the successor). */
void backend_move(preq_t *p, backend_t *be);
void backend_tick(backend_t *be);
/* Its link is closed for good and nothing of it is in use: it can go. */
int backend_done(const backend_t *be);

/* Tells the pool p's client is gone (a queued request never runs). */
void backend_cancel(preq_t *p);
/* An answer (BackMessage and body frames) from the broker, or from the
 * lent worker from (which may only answer the request it was given). */
void backend_on_message(backend_t *be, vc_frames_t *fr, const lent_t *from);
/* p waits for an answer: found by its id from now on. */
void backend_track(backend_t *be, preq_t *p);
/* A message to the broker; packed and body are copied. */
void backend_send_packed(backend_t *be, const void *packed, size_t len, const void *body, size_t blen);
void backend_send_message(backend_t *be, const Vc__FrontMessage *fm, const void *body, size_t blen);
/* Writes what waits in ob->out, unless a write is under way; cb then. */
void backend_outbox_flush(outbox_t *ob, h2o_socket_cb cb);

/* stream.c: the answer's body, bounded in memory */

void stream_init(preq_t *p);
/* Frames [from, n) of fr are body: moved into p. */
void stream_append(preq_t *p, vc_frames_t *fr, size_t from);
/* Hands h2o what waits (may dispose p); reads or pauses the link. */
void stream_kick(preq_t *p);
/* h2o took the last send. */
void stream_proceed(preq_t *p);
void stream_fini(preq_t *p);

/* lent.c */

/* Writes what waits for l's link. */
void lent_flush(lent_t *l);
/* The link of l is read (on 0) or not (1) until said otherwise. */
void lent_pause(lent_t *l, int on);

/* Runs p (packed) on an idle lent worker, or queues it (503 when the
 * queue is at php.queue_limit). Returns 0, or -1 once it answered req
 * itself. */
int lent_submit(backend_t *be, preq_t *p);
/* p's client left, or the front answers it itself (a hand-off), while
 * it was with lent worker p->lw: told, if tell, so connection_aborted()
 * says so; held behind another request, it never runs there. */
void lent_forget(preq_t *p, int tell);
/* Takes p out of the queue for a lent worker, if it is in. */
void lent_unqueue(backend_t *be, preq_t *p);
/* The broker lends a worker (its link is the next descriptor the link
 * brought), or wants one back. */
void lent_on_lend(backend_t *be, const Vc__Lend *m);
void lent_on_recall(backend_t *be, const Vc__Recall *m);
/* The front no longer uses l's link: l is freed. */
void lent_remove(lent_t *l);
/* Every lent worker let go (the link to the broker is gone). */
void lent_drop_all(backend_t *be);
/* backend_new: the Need timer. backend_destroy: the lent workers, the
 * board and the timer. */
void lent_init(backend_t *be);
void lent_fini(backend_t *be);
/* Once a second: 504 for requests that waited php.queue_timeout here. */
void lent_tick(backend_t *be);

/* lend_conn.c: a client's connection lent to a lent worker. */

/* Passes p's connection, with p, to the idle worker l, or with l NULL to
 * a worker that serves fewer connections than the pool's
 * lend_connections, if the pool, the site and the connection allow
 * (docs/php.md, "Lent connections"): 1 if it did (p is then the
 * worker's, and ends in h2o without an answer). */
int lend_conn_try(backend_t *be, lent_t *l, preq_t *p);
/* Asks l for its connections back (once). */
void lend_conn_want(lent_t *l);
/* ["B"] or ["X"] from l (vc_wire.h): that connection is back in h2o, or
 * closed; l is idle once it holds none, or leaving. */
void lend_conn_ended(lent_t *l, const struct iovec *f, int n);
/* ["A"][id][records] from l: their lines in the access log. */
void lend_conn_log(lent_t *l, const struct iovec *f, int n);
/* l died: the connections it held nothing of go on in h2o, as if just
 * accepted (vc_lent_quiet.h); lend_conn_drop() closes the others. Returns
 * how many went on. */
int lend_conn_rescue(lent_t *l);
/* l is gone with its connections: the front's copies are closed. */
void lend_conn_drop(lent_t *l);

/* pipeline.c: which request may wait in a busy worker's link. */

/* What p usually costs is looked up by this key. */
pipeline_key_t pipeline_key(const preq_t *p);
/* The worker's job took us microseconds. */
void pipeline_record(backend_t *be, pipeline_key_t key, uint64_t us);
/* Whether the request at the head of be's queue may be written behind
 * l's job and what l holds: one that may run again, behind requests that
 * are usually short (the job began recently), on a worker staying here. */
int pipeline_may(const backend_t *be, const lent_t *l, const preq_t *head, uint64_t now_us);
uint64_t pipeline_now_us(void);

#endif
