/*
 * vc_queue: the one FIFO of waiting work the daemons keep (requests
 * waiting for a lent worker in vc-front, jobs waiting for a worker in the
 * broker, events waiting for a webhook in vc-bus). Intrusive: an item
 * holds a vc_qlink_t and is found from it with VC_QUEUE_ITEM, so pushing
 * allocates nothing. Bounded: max (VC_QUEUE_UNBOUNDED: none; 0: nothing
 * may wait) is where vc_queue_full() says new work must be refused; items
 * put back (at the head, or a batch that failed) always fit, since they
 * were in it before.
 */
#ifndef VC_QUEUE_H
#define VC_QUEUE_H

#include <stddef.h>
#include <stdint.h>

#define VC_QUEUE_UNBOUNDED SIZE_MAX

typedef struct vc_qlink {
    struct vc_qlink *next;
} vc_qlink_t;

typedef struct vc_queue {
    vc_qlink_t *head, *tail;
    size_t len, max;
} vc_queue_t;

#define VC_QUEUE_ITEM(link, type, member) ((type *)(void *)((char *)(link)-offsetof(type, member)))

static inline int vc_queue_full(const vc_queue_t *q)
{
    return q->len >= q->max;
}

static inline void vc_queue_push(vc_queue_t *q, vc_qlink_t *l)
{
    l->next = NULL;
    if (q->tail)
        q->tail->next = l;
    else
        q->head = l;
    q->tail = l;
    q->len++;
}

static inline void vc_queue_push_head(vc_queue_t *q, vc_qlink_t *l)
{
    l->next = q->head;
    q->head = l;
    if (q->tail == NULL)
        q->tail = l;
    q->len++;
}

static inline vc_qlink_t *vc_queue_pop(vc_queue_t *q)
{
    vc_qlink_t *l = q->head;
    if (l) {
        q->head = l->next;
        if (q->head == NULL)
            q->tail = NULL;
        q->len--;
        l->next = NULL;
    }
    return l;
}

/* Takes l out wherever it is: 1, or 0 if it is not in q. */
static inline int vc_queue_remove(vc_queue_t *q, vc_qlink_t *l)
{
    for (vc_qlink_t **pp = &q->head, *prev = NULL; *pp; prev = *pp, pp = &(*pp)->next)
        if (*pp == l) {
            *pp = l->next;
            if (q->tail == l)
                q->tail = prev;
            q->len--;
            l->next = NULL;
            return 1;
        }
    return 0;
}

/* Up to n items from q's head, in order, into out (emptied, unbounded). */
static inline void vc_queue_take(vc_queue_t *q, size_t n, vc_queue_t *out)
{
    *out = (vc_queue_t){.max = VC_QUEUE_UNBOUNDED};
    while (out->len < n && q->head)
        vc_queue_push(out, vc_queue_pop(q));
}

/* back's items before q's, in their order; back is left empty. */
static inline void vc_queue_put_back(vc_queue_t *q, vc_queue_t *back)
{
    if (back->head == NULL)
        return;
    back->tail->next = q->head;
    q->head = back->head;
    if (q->tail == NULL)
        q->tail = back->tail;
    q->len += back->len;
    back->head = back->tail = NULL;
    back->len = 0;
}

#endif
