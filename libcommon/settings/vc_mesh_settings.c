/* vc-mesh's settings and supervision (vc_settings.h): the "cluster"
 * section. The values are read by vc-cache too (whether to hand purges
 * to vc-mesh): their type is the contract in libcommon/vc_mesh.h. */
#include "vc_mesh.h"
#include "vc_config.h"
#include "vc_util.h"

#include <errno.h>
#include <sodium.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define M(field) offsetof(mesh_settings_t, field)

static const vc_setting_t settings[] = {
    {"cluster.node", T_STR, M(node), 0, 0, "this node's name: set, the node joins the cluster"},
    {"cluster.nats", T_LIST, M(nats), 0, 0, "the NATS servers: nats:// (loopback only) or tls://"},
    {"cluster.credentials", T_STR, M(credentials), 0, 0, "a NATS credentials file (JWT and NKEY seed)"},
    {"cluster.user", T_STR, M(user), 0, 0, "a NATS user, with password_file"},
    {"cluster.password_file", T_STR, M(password_file), 0, 0,
     "the NATS user's password, in a file only the suite reads"},
    {"cluster.ca", T_STR, M(ca), 0, 0, "the CA that signed the NATS servers' certificates"},
    {"cluster.heartbeat", T_DURATION, M(heartbeat_ms), 100, 60000, "how often a node writes its roster entry"},
    {"cluster.suspect_after", T_DURATION, M(suspect_ms), 200, 600000, "a node silent this long is suspect"},
    {"cluster.gone_after", T_DURATION, M(gone_ms), 1000, 3600000,
     "a node silent this long is gone (its entry expires)"},
    {"cluster.purge_keep", T_DURATION, M(purge_keep_ms), 1000, 30LL * 86400000,
     "how long the purge stream keeps a purge"},
    {"cluster.replicas", T_INT, M(replicas), 1, 5, "copies JetStream keeps of the roster and the purges"},
    {"cluster.nats_server", T_BOOL, M(nats_server), 0, 0, "a NATS server member on this node, run by vc up (vc-nats)"},
    {"cluster.nats_listen", T_STR, M(nats_listen), 0, 0, "the member's client port (\"127.0.0.1:4222\")"},
    {"cluster.nats_cluster_listen", T_STR, M(nats_cluster_listen), 0, 0, "the member's port for the other members"},
    {"cluster.nats_routes", T_LIST, M(nats_routes), 0, 0, "the other members: \"host:port\""},
    {"cluster.tls_cert", T_STR, M(tls_cert), 0, 0, "the member's certificate: TLS for clients and routes"},
    {"cluster.tls_key", T_STR, M(tls_key), 0, 0, "the key of cluster.tls_cert"},
    {"cluster.secret_file", T_STR, M(secret_file), 0, 0,
     "the cluster's shared secret: seals certificates' keys between nodes"},
    {"cluster.insecure", T_BOOL, M(insecure), 0, 0,
     "true: NATS with no credentials on purpose (any local user may speak)"},
};

static const vc_env_setting_t env[] = {
    {"VC_CLUSTER_NODE", "cluster.node"},
};

int vc_mesh_node_name_ok(const char *name)
{
    size_t n = strlen(name);
    return n > 0 && n <= VC_MESH_NODE_MAX &&
           strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") == n;
}

char *vc_mesh_password(const mesh_settings_t *m)
{
    size_t len = 0;
    char *pw = vc_read_file(m->password_file, &len);
    while (pw && len > 0 && (pw[len - 1] == '\n' || pw[len - 1] == '\r'))
        pw[--len] = '\0';
    return pw;
}

int vc_mesh_seal_key(const mesh_settings_t *m, unsigned char key[VC_MESH_SEAL_KEY], char *why, size_t len)
{
    errno = 0;
    if (m->secret_file[0] == '\0') {
        snprintf(why, len, "cluster.secret_file is not set");
        return -1;
    }
    if (sodium_init() < 0) {
        snprintf(why, len, "libsodium could not start");
        return -1;
    }
    /* Inside a pool's wall the file is covered by an empty one no one may
     * read (cli/walls.c): as unreadable as it is to the pool's user. */
    struct stat st;
    if (stat(m->secret_file, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0777) == 0 && st.st_size == 0) {
        errno = EACCES;
        snprintf(why, len, "cluster.secret_file \"%s\" cannot be read: %s", m->secret_file, strerror(errno));
        return -1;
    }
    size_t n = 0;
    char *secret = vc_read_file(m->secret_file, &n);
    if (secret == NULL) {
        snprintf(why, len, "cluster.secret_file \"%s\" cannot be read: %s", m->secret_file, strerror(errno));
        return -1;
    }
    int ok = n >= VC_MESH_SECRET_MIN;
    if (ok) { /* one key for this use, whatever else the secret serves */
        crypto_generichash_state h;
        crypto_generichash_init(&h, NULL, 0, VC_MESH_SEAL_KEY);
        crypto_generichash_update(&h, (const unsigned char *)"vc-mesh seal 1", 15);
        crypto_generichash_update(&h, (const unsigned char *)secret, n);
        crypto_generichash_final(&h, key, VC_MESH_SEAL_KEY);
    } else
        snprintf(why, len, "cluster.secret_file \"%s\" holds %zu bytes: %d or more (head -c 32 /dev/urandom | base64)",
                 m->secret_file, n, VC_MESH_SECRET_MIN);
    sodium_memzero(secret, n);
    free(secret);
    return ok ? 0 : -1;
}

static void defaults(void *values, const char *data_dir)
{
    (void)data_dir;
    mesh_settings_t *m = values; /* strings not set here are "" (vc_settings.h) */
    m->nats_listen = vc_strdup("127.0.0.1:4222");
    m->nats_cluster_listen = vc_strdup("0.0.0.0:6222");
    m->heartbeat_ms = 1000;
    m->suspect_ms = 3000;
    m->gone_ms = 5000;
    m->purge_keep_ms = 3600000;
    /* One copy: a cluster of one NATS server. With three members, 3: the
     * roster and the purges outlive one member's loss. */
    m->replicas = 1;
}

/* HOST:PORT on this machine only. */
static int loopback(const char *hostport)
{
    return !strncmp(hostport, "127.", 4) || !strncmp(hostport, "localhost:", 10) || !strncmp(hostport, "[::1]:", 6);
}

/* A server's URL: nats:// to this machine only (the link carries no
 * encryption of its own), tls:// anywhere. */
static int url_ok(const char *url, char *why, size_t len)
{
    const char *host = !strncmp(url, "tls://", 6) ? url + 6 : !strncmp(url, "nats://", 7) ? url + 7 : NULL;
    if (host == NULL || host[0] == '\0' || host[0] == ':') {
        snprintf(why, len, "cluster.nats: \"%s\" is not a NATS server's URL (tls://HOST:PORT, or nats:// on loopback)",
                 url);
        return -1;
    }
    if (url[0] == 't' || loopback(host))
        return 0;
    snprintf(why, len,
             "cluster.nats: \"%s\" is plain nats:// to another machine; traffic between nodes is never plaintext off "
             "loopback: use tls:// (and cluster.ca)",
             url);
    return -1;
}

/* The member vc-nats runs: its routes to other machines carry TLS and
 * the cluster's credentials, as its clients do. */
static int server_ok(const mesh_settings_t *m, char *why, size_t len)
{
    if (!strchr(m->nats_listen, ':') || !strchr(m->nats_cluster_listen, ':')) {
        snprintf(why, len, "cluster.nats_listen and cluster.nats_cluster_listen are HOST:PORT");
        return -1;
    }
    if (!m->tls_cert[0] != !m->tls_key[0]) {
        snprintf(why, len, "cluster.tls_cert and cluster.tls_key go together");
        return -1;
    }
    int off_loopback = !loopback(m->nats_listen) || (m->nnats_routes && !loopback(m->nats_cluster_listen));
    for (size_t i = 0; i < m->nnats_routes; i++) {
        if (!strchr(m->nats_routes[i], ':')) {
            snprintf(why, len, "cluster.nats_routes: \"%s\" is not HOST:PORT", m->nats_routes[i]);
            return -1;
        }
        off_loopback |= !loopback(m->nats_routes[i]);
    }
    if (off_loopback && (!m->tls_cert[0] || !m->user[0])) {
        snprintf(why, len,
                 "cluster.nats_server listens or routes off loopback: set cluster.tls_cert, cluster.tls_key and "
                 "cluster.ca (TLS), and cluster.user with cluster.password_file (no client nor member without them)");
        return -1;
    }
    return 0;
}

/* A site whose certificate vc-acme orders: in a cluster, every node gets
 * it, its key sealed with the cluster's secret. */
static int secret_needed(const vc_config_t *cfg, const mesh_settings_t *m, char *why, size_t len)
{
    const char *site = NULL;
    for (size_t i = 0; i < cfg->nsites && site == NULL; i++)
        if (cfg->sites[i].tls && strcmp(cfg->sites[i].tls, "acme") == 0)
            site = cfg->sites[i].name;
    if (site == NULL)
        return 0;
    unsigned char key[VC_MESH_SEAL_KEY];
    char w[512];
    int rc = vc_mesh_seal_key(m, key, w, sizeof(w));
    sodium_memzero(key, sizeof(key));
    /* Every daemon checks the configuration it loads; only vc-mesh, as
     * the suite's user, needs to read the secret (it says so if it cannot). */
    if (rc == 0 || errno == EACCES)
        return 0;
    snprintf(why, len,
             "%s%s; site \"%s\" has tls = \"acme\", and in a cluster its certificate and key go to every node sealed "
             "with that secret (the same file on every node)",
             m->secret_file[0] ? "" : "cluster.node is set, but ", w, site);
    return -1;
}

/* A file of secrets (a password, the cluster's secret, credentials): no
 * other user may read it, nor anyone but its owner write it, as a TLS
 * key (a pool's PHP could otherwise read it, and the pools' walls hide
 * them besides). Checked where the file can be seen. */
static int secret_file_ok(const char *setting, const char *path, char *why, size_t len)
{
    struct stat st;
    if (path[0] == '\0' || stat(path, &st) != 0)
        return 0;
    if ((st.st_mode & 0027) != 0) {
        snprintf(why, len,
                 "%s \"%s\" is mode %04o: others may %s it; make it 0600 or 0640 (root and the suite's group: "
                 "chown root:vc; chmod 0640)",
                 setting, path, (unsigned)(st.st_mode & 07777), st.st_mode & 0007 ? "read" : "write");
        return -1;
    }
    return 0;
}

static int validate(const vc_config_t *cfg, const void *values, char *why, size_t len)
{
    const mesh_settings_t *m = values;
    if (m->node[0] == '\0') {
        if (m->nnats == 0)
            return 0; /* one machine: no cluster */
        snprintf(why, len, "cluster.nats is set but cluster.node is not: name this node");
        return -1;
    }
    if (!vc_mesh_node_name_ok(m->node)) {
        snprintf(why, len, "cluster.node \"%s\": up to %d letters, digits, '-' and '_'", m->node, VC_MESH_NODE_MAX);
        return -1;
    }
    if (m->nnats == 0) {
        snprintf(why, len, "cluster.node is set: cluster.nats must list the NATS servers");
        return -1;
    }
    for (size_t i = 0; i < m->nnats; i++)
        if (url_ok(m->nats[i], why, len) < 0)
            return -1;
    if (m->credentials[0] && m->user[0]) {
        snprintf(why, len, "cluster.credentials and cluster.user: one or the other");
        return -1;
    }
    if (!m->user[0] != !m->password_file[0]) {
        snprintf(why, len, "cluster.user and cluster.password_file go together");
        return -1;
    }
    if (m->nats_server && server_ok(m, why, len) < 0)
        return -1;
    if (!(m->heartbeat_ms < m->suspect_ms && m->suspect_ms < m->gone_ms)) {
        snprintf(
            why, len,
            "cluster.heartbeat (%lld ms) must be below suspect_after (%lld ms), and that below gone_after (%lld ms)",
            (long long)m->heartbeat_ms, (long long)m->suspect_ms, (long long)m->gone_ms);
        return -1;
    }
    if (secret_needed(cfg, m, why, len) < 0)
        return -1;
    /* Without credentials, any local user (every site's PHP) could publish
     * into another site's rooms, purge every cache and add nodes. */
    if (!m->user[0] && !m->credentials[0] && !m->insecure) {
        snprintf(why, len,
                 "cluster.nats without cluster.user (and cluster.password_file) or cluster.credentials: every local "
                 "user, each site's PHP included, could publish on the cluster's subjects; set them, or write "
                 "cluster.insecure = true to run so on purpose");
        return -1;
    }
    if (secret_file_ok("cluster.password_file", m->password_file, why, len) < 0 ||
        secret_file_ok("cluster.secret_file", m->secret_file, why, len) < 0 ||
        secret_file_ok("cluster.credentials", m->credentials, why, len) < 0)
        return -1;
    return 0;
}

static const vc_supervision_t supervision = {
    .binary = "vc-mesh",
    .order = 12, /* after the bus it reports to, before the fronts */
    .copies = VC_COPIES_IF,
    .copies_setting = "cluster.node", /* none on a machine alone */
};

/* Purges vc-cache hands on to the other nodes. */
static const char *const endpoints[] = {"mesh-in", NULL};

const vc_section_t vc_mesh_settings = {
    .name = "cluster",
    .settings = settings,
    .nsettings = VC_ARRAY_SIZE(settings),
    .size = sizeof(mesh_settings_t),
    .defaults = defaults,
    .supervision = &supervision,
    .endpoints = endpoints,
    .env = env,
    .nenv = VC_ARRAY_SIZE(env),
    .validate = validate,
};
