#include "mesh_wire.h"
#include "vc_acme.h"
#include "vc_mesh.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* No control characters (they would reach logs and `vc nodes`), bounded. */
static int text_ok(const char *s)
{
    size_t n = strnlen(s, MESH_STRING_MAX + 1);
    if (n > MESH_STRING_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return 0;
    return 1;
}

static int texts_ok(char *const *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!text_ok(v[i]))
            return 0;
    return 1;
}

Vc__MeshNode *mesh_node_read(const char *key, const void *data, size_t len, char *why, size_t wlen)
{
    Vc__MeshNode *n = vc__mesh_node__unpack(NULL, len, data);
    const char *bad = NULL;
    if (n == NULL)
        bad = "not a roster entry";
    else if (!vc_mesh_node_name_ok(n->node) || strcmp(n->node, key) != 0)
        bad = "its node is not its key";
    else if (n->n_addresses > MESH_ADDRESSES_MAX || n->n_sites > MESH_SITES_MAX)
        bad = "too many addresses or sites";
    else if (!text_ok(n->version) || !text_ok(n->config) || !texts_ok(n->addresses, n->n_addresses) ||
             !texts_ok(n->sites, n->n_sites))
        bad = "a field too long or with control characters";
    else if (!(n->load >= 0 && n->load < 1e6))
        bad = "its load is not a load";
    if (bad == NULL)
        return n;
    snprintf(why, wlen, "%s", bad);
    if (n)
        vc__mesh_node__free_unpacked(n, NULL);
    return NULL;
}

/* The kinds vc-cache's replay verb takes, and whether each needs a value;
 * and "mark", a node's own marker that purges nothing (catchup.c). */
static const struct {
    const char *name;
    int needs_value;
} kinds[] = {{"url", 1}, {"prefix", 1}, {"tag", 1}, {"all", 0}, {"site", 1}, {"key", 1}, {"mark", 1}};

Vc__MeshPurge *mesh_purge_read(const void *data, size_t len, char *why, size_t wlen)
{
    Vc__MeshPurge *p = vc__mesh_purge__unpack(NULL, len, data);
    const char *bad = NULL;
    size_t k = 0;
    while (p && k < sizeof(kinds) / sizeof(kinds[0]) && strcmp(p->kind, kinds[k].name) != 0)
        k++;
    if (p == NULL)
        bad = "not a purge";
    else if (!vc_mesh_node_name_ok(p->origin))
        bad = "its origin is not a node's name";
    else if (k == sizeof(kinds) / sizeof(kinds[0]))
        bad = "not a kind of purge";
    else if (kinds[k].needs_value && p->value[0] == '\0')
        bad = "no value";
    else if (p->id[0] == '\0' || p->n_hosts > MESH_HOSTS_MAX)
        bad = "no id, or too many hosts";
    else if (!text_ok(p->id) || !text_ok(p->value) || !texts_ok(p->hosts, p->n_hosts))
        bad = "a field too long or with control characters";
    if (bad == NULL)
        return p;
    snprintf(why, wlen, "%s", bad);
    if (p)
        vc__mesh_purge__free_unpacked(p, NULL);
    return NULL;
}

/* Rooms named in a Socket.IO operation: as a front takes them from PHP
 * (daemons/vc-front/realtime/socketio.c). */
static int sio_rooms_ok(char *const *v, size_t n)
{
    if (n > MESH_SIO_ROOMS_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (strnlen(v[i], MESH_SIO_ROOM_MAX + 1) > MESH_SIO_ROOM_MAX)
            return 0;
    return 1;
}

static int sio_op_ok(const Vc__SioOp *op)
{
    return strnlen(op->nsp, MESH_ROOM_MAX + 1) <= MESH_ROOM_MAX &&
           strnlen(op->packet, MESH_ROOM_DATA_MAX + 1024) <= MESH_ROOM_DATA_MAX + 1023 &&
           sio_rooms_ok(op->rooms, op->n_rooms) && sio_rooms_ok(op->except, op->n_except) &&
           sio_rooms_ok(op->join, op->n_join) && sio_rooms_ok(op->leave, op->n_leave);
}

Vc__RoomMessage *mesh_room_read(const void *data, size_t len, char *why, size_t wlen)
{
    Vc__RoomMessage *m = vc__room_message__unpack(NULL, len, data);
    const char *bad = NULL;
    size_t rl = m ? strnlen(m->room, MESH_ROOM_MAX + 1) : 0;
    if (m == NULL)
        bad = "not a room message";
    else if (!vc_mesh_node_name_ok(m->origin))
        bad = "its origin is not a node's name";
    else if (rl == 0 || rl > MESH_ROOM_MAX || memchr(m->room, '\n', rl) || !strchr(m->room, ':'))
        bad = "not a room's name";
    else if (strnlen(m->event, MESH_ROOM_MAX + 1) > MESH_ROOM_MAX || strnlen(m->except, 65) > 64 ||
             strnlen(m->user_id, MESH_ROOM_MAX + 1) > MESH_ROOM_MAX || m->data.len > MESH_ROOM_DATA_MAX ||
             m->n_topics > MESH_ROOM_TOPICS_MAX || !texts_ok(m->topics, m->n_topics) || !text_ok(m->event_id))
        bad = "a field too long";
    else if (m->member && (m->member->user_id[0] == '\0' || strnlen(m->member->user_id, 129) > 128 ||
                           strnlen(m->member->info, 4097) > 4096))
        bad = "a presence member's change without a user, or too long";
    else if (m->member && m->occupancy)
        bad = "both a member's change and a room's";
    else if (m->sio && !sio_op_ok(m->sio))
        bad = "a Socket.IO operation with a field too long, or too many rooms";
    if (bad == NULL)
        return m;
    snprintf(why, wlen, "%s", bad);
    if (m)
        vc__room_message__free_unpacked(m, NULL);
    return NULL;
}

#define NONCE crypto_aead_xchacha20poly1305_ietf_NPUBBYTES
#define TAG crypto_aead_xchacha20poly1305_ietf_ABYTES

unsigned char *mesh_seal(const unsigned char *key, const char *ad, const void *plain, size_t len, size_t *outlen)
{
    unsigned char *out = malloc(NONCE + len + TAG);
    if (out == NULL)
        return NULL;
    randombytes_buf(out, NONCE);
    unsigned long long clen = 0;
    crypto_aead_xchacha20poly1305_ietf_encrypt(out + NONCE, &clen, plain, len, (const unsigned char *)ad, strlen(ad),
                                               NULL, out, key);
    *outlen = NONCE + (size_t)clen;
    return out;
}

unsigned char *mesh_unseal(const unsigned char *key, const char *ad, const void *data, size_t len, size_t *outlen)
{
    if (len < NONCE + TAG)
        return NULL;
    unsigned char *out = malloc(len - NONCE - TAG + 1);
    unsigned long long plen = 0;
    if (out == NULL ||
        crypto_aead_xchacha20poly1305_ietf_decrypt(out, &plen, NULL, (const unsigned char *)data + NONCE, len - NONCE,
                                                   (const unsigned char *)ad, strlen(ad), data, key) != 0) {
        free(out);
        return NULL;
    }
    *outlen = (size_t)plen;
    return out;
}

/* A name vc-acme keeps a certificate under: it becomes a file's name. */
static int site_ok(const char *site)
{
    size_t n = strnlen(site, MESH_SITE_MAX + 1), p = strlen(VC_ACME_ON_DEMAND_PREFIX);
    if (n == 0 || n > MESH_SITE_MAX)
        return 0;
    if (strncmp(site, VC_ACME_ON_DEMAND_PREFIX, p) == 0) {
        char host[256];
        return vc_acme_on_demand_host(site + p, n - p, host, sizeof(host)) && strcmp(host, site + p) == 0;
    }
    return site[0] != '.' && strspn(site, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

Vc__MeshCert *mesh_cert_read(const void *data, size_t len, char *why, size_t wlen)
{
    Vc__MeshCert *c = vc__mesh_cert__unpack(NULL, len, data);
    const char *bad = NULL;
    if (c == NULL)
        bad = "not a certificate";
    else if (!vc_mesh_node_name_ok(c->origin))
        bad = "its origin is not a node's name";
    else if (!site_ok(c->site))
        bad = "its site is not a site's name";
    else if (c->hosts[0] == '\0' || !text_ok(c->hosts) || c->not_after <= 0)
        bad = "no hosts, or no expiry";
    else if (c->cert_pem.len == 0 || c->cert_pem.len > MESH_CERT_MAX || c->key_pem.len == 0 ||
             c->key_pem.len > MESH_KEY_MAX)
        bad = "no chain or key, or too long";
    else if (memchr(c->cert_pem.data, 0, c->cert_pem.len) || memchr(c->key_pem.data, 0, c->key_pem.len))
        bad = "a chain or key that is not text";
    if (bad == NULL)
        return c;
    snprintf(why, wlen, "%s", bad);
    if (c)
        vc__mesh_cert__free_unpacked(c, NULL);
    return NULL;
}

Vc__MeshAnswer *mesh_answer_read(const void *data, size_t len, char *why, size_t wlen)
{
    Vc__MeshAnswer *a = vc__mesh_answer__unpack(NULL, len, data);
    const char *bad = NULL;
    size_t nl = a ? strnlen(a->name, 256) : 0;
    if (a == NULL)
        bad = "not an answer";
    else if (!vc_mesh_node_name_ok(a->origin))
        bad = "its origin is not a node's name";
    else if (strcmp(a->type, "http-01") != 0 && strcmp(a->type, "tls-alpn-01") != 0)
        bad = "not a challenge the fronts answer";
    else if (nl == 0 || nl > 255 || !text_ok(a->name))
        bad = "not a challenge's name";
    else if (a->put && (a->value.len == 0 || a->value.len > MESH_KEY_MAX || memchr(a->value.data, 0, a->value.len)))
        bad = "no value, or too long";
    if (bad == NULL)
        return a;
    snprintf(why, wlen, "%s", bad);
    if (a)
        vc__mesh_answer__free_unpacked(a, NULL);
    return NULL;
}

int mesh_sched_read(const void *data, size_t len, mesh_sched_value_t *v)
{
    char text[MESH_SCHED_VALUE_MAX], state[8];
    if (len == 0 || len >= sizeof(text) || memchr(data, '\0', len))
        return -1;
    memcpy(text, data, len);
    text[len] = '\0';
    int end = 0;
    if (sscanf(text, "%63[A-Za-z0-9_-] %lld %7[a-z] %lld%n", v->node, &v->minute, state, &v->started_ms, &end) != 4 ||
        (size_t)end != len || !vc_mesh_node_name_ok(v->node) || v->minute <= 0 || v->started_ms <= 0)
        return -1;
    if (strcmp(state, "running") == 0)
        v->running = 1;
    else if (strcmp(state, "done") == 0)
        v->running = 0;
    else
        return -1;
    return 0;
}

int mesh_sched_write(const mesh_sched_value_t *v, char *out, size_t len)
{
    return snprintf(out, len, "%s %lld %s %lld", v->node, v->minute, v->running ? "running" : "done", v->started_ms);
}
