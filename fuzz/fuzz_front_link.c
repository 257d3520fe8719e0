/* libFuzzer: the front's handling of what its pool sends
 * (daemons/vc-front/php/backend.c, lent.c, stream.c, php_pool.c), past the
 * parsers: any sequence of BackMessages from the broker (answers for any
 * id, lends with and without a worker's link, recalls of any slot,
 * leavings naming any request) and of bytes from lent workers (which run
 * the application's code), while up to three clients come, wait (held
 * behind a busy worker's job too) and may leave. The
 * front must neither crash nor trip an invariant (VC_ASSERT,
 * VC_CHECK_OBJ), nor answer a client twice.
 *
 * The clients are h2o requests on a connection of our own, as libh2o's
 * own unit tests make them (t/00unit/test.c, "loopback"): what h2o would
 * write to the socket is collected instead. The pool's endpoint does not
 * exist, so what the front sends waits in its link's buffer.
 *
 * Input: records (records.h). */
#include "core/handoff.h"
#include "htaccess_cache.h"
#include "core/htaccess_respond.h"
#include "php/backend_internal.h"
#include "records.h"
#include "vc_config.h"
#include "vc_log.h"
#include "vc_util.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#define NCLIENTS 3
#define NWORKERS 4

/* What the front's core/conn.c would give: no connection state (as on the
 * admin listener), so no budget is charged. */
conn_state_t *conn_state_of_req(h2o_req_t *req)
{
    (void)req;
    return NULL;
}

void conn_state_release(conn_state_t *c)
{
    (void)c;
}

/* And core/handoff.c's: requests here have no site, so no answer is
 * handed to the front's file handler. */
handoff_kind_t handoff_header(const site_rt_t *s, const char *name, int status)
{
    (void)s, (void)name, (void)status;
    return HANDOFF_NONE;
}

int handoff_keeps(handoff_kind_t k, const char *name)
{
    (void)k, (void)name;
    return 1;
}

void handoff_serve(front_t *f, site_rt_t *s, h2o_req_t *req, handoff_kind_t k, const char *value, size_t len)
{
    (void)f, (void)s, (void)req, (void)k, (void)value, (void)len;
    abort(); /* never asked */
}

/* And libhtaccess/htaccess_cache.c's: no site, so no tree with a .htaccess (a
 * connection is never lent here anyway: none has a connection state). */
int htaccess_none_above(const char *file, size_t root_len)
{
    (void)file, (void)root_len;
    return 1;
}

/* And core/htaccess_respond.c's: no site, so no .htaccess changes the
 * answer's status. */
int htaccess_respond_status(h2o_req_t *req, int status)
{
    (void)req;
    return status;
}

typedef struct client {
    h2o_conn_t super;
    h2o_ostream_t final;
    h2o_req_t req;
    int done; /* the answer ended */
    int live;
} client_t;

static front_t f = {.magic = FRONT_MAGIC};
static h2o_hostconf_t *hosts[2];
static h2o_pathconf_t *php_path;

static void on_send(h2o_ostream_t *self, h2o_req_t *req, h2o_iovec_t *bufs, size_t n, h2o_send_state_t state)
{
    client_t *c = H2O_STRUCT_FROM_MEMBER(client_t, final, self);
    (void)bufs;
    (void)n;
    if (c->done)
        abort(); /* a second answer */
    if (h2o_send_state_is_in_progress(state))
        h2o_proceed_response(req);
    else
        c->done = 1;
}

static void client_open(client_t *c, const char *method)
{
    static const h2o_conn_callbacks_t callbacks; /* none is called here */
    memset(c, 0, sizeof(*c));
    c->super.ctx = &f.ctx;
    c->super.hosts = hosts;
    c->super.callbacks = &callbacks;
    h2o_init_request(&c->req, &c->super, NULL);
    c->req._ostr_top = &c->final;
    c->final.do_send = on_send;
    c->req.pathconf = php_path;
    c->req.method = h2o_iovec_init(method, strlen(method));
    c->req.path = h2o_iovec_init(H2O_STRLIT("/x.php"));
    c->req.version = 0x101;
    c->live = 1;
}

static void client_close(client_t *c)
{
    if (c->live)
        h2o_dispose_request(&c->req);
    c->live = 0;
}

static void setup(void)
{
    signal(SIGPIPE, SIG_IGN);
    vc_log_set_level(0);
    Vc__ConfigVersion v = VC__CONFIG_VERSION__INIT;
    char err[256];
    f.d.cfg = vc_config_parse(&v, "/nonexistent", err, sizeof(err));
    if (f.d.cfg == NULL)
        abort();
    /* Requests held behind a lent worker's job (pipeline.c) whenever one
     * waits, whatever the jobs took: every path of pipelining is reached. */
    ((vc_config_t *)f.d.cfg)->php.pipeline_below_ms = 60000;
    f.settings = front_settings(f.d.cfg);
    h2o_config_init(&f.gc);
    hosts[0] = h2o_config_register_host(&f.gc, h2o_iovec_init(H2O_STRLIT("default")), 65535);
    php_path = h2o_config_register_path(hosts[0], "/", 0);
    h2o_context_init(&f.ctx, h2o_evloop_create(), &f.gc);
    f.temp_fd = -1;
}

/* A board for the lends that bring one, as the broker makes it. */
static int board_fd(void)
{
    int fd = memfd_create("fuzz-board", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, sizeof(vc_board_t)) < 0)
        abort();
    return fd;
}

static void push_fd(vc_link_buf_t *b, int fd)
{
    if (b->nfds == b->capfds) {
        b->capfds = b->capfds ? 2 * b->capfds : 4;
        b->fds = vc_realloc(b->fds, b->capfds * sizeof(int));
    }
    b->fds[b->nfds++] = fd;
}

static void deliver(backend_t *be, const uint8_t *p, size_t len, size_t split)
{
    vc_frames_t fr = {0};
    struct iovec iov[2] = {{(void *)p, split}, {(void *)(p + split), len - split}};
    vc_frames_copy(&fr, iov, split < len ? 2 : 1);
    backend_on_message(be, &fr, NULL);
    vc_frames_fini(&fr);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int once;
    if (!once) {
        once = 1;
        setup();
    }
    php_pool_t *pool = php_pool_new(&f, &f.d.cfg->php, "ipc:///nonexistent/vc-fuzz/php.sock");
    client_t clients[NCLIENTS];
    int nclients = 0;
    int workers[NWORKERS]; /* our ends of lent workers' links */
    int nworkers = 0;
    fuzz_record_t r;
    for (size_t at = 0; fuzz_next_record(data, size, &at, &r);) {
        uint8_t kind = r.kind;
        size_t len = r.len;
        const uint8_t *p = r.p;
        backend_t *be = pool->older && kind & 0x80 ? pool->older : pool->cur;
        switch (kind % 6) {
        case 0: /* a BackMessage from the broker, with a body frame */
            deliver(be, p, len, len ? p[0] % (len + 1) : 0);
            break;
        case 1: /* the same, with a worker's link (and a board) attached */
            if (nworkers < NWORKERS) {
                int sv[2];
                if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
                    abort();
                push_fd(&be->in, sv[0]);
                push_fd(&be->in, board_fd());
                workers[nworkers++] = sv[1];
            }
            deliver(be, p, len, len);
            break;
        case 2: /* bytes from a lent worker */
            if (nworkers && len && write(workers[(kind / 6) % nworkers], p, len) < 0)
                break;
            h2o_evloop_run(f.ctx.loop, 0);
            break;
        case 3: /* a client leaves */
            if (nclients)
                client_close(&clients[(kind / 6) % nclients]);
            break;
        case 4: /* a lent worker exits */
            if (nworkers) {
                int k = (kind / 6) % nworkers;
                close(workers[k]);
                workers[k] = workers[--nworkers];
            }
            h2o_evloop_run(f.ctx.loop, 0);
            break;
        default: /* a client comes (ids 1, 2, 3), or a second passes */
            if (nclients < NCLIENTS) {
                static const char *const methods[NCLIENTS] = {"GET", "POST", "HEAD"};
                client_t *c = &clients[nclients++];
                client_open(c, methods[nclients - 1]);
                Vc__RequestHead head = VC__REQUEST_HEAD__INIT;
                head.method = (char *)methods[nclients - 1];
                head.script_filename = "/srv/x.php";
                php_pool_submit(pool, NULL, &c->req, &head); /* no site: no handoffs */
            } else {
                php_pool_tick(pool);
            }
            h2o_evloop_run(f.ctx.loop, 0);
            break;
        }
    }
    for (int i = 0; i < nclients; i++)
        client_close(&clients[i]);
    for (int i = 0; i < nworkers; i++)
        close(workers[i]);
    h2o_evloop_run(f.ctx.loop, 0);
    php_pool_destroy(&pool);
    for (int i = 0; i < 3; i++)
        h2o_evloop_run(f.ctx.loop, 0); /* h2o frees closed sockets here */
    return 0;
}
