/*
 * What `vc status` and `vc workers` show of the pool: counts, the boards
 * of lent workers, and each worker's memory from /proc.
 */
#include "vc_util.h"
#include "broker_internal.h"

#include <sys/stat.h>

long broker_rss_kib(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/statm", (int)pid);
    FILE *f = fopen(path, "r");
    long pages = 0, resident = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
            resident = 0;
        fclose(f);
    }
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* Idle and busy workers, lent ones as their boards say, and requests
 * waiting here and in the fronts. */
void broker_tally(broker_t *d, int *idle, int *busy, size_t *queued)
{
    VC_CHECK_OBJ(d, BROKER_MAGIC);
    *idle = *busy = 0;
    for (size_t i = 0; i < d->nw; i++) {
        worker_t *w = &d->w[i];
        int state = w->state;
        if (state == W_LENT) {
            vc_board_slot_t s;
            broker_lent_state(d, w, &s);
            state = s.state == VC_BOARD_IDLE ? W_IDLE : W_BUSY;
        }
        *idle += state == W_IDLE;
        *busy += state == W_BUSY || state == W_FINISHING;
    }
    vc_board_t *b[FRONTS_MAX];
    size_t nb = fronts_boards(d->fronts, b, FRONTS_MAX);
    *queued = d->queue.len;
    for (size_t i = 0; i < nb; i++)
        *queued += b[i]->queued;
}

/* Whether fd is pid's own /proc/PID/smaps_rollup: native code in a
 * worker could send anything (a pipe the broker's read would wait on). */
static int own_smaps(pid_t pid, int fd)
{
    char link[64], want[64], got[64];
    struct stat st;
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    snprintf(want, sizeof(want), "/proc/%d/smaps_rollup", (int)pid);
    ssize_t n = readlink(link, got, sizeof(got) - 1);
    if (n <= 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        return 0;
    got[n] = '\0';
    return strcmp(got, want) == 0;
}

void broker_take_smaps(worker_t *w, int first_ready)
{
    for (int fd; (fd = vc_link_take_fd(&w->in)) >= 0;) {
        if (first_ready && w->smaps < 0 && own_smaps(w->pid, fd))
            w->smaps = fd;
        else
            close(fd);
    }
    /* Past its first READY a worker sends no descriptor: its link is read
     * with read() again, and the kernel drops any it sends. */
    if (first_ready)
        w->in.take_fds = 0;
}

/* From the worker's smaps_rollup, in KiB (0 if gone): the proportional
 * set size (its share of every page it maps), and with uss set, the
 * unique set size (its private pages: what one more worker costs). A
 * worker is not dumpable, so the file is the one it sent (its own, read
 * again from the start each time); a worker that sent none is read by
 * path, which works only where the kernel lets the broker. */
long broker_pss_kib(const worker_t *w, long *uss)
{
    char buf[4096];
    ssize_t n = -1;
    if (w->smaps >= 0) {
        n = pread(w->smaps, buf, sizeof(buf) - 1, 0);
    } else {
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)w->pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            n = read(fd, buf, sizeof(buf) - 1);
            close(fd);
        }
    }
    long pss = 0, kib;
    if (uss)
        *uss = 0;
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    char *save = NULL;
    for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (sscanf(line, "Pss: %ld kB", &kib) == 1)
            pss = kib;
        else if (uss &&
                 (sscanf(line, "Private_Clean: %ld kB", &kib) == 1 || sscanf(line, "Private_Dirty: %ld kB", &kib) == 1))
            *uss += kib;
    }
    return pss;
}

void broker_status(broker_t *d, Vc__Reply *reply)
{
    VC_CHECK_OBJ(d, BROKER_MAGIC);
    int idle, busy;
    size_t queued;
    broker_tally(d, &idle, &busy, &queued);
    /* What the fronts counted for the workers lent to them. */
    uint64_t accepted = d->accepted, completed = d->completed, r503 = d->rejected_503, r504 = d->timed_out_504,
             r502 = d->failed_502, retried = d->retried;
    vc_board_t *b[FRONTS_MAX];
    size_t nb = fronts_boards(d->fronts, b, FRONTS_MAX);
    for (size_t i = 0; i < nb; i++) {
        accepted += b[i]->accepted;
        completed += b[i]->completed;
        r503 += b[i]->rejected_503;
        r504 += b[i]->timed_out_504;
        r502 += b[i]->failed_502;
        retried += b[i]->retried;
    }
    vc_reply_field(reply, "health", "%s", d->nw > 0 ? "ok" : "no workers");
    vc_reply_field(reply, "mode", "%s", d->cfg->php.mode);
    vc_reply_field(reply, "workers", "%zu", d->nw);
    vc_reply_field(reply, "workers_wanted", "%lld", (long long)d->size.target);
    vc_reply_field(reply, "workers_min", "%lld", (long long)d->size.min);
    vc_reply_field(reply, "workers_max", "%lld", (long long)d->size.max);
    vc_reply_field(reply, "idle", "%d", idle);
    vc_reply_field(reply, "busy", "%d", busy);
    vc_reply_field(reply, "queued", "%zu", queued);
    vc_reply_field(reply, "accepted", "%llu", (unsigned long long)accepted);
    vc_reply_field(reply, "completed", "%llu", (unsigned long long)completed);
    vc_reply_field(reply, "rejected_503", "%llu", (unsigned long long)r503);
    vc_reply_field(reply, "timeout_504", "%llu", (unsigned long long)r504);
    vc_reply_field(reply, "failed_502", "%llu", (unsigned long long)r502);
    vc_reply_field(reply, "retried", "%llu", (unsigned long long)retried);
    vc_reply_field(reply, "crashed", "%llu", (unsigned long long)d->crashed);
    vc_reply_field(reply, "killed", "%llu", (unsigned long long)d->killed);
    uint64_t refused = d->refused_writes_gone;
    for (size_t i = 0; i < d->nw; i++)
        refused += worker_clock_refused(d->w[i].clock);
    vc_reply_field(reply, "wall_refused_writes", "%llu", (unsigned long long)refused);
    uint64_t now = vc_mono_ms();
    for (size_t i = 0; i < d->nw; i++) {
        worker_t *w = &d->w[i];
        Vc__Record *rec = vc_reply_record(reply);
        vc_record_field(rec, "pid", "%d", (int)w->pid);
        vc_board_slot_t s;
        memset(&s, 0, sizeof(s));
        if (w->state == W_LENT)
            broker_lent_state(d, w, &s);
        int lent_busy = w->state == W_LENT && s.state != VC_BOARD_IDLE;
        vc_record_field(rec, "state", "%s",
                        w->state == W_LENT ? board_state_names[s.state <= VC_BOARD_FINISHING ? s.state : 0]
                                           : wstate_names[w->state]);
        vc_record_field(rec, "lent", "%s", w->state == W_LENT ? "yes" : "no");
        vc_record_field(rec, "generation", "%u", w->gen);
        vc_record_field(rec, "front", "%d", w->state == W_LENT ? (int)fronts_pid(d->fronts, w->lent_to) : 0);
        vc_record_field(rec, "served", "%llu", (unsigned long long)(w->served + s.served));
        long uss;
        vc_record_field(rec, "pss_kib", "%ld", broker_pss_kib(w, &uss));
        vc_record_field(rec, "uss_kib", "%ld", uss);
        vc_record_field(rec, "uri", "%s", lent_busy ? s.what : w->job ? w->job->what : "");
        /* A lent worker's age is the front's: since its request began, or
         * since it went idle. */
        uint64_t since = w->state == W_LENT && s.since_ms ? s.since_ms : w->since_ms;
        vc_record_field(rec, "age_ms", "%llu", (unsigned long long)(now > since ? now - since : 0));
    }
}
