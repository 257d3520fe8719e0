/*
 * wlink: the link between the broker and one worker. A stream socketpair
 * the broker makes for each worker it asks the zygote for (the worker's end
 * crosses to the zygote with SCM_RIGHTS and into the worker by fork), so a
 * worker holds no ZeroMQ: no I/O thread to wake twice per message, no
 * context in its memory. The hot path of a request was four ZeroMQ hops
 * with an I/O thread on each side of each; this makes two of them plain
 * socket writes and reads.
 *
 * A message is a frame count and the frames, each a length and its bytes
 * (u32, host order: both ends are the same binary on the same machine).
 * The frames are those of wire.h.
 */
#ifndef VC_PHP_WLINK_H
#define VC_PHP_WLINK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

/* Limits on a message from the other end. */
#define WLINK_MAX_FRAMES 4096
#define WLINK_MAX_MESSAGE (1024u * 1024u * 1024u)

/* Bytes read from a link and not yet taken. */
typedef struct wlink_buf {
    char *p;
    size_t len, cap;
    size_t off; /* where the next message starts */
} wlink_buf_t;

/* Writes one message of n frames, whole (blocking). 0, or a negative errno. */
int wlink_send(int fd, const struct iovec *frames, size_t n);
/* A message of one byte ("R", "C"). */
int wlink_send_byte(int fd, char c);

/* Reads what the link holds into b (without blocking if nonblock, else
 * waiting for at least one byte). Returns the bytes read, 0 at the end of
 * the stream, or a negative errno (-EAGAIN: nothing yet). */
ssize_t wlink_fill(int fd, wlink_buf_t *b, int nonblock);

/* If b holds a whole message from b->off, points frames at its frames
 * (inside b: valid until b is filled or compacted) and moves b->off past
 * it. Returns the frame count, 0 if the message is not whole yet, or
 * -EPROTO for a message over the limits. */
int wlink_parse(wlink_buf_t *b, struct iovec *frames, size_t max);

/* Drops the bytes before b->off; an emptied buffer over 256 KiB is freed. */
void wlink_compact(wlink_buf_t *b);
void wlink_buf_free(wlink_buf_t *b);

#endif
