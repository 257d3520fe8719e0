/* A daemon's link to the cluster's NATS (vc_nats.h). */
#include "vc_nats.h"
#include "vc_log.h"
#include "vc_util.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* Credentials from cluster.*: a .creds file, or a user and the password
 * in a file (never in vc.conf itself). */
static natsStatus credentials(natsOptions *o, const mesh_settings_t *c)
{
    if (c->credentials[0])
        return natsOptions_SetUserCredentialsFromFiles(o, c->credentials, NULL);
    if (!c->user[0])
        return NATS_OK;
    char *pw = vc_mesh_password(c);
    if (pw == NULL) {
        vc_log(VC_LOG_ERR, "nats", "cannot read cluster.password_file \"%s\": %m", c->password_file);
        return NATS_ERR;
    }
    natsStatus s = natsOptions_SetUserInfo(o, c->user, pw);
    sodium_memzero(pw, strlen(pw));
    free(pw);
    return s;
}

natsStatus vc_nats_options(natsOptions **out, const mesh_settings_t *c, const char *daemon,
                           natsConnectionHandler on_event, void *closure)
{
    natsOptions *o = NULL;
    natsStatus s = natsOptions_Create(&o);
    char name[96];
    snprintf(name, sizeof(name), "%s %s", daemon, c->node);
    if (s == NATS_OK)
        s = natsOptions_SetServers(o, (const char **)c->nats, (int)c->nnats);
    if (s == NATS_OK)
        s = natsOptions_SetName(o, name);
    /* For ever, every half second: a node cut off keeps trying. */
    if (s == NATS_OK)
        s = natsOptions_SetMaxReconnect(o, -1);
    if (s == NATS_OK)
        s = natsOptions_SetReconnectWait(o, 500);
    if (s == NATS_OK)
        s = natsOptions_SetRetryOnFailedConnect(o, true, on_event, closure);
    if (s == NATS_OK && on_event)
        s = natsOptions_SetDisconnectedCB(o, on_event, closure);
    if (s == NATS_OK && on_event)
        s = natsOptions_SetReconnectedCB(o, on_event, closure);
    if (s == NATS_OK && c->ca[0])
        s = natsOptions_LoadCATrustedCertificates(o, c->ca);
    if (s == NATS_OK)
        s = credentials(o, c);
    if (s != NATS_OK) {
        vc_log(VC_LOG_CRIT, "nats", "cannot set up the link to NATS: %s (%s)", natsStatus_GetText(s),
               nats_GetLastError(NULL));
        natsOptions_Destroy(o);
        return s;
    }
    *out = o;
    return NATS_OK;
}

natsStatus vc_nats_kv_bucket(kvStore **kv, jsCtx *js, const char *bucket, int64_t replicas, int64_t ttl_ms)
{
    kvConfig kc;
    kvConfig_Init(&kc);
    kc.Bucket = bucket;
    kc.History = 1;
    kc.TTL = ttl_ms * 1000000; /* ns */
    kc.Replicas = (int)replicas;
    return js_CreateKeyValue(kv, js, &kc);
}

natsStatus vc_nats_kv_watch(natsSubscription **sub, jsCtx *js, const char *bucket, const char *keys, natsMsgHandler cb,
                            void *arg)
{
    char stream[128], subject[256];
    snprintf(stream, sizeof(stream), "KV_%s", bucket);
    snprintf(subject, sizeof(subject), "$KV.%s.%s", bucket, keys);
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = stream;
    so.Ordered = true;
    so.Config.DeliverPolicy = js_DeliverLastPerSubject;
    jsErrCode je = 0;
    return js_Subscribe(sub, js, subject, cb, arg, NULL, &so, &je);
}

natsStatus vc_nats_connect(natsConnection **nc, const mesh_settings_t *c, const char *daemon,
                           natsConnectionHandler on_event, void *closure)
{
    natsOptions *o = NULL;
    natsStatus s = vc_nats_options(&o, c, daemon, on_event, closure);
    if (s != NATS_OK)
        return s;
    s = natsConnection_Connect(nc, o);
    if (s == NATS_NOT_YET_CONNECTED)
        s = NATS_OK; /* it keeps trying; on_event says when */
    natsOptions_Destroy(o);
    if (s != NATS_OK)
        vc_log(VC_LOG_CRIT, "nats", "cannot connect to NATS: %s (%s)", natsStatus_GetText(s), nats_GetLastError(NULL));
    return s;
}

int vc_nats_inbox_init(vc_nats_inbox_t *ib)
{
    pthread_mutex_init(&ib->lock, NULL);
    ib->head = NULL;
    ib->tail = &ib->head;
    ib->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    return ib->fd < 0 ? -1 : 0;
}

static void inbox_add(vc_nats_inbox_t *ib, int kind, natsMsg *msg, void *data)
{
    vc_nats_item_t *it = vc_malloc(sizeof(*it));
    *it = (vc_nats_item_t){NULL, kind, msg, data};
    pthread_mutex_lock(&ib->lock);
    int was_empty = ib->head == NULL;
    *ib->tail = it;
    ib->tail = &it->next;
    pthread_mutex_unlock(&ib->lock);
    if (was_empty) {
        uint64_t one = 1;
        (void)!write(ib->fd, &one, sizeof(one));
    }
}

void vc_nats_inbox_push(vc_nats_inbox_t *ib, int kind, natsMsg *msg)
{
    inbox_add(ib, kind, msg, NULL);
}

void vc_nats_inbox_put(vc_nats_inbox_t *ib, int kind, void *data)
{
    inbox_add(ib, kind, NULL, data);
}

vc_nats_item_t *vc_nats_inbox_take(vc_nats_inbox_t *ib)
{
    uint64_t n;
    (void)!read(ib->fd, &n, sizeof(n));
    pthread_mutex_lock(&ib->lock);
    vc_nats_item_t *all = ib->head;
    ib->head = NULL;
    ib->tail = &ib->head;
    pthread_mutex_unlock(&ib->lock);
    return all;
}

void vc_nats_inbox_fini(vc_nats_inbox_t *ib)
{
    for (vc_nats_item_t *it = vc_nats_inbox_take(ib), *next; it; it = next) {
        next = it->next;
        if (it->msg)
            natsMsg_Destroy(it->msg);
        free(it->data);
        free(it);
    }
    close(ib->fd);
    pthread_mutex_destroy(&ib->lock);
}
