/*
 * The purges from other nodes this node applied (VC_DB_CACHE_APPLIED):
 * JetStream delivers a purge again when its ack was lost (a leader cut
 * off, a consumer moved), and applying a purge by tag twice drops the
 * pages stored since the first. A purge is known by its origin node and
 * its id; the record is kept as long as the stream keeps the purge
 * (cluster.purge_keep), in the node's LMDB, so a restart forgets none.
 */
#ifndef VC_CACHE_APPLIED_H
#define VC_CACHE_APPLIED_H

#include "vc_store.h"

#include <stdint.h>

/* 1 if origin's purge id was applied here, 0 if not, or -errno. */
int applied_seen(vc_store_t *st, const char *origin, const char *id);
/* Notes it applied at now_ms. 0, or -errno. */
int applied_note(vc_store_t *st, const char *origin, const char *id, int64_t now_ms);
/* Forgets those applied before before_ms: how many, or -errno. */
long applied_forget(vc_store_t *st, int64_t before_ms);

#endif
