/*
 * vc_board: what a front does with the workers the broker lent it, in
 * memory both share (a memfd the broker makes for each front and passes
 * with its first lend). A lent worker is driven by the front alone, so
 * the broker is not woken for its requests; it reads the board instead,
 * for `vc status`, pool sizing, time limits and the report of a worker
 * that died mid-request.
 *
 * A slot is written by one front only (the broker writes `timed_out`,
 * before it kills the worker, and clears a slot it gives out). A reader
 * takes a consistent copy with vc_board_read: seq is odd while the front
 * writes. Nothing the broker reads here is trusted further than a string
 * in a log: strings are cut at their size.
 */
#ifndef VC_BOARD_H
#define VC_BOARD_H

#include <stdint.h>
#include <string.h>

/* php.max_workers is at most this: every worker has a slot of its own. */
#define VC_BOARD_SLOTS 4096

enum vc_board_state { VC_BOARD_IDLE, VC_BOARD_BUSY, VC_BOARD_FINISHING };

typedef struct vc_board_slot {
    uint32_t seq;
    uint32_t state;      /* enum vc_board_state */
    uint32_t started;    /* the answer has begun */
    uint32_t idempotent; /* GET or HEAD */
    uint32_t retries;
    uint32_t timed_out; /* set by the broker: killed for running too long */
    uint64_t since_ms;  /* CLOCK_MONOTONIC, as vc_mono_ms() */
    uint64_t served;
    char what[208]; /* "GET /x.php" */
    char script[256];
} vc_board_slot_t;

typedef struct vc_board {
    uint32_t queued; /* requests waiting in the front for a lent worker */
    uint32_t pad;
    /* The front's counts of what the broker would have counted. */
    uint64_t accepted, completed, rejected_503, timed_out_504, failed_502, retried;
    vc_board_slot_t slot[VC_BOARD_SLOTS];
} vc_board_t;

static inline void vc_board_begin(vc_board_slot_t *s)
{
    __atomic_store_n(&s->seq, s->seq + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
}

static inline void vc_board_end(vc_board_slot_t *s)
{
    __atomic_store_n(&s->seq, s->seq + 1, __ATOMIC_RELEASE);
}

/* A copy of a slot no write was in the middle of (a few tries, then the
 * last copy: it is only ever used for reports). */
static inline void vc_board_read(const vc_board_slot_t *s, vc_board_slot_t *out)
{
    for (int tries = 0; tries < 16; tries++) {
        uint32_t a = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
        memcpy(out, (const void *)s, sizeof(*out));
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (!(a & 1) && __atomic_load_n(&s->seq, __ATOMIC_RELAXED) == a)
            break;
    }
    out->what[sizeof(out->what) - 1] = '\0';
    out->script[sizeof(out->script) - 1] = '\0';
}

#endif
