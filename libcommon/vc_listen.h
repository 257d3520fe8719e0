/*
 * vc_listen: listening sockets from "host:port" strings (":8080" is every
 * IPv4 and IPv6 address, "127.0.0.1:8080" and "[::1]:8443" one each), bound
 * here or taken from systemd's socket activation; and the hand-over of
 * listeners from the supervisor to the front processes (VC_LISTEN_FDS), so
 * a front can restart without the port ever closing.
 */
#ifndef VC_LISTEN_H
#define VC_LISTEN_H

#include <stddef.h>

/* What a listener is for. */
enum { VC_LISTEN_HTTP = 0, VC_LISTEN_HTTPS = 1, VC_LISTEN_ADMIN = 2 };

typedef struct vc_listener {
    int fd;
    int kind;   /* VC_LISTEN_* */
    char *spec; /* the "host:port" it came from */
} vc_listener_t;

/* Binds spec and appends the listeners (one, or two for ":port") to *ls.
 * Returns how many, or -1 with a log line (bad spec, bind failed). The
 * fds are close-on-exec. */
int vc_listen_open(const char *spec, int kind, vc_listener_t **ls, size_t *n);

/* A socket handed over already bound and listening (systemd's socket
 * activation): the vc_listen_open() whose spec names its address takes it
 * instead of binding. Returns -1 (and closes it, with a log line) if fd is
 * not a listening TCP socket. */
int vc_listen_adopt(int fd);
/* Once every listen line is open: closes the handed-over sockets no line
 * named, with a warning each (nobody would answer there). How many. */
size_t vc_listen_adopted_unused(void);

/* "fd:kind:spec;..." for VC_LISTEN_FDS; caller frees. */
char *vc_listen_export(const vc_listener_t *ls, size_t n);
/* Parses VC_LISTEN_FDS (NULL or empty: none); caller frees with
 * vc_listen_free. Returns -1 on a malformed value. */
int vc_listen_import(const char *env, vc_listener_t **ls, size_t *n);
void vc_listen_free(vc_listener_t **ls, size_t *n, int close_fds);

#endif
