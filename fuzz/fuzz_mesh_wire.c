/* libFuzzer: what vc-mesh reads from NATS (daemons/vc-mesh/mesh_wire.c),
 * a roster entry, a purge and a room message, from bytes another node or
 * a client with the cluster's credentials could send. What passes must be
 * what vc-mesh relies on: names that are node names, bounded texts without
 * control characters, a known kind with its value; and a node's entry that
 * passes, sent again, passes again. A certificate or an answer is also
 * sealed and opened again, and bytes not sealed with the key never open.
 * The first byte picks the message (even: a roster entry, its key's
 * length the rest; 1 mod 16: a purge; 3 mod 4: a room message; 5 mod 16: a
 * certificate; 9 mod 16: a schedule entry's key; 13 mod 16: a challenge's
 * answer). */
#include "mesh_wire.h"
#include "vc_mesh.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

static void check_text(const char *s)
{
    if (strlen(s) > MESH_STRING_MAX)
        abort();
    for (const char *p = s; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            abort();
}

static void node(const uint8_t *data, size_t size, size_t keylen)
{
    if (keylen > size)
        keylen = size;
    char key[64];
    if (keylen >= sizeof(key))
        keylen = sizeof(key) - 1;
    memcpy(key, data, keylen);
    key[keylen] = '\0';
    char why[128];
    Vc__MeshNode *n = mesh_node_read(key, data + keylen, size - keylen, why, sizeof(why));
    if (n == NULL)
        return;
    if (!vc_mesh_node_name_ok(n->node) || strcmp(n->node, key) || n->n_addresses > MESH_ADDRESSES_MAX ||
        n->n_sites > MESH_SITES_MAX)
        abort();
    check_text(n->version);
    for (size_t i = 0; i < n->n_sites; i++)
        check_text(n->sites[i]);
    /* What a node that passes would send of itself passes again (fields
     * it does not know are left out: protobuf-c keeps them as they came,
     * even ones it cannot write back). */
    Vc__MeshNode copy = *n;
    copy.base.n_unknown_fields = 0;
    copy.base.unknown_fields = NULL;
    size_t len = vc__mesh_node__get_packed_size(&copy);
    uint8_t *buf = malloc(len + 1);
    vc__mesh_node__pack(&copy, buf);
    Vc__MeshNode *again = mesh_node_read(key, buf, len, why, sizeof(why));
    if (again == NULL || strcmp(again->node, n->node) || again->n_sites != n->n_sites)
        abort();
    vc__mesh_node__free_unpacked(again, NULL);
    free(buf);
    vc__mesh_node__free_unpacked(n, NULL);
}

static void purge(const uint8_t *data, size_t size)
{
    char why[128];
    Vc__MeshPurge *p = mesh_purge_read(data, size, why, sizeof(why));
    if (p == NULL)
        return;
    if (!vc_mesh_node_name_ok(p->origin) || p->id[0] == '\0' || p->n_hosts > MESH_HOSTS_MAX)
        abort();
    check_text(p->id);
    check_text(p->value);
    for (size_t i = 0; i < p->n_hosts; i++)
        check_text(p->hosts[i]);
    if (strcmp(p->kind, "all") != 0 && p->value[0] == '\0')
        abort();
    vc__mesh_purge__free_unpacked(p, NULL);
}

static void room(const uint8_t *data, size_t size)
{
    char why[128];
    Vc__RoomMessage *m = mesh_room_read(data, size, why, sizeof(why));
    if (m == NULL)
        return;
    size_t rl = strlen(m->room);
    if (!vc_mesh_node_name_ok(m->origin) || rl == 0 || rl > MESH_ROOM_MAX || strchr(m->room, '\n') ||
        !strchr(m->room, ':') || m->data.len > MESH_ROOM_DATA_MAX || (m->member && m->occupancy))
        abort();
    /* A member's change names its user, within what vc-bus counts. */
    if (m->member &&
        (m->member->user_id[0] == '\0' || strlen(m->member->user_id) > 128 || strlen(m->member->info) > 4096))
        abort();
    /* A Socket.IO operation names at most 100 rooms, each bounded. */
    if (m->sio &&
        (m->sio->n_rooms > MESH_SIO_ROOMS_MAX || m->sio->n_join > MESH_SIO_ROOMS_MAX ||
         (m->sio->n_rooms && strlen(m->sio->rooms[0]) > MESH_SIO_ROOM_MAX) || strlen(m->sio->nsp) > MESH_ROOM_MAX))
        abort();
    vc__room_message__free_unpacked(m, NULL);
}

static const unsigned char key[VC_MESH_SEAL_KEY] = "0123456789abcdef0123456789abcdef";

/* What is sealed opens to the same bytes; what is not never opens. */
static void sealing(const uint8_t *data, size_t size)
{
    size_t len = 0, back = 0;
    if (mesh_unseal(key, "cert.00", data, size, &len) != NULL)
        abort();
    unsigned char *sealed = mesh_seal(key, "cert.00", data, size, &len);
    unsigned char *plain = mesh_unseal(key, "cert.00", sealed, len, &back);
    if (plain == NULL || back != size || (size && memcmp(plain, data, size)) ||
        mesh_unseal(key, "cert.01", sealed, len, &back) != NULL)
        abort();
    free(plain);
    free(sealed);
}

static void cert(const uint8_t *data, size_t size)
{
    sealing(data, size);
    char why[128];
    Vc__MeshCert *c = mesh_cert_read(data, size, why, sizeof(why));
    if (c == NULL)
        return;
    /* Its site becomes a file's name under DATA/tls/acme: never ".", "..",
     * hidden, nor a path (but an on-demand host's "on-demand/HOST"). Dots
     * inside a name are only dots ("a..b.key" stays in the directory). */
    if (!vc_mesh_node_name_ok(c->origin) || c->site[0] == '.' || c->not_after <= 0 || c->cert_pem.len == 0 ||
        c->cert_pem.len > MESH_CERT_MAX || c->key_pem.len > MESH_KEY_MAX || memchr(c->key_pem.data, 0, c->key_pem.len))
        abort();
    const char *slash = strchr(c->site, '/');
    if (slash && (strncmp(c->site, "on-demand/", 10) != 0 || strchr(slash + 1, '/')))
        abort();
    check_text(c->hosts);
    vc__mesh_cert__free_unpacked(c, NULL);
}

static void answer(const uint8_t *data, size_t size)
{
    char why[128];
    Vc__MeshAnswer *a = mesh_answer_read(data, size, why, sizeof(why));
    if (a == NULL)
        return;
    if (!vc_mesh_node_name_ok(a->origin) || (strcmp(a->type, "http-01") && strcmp(a->type, "tls-alpn-01")) ||
        a->name[0] == '\0' || (a->put && (a->value.len == 0 || memchr(a->value.data, 0, a->value.len))))
        abort();
    check_text(a->name);
    vc__mesh_answer__free_unpacked(a, NULL);
}

/* A schedule entry's key: what passes names a node, and reads back the
 * same once written again. */
static void sched(const uint8_t *data, size_t size)
{
    mesh_sched_value_t v, again;
    if (mesh_sched_read(data, size, &v) != 0)
        return;
    if (!vc_mesh_node_name_ok(v.node) || v.minute <= 0 || v.started_ms <= 0)
        abort();
    char text[MESH_SCHED_VALUE_MAX];
    int n = mesh_sched_write(&v, text, sizeof(text));
    if (n <= 0 || n >= (int)sizeof(text) || mesh_sched_read(text, (size_t)n, &again) != 0 ||
        strcmp(again.node, v.node) || again.minute != v.minute || again.started_ms != v.started_ms ||
        again.running != v.running)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if ((data[0] & 3) == 3)
        room(data + 1, size - 1);
    else if ((data[0] & 15) == 5)
        cert(data + 1, size - 1);
    else if ((data[0] & 15) == 13)
        answer(data + 1, size - 1);
    else if ((data[0] & 15) == 9)
        sched(data + 1, size - 1);
    else if (data[0] & 1)
        purge(data + 1, size - 1);
    else
        node(data + 1, size - 1, data[0] >> 1);
    return 0;
}
