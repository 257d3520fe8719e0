#include "vc_shared_page.h"

#include "vc_log.h"
#include "vc_util.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static void *map_shared(int fd, size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    return p == MAP_FAILED ? NULL : p;
}

int vc_shared_page_create(const char *name, size_t size, void **map)
{
    *map = NULL;
    int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0 || ftruncate(fd, (off_t)size) < 0 ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0 ||
        (*map = map_shared(fd, size)) == NULL) {
        vc_log(VC_LOG_ERR, "shared_page", "cannot make %s: %s", name, vc_strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

void *vc_shared_page_map(int fd, size_t size)
{
    if (fd < 0)
        return NULL;
    struct stat st;
    int seals = fcntl(fd, F_GET_SEALS);
    void *p = NULL;
    /* Sealed, so that whoever else holds it cannot shrink it either. */
    if (fstat(fd, &st) == 0 && (size_t)st.st_size >= size && seals >= 0 && (seals & F_SEAL_SHRINK))
        p = map_shared(fd, size);
    close(fd);
    return p;
}

void vc_shared_page_unmap(void **map, size_t size)
{
    if (*map)
        munmap(*map, size);
    *map = NULL;
}
