/*
 * vc-panel: the web panel (docs/panel.md). One process on libh2o's loop:
 * its own HTTPS listener, a JSON API (api_*.c) behind one route table
 * (http.c), the pages under panel/ served as files, and live figures
 * from the bus over SSE (live.c).
 *
 * What it keeps: users and sessions in LMDB (users.c, sessions.c; this
 * daemon is their one writer), failed sign-ins in memory (lockout.c).
 * What it changes goes through the other daemons' control verbs, as `vc`
 * does, and each change is a panel.audit event on the bus (audit.c).
 */
#ifndef VC_PANEL_H
#define VC_PANEL_H

#include "vc_cidr.h"
#include "vc_daemon.h"
#include "vc_panel_settings.h"
#include "vc_store.h"

#include <h2o.h>
#include <jansson.h>
#include <stdint.h>

typedef struct lockout lockout_t;
typedef struct live live_t;
typedef struct follow follow_t;

typedef struct panel {
    vc_daemon_t d;
    const panel_settings_t *cfg; /* in d.cfg */
    vc_store_t *store;
    h2o_globalconf_t gc;
    h2o_context_t ctx;
    h2o_accept_ctx_t accept;
    SSL_CTX *ssl;
    vc_cidr_t *proxies;
    size_t nproxies;
    char *pages; /* absolute */
    lockout_t *lockout;
    live_t *live;
    void *sub; /* bus-out, the topics live.c follows */
    follow_t *follow;
    int terminal_fd; /* the terminal starter's link (VC_TERMINAL_FD), or -1 */
    h2o_timeout_entry_t tick;
    int running;
    uint64_t served, refused, signins, failed_signins;
} panel_t;

/* One request as the API sees it (http.c fills it). Strings are the
 * request's (h2o pool) or the session's; valid for the request. */
typedef struct preq {
    panel_t *p;
    h2o_req_t *req;
    const char *path;  /* without the query, NUL-terminated */
    const char *query; /* after '?', or "" */
    char addr[64];     /* the client: the peer, or X-Forwarded-For's from a trusted proxy */
    json_t *body;      /* the JSON object of a POST, or NULL */
    /* The session, once http.c found one. */
    char sid[65]; /* the stored key (hex SHA-256 of the cookie) */
    char user[64];
    char role[16]; /* "admin" or "viewer" */
    char csrf[44];
    int must_change;
} preq_t;

/* http.c */
void http_register(panel_t *p, h2o_hostconf_t *host);
/* Answers with a JSON body (stolen: the caller's reference goes). */
void http_json(preq_t *r, int status, json_t *body);
/* Answers {"error": message} with status. */
void http_error(preq_t *r, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* 1 unless the request has an Origin other than the panel's own. */
int http_same_origin(preq_t *r);
/* Adds a header to the answer (name and value copied into the request's pool). */
void http_header(preq_t *r, const char *name, const char *value);

/* A route of the API (api_*.c tables): who may call it, what it runs. */
typedef enum {
    ACCESS_OPEN,    /* no session: sign-in */
    ACCESS_SIGNED,  /* any session, even one that must change its password first */
    ACCESS_VIEWER,  /* a session, password changed: read */
    ACCESS_ADMIN,   /* an admin's session: change */
    ACCESS_STEP_UP, /* an admin's session and, in the same request, the password and code again (step_up.h) */
} access_t;

typedef struct route {
    const char *method, *path;
    access_t access;
    void (*run)(preq_t *r);
} route_t;

extern const route_t api_auth_routes[];
extern const size_t api_auth_nroutes;
extern const route_t api_suite_routes[];
extern const size_t api_suite_nroutes;
extern const route_t api_sites_routes[];
extern const size_t api_sites_nroutes;
extern const route_t api_users_routes[];
extern const size_t api_users_nroutes;
extern const route_t api_realtime_routes[];
extern const size_t api_realtime_nroutes;
extern const route_t api_certs_routes[];
extern const size_t api_certs_nroutes;
extern const route_t api_cluster_routes[];
extern const size_t api_cluster_nroutes;
extern const route_t terminal_routes[];
extern const size_t terminal_nroutes;
extern const route_t warm_routes[];
extern const size_t warm_nroutes;

/* api_sites.c: a site file's text (malloc'd; *enabled says whether it
 * is), or NULL once answered 404 or 502; and a new text for it, made by
 * the supervisor (configtest, undone if refused, reload) and answered. */
char *api_sites_text(preq_t *r, const char *name, int *enabled);
void api_sites_put(preq_t *r, const char *name, const char *text, size_t len, const char *action, const char *target);

/* audit.c: a change, on the bus as panel.audit (who, what, from where). */
void audit_record(preq_t *r, const char *action, const char *target, const char *result);

/* calls.c: take the stored configuration at the next tick (after the
 * supervisor reloaded the others for the panel); main.c's tick asks
 * whether it was asked (and clears it). */
void panel_reload_soon(void);
int calls_reload_wanted(void);

/* Control calls to the suite's daemons: 0 and *out (freed by the caller
 * with vc__reply__free_unpacked), or a negative error. */
struct Vc__Reply;
struct Vc__Field;
int panel_call(panel_t *p, const char *endpoint, const char *verb, const char *const *args, size_t nargs,
               long timeout_ms, struct Vc__Reply **out);

/* bus.c: a subscription to bus-out (*sub) for topics, read on the loop
 * by cb with sock->data = data; NULL if the bus cannot be reached. Unwatch
 * lets h2o go of ZeroMQ's descriptor and closes the socket. */
h2o_socket_t *panel_bus_watch(panel_t *p, void **sub, const char *const *topics, size_t ntopics, h2o_socket_cb cb,
                              void *data);
void panel_bus_unwatch(h2o_socket_t **s, void **sub);
/* The bus's journal, newest event first, each to take until it returns
 * non-zero (enough). */
struct Vc__Envelope;
void panel_journal_newest(panel_t *p, int (*take)(const struct Vc__Envelope *e, void *arg), void *arg);

/* calls.c. How long a call may take: a status, or a change that waits
 * for what it replaces (a reload, a purge, an order). */
#define API_CALL_MS 3000
#define API_LONG_CALL_MS 30000
/* A reply's fields as a JSON object, its records as an array of them. */
json_t *api_fields(struct Vc__Field *const *f, size_t n);
json_t *api_records(const struct Vc__Reply *rep);
/* The reply, or NULL once it answered 502 (the daemon does not answer). */
struct Vc__Reply *api_call(preq_t *r, const char *endpoint, const char *verb, const char *const *args, size_t n,
                           long ms);
/* A daemon's list, its records under key: {"running": true, "message",
 * key: [...]}, or {"running": false, "why", key: []} where the daemon does
 * not run here (vc-acme, vc-mesh): never an error for the page. */
void api_listing(preq_t *r, const char *endpoint, const char *verb, const char *key);
/* A change: the call, its audit event (action, target, the result), and
 * the answer (200 {"ok", "message", "fields"}, 409 or 502). 0 if done. */
int api_change(preq_t *r, const char *endpoint, const char *verb, const char *const *args, size_t n, long ms,
               const char *action, const char *target);

#endif
