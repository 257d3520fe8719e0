#include "worker_clock.h"

#include "vc_shared_page.h"
#include "vc_util.h"

/* In a worker: its own clock, or NULL. */
static worker_clock_t *mine;

int worker_clock_create(worker_clock_t **clock)
{
    return vc_shared_page_create("vc-worker-clock", sizeof(worker_clock_t), (void **)clock);
}

uint64_t worker_clock_since(const worker_clock_t *clock)
{
    return clock ? __atomic_load_n(&clock->since_ms, __ATOMIC_ACQUIRE) : 0;
}

void worker_clock_unmap(worker_clock_t **clock)
{
    vc_shared_page_unmap((void **)clock, sizeof(worker_clock_t));
}

void worker_clock_adopt(int fd)
{
    mine = vc_shared_page_map(fd, sizeof(worker_clock_t));
}

void worker_clock_begin(void)
{
    if (mine)
        __atomic_store_n(&mine->since_ms, vc_mono_ms(), __ATOMIC_RELEASE);
}

void worker_clock_end(void)
{
    if (mine)
        __atomic_store_n(&mine->since_ms, 0, __ATOMIC_RELEASE);
}

void worker_clock_count_refused(void)
{
    if (mine)
        __atomic_fetch_add(&mine->refused_writes, 1, __ATOMIC_RELAXED);
}

uint64_t worker_clock_refused(const worker_clock_t *clock)
{
    return clock ? __atomic_load_n(&clock->refused_writes, __ATOMIC_RELAXED) : 0;
}
