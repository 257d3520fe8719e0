/*
 * vc rooms: the realtime rooms of every front process (who is subscribed
 * where, Socket.IO's namespaces and rooms after), and vc rooms apps: each site's realtime apps (docs/REALTIME.md).
 */
#include "cli.h"
#include "vc_ctl.h"
#include "vc_realtime.h"
#include "vc_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

static int usage(void)
{
    fprintf(stderr, "usage: vc rooms [--json]\n"
                    "       vc rooms apps [--secret]\n");
    return 2;
}

/* Each site's apps (vc_rt_site_apps). */
static int apps(const vc_config_t *cfg, int secret)
{
    printf("%-16s %-12s %-24s%s\n", "SITE", "ID", "KEY", secret ? " SECRET" : "");
    for (size_t i = 0; i < cfg->nsites; i++) {
        const vc_site_t *s = &cfg->sites[i];
        vc_rt_app_t app[16];
        char why[512];
        int made;
        size_t n = vc_rt_site_apps(s, cfg->state_dir, app, VC_ARRAY_SIZE(app), &made, why, sizeof(why));
        for (size_t k = 0; k < n; k++)
            printf("%-16s %-12s %-24s%s%s\n", s->name, app[k].id, app[k].key, secret ? " " : "",
                   secret ? app[k].secret : "");
        if (n == 0 && why[0] && errno == ENOENT)
            printf("%-16s (made at the front's first start, in %s/realtime-app)\n", s->name, cfg->state_dir);
        else if (n == 0 && why[0])
            fprintf(stderr, "vc rooms apps: %s\n", why);
    }
    return 0;
}

typedef struct room_row {
    char *room;
    unsigned long long subscribers, members;
} room_row_t;

/* Socket.IO's rooms, summed over the fronts: "" is the namespace's every
 * socket. */
typedef struct sio_row {
    char *site, *nsp, *room;
    unsigned long long sockets;
} sio_row_t;

static void sio_rows_add(sio_row_t **rows, size_t *n, const Vc__Reply *f)
{
    for (size_t k = 0; k < f->n_records; k++) {
        const char *site = vc_record_get(f->records[k], "site"), *nsp = vc_record_get(f->records[k], "namespace");
        const char *room = vc_record_get(f->records[k], "room"), *sockets = vc_record_get(f->records[k], "sockets");
        if (site == NULL || nsp == NULL || room == NULL)
            continue;
        size_t j = 0;
        while (j < *n &&
               (strcmp((*rows)[j].site, site) || strcmp((*rows)[j].nsp, nsp) || strcmp((*rows)[j].room, room)))
            j++;
        if (j == *n) {
            *rows = vc_realloc(*rows, (*n + 1) * sizeof(**rows));
            (*rows)[(*n)++] = (sio_row_t){.site = vc_strdup(site), .nsp = vc_strdup(nsp), .room = vc_strdup(room)};
        }
        (*rows)[j].sockets += sockets ? strtoull(sockets, NULL, 10) : 0;
    }
}

static void sio_rows_print(sio_row_t *rows, size_t n, int json)
{
    if (!json && n)
        printf("\n%-16s %-20s %-30s %8s\n", "SOCKET.IO SITE", "NAMESPACE", "ROOM (\"\": EVERY SOCKET)", "SOCKETS");
    for (size_t j = 0; j < n; j++) {
        if (json) {
            /* A room's name is any text a site's PHP gave: escaped. */
            printf("{\"socketio\":true,\"site\":\"");
            vc_json_escape(stdout, rows[j].site, strlen(rows[j].site));
            printf("\",\"namespace\":\"");
            vc_json_escape(stdout, rows[j].nsp, strlen(rows[j].nsp));
            printf("\",\"room\":\"");
            vc_json_escape(stdout, rows[j].room, strlen(rows[j].room));
            printf("\",\"sockets\":%llu}\n", rows[j].sockets);
        } else {
            printf("%-16s %-20s %-30s %8llu\n", rows[j].site, rows[j].nsp, *rows[j].room ? rows[j].room : "\"\"",
                   rows[j].sockets);
        }
        free(rows[j].site);
        free(rows[j].nsp);
        free(rows[j].room);
    }
    free(rows);
}

static int list(void *zctx, const vc_config_t *cfg, int json)
{
    Vc__Reply *sup = NULL;
    if (cli_call(zctx, cfg, "vc", "status", NULL, 0, &sup) < 0)
        return 1;
    room_row_t *rows = NULL;
    size_t n = 0, nsio = 0;
    sio_row_t *sio = NULL;
    for (size_t i = 0; i < sup->n_records; i++) {
        const char *name = vc_record_get(sup->records[i], "daemon");
        Vc__Reply *f = NULL;
        if (name == NULL || strncmp(name, "vc-front", 8) != 0 || cli_call(zctx, cfg, name, "rooms", NULL, 0, &f) < 0)
            continue;
        /* A room with subscribers in several fronts is one row. */
        for (size_t k = 0; k < f->n_records; k++) {
            const char *room = vc_record_get(f->records[k], "room");
            const char *subs = vc_record_get(f->records[k], "subscribers");
            const char *members = vc_record_get(f->records[k], "members");
            if (room == NULL)
                continue;
            size_t j = 0;
            while (j < n && strcmp(rows[j].room, room) != 0)
                j++;
            if (j == n) {
                rows = vc_realloc(rows, (n + 1) * sizeof(*rows));
                rows[n++] = (room_row_t){.room = vc_strdup(room)};
            }
            rows[j].subscribers += subs ? strtoull(subs, NULL, 10) : 0;
            rows[j].members += members ? strtoull(members, NULL, 10) : 0;
        }
        vc__reply__free_unpacked(f, NULL);
        f = NULL;
        if (cli_call(zctx, cfg, name, "socketio", NULL, 0, &f) == 0) {
            sio_rows_add(&sio, &nsio, f);
            vc__reply__free_unpacked(f, NULL);
        }
    }
    vc__reply__free_unpacked(sup, NULL);
    if (!json)
        printf("%-40s %11s %8s\n", "ROOM (APP:CHANNEL)", "SUBSCRIBERS", "MEMBERS");
    for (size_t j = 0; j < n; j++) {
        if (json)
            printf("{\"room\":\"%s\",\"subscribers\":%llu,\"members\":%llu}\n", rows[j].room, rows[j].subscribers,
                   rows[j].members); /* names are [A-Za-z0-9_-=@,.;:]: nothing to escape */
        else
            printf("%-40s %11llu %8llu\n", rows[j].room, rows[j].subscribers, rows[j].members);
        free(rows[j].room);
    }
    free(rows);
    sio_rows_print(sio, nsio, json);
    return 0;
}

int cmd_rooms(cli_t *cli, int argc, char **argv)
{
    int is_apps = argc >= 2 && !strcmp(argv[1], "apps");
    int flag = argc >= (is_apps ? 3 : 2) ? !strcmp(argv[is_apps ? 2 : 1], is_apps ? "--secret" : "--json") : 0;
    if (argc > 1 + is_apps + flag)
        return usage();
    vc_config_t *cfg = cli_running_config(cli);
    if (cfg == NULL)
        return 1;
    int rc;
    if (is_apps) {
        rc = apps(cfg, flag);
    } else {
        void *zctx = zmq_ctx_new();
        rc = list(zctx, cfg, flag);
        zmq_ctx_term(zctx);
    }
    vc_config_destroy(&cfg);
    return rc;
}
