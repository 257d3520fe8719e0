/*
 * HTTP/1.1 on a plaintext connection the front lends to a PHP worker
 * (docs/php.md, "Lent connections"): requests read, and answers framed,
 * byte for byte as the front's libh2o 2.2.5 reads and frames them, so
 * that a client cannot tell which process answered.
 *
 * A head goes through the phr_parse_request() the front's h2o calls
 * (vc_framing.h); what h2o does after it (lib/http1.c of that release:
 * the headers it keeps apart, when a connection persists, Expect, bodies,
 * its refusals, its answer heads) is done here with h2o's own functions
 * where it has them, and its odd choices are noted where they are made.
 * fuzz/fuzz_http1.c runs h2o itself beside this on the same bytes and
 * compares every byte written.
 *
 * No I/O here: the caller reads into a buffer, calls vc_http1_read(),
 * and writes what it is told.
 */
#ifndef VC_HTTP1_H
#define VC_HTTP1_H

#include "vc_framing.h"

#include <stddef.h>
#include <sys/types.h>

#define VC_HTTP1_MAX_HEAD 8192   /* h2o's H2O_MAX_REQLEN: a longer head is refused */
#define VC_HTTP1_MAX_HEADERS 100 /* h2o's H2O_MAX_HEADERS: more is a parse error */

/* What h2o writes before reading a body the client holds back. */
#define VC_HTTP1_CONTINUE_ANSWER "HTTP/1.1 100 Continue\r\n\r\n"

typedef enum vc_http1_step {
    VC_HTTP1_MORE,      /* read more into the buffer, then call again */
    VC_HTTP1_HEAD,      /* a head is read: keep the request (call again) or hand the connection back */
    VC_HTTP1_CONTINUE,  /* write VC_HTTP1_CONTINUE_ANSWER, then call again */
    VC_HTTP1_REQUEST,   /* head and body are read: answer, then vc_http1_next() */
    VC_HTTP1_REFUSE,    /* write vc_http1_refusal(), then close */
    VC_HTTP1_CLOSE,     /* close without a word (only CR and LF came) */
    VC_HTTP1_HAND_BACK, /* HTTP/2's preface: only the front speaks it */
} vc_http1_step_t;

/* picohttpparser's chunked decoder, which libh2o exports (its ABI). */
struct phr_chunked_decoder {
    size_t bytes_left_in_chunk;
    char consume_trailer;
    char _hex_count;
    char _state;
};
ssize_t phr_decode_chunked(struct phr_chunked_decoder *decoder, char *buf, size_t *bufsz);

typedef struct vc_http1_text {
    const char *base;
    size_t len;
} vc_http1_text_t;

typedef struct vc_http1_field {
    vc_http1_text_t name, value;
} vc_http1_field_t;

/* A request as h2o gives it to a handler. Its texts point into the
 * caller's buffer as last passed to vc_http1_read(). */
typedef struct vc_http1_request {
    vc_http1_text_t method;
    vc_http1_text_t path;      /* origin form (an absolute form is rewritten) */
    vc_http1_text_t authority; /* Host's value; base NULL without one (HTTP/1.0) */
    int minor_version;
    /* Every header but Host, Content-Length, Transfer-Encoding, Expect and
     * Upgrade, which h2o keeps apart; names lowercased in place, as h2o. */
    vc_http1_field_t headers[VC_HTTP1_MAX_HEADERS];
    size_t nheaders;
    vc_http1_text_t upgrade; /* Upgrade's value when Connection lists "upgrade" */
    int persistent;          /* the answer says keep-alive and the next request follows */
    int msie;                /* a User-Agent with "; MSIE ": h2o sends its Vary as Cache-Control: private */
    vc_http1_text_t body;    /* once VC_HTTP1_REQUEST (a chunked one decoded in place) */
} vc_http1_request_t;

typedef struct vc_http1 {
    size_t max_body; /* front.max_body: h2o's max_request_entity_size */
    int closing;     /* the server is leaving: answers close (h2o's shutdown_requested) */
    vc_http1_request_t r;

    /* The reading, as offsets: the caller's buffer may move between calls. */
    int stage;
    size_t prevlen;  /* what the last incomplete parse saw */
    size_t reqsize;  /* the request's bytes in the buffer, head and body */
    size_t chunk_at; /* where the chunked decoder goes on */
    struct phr_chunked_decoder dec;
    int has_body, chunked, expect, is_head;
    size_t content_length;
    /* The texts, as offsets and lengths: method, path, authority, upgrade,
     * each header's name and value, the body's framing value, Expect's. */
    size_t off[12 + 4 * VC_HTTP1_MAX_HEADERS];
    vc_http1_step_t last; /* once the request is read, refused or closed */
    /* The head's bytes as they came: reading one rewrites it in place
     * (names lowercased, an absolute-form target), and the front must be
     * handed what the client sent. */
    char as_sent[VC_HTTP1_MAX_HEAD];
    size_t as_sent_len;
    int status; /* the refusal's */
    const char *reason, *why;
} vc_http1_t;

void vc_http1_init(vc_http1_t *c, size_t max_body);

/* Reads on from buf's len bytes, which begin with the current request. A
 * chunked body is decoded in place, so len may shrink. */
vc_http1_step_t vc_http1_read(vc_http1_t *c, char *buf, size_t *len);

/* Before the connection is handed back at VC_HTTP1_HEAD or
 * VC_HTTP1_HAND_BACK: puts the head back in buf as the client sent it. */
void vc_http1_unread(const vc_http1_t *c, char *buf);

/* An Accept-Encoding of r names gzip or br: what h2o's compress filter
 * reads (h2o_get_compressible_types()) before it touches an answer. */
int vc_http1_may_compress(const vc_http1_request_t *r);

/* Nothing of a request is parsed yet: the bytes in the buffer are as the
 * client sent them, and the connection may be handed back with them. */
int vc_http1_between(const vc_http1_t *c);

/* After the answer to a VC_HTTP1_REQUEST: drops its bytes from buf and
 * begins the next request. */
void vc_http1_next(vc_http1_t *c, char *buf, size_t *len);

/* The answer to write for VC_HTTP1_REFUSE, dated date (RFC 1123, as h2o
 * caches it), into dst; its length, or 0 if cap is too small. */
size_t vc_http1_refusal(const vc_http1_t *c, const char *date, char *dst, size_t cap);

/* An answer's head as h2o 2.2.5 frames it (lib/http1.c, flatten_headers),
 * dated date (RFC 1123's 29 characters, as h2o caches it):
 * the status line, Date, Connection and Content-Length (content_length
 * SIZE_MAX: none) with their first letters upper-cased, then the fields as
 * given, each in the case it is given. A head needs at most
 * vc_http1_head_size() bytes. */
size_t vc_http1_head_size(const vc_http1_field_t *fields, size_t n, const char *reason);
size_t vc_http1_head(char *dst, int status, const char *reason, const char *date, int persistent, size_t content_length,
                     const vc_http1_field_t *fields, size_t n, int msie);

#endif
