/* The fake front and workers of tests/broker_peer.h. */
#include "broker_peer.h"

#include <poll.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/un.h>

static vc_config_t *parse_conf(const char *text, const char *data_dir)
{
    Vc__ConfigVersion v = VC__CONFIG_VERSION__INIT;
    Vc__ConfigSource src = VC__CONFIG_SOURCE__INIT, *files[1] = {&src};
    src.name = "/etc/vc/vc.conf";
    src.text.data = (uint8_t *)text;
    src.text.len = strlen(text);
    v.files = files;
    v.n_files = 1;
    char err[512];
    vc_config_t *cfg = vc_config_parse(&v, data_dir, err, sizeof(err));
    if (cfg == NULL) {
        fprintf(stderr, "broker_peer: the configuration: %s\n", err);
        exit(2);
    }
    return cfg;
}

void bp_turns(broker_peer_t *bp, int n)
{
    for (int t = 0; t < n; t++) {
        zmq_pollitem_t items[FRONTS_MAX + 2];
        size_t nf = fronts_pollitems(bp->fronts, items, FRONTS_MAX + 1, !bp->d->leaving);
        items[nf] = (zmq_pollitem_t){NULL, broker_poll_fd(bp->d), ZMQ_POLLIN, 0};
        broker_watch(bp->d);
        zmq_poll(items, (int)nf + 1, bp->poll_ms);
        if (items[nf].revents & ZMQ_POLLIN)
            broker_on_workers(bp->d);
        fronts_on_poll(bp->fronts, items, nf, broker_on_front, bp->d);
        fronts_flush(bp->fronts);
    }
}

void bp_start(broker_peer_t *bp, const char *conf, int workers)
{
    memset(bp, 0, sizeof(*bp));
    bp->poll_ms = 5;
    vc_log_set_level(VC_LOG_CRIT);
    char tmpl[] = "/tmp/vc-broker-test-XXXXXX";
    if (mkdtemp(tmpl) == NULL)
        exit(2);
    bp->dir = vc_strdup(tmpl);
    bp->cfg = parse_conf(conf, bp->dir);
    bp->endpoint = vc_asprintf("ipc://%s/php.sock", bp->dir);
    bp->fronts = fronts_new(bp->endpoint);
    bp->d = broker_new(bp->cfg, bp->fronts, NULL);
    if (bp->fronts == NULL || bp->d == NULL || fronts_publish(bp->fronts) < 0)
        exit(2);
    broker_new_generation(bp->d, 1, bp->cfg); /* as the first zygote's */
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/php.sock", bp->dir);
    bp->front = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (connect(bp->front, (struct sockaddr *)&sa, sizeof(sa)) < 0)
        exit(2);
    bp->front_in.take_fds = 1;
    bp_turns(bp, 2); /* the broker takes the link */
    for (int i = 0; i < workers && i < BP_MAX_WORKERS; i++) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
            exit(2);
        /* A signal the broker sends kills it, as it kills a worker, and
         * not a sanitizer's or libFuzzer's handler it inherited: blocked
         * until those are gone. */
        sigset_t all, old;
        sigfillset(&all);
        sigprocmask(SIG_BLOCK, &all, &old);
        pid_t pid = fork();
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlives the test */
            for (int sig = 1; sig < NSIG; sig++)
                signal(sig, SIG_DFL);
            sigprocmask(SIG_SETMASK, &old, NULL);
            for (;;)
                pause();
        }
        sigprocmask(SIG_SETMASK, &old, NULL);
        bp_worker_t *w = &bp->w[bp->nw++];
        w->pid = pid;
        w->fd = sv[1];
        fcntl(w->fd, F_SETFL, O_NONBLOCK);
        broker_worker_forked(bp->d, pid, pidfd_open(pid, 0), bp->d->gen, sv[0], NULL);
    }
}

void bp_stop(broker_peer_t *bp)
{
    for (int i = 0; i < bp->nw; i++) {
        if (!bp->w[i].reaped) {
            kill(bp->w[i].pid, SIGKILL);
            waitpid(bp->w[i].pid, NULL, 0);
        }
        close(bp->w[i].fd);
        vc_link_buf_free(&bp->w[i].in);
    }
    broker_destroy(&bp->d);
    fronts_destroy(&bp->fronts);
    vc_config_destroy(&bp->cfg);
    if (bp->front >= 0)
        close(bp->front);
    vc_link_buf_free(&bp->front_in);
    if (bp->board)
        munmap(bp->board, sizeof(vc_board_t));
    rmdir(bp->dir);
    free(bp->dir);
    free(bp->endpoint);
}

/* A whole message already in the front's buffer: 1 and m set. */
static int take_message(broker_peer_t *bp, bp_msg_t *m)
{
    struct iovec f[VC_LINK_MAX_FRAMES > 64 ? 64 : VC_LINK_MAX_FRAMES];
    int n = vc_link_parse(&bp->front_in, f, 64);
    if (n <= 0)
        return 0;
    m->bm = vc__back_message__unpack(NULL, f[0].iov_len, f[0].iov_base);
    m->fd = -1;
    m->board = NULL;
    if (m->bm && m->bm->kind_case == VC__BACK_MESSAGE__KIND_LEND) {
        m->fd = vc_link_take_fd(&bp->front_in);
        if (m->bm->lend->board) {
            int bfd = vc_link_take_fd(&bp->front_in);
            void *map =
                bfd >= 0 ? mmap(NULL, sizeof(vc_board_t), PROT_READ | PROT_WRITE, MAP_SHARED, bfd, 0) : MAP_FAILED;
            if (bfd >= 0)
                close(bfd);
            if (map != MAP_FAILED) {
                if (bp->board)
                    munmap(bp->board, sizeof(vc_board_t));
                bp->board = map;
                m->board = map;
            }
        }
    }
    return 1;
}

int bp_front_next(broker_peer_t *bp, bp_msg_t *m, int timeout_ms)
{
    memset(m, 0, sizeof(*m));
    m->fd = -1;
    uint64_t deadline = vc_mono_ms() + (uint64_t)timeout_ms;
    while (bp->front >= 0) {
        if (take_message(bp, m))
            return m->bm != NULL;
        ssize_t got = vc_link_fill(bp->front, &bp->front_in, 1);
        if (got == 0) {
            bp->front_eof = 1;
            return 0;
        }
        if (got > 0)
            continue;
        if (vc_mono_ms() >= deadline)
            return 0;
        bp_turns(bp, 1);
    }
    return 0;
}

void bp_msg_free(bp_msg_t *m)
{
    if (m->bm)
        vc__back_message__free_unpacked(m->bm, NULL);
    if (m->fd >= 0)
        close(m->fd);
    m->bm = NULL;
    m->fd = -1;
}

void bp_front_drain(broker_peer_t *bp)
{
    bp_msg_t m;
    while (bp_front_next(bp, &m, 0))
        bp_msg_free(&m);
    bp_msg_free(&m);
}

int bp_front_id(broker_peer_t *bp, char fid[FRONT_ID_LEN])
{
    char ids[1][FRONT_ID_LEN];
    if (fronts_ids(bp->fronts, ids, 1) != 1)
        return 0;
    memcpy(fid, ids[0], FRONT_ID_LEN);
    return 1;
}

int bp_front_closed(broker_peer_t *bp, int timeout_ms)
{
    uint64_t deadline = vc_mono_ms() + (uint64_t)timeout_ms;
    while (!bp->front_eof && vc_mono_ms() < deadline) {
        ssize_t got = vc_link_fill(bp->front, &bp->front_in, 1);
        if (got == 0)
            bp->front_eof = 1;
        else if (got < 0 && got != -EAGAIN)
            bp->front_eof = 1; /* reset: closed too */
        else if (got < 0)
            bp_turns(bp, 1);
    }
    return bp->front_eof;
}

void bp_front_send(broker_peer_t *bp, const struct iovec *f, size_t n)
{
    vc_link_send(bp->front, f, n);
    bp_turns(bp, 2);
}

static void send_front_message(broker_peer_t *bp, int fd, const Vc__FrontMessage *fm, int with_fid)
{
    uint8_t buf[512];
    size_t len = vc__front_message__get_packed_size(fm);
    if (len > sizeof(buf))
        exit(2);
    vc__front_message__pack(fm, buf);
    static const char fid[FRONT_ID_LEN];
    struct iovec f[2] = {{(void *)fid, sizeof(fid)}, {buf, len}};
    if (with_fid) {
        vc_link_send(fd, f, 2); /* to a lent worker, as the front's lent.c writes it */
        bp_turns(bp, 1);
    } else {
        bp_front_send(bp, f + 1, 1);
    }
}

static void request(broker_peer_t *bp, int fd, uint64_t id, const char *method, int lent)
{
    Vc__RequestHead h = VC__REQUEST_HEAD__INIT;
    h.id = id;
    h.method = (char *)method;
    h.request_uri.data = (uint8_t *)"/x.php";
    h.request_uri.len = 6;
    h.script_filename = "/srv/x.php";
    Vc__FrontMessage fm = VC__FRONT_MESSAGE__INIT;
    fm.kind_case = VC__FRONT_MESSAGE__KIND_REQUEST;
    fm.request = &h;
    send_front_message(bp, fd, &fm, lent);
}

void bp_front_request(broker_peer_t *bp, uint64_t id, const char *method)
{
    request(bp, bp->front, id, method, 0);
}

void bp_lent_request(broker_peer_t *bp, const bp_msg_t *lend, uint64_t id, const char *method)
{
    request(bp, lend->fd, id, method, 1);
}

void bp_front_left(broker_peer_t *bp)
{
    Vc__Left left = VC__LEFT__INIT;
    Vc__FrontMessage fm = VC__FRONT_MESSAGE__INIT;
    fm.kind_case = VC__FRONT_MESSAGE__KIND_LEFT;
    fm.left = &left;
    send_front_message(bp, bp->front, &fm, 0);
}

void bp_give_back(broker_peer_t *bp, uint32_t slot, int lost, Vc__Outcome outcome, long instead)
{
    Vc__GiveBack g = VC__GIVE_BACK__INIT;
    g.slot = slot;
    g.lost = lost;
    g.outcome = outcome;
    g.instead = instead >= 0;
    g.instead_of = instead >= 0 ? (uint32_t)instead : 0;
    Vc__FrontMessage fm = VC__FRONT_MESSAGE__INIT;
    fm.kind_case = VC__FRONT_MESSAGE__KIND_GIVE_BACK;
    fm.give_back = &g;
    send_front_message(bp, bp->front, &fm, 0);
}

void bp_board_state(broker_peer_t *bp, uint32_t slot, uint32_t state)
{
    if (bp->board == NULL || slot >= VC_BOARD_SLOTS)
        return;
    vc_board_slot_t *bs = &bp->board->slot[slot];
    vc_board_begin(bs);
    bs->state = state;
    vc_board_end(bs);
}

void bp_worker_ready(broker_peer_t *bp, int w)
{
    vc_link_send_byte(bp->w[w].fd, WIRE_READY);
    bp_turns(bp, 2);
}

int bp_worker_read(broker_peer_t *bp, int w, vc_frames_t *fr, int timeout_ms)
{
    bp_worker_t *x = &bp->w[w];
    uint64_t deadline = vc_mono_ms() + (uint64_t)timeout_ms;
    for (;;) {
        struct iovec f[64];
        int n = vc_link_parse(&x->in, f, 64);
        if (n > 0) {
            vc_frames_copy(fr, f, (size_t)n);
            return 1;
        }
        ssize_t got = vc_link_fill(x->fd, &x->in, 1);
        if (got > 0)
            continue;
        if (got == 0 || vc_mono_ms() >= deadline)
            return 0;
        bp_turns(bp, 1);
    }
}

void bp_worker_answer(broker_peer_t *bp, int w, uint64_t id)
{
    Vc__ResponseHead h = VC__RESPONSE_HEAD__INIT;
    h.id = id;
    h.status = 200;
    h.final = 1;
    Vc__BackMessage bm = VC__BACK_MESSAGE__INIT;
    bm.kind_case = VC__BACK_MESSAGE__KIND_HEAD;
    bm.head = &h;
    uint8_t buf[128];
    size_t len = vc__back_message__get_packed_size(&bm);
    vc__back_message__pack(&bm, buf);
    static const char fid[FRONT_ID_LEN];
    char flag = WIRE_DONE;
    struct iovec f[4] = {{&flag, 1}, {(void *)fid, sizeof(fid)}, {buf, len}, {"ok\n", 3}};
    vc_link_send(bp->w[w].fd, f, 4);
    bp_turns(bp, 2);
}

int bp_worker_signalled(broker_peer_t *bp, int w)
{
    bp_worker_t *x = &bp->w[w];
    uint64_t deadline = vc_mono_ms() + 1000;
    while (!x->reaped && vc_mono_ms() < deadline) {
        if (waitpid(x->pid, &x->status, WNOHANG) == x->pid)
            x->reaped = 1;
        else
            bp_turns(bp, 1);
    }
    return x->reaped && WIFSIGNALED(x->status) ? WTERMSIG(x->status) : 0;
}

void bp_worker_exit(broker_peer_t *bp, int w, int sig)
{
    bp_worker_t *x = &bp->w[w];
    if (!x->reaped) {
        kill(x->pid, sig);
        waitpid(x->pid, &x->status, 0);
        x->reaped = 1;
    }
    broker_worker_exited(bp->d, x->pid, x->status);
    bp_turns(bp, 1);
}
