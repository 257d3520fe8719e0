#include "vc_frames.h"
#include "vc_util.h"

#include <stdlib.h>
#include <string.h>

vc_block_t *vc_block_new(size_t cap)
{
    vc_block_t *b = vc_malloc(sizeof(*b) + cap);
    b->refs = 1;
    b->cap = cap;
    return b;
}

void vc_block_ref(vc_block_t *b)
{
    VC_ASSERT(b->refs > 0);
    b->refs++;
}

void vc_block_unref(vc_block_t **pb)
{
    vc_block_t *b = *pb;
    *pb = NULL;
    if (b == NULL)
        return;
    VC_ASSERT(b->refs > 0);
    if (--b->refs == 0)
        free(b);
}

static vc_frame_t *grow(vc_frames_t *fr, size_t more)
{
    VC_GROW(fr->f, fr->cap, fr->n + more, 8);
    return fr->f + fr->n;
}

void vc_frames_copy(vc_frames_t *fr, const struct iovec *bufs, size_t n)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += bufs[i].iov_len;
    vc_frame_t *m = grow(fr, n);
    /* One block for the message: one allocation, not one a frame. */
    vc_block_t *blk = vc_block_new(total);
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        if (bufs[i].iov_len)
            memcpy(blk->data + at, bufs[i].iov_base, bufs[i].iov_len);
        m[i] = (vc_frame_t){blk->data + at, bufs[i].iov_len, blk};
        if (i > 0)
            vc_block_ref(blk);
        at += bufs[i].iov_len;
    }
    if (n == 0)
        vc_block_unref(&blk);
    fr->n += n;
}

void vc_frames_borrow(vc_frames_t *fr, const struct iovec *bufs, size_t n)
{
    vc_frame_t *m = grow(fr, n);
    for (size_t i = 0; i < n; i++)
        m[i] = (vc_frame_t){bufs[i].iov_base, bufs[i].iov_len, NULL};
    fr->n += n;
}

void vc_frames_push(vc_frames_t *q, vc_frame_t *m)
{
    *grow(q, 1) = *m;
    q->n++;
    *m = (vc_frame_t){NULL, 0, NULL};
}

void vc_frames_dup(vc_frames_t *dst, const vc_frames_t *src, size_t n)
{
    VC_ASSERT(n <= src->n);
    for (size_t i = 0; i < n; i++) {
        const vc_frame_t *m = &src->f[i];
        if (m->block) {
            vc_block_ref(m->block);
            *grow(dst, 1) = *m;
            dst->n++;
        } else {
            struct iovec v = vc_frame_iov(m);
            vc_frames_copy(dst, &v, 1);
        }
    }
}

size_t vc_frames_bytes(const vc_frames_t *fr)
{
    size_t n = 0;
    for (size_t i = 0; i < fr->n; i++)
        n += fr->f[i].len;
    return n;
}

void vc_frames_close(vc_frames_t *fr)
{
    for (size_t i = 0; i < fr->n; i++)
        vc_block_unref(&fr->f[i].block);
    fr->n = 0;
}

void vc_frames_fini(vc_frames_t *fr)
{
    vc_frames_close(fr);
    free(fr->f);
    fr->f = NULL;
    fr->cap = 0;
}
