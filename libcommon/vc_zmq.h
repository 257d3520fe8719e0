/*
 * vc_zmq: ZeroMQ helpers, for control and events (the request path has no
 * ZeroMQ: vc_link, vc_frames). Sockets from endpoints, multipart messages
 * held as zmq_msg_t parts, protobuf frames packed straight into a buffer
 * ZeroMQ then owns.
 */
#ifndef VC_ZMQ_H
#define VC_ZMQ_H

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <zmq.h>

/* The parts of one multipart message, as ZeroMQ holds them. This is not
 * a second vc_frames_t: a zmq_msg_t owns its bytes inside ZeroMQ, and
 * vc-bus relays events by handing the same parts on to zmq_msg_send
 * without a copy, and reads the sender's uid from a part's Peer-Address.
 * A vc_frame_t points into our own blocks. The array under both grows
 * through vc_grow. */
typedef struct vc_zparts {
    zmq_msg_t *f;
    size_t n, cap;
} vc_zparts_t;

/* Receives one whole multipart message into fr (which must be empty or
 * closed). flags: 0 or ZMQ_DONTWAIT. Returns the frame count, -EAGAIN when
 * nothing is waiting, or another negative errno. A message of more than
 * max_frames frames is drained and refused with -EMSGSIZE. */
int vc_zparts_recv(void *sock, vc_zparts_t *fr, int flags);
/* Closes every frame; fr can be reused. */
void vc_zparts_close(vc_zparts_t *fr);
/* Releases the array too. */
void vc_zparts_fini(vc_zparts_t *fr);
/* Sends frames [from, n) and leaves them empty (ZeroMQ owns their content
 * now). more: ZMQ_SNDMORE if further frames follow. */
int vc_zparts_send(void *sock, vc_zparts_t *fr, size_t from, int more);

/* Packs m into a new frame and sends it; ZeroMQ owns the buffer. */
int vc_send_proto(void *sock, const ProtobufCMessage *m, int flags);
/* Sends a copy of a small buffer (identities, empty delimiters). */
int vc_send_bytes(void *sock, const void *data, size_t len, int flags);

/* Creates a socket of the given type, with linger 0, and binds (bind != 0)
 * or connects it to endpoint. For ipc:// binds the directory is created;
 * a tcp:// one gets CurveZMQ when the suite has a key (vc_curve.h).
 * Returns NULL with errno set. */
void *vc_socket(void *zctx, int type, const char *endpoint, int bind);
/* The same with high-water marks (0: ZeroMQ's 1000). They are set before
 * the bind or connect: a connecting socket makes its pipe at once, with
 * the marks it has then, and one set later never reaches that pipe. */
void *vc_socket_hwm(void *zctx, int type, const char *endpoint, int bind, int sndhwm, int rcvhwm);

/* Wait for one socket to become readable for up to timeout_ms (-1: for
 * ever). 1 readable, 0 timeout, negative errno. */
int vc_wait_readable(void *sock, long timeout_ms);

/* Who sent m on an ipc:// socket: the kernel's SO_PEERCRED of the
 * connection, which ZeroMQ puts in the "Peer-Address" property as
 * "...:UID:GID:PID". Returns 0, or -1 if m carries none. Only meaningful
 * for a socket bound to ipc:// (a tcp:// peer's address has colons of
 * its own): callers know which they bound. */
int vc_zmsg_peer(zmq_msg_t *m, uid_t *uid, pid_t *pid);

/* Limits on what we accept from a peer. */
#define VC_MSG_MAX_FRAMES 4096

#endif
