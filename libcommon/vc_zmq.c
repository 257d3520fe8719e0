#include "vc_zmq.h"
#include "vc_curve.h"
#include "vc_util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int vc_zparts_recv(void *sock, vc_zparts_t *fr, int flags)
{
    VC_ASSERT(fr->n == 0);
    int more = 1, overflow = 0;
    while (more) {
        VC_GROW(fr->f, fr->cap, fr->n + 1, 8);
        zmq_msg_t *m = &fr->f[fr->n];
        zmq_msg_init(m);
        /* Only the first frame may be absent; the rest of a multipart
         * message is delivered atomically with it. */
        if (zmq_msg_recv(m, sock, fr->n == 0 ? flags : 0) < 0) {
            int e = errno;
            zmq_msg_close(m);
            vc_zparts_close(fr);
            return -e;
        }
        more = zmq_msg_more(m);
        if (fr->n >= VC_MSG_MAX_FRAMES) {
            zmq_msg_close(m);
            overflow = 1;
            continue;
        }
        fr->n++;
    }
    if (overflow) {
        vc_zparts_close(fr);
        return -EMSGSIZE;
    }
    return (int)fr->n;
}

void vc_zparts_close(vc_zparts_t *fr)
{
    for (size_t i = 0; i < fr->n; i++)
        zmq_msg_close(&fr->f[i]);
    fr->n = 0;
}

void vc_zparts_fini(vc_zparts_t *fr)
{
    vc_zparts_close(fr);
    free(fr->f);
    fr->f = NULL;
    fr->cap = 0;
}

int vc_zparts_send(void *sock, vc_zparts_t *fr, size_t from, int more)
{
    for (size_t i = from; i < fr->n; i++) {
        int fl = (i + 1 < fr->n || more) ? ZMQ_SNDMORE : 0;
        if (zmq_msg_send(&fr->f[i], sock, fl) < 0)
            return -errno;
    }
    return 0;
}

static void free_buf(void *data, void *hint)
{
    (void)hint;
    free(data);
}

int vc_send_proto(void *sock, const ProtobufCMessage *m, int flags)
{
    size_t len = protobuf_c_message_get_packed_size(m);
    uint8_t *buf = vc_malloc(len ? len : 1);
    protobuf_c_message_pack(m, buf);
    zmq_msg_t msg;
    /* ZeroMQ owns buf from here and frees it with free_buf. */
    zmq_msg_init_data(&msg, buf, len, free_buf, NULL);
    if (zmq_msg_send(&msg, sock, flags) < 0) {
        int e = errno;
        zmq_msg_close(&msg);
        return -e;
    }
    return 0;
}

int vc_send_bytes(void *sock, const void *data, size_t len, int flags)
{
    return zmq_send(sock, data, len, flags) < 0 ? -errno : 0;
}

void *vc_socket(void *zctx, int type, const char *endpoint, int bind)
{
    return vc_socket_hwm(zctx, type, endpoint, bind, 0, 0);
}

void *vc_socket_hwm(void *zctx, int type, const char *endpoint, int bind, int sndhwm, int rcvhwm)
{
    void *s = zmq_socket(zctx, type);
    if (s == NULL)
        return NULL;
    int zero = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof(zero));
    if (sndhwm > 0)
        zmq_setsockopt(s, ZMQ_SNDHWM, &sndhwm, sizeof(sndhwm));
    if (rcvhwm > 0)
        zmq_setsockopt(s, ZMQ_RCVHWM, &rcvhwm, sizeof(rcvhwm));
    if (vc_curve_applies(endpoint)) {
        int rc = vc_curve_setup(zctx, s, bind);
        if (rc < 0) {
            zmq_close(s);
            errno = -rc;
            return NULL;
        }
    }
    if (bind && strncmp(endpoint, "ipc://", 6) == 0) {
        char *dir = vc_strdup(endpoint + 6);
        char *slash = strrchr(dir, '/');
        if (slash && slash != dir) {
            *slash = '\0';
            vc_mkdirs(dir, 0700);
        }
        free(dir);
    }
    int rc = bind ? zmq_bind(s, endpoint) : zmq_connect(s, endpoint);
    if (rc != 0) {
        int e = errno;
        zmq_close(s);
        errno = e;
        return NULL;
    }
    return s;
}

int vc_wait_readable(void *sock, long timeout_ms)
{
    zmq_pollitem_t it = {sock, 0, ZMQ_POLLIN, 0};
    int rc = zmq_poll(&it, 1, timeout_ms);
    if (rc < 0)
        return -errno;
    return rc;
}

int vc_zmsg_peer(zmq_msg_t *m, uid_t *uid, pid_t *pid)
{
    const char *addr = zmq_msg_gets(m, "Peer-Address");
    if (addr == NULL)
        return -1;
    /* The last three fields, read from the end. */
    const char *colon[3] = {NULL, NULL, NULL};
    int found = 0;
    for (const char *p = addr + strlen(addr); p > addr && found < 3;)
        if (*--p == ':')
            colon[found++] = p;
    if (found < 3)
        return -1;
    char *end;
    errno = 0;
    unsigned long u = strtoul(colon[2] + 1, &end, 10);
    if (errno || end != colon[1] || end == colon[2] + 1 || u > (uid_t)-1)
        return -1;
    long p = strtol(colon[0] + 1, &end, 10);
    if (errno || *end || end == colon[0] + 1 || p <= 0)
        return -1;
    *uid = (uid_t)u;
    *pid = (pid_t)p;
    return 0;
}
