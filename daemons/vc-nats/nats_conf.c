/*
 * The configuration of this node's NATS server member, written from
 * cluster.* (libcommon/vc_mesh.h): its name is the node's, JetStream keeps
 * its files in the suite's state, the cluster's routes go to the other
 * members, and where TLS and a user are set, every client and every route
 * must present them. nats-server's own format; strings quoted as JSON.
 */
#include "nats_conf.h"
#include "vc_log.h"
#include "vc_util.h"

#include <errno.h>
#include <sodium.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void quoted(FILE *f, const char *s)
{
    fputc('"', f);
    vc_json_escape(f, s, strlen(s));
    fputc('"', f);
}

/* A TLS block, indented by ind: the member's certificate, and the CA its
 * peers' and clients' are from, checked when verify. */
static void tls_block(FILE *f, const mesh_settings_t *m, const char *ind, int verify)
{
    fprintf(f, "%stls {\n%s  cert_file: ", ind, ind);
    quoted(f, m->tls_cert);
    fprintf(f, "\n%s  key_file: ", ind);
    quoted(f, m->tls_key);
    if (m->ca[0]) {
        fprintf(f, "\n%s  ca_file: ", ind);
        quoted(f, m->ca);
    }
    fprintf(f, "\n%s  verify: %s\n%s  timeout: 2\n%s}\n", ind, verify ? "true" : "false", ind, ind);
}

/* user and password, for clients (authorization) or routes. */
static void credentials(FILE *f, const char *block, const mesh_settings_t *m, const char *pw, const char *ind)
{
    fprintf(f, "%s%s {\n%s  user: ", ind, block, ind);
    quoted(f, m->user);
    fprintf(f, "\n%s  password: ", ind);
    quoted(f, pw);
    fprintf(f, "\n%s}\n", ind);
}

/* s for a URL's user information: anything but unreserved characters
 * percent-encoded (a password may hold '@' or ':'). */
static char *url_part(const char *s)
{
    char *out = vc_malloc(strlen(s) * 3 + 1), *o = out;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr("-._~", c))
            *o++ = (char)c;
        else
            o += sprintf(o, "%%%02X", c);
    }
    *o = '\0';
    return out;
}

static void write_body(FILE *f, const mesh_settings_t *m, const char *store_dir, const char *pw)
{
    fputs("# Written by vc-nats from cluster.* (vc.conf) at each start: edits here are lost.\nserver_name: ", f);
    quoted(f, m->node);
    fputs("\nlisten: ", f);
    quoted(f, m->nats_listen);
    fputs("\njetstream {\n  store_dir: ", f);
    quoted(f, store_dir);
    fputs("\n}\n", f);
    if (m->tls_cert[0])
        tls_block(f, m, "", 0); /* clients present a user, not a certificate */
    if (pw)
        credentials(f, "authorization", m, pw, "");
    if (m->nnats_routes == 0)
        return; /* a member alone: no cluster block */
    fputs("cluster {\n  name: \"vc\"\n  listen: ", f);
    quoted(f, m->nats_cluster_listen);
    fputs("\n  routes: [", f);
    for (size_t i = 0; i < m->nnats_routes; i++) {
        char *u = url_part(m->user), *p = pw ? url_part(pw) : NULL;
        char *url = pw ? vc_asprintf("nats-route://%s:%s@%s", u, p, m->nats_routes[i])
                       : vc_asprintf("nats-route://%s", m->nats_routes[i]);
        free(u);
        if (p) {
            sodium_memzero(p, strlen(p));
            free(p);
        }
        fputs(i ? ", " : "", f);
        quoted(f, url);
        sodium_memzero(url, strlen(url));
        free(url);
    }
    fputs("]\n", f);
    if (m->tls_cert[0])
        tls_block(f, m, "  ", 1); /* members verify each other */
    if (pw)
        credentials(f, "authorization", m, pw, "  ");
    fputs("}\n", f);
}

int nats_conf_write(const mesh_settings_t *m, const char *path, const char *store_dir, char *why, size_t len)
{
    char *pw = NULL;
    if (m->user[0] && (pw = vc_mesh_password(m)) == NULL) {
        snprintf(why, len, "cannot read cluster.password_file \"%s\": %s", m->password_file, strerror(errno));
        return -1;
    }
    /* It holds the password: the suite's alone. */
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    int rc = 0;
    if (f == NULL) {
        snprintf(why, len, "cannot write \"%s\": %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        rc = -1;
    } else {
        write_body(f, m, store_dir, pw);
        if (fclose(f) != 0) {
            snprintf(why, len, "cannot write \"%s\": %s", path, strerror(errno));
            rc = -1;
        }
    }
    if (pw) {
        sodium_memzero(pw, strlen(pw));
        free(pw);
    }
    return rc;
}
