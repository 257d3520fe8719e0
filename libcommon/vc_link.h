/*
 * vc_link: messages over a stream socket, for the request path. Two links
 * use it:
 *  - broker <-> worker: a socketpair the broker makes for each worker it
 *    asks the zygote for (the worker's end crosses to the zygote with
 *    SCM_RIGHTS and into the worker by fork), so a worker holds no ZeroMQ;
 *  - vc-front <-> broker: a Unix (or TCP) connection at the "php"
 *    endpoint, read and written inside each daemon's own event loop.
 * ZeroMQ moves each message through an I/O thread on each side, with two
 * wake-ups per message per hop; on this path a message is one write and
 * one read.
 *
 * A message is a frame count and the frames, each a length and its bytes
 * (u32, little-endian). What the frames hold is up to each link
 * (libcommon/vc_wire.h, proto/).
 */
#ifndef VC_LINK_H
#define VC_LINK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

/* Limits on a message from the other end. */
#define VC_LINK_MAX_FRAMES 4096
#define VC_LINK_MAX_MESSAGE (1024u * 1024u * 1024u)

/* Bytes read from a link and not yet taken, or (as an output buffer)
 * messages not yet written. */
typedef struct vc_link_buf {
    char *p;
    size_t len, cap;
    size_t off;  /* reading: where the next message starts; writing: bytes written */
    size_t keep; /* capacity kept once emptied (at least 256 KiB) */
    /* Descriptors that came with the bytes (SCM_RIGHTS), in arrival order.
     * Only a buffer with take_fds set takes them (vc_link_fill then reads
     * with recvmsg); without it the kernel closes what is sent. */
    int take_fds;
    int *fds;
    size_t nfds, capfds;
} vc_link_buf_t;

/* Writes one message of n frames, whole (blocking). 0, or a negative errno. */
int vc_link_send(int fd, const struct iovec *frames, size_t n);
/* A message of one byte ("R", "C"). */
int vc_link_send_byte(int fd, char c);
/* The same with a descriptor attached (SCM_RIGHTS), waiting to write it. */
int vc_link_send_byte_with_fd(int fd, char c, int pass);

/* Writes one message without blocking, with descriptors attached to its
 * first byte (SCM_RIGHTS; a Unix socket only). Returns the bytes written:
 * if more than 0 the descriptors went with them, and the caller owes the
 * rest of the message; or a negative errno (-EAGAIN: nothing went). */
ssize_t vc_link_send_fds(int fd, const void *msg, size_t len, const int *fds, size_t nfds);
/* The oldest descriptor received and not yet taken, or -1. A receiver
 * knows which message it belongs to only because the sender attached it
 * to that message alone: Linux ends a read at the data a descriptor came
 * with, so descriptors and messages arrive in the same order. */
int vc_link_take_fd(vc_link_buf_t *b);
/* Appends one message to an output buffer, for a writer that must not
 * block (vc_link_flush, or the event loop's own writes). */
void vc_link_append(vc_link_buf_t *out, const struct iovec *frames, size_t n);
/* Writes what out holds past out->off without blocking. Returns the bytes
 * still unwritten (0: all of it; the buffer is then emptied), or a negative
 * errno. */
ssize_t vc_link_flush(int fd, vc_link_buf_t *out);

/* Reads what the link holds into b (without blocking if nonblock, else
 * waiting for at least one byte). Returns the bytes read, 0 at the end of
 * the stream, or a negative errno (-EAGAIN: nothing yet). */
ssize_t vc_link_fill(int fd, vc_link_buf_t *b, int nonblock);

/* If b holds a whole message from b->off, points frames at its frames
 * (inside b: valid until b is filled or compacted) and moves b->off past
 * it. Returns the frame count, 0 if the message is not whole yet, or
 * -EPROTO for a message over the limits. */
int vc_link_parse(vc_link_buf_t *b, struct iovec *frames, size_t max);

/* Appends n raw bytes to b (bytes read elsewhere, to be parsed here). */
void vc_link_put(vc_link_buf_t *b, const void *p, size_t n);

/* Drops the bytes before b->off; an emptied buffer over its keep (256 KiB
 * unless set higher) is freed. */
void vc_link_compact(vc_link_buf_t *b);
/* Empties b, freeing it if over its keep; descriptors not taken are
 * closed. */
void vc_link_reset(vc_link_buf_t *b);

/* Called with each whole message (frames valid during the call); a
 * non-zero return asks for no further reads. */
typedef int (*vc_link_message_cb)(void *arg, const struct iovec *frames, int n);
/* Reads fd without blocking and hands each whole message to cb, until the
 * socket has nothing more (a read that did not fill the buffer took all
 * there was: the caller's next poll says if more came), `budget` reads
 * were made, or cb asked for no more reads. Every whole message a read
 * brought is handed over before it returns: none waits in b for a poll
 * that may never come. Returns 1, 0 at the end of the stream, -EPROTO for
 * a message over the limits, or another negative errno. Not reentrant: cb
 * must not read another link. */
int vc_link_read(int fd, vc_link_buf_t *b, int budget, vc_link_message_cb cb, void *arg);
/* Frees b's memory and closes the descriptors it holds. */
void vc_link_buf_free(vc_link_buf_t *b);

/* The socket address of a ZeroMQ-style endpoint: "ipc:///path" (a Unix
 * socket), "tcp://host:port" with host an IPv4 or [IPv6] literal, a name,
 * or "*" (any address, for a listener). 0, or -1 with *why set. */
int vc_link_address(const char *endpoint, struct sockaddr_storage *sa, socklen_t *len, const char **why);
/* A listening socket at the endpoint (non-blocking, close-on-exec). A Unix
 * socket's file is replaced in one step (a stale one, or a running
 * predecessor's, whose listener keeps what it accepted); *ino, if ino is
 * set, names that file for vc_link_unlisten (0 for TCP). The fd, or a
 * negative errno. */
int vc_link_listen(const char *endpoint, ino_t *ino);
/* The same, but a Unix socket stays under a name of its own (PATH.PID)
 * until vc_link_publish renames it onto its path: a process that takes
 * over from a running one publishes once it is ready to serve. */
int vc_link_listen_hidden(const char *endpoint, ino_t *ino);
int vc_link_publish(const char *endpoint);
/* Closes the listener and removes its socket file if it is still the one
 * vc_link_listen made (not a successor's). */
void vc_link_unlisten(int fd, const char *endpoint, ino_t ino);

#endif
