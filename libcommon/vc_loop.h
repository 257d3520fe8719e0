/*
 * vc_loop: the one loop of the daemons that have no event loop of their
 * own (vc-bus, vc-cache, vc-acme, vc-php's broker, and `vc up`'s
 * supervisor; vc-front runs libh2o's). It waits on the daemon's control socket and signals and on
 * what the daemon watches, and answers the first two itself: a control
 * command is handled, SIGTERM, SIGINT and SIGQUIT stop the loop.
 *
 * What a daemon watches is either a fixed list (watch: each socket or
 * descriptor with what to do when it can be read) or, for one whose
 * descriptors come and go (the broker's fronts and zygotes), gathered
 * anew before each wait and handed back with what each can do. Each hook
 * may be NULL.
 */
#ifndef VC_LOOP_H
#define VC_LOOP_H

#include "vc_ctl.h"

#include <stddef.h>
#include <zmq.h>

typedef struct vc_watch {
    void *socket; /* a ZeroMQ socket, or NULL and */
    int fd;       /* a descriptor */
    void (*ready)(void *arg);
} vc_watch_t;

/* Items a loop waits on in one turn, at most. */
#define VC_LOOP_ITEMS 1024

typedef struct vc_loop {
    vc_ctl_t *ctl; /* the control socket, answered here */
    int sigfd;     /* signals (vc_proc_signalfd) */
    void *arg;     /* handed to every hook */
    const vc_watch_t *watch;
    size_t nwatch;
    /* The dynamic ones: fill items (at most max), return how many; then
     * ready gets them back with their revents, before the fixed ones are
     * served. */
    size_t (*gather)(void *arg, zmq_pollitem_t *items, size_t max);
    void (*ready)(void *arg, const zmq_pollitem_t *items, size_t n);
    /* The longest the next wait may last, in ms; NULL: until the next tick. */
    long (*timeout)(void *arg);
    /* A signal: return 1 to stop the loop. NULL: TERM, INT, QUIT stop it. */
    int (*on_signal)(void *arg, int sig);
    /* Before each wait. */
    void (*before)(void *arg);
    /* After each turn: nonzero stops the loop. */
    int (*after)(void *arg);
    /* Every tick_ms (1000 if 0), between turns. */
    void (*tick)(void *arg);
    unsigned tick_ms;
} vc_loop_t;

/* Runs until a signal or after() stops it: 0; -1 if waiting failed. */
int vc_loop_run(const vc_loop_t *l);

/* The default signal rule: TERM, INT and QUIT stop. */
int vc_loop_stop_signal(int sig);

#endif
