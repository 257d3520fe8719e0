#include "mesh_wire.h"
#include "vc_mesh.h"

#include <stdio.h>
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

/* The kinds vc-cache's replay verb takes, and whether each needs a value. */
static const struct {
    const char *name;
    int needs_value;
} kinds[] = {{"url", 1}, {"prefix", 1}, {"tag", 1}, {"all", 0}, {"site", 1}, {"key", 1}};

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
    if (bad == NULL)
        return m;
    snprintf(why, wlen, "%s", bad);
    if (m)
        vc__room_message__free_unpacked(m, NULL);
    return NULL;
}
