#ifndef VC_FANOUT_H
#define VC_FANOUT_H
/*
 * One thread a peer: a call to each of n peers at once, off the event
 * loop, so the loop stays free and two nodes that ask each other at once
 * do not wait on each other's loop (vc-fed's spread and its list of
 * holders). The loop learns that the last call ended from last(), called
 * on that call's thread (a wake-up of the loop, never its state), then
 * reads the results and frees the fan-out with vc_fanout_end().
 */
#include <stddef.h>

typedef struct vc_fanout vc_fanout_t;

/* Runs run(item) on a thread of its own for each of the n items, each
 * `size` bytes apart from items. A thread that cannot be started counts
 * as a call that ended at once: failed(item, errno) is called for it
 * first, on this thread. */
vc_fanout_t *vc_fanout_start(void *items, size_t n, size_t size, void (*run)(void *item),
                             void (*failed)(void *item, int err), void (*last)(void *arg), void *arg);
/* Whether every call has ended. */
int vc_fanout_over(const vc_fanout_t *fo);
/* Waits for every thread (at once when vc_fanout_over()) and frees fo. */
void vc_fanout_end(vc_fanout_t *fo);

#endif
