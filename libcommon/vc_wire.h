/*
 * The request path's contract, shared by vc-front and vc-php: the frames
 * on a worker's link, the front-id, and what became of a request whose
 * worker died. The messages inside the frames are proto/request.proto;
 * the board the pool shares with its fronts is vc_board.h.
 *
 * The messages between the broker (vc-php's main process) and its workers,
 * each over its own link (libcommon/vc_link.h), as lists of frames. A
 * front a worker is lent to speaks the broker's part itself (the front-id
 * then means nothing).
 *
 * broker -> worker:  [front-id][FrontMessage][body...]   a request
 *                    ["C"]                               the client of the request
 *                                                        running left
 *                    ["C"][id, 8 bytes little-endian]    the request id, written
 *                                                        behind the one running
 *                                                        (a front pipelines), is
 *                                                        not run if not begun;
 *                                                        skipped, it is "R"
 * worker -> broker:  ["R"]                               ready for work
 *                    [flag][front-id][BackMessage][body...]
 *                      flag "P": part of a response, more follows
 *                      flag "F": the response is complete, still busy
 *                      flag "D": the response is complete, and ready
 *
 * A front may lend a lent worker clients' connections, up to the pool's
 * php.lend_connections at once (docs/php.md, "Lent connections";
 * daemons/vc-php/client_conn.h). Each has an id, 4 bytes little-endian,
 * the front's choice, below VC_LENT_CONNS_MAX (vc_lent_quiet.h):
 * front -> worker:   ["L"][FrontMessage][terms][bytes...]  a connection; its
 *                                        descriptor comes with it; the request
 *                                        in FrontMessage is its first, as routed;
 *                                        terms: 13 bytes: flags (1: its client is
 *                                        a trusted proxy; 2: the site compresses
 *                                        answers; 4: a second descriptor follows,
 *                                        the worker's quiet words, vc_lent_quiet.h),
 *                                        front.max_body (8 bytes
 *                                        little-endian), the id; bytes: what
 *                                        the front read of it, that request's
 *                                        head first
 *                    ["H"]               hand every connection back
 * worker -> front:   ["B"][id][served][last][bytes...]  it is back, with
 *                                        what the worker read and did not
 *                                        serve; the worker is ready once it
 *                                        holds none, unless last (1 byte) is
 *                                        1: it exits (served: requests, 8
 *                                        bytes little-endian)
 *                    ["X"][id][served][last] the worker closed it; the same
 *                    ["A"][id][records]  requests it served on it, for the
 *                                        access log (vc_lent_log.h), a batch
 *
 * "F" exists for fastcgi_finish_request(): the client has its answer but
 * the worker keeps running the script, so it must not get new work yet.
 */
#ifndef VC_WIRE_H
#define VC_WIRE_H

#include "request.pb-c.h"

#define WIRE_READY 'R'
#define WIRE_PART 'P'
#define WIRE_FINAL 'F'
#define WIRE_DONE 'D'
#define WIRE_CANCEL 'C'
#define WIRE_LEND_CONN 'L'
#define WIRE_WANT_CONN 'H'
#define WIRE_CONN_BACK 'B'
#define WIRE_CONN_CLOSED 'X'
#define WIRE_CONN_LOG 'A'
#define WIRE_LEND_QUIET_PAGE 4 /* in "L"'s flags */

/* A front, inside the broker: its slot and a serial, so an answer for a
 * front that went away and a new one in its slot is dropped, not
 * misdelivered. */
#define FRONT_ID_LEN 8

/* The one rule for a request whose worker died under it, applied by
 * whoever answers its client (the front for a lent worker, the broker for
 * one it relays) and by the broker when it must guess from the board:
 * an answer that had begun is cut; one the pool killed for running too
 * long is a 504; an unstarted GET or HEAD not yet retried runs once more
 * (retryable); anything else is a 502. */
static inline Vc__Outcome vc_outcome_of_death(int started, int timed_out, int retryable)
{
    return started     ? VC__OUTCOME__OUTCOME_ABORTED
           : timed_out ? VC__OUTCOME__OUTCOME_TIMED_OUT
           : retryable ? VC__OUTCOME__OUTCOME_RETRIED
                       : VC__OUTCOME__OUTCOME_FAILED;
}

/* As logs and events say it ("action": "aborted", "504", ...); "" for
 * OUTCOME_NONE (an idle worker, or an answer that was whole). */
static inline const char *vc_outcome_name(Vc__Outcome o)
{
    switch (o) {
    case VC__OUTCOME__OUTCOME_ABORTED: return "aborted";
    case VC__OUTCOME__OUTCOME_TIMED_OUT: return "504";
    case VC__OUTCOME__OUTCOME_RETRIED: return "retried";
    case VC__OUTCOME__OUTCOME_FAILED: return "502";
    case VC__OUTCOME__OUTCOME_CLIENT_GONE: return "client gone";
    default: return "";
    }
}

#endif
