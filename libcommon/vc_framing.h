/*
 * HTTP/1.1 request framing as RFC 9112 says to read it, checked on what
 * h2o's HTTP/1 parser sees, before h2o acts on it.
 *
 * libh2o 2.2.5 reads a request head with picohttpparser's
 * phr_parse_request() and then hides what decides the framing: of two
 * Content-Length lines it keeps the first, it reads Content-Length with
 * Transfer-Encoding as chunked and keeps the connection, takes
 * Transfer-Encoding from HTTP/1.0, keeps the last of two Host lines and
 * passes an obs-fold continuation on as a header without a name. By the
 * time our handler runs, nothing of that can be seen. vc-front therefore
 * defines phr_parse_request() itself (vc_framing.c): the executable's
 * symbol is the one libh2o's call resolves to (it goes through the PLT),
 * and it calls picohttpparser's own, then vc_framing_check(). A head the
 * RFC calls an unrecoverable framing error becomes a parse error, which
 * h2o answers with 400 and a close, as nginx does. A worker serving a
 * connection the front lent it (vc_http1.h) calls the same function, so
 * the two read every head alike.
 */
#ifndef VC_FRAMING_H
#define VC_FRAMING_H

#include <stddef.h>
#include <stdint.h>

/* picohttpparser's header entry (libh2o does not install its header; the
 * layout is its ABI). A continuation line has name NULL, name_len 0. */
struct phr_header {
    const char *name;
    size_t name_len;
    const char *value;
    size_t value_len;
};

int phr_parse_request(const char *buf, size_t len, const char **method, size_t *method_len, const char **path,
                      size_t *path_len, int *minor_version, struct phr_header *headers, size_t *num_headers,
                      size_t last_len);

/* A parsed request head, as phr_parse_request() gives it: the fields
 * point into the request's bytes, which vc_framing_check() may rewrite in
 * place (h2o lowercases header names in the same buffer). */
typedef struct vc_framing_head {
    const char **path;
    size_t *path_len;
    int minor_version;
    struct phr_header *headers;
    size_t num_headers;
} vc_framing_head_t;

/* NULL if the head may be served, else why not (a static string). An
 * absolute-form target ("GET http://host/p HTTP/1.1", which a server must
 * accept) is rewritten to origin form, and its authority replaces the
 * Host header's value (RFC 9112, 3.2.2). */
const char *vc_framing_check(vc_framing_head_t *h);

/* Heads refused since start, for /metrics. */
uint64_t vc_framing_refused_total(void);

#endif
