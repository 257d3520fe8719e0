/*
 * Whether this process stood still (mesh.h). A node that was stopped
 * (SIGSTOP, a paused virtual machine) heard nothing while it stood: the
 * others were not silent, it was not listening, and the roster must not
 * call them gone for it. But the loop also waits in calls of its own (a
 * heartbeat JetStream does not store waits up to a second) while libnats's
 * threads go on hearing: that is no stall. So a thread of its own, which
 * does nothing but wake every STALL_TICK_MS, tells the two apart: it does
 * not wake while the process stands still, and does while the loop waits.
 * Each gap is counted once, by the watcher or by the loop's check, whichever
 * sees it first.
 */
#include "mesh.h"
#include "vc_util.h"

#include <time.h>

#define STALL_TICK_MS 50
/* A gap this long between two wakes is a stall (a busy machine may
 * delay a wake by tens of milliseconds). */
#define STALL_MS 300

/* The gap since the last wake (now the last), added to the total if it is
 * a stall. */
static void wake(mesh_t *m)
{
    uint64_t now = vc_mono_ms(), last = atomic_exchange(&m->stall_last_ms, now);
    if (last && now - last > STALL_MS)
        atomic_fetch_add(&m->stalled_ms, now - last - STALL_TICK_MS);
}

static void *watch(void *arg)
{
    mesh_t *m = arg;
    struct timespec tick = {0, STALL_TICK_MS * 1000000L};
    while (!atomic_load(&m->stall_stop)) {
        nanosleep(&tick, NULL);
        wake(m);
    }
    return NULL;
}

int stall_start(mesh_t *m)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    atomic_store(&m->stall_last_ms, vc_mono_ms());
    return pthread_create(&m->stall_thread, NULL, watch, m) == 0 ? 0 : -1;
}

uint64_t stall_since_last(mesh_t *m)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    wake(m);
    uint64_t total = atomic_load(&m->stalled_ms), gap = total - m->stalled_seen_ms;
    m->stalled_seen_ms = total;
    return gap;
}

void stall_stop(mesh_t *m)
{
    VC_CHECK_OBJ(m, MESH_MAGIC);
    atomic_store(&m->stall_stop, 1);
    pthread_join(m->stall_thread, NULL);
}
