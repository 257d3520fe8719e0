/* Forget real paths when a deployed site's current link moves
 * (release_watch.h). */
#include "vc_util.h"
#include "release_watch.h"
#include "route.h"
#include "vc_log.h"

#include <errno.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

static h2o_socket_t *watch_sock;

static void on_change(h2o_socket_t *sock, const char *err)
{
    (void)err;
    /* One link moved or many: everything kept is forgotten once. */
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    int moved = 0;
    for (ssize_t n; (n = read(h2o_socket_get_fd(sock), buf, sizeof(buf))) > 0;)
        for (char *p = buf; p < buf + n;) {
            const struct inotify_event *e = (const struct inotify_event *)p;
            moved |= e->len && strcmp(e->name, "current") == 0;
            p += sizeof(*e) + e->len;
        }
    if (moved)
        route_forget_real_paths();
}

void release_watch_start(front_t *f)
{
    VC_CHECK_OBJ(f, FRONT_MAGIC);
    int fd = -1;
    for (size_t i = 0; i < f->d.cfg->nsites; i++) {
        const char *dir = f->d.cfg->sites[i].deploy_to;
        if (dir == NULL)
            continue;
        if (fd < 0 && (fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0) {
            vc_log(VC_LOG_WARN, "route",
                   "inotify_init1() failed: %s; a deployed site's new release shows within "
                   "a second",
                   strerror(errno));
            return;
        }
        if (inotify_add_watch(fd, dir, IN_MOVED_TO | IN_CREATE | IN_ONLYDIR) < 0)
            vc_log(VC_LOG_WARN, "route", "cannot watch \"%s\": %s; site \"%s\"'s new release shows within a second",
                   dir, strerror(errno), f->d.cfg->sites[i].name);
    }
    if (fd < 0)
        return;
    watch_sock = h2o_evloop_socket_create(f->ctx.loop, fd, H2O_SOCKET_FLAG_DONT_READ);
    h2o_socket_read_start(watch_sock, on_change);
}

void release_watch_stop(void)
{
    if (watch_sock) {
        h2o_socket_read_stop(watch_sock);
        h2o_socket_close(watch_sock);
        watch_sock = NULL;
    }
}
