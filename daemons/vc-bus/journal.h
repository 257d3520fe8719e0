/*
 * The event journal: the most recent events, in LMDB database "events", so
 * `vc events --since 5m` can show what happened before it was run.
 *
 * Key: time_us (big-endian u64) then a 4-byte sequence, so keys are unique
 * and sorted by time. Value: the packed Envelope, as it came off the wire.
 * Bounded by count: the oldest are dropped past `max` entries.
 */
#ifndef VC_BUS_JOURNAL_H
#define VC_BUS_JOURNAL_H

#include <stddef.h>
#include <stdint.h>

#include "vc_store.h"

typedef struct journal journal_t;

/* st is borrowed and must outlive the journal. */
journal_t *journal_new(vc_store_t *st, uint64_t max);
void journal_destroy(journal_t **j);
/* Appends one packed Envelope; time_us from the envelope. 0 or -error. */
int journal_append(journal_t *j, uint64_t time_us, const void *env, size_t len);
uint64_t journal_count(journal_t *j);
uint64_t journal_appended(journal_t *j);

#endif
