/*
 * A scripted fake front and fake workers around the real broker
 * (daemons/vc-php: dispatch, lending, exits, leaving, fronts), for
 * tests/test_broker.c and fuzz/fuzz_broker.c. The fake front holds a real
 * link to the broker's listener; each fake worker is a socketpair end the
 * caller speaks on, with a paused child process as its pid.
 */
#ifndef VC_TEST_BROKER_PEER_H
#define VC_TEST_BROKER_PEER_H

#include "broker_internal.h"

#define BP_MAX_WORKERS 8

typedef struct bp_worker {
    pid_t pid;
    int fd; /* the worker's end of its link */
    vc_link_buf_t in;
    int reaped, status;
} bp_worker_t;

typedef struct broker_peer {
    vc_config_t *cfg;
    fronts_t *fronts;
    broker_t *d;
    char *dir, *endpoint;
    int front; /* the fake front's link; -1 once closed */
    vc_link_buf_t front_in;
    int front_eof;
    vc_board_t *board; /* mapped from the first Lend */
    bp_worker_t w[BP_MAX_WORKERS];
    int nw;
    int poll_ms; /* each turn waits this long for the peers (5) */
} broker_peer_t;

/* One message the broker sent the front: the BackMessage, and what came
 * with a Lend (the worker's link; the board on the first). */
typedef struct bp_msg {
    Vc__BackMessage *bm;
    int fd;
    vc_board_t *board;
} bp_msg_t;

/* A broker with the configuration text conf, its front linked, and
 * workers fake workers forked (not yet ready). */
void bp_start(broker_peer_t *bp, const char *conf, int workers);
void bp_stop(broker_peer_t *bp);
/* Turns of the broker's loop, as daemons/vc-php/main.c makes them. */
void bp_turns(broker_peer_t *bp, int n);

/* The next message to the front, turning the broker for up to
 * timeout_ms: 1, or 0 if none came. */
int bp_front_next(broker_peer_t *bp, bp_msg_t *m, int timeout_ms);
void bp_msg_free(bp_msg_t *m);
/* Reads and drops what the broker sent the front so far. */
void bp_front_drain(broker_peer_t *bp);
/* The front's id inside the broker: 1, or 0 if it is not linked. */
int bp_front_id(broker_peer_t *bp, char fid[FRONT_ID_LEN]);
/* Whether the broker closed the front's link (within timeout_ms). */
int bp_front_closed(broker_peer_t *bp, int timeout_ms);
/* The front sends raw message frames (a FrontMessage first). */
void bp_front_send(broker_peer_t *bp, const struct iovec *f, size_t n);
/* A request with that id and method, over the broker link / a lent one. */
void bp_front_request(broker_peer_t *bp, uint64_t id, const char *method);
void bp_lent_request(broker_peer_t *bp, const bp_msg_t *lend, uint64_t id, const char *method);
/* Left: the front read Leaving. */
void bp_front_left(broker_peer_t *bp);
/* GiveBack{slot, lost, outcome, instead_of (-1: none)}. */
void bp_give_back(broker_peer_t *bp, uint32_t slot, int lost, Vc__Outcome outcome, long instead);
/* What the front's board says of slot (the real front writes it). */
void bp_board_state(broker_peer_t *bp, uint32_t slot, uint32_t state);

/* The worker says ready ("R"). */
void bp_worker_ready(broker_peer_t *bp, int w);
/* Reads one message sent to worker w (up to timeout_ms): 1, or 0. */
int bp_worker_read(broker_peer_t *bp, int w, vc_frames_t *fr, int timeout_ms);
/* The worker answers request id whole (200, "D"). */
void bp_worker_answer(broker_peer_t *bp, int w, uint64_t id);
/* The signal the broker killed worker w with (waiting up to 1 s), or 0. */
int bp_worker_signalled(broker_peer_t *bp, int w);
/* Worker w exits (by sig, unless it already has) and the zygote's report
 * reaches the broker. */
void bp_worker_exit(broker_peer_t *bp, int w, int sig);

#endif
