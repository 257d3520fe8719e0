/*
 * Which of a worker's lent connections are quiet (docs/php.md, "Lent
 * connections"): a connection is quiet while the worker holds nothing of
 * it, no byte read and not served and no answer partly written, and waits
 * for the client's next request. A worker that dies (killed, crashed)
 * leaves its quiet connections to the front, which takes them back as if
 * just accepted: their clients lose nothing. Any other it held is closed
 * with it.
 *
 * One word per connection id (vc_wire.h; the front gives ids below
 * VC_LENT_CONNS_MAX), in a page the front makes for each lent worker and
 * sends with the first connection it lends it (vc_shared_page.h). The
 * front sets a connection's word to 0 before it lends it; the worker
 * sets it to 1 when it has written a whole answer and read nothing past
 * it, and to 0 before each read. So the word is 1 only when the worker
 * died holding nothing, or between its store and its read, which it did
 * not make. The word is the worker's say, as is everything it writes to
 * the client: a worker that lies can only have the front read its own
 * client's stream from the middle.
 */
#ifndef VC_LENT_QUIET_H
#define VC_LENT_QUIET_H

#include <stdint.h>

#define VC_LENT_CONNS_MAX 64 /* php.lend_connections' most */

typedef struct vc_lent_quiet {
    uint32_t word[VC_LENT_CONNS_MAX];
} vc_lent_quiet_t;

static inline void vc_lent_quiet_set(vc_lent_quiet_t *q, uint32_t id, int quiet)
{
    if (q && id < VC_LENT_CONNS_MAX)
        __atomic_store_n(&q->word[id], (uint32_t)quiet, __ATOMIC_RELEASE);
}

static inline int vc_lent_quiet_is(const vc_lent_quiet_t *q, uint32_t id)
{
    return q && id < VC_LENT_CONNS_MAX && __atomic_load_n(&q->word[id], __ATOMIC_ACQUIRE) != 0;
}

#endif
