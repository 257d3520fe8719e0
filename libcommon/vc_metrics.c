#include "vc_metrics.h"
#include "vc_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A daemon's file is read up to this size: metrics, not a dump. */
#define MAX_FILE (256 * 1024)

int vc_metrics_publish(const vc_config_t *cfg, const char *daemon, const char *text, size_t len)
{
    char *dir = vc_asprintf("%s/metrics", cfg->run_dir);
    char *path = vc_asprintf("%s/%s.prom", dir, daemon), *tmp = vc_asprintf("%s.tmp", path);
    int r = 0;
    if (mkdir(dir, 0750) < 0 && errno != EEXIST)
        r = -errno;
    FILE *f = r ? NULL : fopen(tmp, "we");
    if (r == 0 && f == NULL)
        r = -errno;
    if (f) {
        if (fwrite(text, 1, len, f) != len)
            r = -EIO;
        if (fclose(f) != 0 && r == 0)
            r = -errno;
        if (r == 0 && rename(tmp, path) < 0)
            r = -errno;
        if (r < 0)
            unlink(tmp);
    }
    free(tmp);
    free(path);
    free(dir);
    return r;
}

int vc_metrics_publish_from(const vc_config_t *cfg, const char *daemon, void (*write)(FILE *out, const void *arg),
                            const void *arg)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    if (out == NULL)
        return -errno;
    write(out, arg);
    fclose(out);
    int r = vc_metrics_publish(cfg, daemon, buf, len);
    free(buf);
    return r;
}

static void append_file(int dfd, const char *name, FILE *out)
{
    int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    if (fd < 0)
        return;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= MAX_FILE &&
        time(NULL) - st.st_mtime <= VC_METRICS_STALE_S) {
        char *buf = vc_malloc((size_t)st.st_size + 1);
        ssize_t n = read(fd, buf, (size_t)st.st_size);
        if (n > 0)
            fwrite(buf, 1, (size_t)n, out);
        free(buf);
    }
    close(fd);
}

void vc_metrics_gather(const vc_config_t *cfg, FILE *out)
{
    char *dir = vc_asprintf("%s/metrics", cfg->run_dir);
    DIR *d = opendir(dir);
    free(dir);
    if (d == NULL)
        return;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t n = strlen(e->d_name);
        if (n > 5 && strcmp(e->d_name + n - 5, ".prom") == 0)
            append_file(dirfd(d), e->d_name, out);
    }
    closedir(d);
}
