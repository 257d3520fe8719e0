/*
 * vc-front's shared state: the h2o configuration and context, the sites,
 * and the counters every module updates.
 */
#ifndef VC_FRONT_H
#define VC_FRONT_H

#include <h2o.h>
#include <sys/socket.h>

#include "route.h"
#include "vc_front_settings.h"
#include "vc_daemon.h"

typedef struct tls tls_t;

/* One site at run time. Its h2o pathconfs are never reachable by h2o's own
 * host routing (the accept context lists only the front's handler), so
 * every request passes our checks before a file handler sees it. */
typedef struct error_page {
    int status;
    h2o_iovec_t body; /* read at start; malloc'd */
} error_page_t;

typedef struct redirect_rule {
    char *from, *to;
    int status;
} redirect_rule_t;

typedef struct site_rt {
    const vc_site_t *conf; /* borrowed from the configuration */
    error_page_t *errors;
    size_t nerrors;
    redirect_rule_t *redirects;
    size_t nredirects;
    route_site_t route;
    h2o_hostconf_t *hostconf;    /* backends register their paths in it */
    h2o_pathconf_t *answer_conf; /* compress and log for answers made or streamed (PHP's, the front's own) */
    void **backend_state;        /* what each backend keeps for the site (seam.h) */
} site_rt_t;

/* Per client connection, for budgets a connection must not exceed. Shared
 * by the socket (until it closes) and each PHP request it has in flight. */
typedef struct conn_state {
#define CONN_STATE_MAGIC 0x636f6e6eu /* "conn" */
    unsigned magic;
    struct front *f;
    h2o_socket_t *sock; /* NULL once closed */
    int fd;
    struct sockaddr_storage peer;
    uint64_t accepted_ms;          /* for front.header_timeout */
    struct sockaddr_storage local; /* our end, asked once (SERVER_ADDR) */
    int has_local;
    unsigned refs;
    uint32_t resets; /* PHP requests it cancelled before their answer */
    int cut;         /* over budget: being closed */
    int upgraded;    /* a WebSocket now (ws_conn.c), which keeps itself alive */
    int proxy;       /* in front.trusted_proxies: 0 not asked yet, 1 yes, -1 no (forwarded.c) */
    /* The watchdog: the kernel's byte counts a second ago, requests that
     * reached us, seconds in a row without progress. */
    uint64_t last_read, last_acked, requests, last_requests;
    int php_waiting;  /* set each tick by the backend: PHP is working for it */
    int lend_bounced; /* a worker it was lent to gave it back unserved: not lent again (php/lend_conn.c) */
    int lent;         /* a worker has it (sock NULL): the watchdog still measures it, by fd */
    unsigned quiet_s;
    char sni[256];                  /* the TLS server name the client asked for, or "" */
    struct conn_state *prev, *next; /* every open connection */
} conn_state_t;

/* Cancelled-before-answer PHP requests a connection may make before it is
 * closed: HTTP/2 rapid reset (CVE-2023-44487) and MadeYouReset turn each
 * reset into work for PHP, and resets never refund this budget. */
#define CONN_RESET_BUDGET 100

/* Bytes a connection must send in a second for its reading alone to count
 * as progress (Apache's mod_reqtimeout MinRate): a body or headers
 * trickled a byte at a time keep a connection busy for ever otherwise. */
#define CONN_MIN_READ_RATE 500

typedef struct front_stats {
    /* The core's own; each backend counts its own (seam.h). */
    uint64_t requests, statics, redirects, refused;
    uint64_t connections, connections_refused; /* open now; turned away */
    uint64_t connections_cut;                  /* closed for resets or stalls */
    uint64_t connections_banned;               /* closed at once: a banned address */
    uint64_t misdirected;                      /* 421: Host not served by the TLS name's certificate */
    uint64_t connections_evicted;              /* idle ones closed for a new client at max_connections */
    uint64_t ranges_tamed;                     /* Range headers merged or dropped (ranges.h) */
} front_stats_t;

typedef struct front {
#define FRONT_MAGIC 0x66726e74u /* "frnt": checked by the core and every backend it is handed to */
    unsigned magic;
    vc_daemon_t d;
    /* d.cfg's front.* (vc_front_settings.h), looked up once: a front keeps its
     * configuration for its life (it is replaced to apply another). */
    const front_settings_t *settings;
    h2o_globalconf_t gc;
    h2o_context_t ctx;
    h2o_hostconf_t *main_host;
    h2o_hostconf_t *accept_hosts[2]; /* main_host, NULL */
    h2o_accept_ctx_t accept_plain, accept_tls, accept_admin;
    h2o_hostconf_t *admin_hosts[2]; /* the metrics host, NULL */
    tls_t *tls;
    struct readiness *readiness; /* with an admin listener: /ready (readiness.h) */
    site_rt_t *sites;
    size_t nsites;
    uint16_t tls_port; /* for HTTP -> HTTPS redirects */
    int running;
    h2o_timeout_entry_t tick;                /* once a second */
    conn_state_t *conns;                     /* open client connections, for the watchdog */
    struct bans *bans;                       /* addresses refused for a while */
    struct peers *peers;                     /* connections open per address */
    h2o_access_log_filehandle_t *access_log; /* NULL: none */
    int temp_fd;                             /* front.temp_path, for answers (stream.c); -1 if unusable */
    front_stats_t stats;
    front_stats_t last_tick; /* stats one second ago, for rates */
    char *never[2];          /* the data and configuration directories, real: never served (route.h) */
    size_t nnever;
} front_t;

#endif
