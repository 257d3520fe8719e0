/*
 * vc_frames: the frames of one message on the request path (vc_link),
 * without ZeroMQ. A frame is a pointer and a length into memory that is
 * either held by a reference-counted block (vc_block_t) or borrowed:
 *  - copied: the bytes are copied into a new block (one a message), which
 *    lives until its last frame is closed;
 *  - borrowed: no block; the frame is valid only as long as the lender
 *    says (a worker's request frames, read where they lie in its link
 *    buffer until the answer is done).
 * Frames move between queues (vc_frames_push) without copying and are
 * duplicated by reference (vc_frames_dup), as zmq_msg_move and
 * zmq_msg_copy did when these were ZeroMQ messages.
 */
#ifndef VC_FRAMES_H
#define VC_FRAMES_H

#include <stddef.h>
#include <sys/uio.h>

/* Bytes shared by the frames that point into them. */
typedef struct vc_block {
    size_t refs;
    size_t cap; /* bytes of data */
    char data[];
} vc_block_t;

/* A new block of cap bytes, with one reference (the caller's). */
vc_block_t *vc_block_new(size_t cap);
void vc_block_ref(vc_block_t *b);
/* Drops one reference; the last frees the block. *pb is set to NULL. */
void vc_block_unref(vc_block_t **pb);

typedef struct vc_frame {
    char *data;
    size_t len;
    vc_block_t *block; /* holds data; NULL: borrowed */
} vc_frame_t;

typedef struct vc_frames {
    vc_frame_t *f;
    size_t n, cap;
} vc_frames_t;

/* Appends a copy of each of n buffers as a frame, all in one new block. */
void vc_frames_copy(vc_frames_t *fr, const struct iovec *bufs, size_t n);
/* Appends n buffers as borrowed frames: the caller keeps them valid for
 * as long as the frames are used. */
void vc_frames_borrow(vc_frames_t *fr, const struct iovec *bufs, size_t n);
/* Moves m to the end of q; m is left empty. */
void vc_frames_push(vc_frames_t *q, vc_frame_t *m);
/* Appends src's first n frames to dst: held ones by reference, borrowed
 * ones copied (a copy must not outlive its lender's promise). */
void vc_frames_dup(vc_frames_t *dst, const vc_frames_t *src, size_t n);
/* Bytes in all the frames. */
size_t vc_frames_bytes(const vc_frames_t *fr);
/* Closes every frame (dropping their references); fr can be reused. */
void vc_frames_close(vc_frames_t *fr);
/* Releases the array too. */
void vc_frames_fini(vc_frames_t *fr);

static inline struct iovec vc_frame_iov(const vc_frame_t *m)
{
    return (struct iovec){m->data, m->len};
}

#endif
