/*
 * Listening sockets from "host:port" strings: ":8080" is every IPv4 and
 * IPv6 address, "127.0.0.1:8080" and "[::1]:8443" one each. SO_REUSEPORT,
 * so several front processes (and a restarting one) share the port.
 */
#ifndef VC_FRONT_LISTEN_H
#define VC_FRONT_LISTEN_H

#include <stddef.h>

/* Appends the bound, listening fds for spec to *fds. Returns how many, or
 * -1 with a log line (bad spec, or bind failed). */
int listen_open(const char *spec, int **fds, size_t *nfds);

#endif
