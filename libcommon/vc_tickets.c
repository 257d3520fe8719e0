#include "vc_tickets.h"
#include "vc_util.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int vc_tickets_load(const char *path, vc_ticket_key_t keys[VC_TICKETS_KEEP])
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, keys, sizeof(vc_ticket_key_t) * VC_TICKETS_KEEP);
    close(fd);
    return n > 0 ? (int)(n / (ssize_t)sizeof(vc_ticket_key_t)) : 0;
}

int vc_tickets_rotate(const char *path, long max_age_s)
{
    struct stat st;
    if (stat(path, &st) == 0 && time(NULL) - st.st_mtime < max_age_s)
        return 0;
    if (sodium_init() < 0)
        return -1;
    vc_ticket_key_t keys[VC_TICKETS_KEEP + 1];
    randombytes_buf(&keys[0], sizeof(keys[0]));
    int old = vc_tickets_load(path, keys + 1);
    int total = 1 + (old > VC_TICKETS_KEEP - 1 ? VC_TICKETS_KEEP - 1 : old);
    char *tmp = vc_asprintf("%s.%d.tmp", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int r = -1;
    if (fd >= 0) {
        ssize_t want = (ssize_t)(sizeof(vc_ticket_key_t) * (size_t)total);
        if (write(fd, keys, (size_t)want) == want && fsync(fd) == 0 && close(fd) == 0 && rename(tmp, path) == 0)
            r = 1;
        else
            close(fd);
    }
    if (r < 0)
        unlink(tmp);
    free(tmp);
    sodium_memzero(keys, sizeof(keys));
    return r;
}
