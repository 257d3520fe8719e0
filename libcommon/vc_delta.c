/* librsync's deltas, in memory and bounded (vc_delta.h). */
#include "vc_delta.h"
#include "vc_util.h"

#include <errno.h>
#include <librsync.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHUNK 65536

/* Runs a job to its end over in, appending what it writes to out (up to
 * max bytes; out may be NULL for a job that writes nothing, loadsig). */
static int run(rs_job_t *job, vc_delta_in_t in, vc_delta_out_t *out, size_t max)
{
    char buf[CHUNK], obuf[CHUNK];
    size_t cap = 0, used = 0; /* unread input at buf */
    int eof = in.fd < 0;
    const char *mem = in.data;
    size_t mem_left = in.fd < 0 ? in.len : 0;
    rs_result r = RS_BLOCKED;
    if (out)
        out->data = NULL, out->len = 0;
    while (r == RS_BLOCKED) {
        rs_buffers_t b = {0};
        if (in.fd >= 0) {
            if (!eof && used < sizeof(buf)) {
                ssize_t n = read(in.fd, buf + used, sizeof(buf) - used);
                if (n < 0 && errno != EINTR)
                    break;
                if (n == 0)
                    eof = 1;
                used += n > 0 ? (size_t)n : 0;
            }
            b.next_in = buf;
            b.avail_in = used;
        } else {
            b.next_in = (char *)mem;
            b.avail_in = mem_left;
        }
        b.eof_in = eof;
        b.next_out = obuf;
        b.avail_out = sizeof(obuf);
        r = rs_job_iter(job, &b);
        if (in.fd >= 0) {
            memmove(buf, b.next_in, b.avail_in);
            used = b.avail_in;
        } else {
            mem = b.next_in;
            mem_left = b.avail_in;
        }
        size_t made = sizeof(obuf) - b.avail_out;
        if (made && out) {
            if (out->len + made > max) {
                r = RS_MEM_ERROR;
                break;
            }
            out->data = vc_grow(out->data, &cap, out->len + made, 1, CHUNK);
            memcpy(out->data + out->len, obuf, made);
            out->len += made;
        }
    }
    if (r != RS_DONE && out) {
        free(out->data);
        out->data = NULL;
        out->len = 0;
    }
    return r == RS_DONE ? 0 : -1;
}

int vc_delta_signature(vc_delta_in_t basis, vc_delta_out_t *sig)
{
    /* Blocks of 1 KiB: a one-line change in a manifest or a PHP file
     * costs about a block. */
    rs_job_t *job = rs_sig_begin(1024, 16, RS_BLAKE2_SIG_MAGIC);
    int rc = run(job, basis, sig, (size_t)1 << 30);
    rs_job_free(job);
    return rc;
}

int vc_delta_make(const void *sig, size_t sig_len, vc_delta_in_t new_bytes, size_t max, vc_delta_out_t *delta)
{
    rs_signature_t *sums = NULL;
    rs_job_t *job = rs_loadsig_begin(&sums);
    vc_delta_in_t in = {-1, sig, sig_len};
    int rc = run(job, in, NULL, 0);
    rs_job_free(job);
    if (rc == 0 && rs_build_hash_table(sums) != RS_DONE)
        rc = -1;
    if (rc == 0) {
        job = rs_delta_begin(sums);
        rc = run(job, new_bytes, delta, max);
        rs_job_free(job);
    }
    if (sums)
        rs_free_sumset(sums);
    return rc;
}

typedef struct basis {
    int fd;
    const unsigned char *data;
    size_t len;
} basis_t;

static rs_result copy_from(void *arg, rs_long_t pos, size_t *len, void **buf)
{
    basis_t *b = arg;
    if (pos < 0)
        return RS_INPUT_ENDED;
    if (b->fd < 0) {
        if ((size_t)pos >= b->len)
            return RS_INPUT_ENDED;
        if (*len > b->len - (size_t)pos)
            *len = b->len - (size_t)pos;
        *buf = (void *)(b->data + pos);
        return RS_DONE;
    }
    ssize_t n = pread(b->fd, *buf, *len, (off_t)pos);
    if (n <= 0)
        return n == 0 ? RS_INPUT_ENDED : RS_IO_ERROR;
    *len = (size_t)n;
    return RS_DONE;
}

static int apply(basis_t *b, const void *delta, size_t delta_len, size_t max, vc_delta_out_t *out)
{
    rs_job_t *job = rs_patch_begin(copy_from, b);
    vc_delta_in_t in = {-1, delta, delta_len};
    int rc = run(job, in, out, max);
    rs_job_free(job);
    return rc;
}

int vc_delta_apply(int basis_fd, const void *delta, size_t delta_len, size_t max, vc_delta_out_t *out)
{
    basis_t b = {basis_fd, NULL, 0};
    return apply(&b, delta, delta_len, max, out);
}

int vc_delta_apply_mem(const void *basis, size_t basis_len, const void *delta, size_t delta_len, size_t max,
                       vc_delta_out_t *out)
{
    basis_t b = {-1, basis, basis_len};
    return apply(&b, delta, delta_len, max, out);
}
