/*
 * Tombstones: an unsafe method's invalidation, seen by every front
 * process of the node before its answer leaves (RFC 9111 4.4). vc-cache,
 * the only writer of the cache, drops the entry a little later; a GET
 * that came in between, once the client had its PUT's answer, would still
 * find it. So the front that sends the invalidation first notes, in a
 * table the node's fronts share (RUN/cache-tombs, a file mapped by all),
 * the last sequence number vc-cache had given an entry: a hit on an entry
 * of that key written no later is a miss. (Not a time: an entry's
 * stored_ms is when PHP made the answer, by its Date, to the second.)
 *
 * The table is a fixed array of slots, a key hashed to one: two keys on
 * one slot cost the other a miss, never a stale page. One atomic load a
 * hit. A front that cannot map it says so once and notes nothing (the
 * invalidation still reaches vc-cache, as before). It lives in the run
 * directory, with the suite's run: sequence numbers are those of the
 * cache beside it.
 */
#include "cache_internal.h"
#include "vc_log.h"
#include "vc_util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define SLOTS (1u << 16) /* 512 KiB */

static uint64_t *slots;
static int tried;

static void map_table(void)
{
    tried = 1;
    const vc_config_t *cfg = cache_front()->d.cfg;
    char *path = vc_asprintf("%s/cache-tombs", cfg->run_dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    struct stat st;
    void *p = MAP_FAILED;
    /* Whoever comes first sizes it; a file of another size is not ours. */
    if (fd >= 0 && fstat(fd, &st) == 0 &&
        (st.st_size == SLOTS * sizeof(uint64_t) || (st.st_size == 0 && ftruncate(fd, SLOTS * sizeof(uint64_t)) == 0)))
        p = mmap(NULL, SLOTS * sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        vc_log(VC_LOG_ERR, "cache",
               "the fronts' table of invalidations (%s) could not be mapped: %m; a page an unsafe method changed may "
               "be served until vc-cache has dropped it",
               path);
    else
        slots = p;
    if (fd >= 0)
        close(fd);
    free(path);
}

static uint64_t *slot_of(const char *key, size_t klen)
{
    if (!tried)
        map_table();
    return slots ? &slots[vc_hash_bytes(key, klen) & (SLOTS - 1)] : NULL;
}

void cache_tomb_set(const char *key, size_t klen, uint64_t seq)
{
    uint64_t *s = slot_of(key, klen);
    if (s == NULL || seq == 0)
        return;
    /* The highest wins: another front may note a lower one at once. */
    uint64_t was = __atomic_load_n(s, __ATOMIC_RELAXED);
    while (was < seq && !__atomic_compare_exchange_n(s, &was, seq, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
        ;
}

int cache_tomb_covers(const char *key, size_t klen, uint64_t seq)
{
    uint64_t *s = slot_of(key, klen), t = s ? __atomic_load_n(s, __ATOMIC_ACQUIRE) : 0;
    return seq > 0 && seq <= t;
}
