#include "vc_curve.h"
#include "vc_log.h"
#include "vc_util.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <zmq.h>

static char secret[41], public_key[41];
static int on;

int vc_curve_valid(const char *secret_z85)
{
    uint8_t bin[32];
    char pub[41];
    return strlen(secret_z85) == 40 && zmq_z85_decode(bin, secret_z85) != NULL &&
           zmq_curve_public(pub, secret_z85) == 0;
}

int vc_curve_use(const char *secret_z85)
{
    on = 0;
    if (secret_z85 == NULL || *secret_z85 == '\0')
        return 0;
    if (!vc_curve_valid(secret_z85) || zmq_curve_public(public_key, secret_z85) != 0)
        return -1;
    memcpy(secret, secret_z85, 41);
    on = 1;
    return 0;
}

int vc_curve_applies(const char *endpoint)
{
    return on && strncmp(endpoint, "tcp://", 6) == 0;
}

int vc_curve_keygen(char out[41])
{
    char pub[41];
    return zmq_curve_keypair(pub, out) == 0 ? 0 : -1;
}

/* ---- ZAP (RFC 27): who may connect to a CURVE server ---------------------- */

/* Answers each request: 200 for a CURVE client showing the suite's public
 * key, 400 for anything else. Ends with the context (ETERM). */
static void *zap_thread(void *arg)
{
    void *rep = arg;
    uint8_t suite[32];
    zmq_z85_decode(suite, public_key);
    for (;;) {
        zmq_msg_t part[7];
        int n = 0, more = 1, failed = 0;
        while (more) {
            zmq_msg_t m;
            zmq_msg_init(&m);
            if (zmq_msg_recv(&m, rep, 0) < 0) {
                zmq_msg_close(&m);
                for (int i = 0; i < n; i++)
                    zmq_msg_close(&part[i]);
                if (errno == ETERM) {
                    zmq_close(rep);
                    return NULL;
                }
                failed = 1;
                break;
            }
            more = zmq_msg_more(&m);
            if (n < 7)
                part[n++] = m;
            else
                zmq_msg_close(&m);
        }
        if (failed)
            continue;
        /* version, request id, domain, address, identity, mechanism, key */
        int ok = n == 7 && zmq_msg_size(&part[5]) == 5 && memcmp(zmq_msg_data(&part[5]), "CURVE", 5) == 0 &&
                 zmq_msg_size(&part[6]) == 32 && memcmp(zmq_msg_data(&part[6]), suite, 32) == 0;
        if (!ok)
            vc_log(VC_LOG_WARN, "curve", "refused a ZeroMQ peer from %.*s: it does not hold the suite's key",
                   n > 3 ? (int)zmq_msg_size(&part[3]) : 1, n > 3 ? (const char *)zmq_msg_data(&part[3]) : "?");
        zmq_send(rep, "1.0", 3, ZMQ_SNDMORE);
        if (n > 1)
            zmq_send(rep, zmq_msg_data(&part[1]), zmq_msg_size(&part[1]), ZMQ_SNDMORE);
        else
            zmq_send(rep, "", 0, ZMQ_SNDMORE);
        zmq_send(rep, ok ? "200" : "400", 3, ZMQ_SNDMORE);
        zmq_send(rep, ok ? "OK" : "not the suite's key", ok ? 2 : 19, ZMQ_SNDMORE);
        zmq_send(rep, "", 0, ZMQ_SNDMORE); /* user id */
        zmq_send(rep, "", 0, 0);           /* metadata */
        for (int i = 0; i < n; i++)
            zmq_msg_close(&part[i]);
    }
}

/* The contexts whose ZAP handler runs (a process has one or two). */
static pthread_mutex_t zap_lock = PTHREAD_MUTEX_INITIALIZER;
static void *zap_ctx[8];

static int zap_start(void *zctx)
{
    pthread_mutex_lock(&zap_lock);
    int rc = 0;
    size_t i = 0;
    while (i < VC_ARRAY_SIZE(zap_ctx) && zap_ctx[i] && zap_ctx[i] != zctx)
        i++;
    if (i < VC_ARRAY_SIZE(zap_ctx) && zap_ctx[i] == NULL) {
        void *rep = zmq_socket(zctx, ZMQ_REP);
        int zero = 0;
        pthread_t t;
        if (rep == NULL) {
            rc = -errno;
        } else if (zmq_setsockopt(rep, ZMQ_LINGER, &zero, sizeof(zero)) != 0 ||
                   zmq_bind(rep, "inproc://zeromq.zap.01") != 0) {
            rc = -errno;
            zmq_close(rep);
        } else if (pthread_create(&t, NULL, zap_thread, rep) != 0) {
            rc = -EAGAIN;
            zmq_close(rep);
        } else {
            pthread_detach(t);
            zap_ctx[i] = zctx;
        }
    }
    pthread_mutex_unlock(&zap_lock);
    return rc;
}

int vc_curve_setup(void *zctx, void *s, int bind)
{
    int one = 1;
    if (bind) {
        int rc = zap_start(zctx);
        if (rc < 0)
            return rc;
        if (zmq_setsockopt(s, ZMQ_ZAP_DOMAIN, "vc", 2) != 0 ||
            zmq_setsockopt(s, ZMQ_CURVE_SERVER, &one, sizeof(one)) != 0 ||
            zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, secret, 41) != 0)
            return -errno;
        return 0;
    }
    if (zmq_setsockopt(s, ZMQ_CURVE_SERVERKEY, public_key, 41) != 0 ||
        zmq_setsockopt(s, ZMQ_CURVE_PUBLICKEY, public_key, 41) != 0 ||
        zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, secret, 41) != 0)
        return -errno;
    return 0;
}
