/*
 * fronts: the broker's end of its links to the vc-front processes. The
 * broker listens at the "php" endpoint (a Unix socket by default, TCP for
 * containers); each front connects once and sends requests over its link,
 * and answers go back over the same link (libcommon/vc_link.h).
 *
 * A front is named, inside the broker, by a front-id: its slot and a serial
 * (FRONT_ID_LEN bytes), so an answer for a front that went away and a new
 * one in its slot is dropped, not misdelivered. Answers are queued per
 * front and written without blocking once per turn of the broker's loop: a
 * slow or stopped front never holds up the others.
 */
#ifndef VC_PHP_FRONTS_H
#define VC_PHP_FRONTS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <zmq.h>

#include "vc_board.h"
#include "vc_wire.h"

typedef struct fronts fronts_t;

/* One whole message from a front: its frames, valid during the call. */
typedef void (*fronts_message_cb)(void *arg, const void *fid, const struct iovec *frames, int n);

/* Listens at endpoint; NULL (logged) if it cannot. Fronts find it once
 * fronts_publish put it in place (the pool is ready: a predecessor still
 * serves until then). */
fronts_t *fronts_new(const char *endpoint);
int fronts_publish(fronts_t *fs);
void fronts_destroy(fronts_t **fs);
/* link_key: a front over TCP must prove it holds it (vc_link_auth.h)
 * before it is one; NULL or "": no check. */
void fronts_set_key(fronts_t *fs, const char *key);

/* The listener and each link, for zmq_poll. With accepting 0 (stopping)
 * no new front is taken; linked ones are still read. */
size_t fronts_pollitems(fronts_t *fs, zmq_pollitem_t *items, size_t max, int accepting);
size_t fronts_count(fronts_t *fs); /* pollitems it may fill */
/* Fronts whose link is open. */
size_t fronts_linked(const fronts_t *fs);
/* After the poll: accepts fronts, reads their messages (cb for each), and
 * writes what was queued for those now writable. */
void fronts_on_poll(fronts_t *fs, const zmq_pollitem_t *items, size_t n, fronts_message_cb cb, void *arg);

/* Queues a message for the front fid names; -1 if that front is gone
 * (the answer is dropped). */
int fronts_send(fronts_t *fs, const void *fid, size_t fidlen, const struct iovec *frames, size_t n);
/* The front fid names has more than FRONT_BACKLOG bytes queued: the
 * broker stops reading the workers that answer it until it catches up, so
 * they wait in their writes and the queue stays bounded. */
#define FRONT_BACKLOG (4u * 1024u * 1024u)
int fronts_backlogged(fronts_t *fs, const void *fid, size_t fidlen);
/* Writes what is queued, without blocking (once per turn of the loop). */
void fronts_flush(fronts_t *fs);

/* Lending (proto/request.proto: Lend). A front linked (board NULL), or
 * gone (linked 0): called as its link closes, with its board (NULL if
 * nothing was lent to it), before the board is unmapped. */
typedef void (*fronts_change_cb)(void *arg, const void *fid, vc_board_t *board, int linked);
void fronts_on_change(fronts_t *fs, fronts_change_cb cb, void *arg);
/* The next front, in turn, that workers can be lent to (linked over a
 * Unix socket, keeping up with its answers): 1 and its id in fid, or 0. */
int fronts_lender(fronts_t *fs, char fid[FRONT_ID_LEN]);
/* Passes a worker's link to the front (a copy: the caller keeps its own
 * and must not use it while lent). 0, or -1 if it cannot go now (the
 * front is gone, or has not read what it was sent). */
int fronts_lend(fronts_t *fs, const void *fid, uint32_t slot, pid_t pid, int worker_fd);
/* The process of a front linked over a Unix socket, or 0. */
pid_t fronts_pid(fronts_t *fs, const void *fid);
/* The board of a front workers were lent to, or NULL. */
vc_board_t *fronts_board(fronts_t *fs, const void *fid);
/* The boards of all linked fronts (at most max; MAX_FRONTS is enough). */
#define FRONTS_MAX 256
size_t fronts_boards(fronts_t *fs, vc_board_t **out, size_t max);

/* Leaving (proto/request.proto): no new front is taken, and the socket
 * file goes unless a successor's has replaced it. */
void fronts_unlisten(fronts_t *fs);
/* The ids of the linked fronts (at most max). */
size_t fronts_ids(fronts_t *fs, char (*ids)[FRONT_ID_LEN], size_t max);
/* fid's front said Left: requests no longer come on its link. */
void fronts_left(fronts_t *fs, const void *fid);
/* Closes fid's link if it said Left and nothing waits to be written to
 * it: 1 if it did. */
int fronts_close_if_done(fronts_t *fs, const void *fid);

#endif
