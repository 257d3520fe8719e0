/*
 * The cluster's contract (vc-mesh, docs/cluster.md): its settings, read by
 * vc-mesh and by the daemons that hand it what must reach every node
 * (vc-cache's purges, through the "mesh-in" endpoint), and the names it
 * uses in NATS. One machine alone sets no cluster.node: then no vc-mesh
 * runs, nothing connects to NATS, and nothing here costs anything.
 */
#ifndef VC_MESH_H
#define VC_MESH_H

#include "vc_settings.h"

#include <stdint.h>

/* The roster: a JetStream key-value bucket, one key a node. */
#define VC_MESH_ROSTER "vc_roster"
/* The purges: a JetStream stream on subjects "vc.purge.NODE". */
#define VC_MESH_PURGES "VC_PURGES"
#define VC_MESH_PURGE_SUBJECT "vc.purge."
/* Room messages: core subjects "vc.room.NODE" (at most once). */
#define VC_MESH_ROOM_SUBJECT "vc.room."
/* "Tell all you hold": core subjects "vc.share.NODE", from a node whose
 * vc-bus restarted (it lost the others' presence members and rooms). */
#define VC_MESH_SHARE_SUBJECT "vc.share."
/* Certificates: a JetStream key-value bucket, "cert.HEX" a site's
 * (MeshCert), "lock.HEX" the node ordering it now. */
#define VC_MESH_CERTS "vc_certs"
/* Schedules: a JetStream key-value bucket, "s.HEX" an entry's (a hash of
 * its site and line): the node that runs its last minute taken. */
#define VC_MESH_SCHEDULES "vc_schedules"
/* Challenge answers: core subject, every node answers the request. */
#define VC_MESH_ANSWER_SUBJECT "vc.acme.answer"
/* A node's name: letters, digits, '-' and '_' (a NATS key and subject token). */
#define VC_MESH_NODE_MAX 63

/* The "cluster.*" settings (settings/vc_mesh_settings.c). */
typedef struct mesh_settings {
    char *node;  /* this node's name; empty: no cluster */
    char **nats; /* the NATS servers: nats:// (loopback only) or tls:// */
    size_t nnats;
    char *credentials;     /* a NATS credentials file (JWT and NKEY seed) */
    char *user;            /* or a user, */
    char *password_file;   /* and a file holding the password */
    char *ca;              /* the CA that signed the servers' certificates */
    int64_t heartbeat_ms;  /* how often a node writes its roster entry */
    int64_t suspect_ms;    /* silent this long: suspect */
    int64_t gone_ms;       /* silent this long: gone (the entry expires) */
    int64_t purge_keep_ms; /* how long the purge stream keeps a purge */
    int64_t replicas;      /* copies JetStream keeps of the roster and the purges */
    /* A NATS server member on this node, run by `vc up` (vc-nats). */
    int nats_server;
    char *nats_listen;         /* its client port: "127.0.0.1:4222" */
    char *nats_cluster_listen; /* its port for the other members: "0.0.0.0:6222" */
    char **nats_routes;        /* the other members: "host:port" */
    size_t nnats_routes;
    char *tls_cert, *tls_key; /* the member's certificate: TLS for clients and routes */
    char *secret_file;        /* the cluster's shared secret: seals certificates' keys between nodes */
    int insecure;             /* no credentials on purpose: every local user could speak on its subjects */
} mesh_settings_t;

extern const vc_section_t vc_mesh_settings;

static inline const mesh_settings_t *vc_mesh_settings_of(const struct vc_config *cfg)
{
    return (const mesh_settings_t *)vc_config_section(cfg, &vc_mesh_settings);
}

/* The password in cluster.password_file, its line end cut: the caller
 * wipes and frees it. NULL (errno set) if it cannot be read. */
char *vc_mesh_password(const mesh_settings_t *m);

/* The key that seals what carries a private key between nodes, derived
 * from the secret in cluster.secret_file (VC_MESH_SECRET_MIN bytes or
 * more, the same on every node). 0, or -1 with why. */
#define VC_MESH_SECRET_MIN 32
#define VC_MESH_SEAL_KEY 32
int vc_mesh_seal_key(const mesh_settings_t *m, unsigned char key[VC_MESH_SEAL_KEY], char *why, size_t len);

/* Whether name is a node name (VC_MESH_NODE_MAX characters of [A-Za-z0-9_-]). */
int vc_mesh_node_name_ok(const char *name);

#endif
