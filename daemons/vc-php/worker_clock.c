#include "worker_clock.h"

#include "vc_log.h"
#include "vc_util.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

/* In a worker: its own clock, or NULL. */
static worker_clock_t *mine;

static worker_clock_t *map(int fd)
{
    void *p = mmap(NULL, sizeof(worker_clock_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    return p == MAP_FAILED ? NULL : p;
}

int worker_clock_create(worker_clock_t **clock)
{
    *clock = NULL;
    int fd = memfd_create("vc-worker-clock", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    /* Sealed at its size: a worker cannot shrink it under the broker's
     * mapping (a read past the end of a shrunk memfd is SIGBUS). */
    if (fd < 0 || ftruncate(fd, sizeof(worker_clock_t)) < 0 ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0 || (*clock = map(fd)) == NULL) {
        vc_log(VC_LOG_ERR, "pool", "cannot make a worker's clock: %s", vc_strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

uint64_t worker_clock_since(const worker_clock_t *clock)
{
    return clock ? __atomic_load_n(&clock->since_ms, __ATOMIC_ACQUIRE) : 0;
}

void worker_clock_unmap(worker_clock_t **clock)
{
    if (*clock)
        munmap(*clock, sizeof(worker_clock_t));
    *clock = NULL;
}

void worker_clock_adopt(int fd)
{
    if (fd < 0)
        return;
    mine = map(fd);
    close(fd);
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
