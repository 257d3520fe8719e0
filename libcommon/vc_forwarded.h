/*
 * Forwarding headers: what a client says of another client's address,
 * scheme or host. They reach PHP only from a trusted proxy
 * (front.trusted_proxies): the front drops them, and so does a worker
 * reading a connection the front lent it (docs/php.md).
 */
#ifndef VC_FORWARDED_H
#define VC_FORWARDED_H

#include <stddef.h>

typedef enum {
    VC_FORWARDED_NONE = 0,
    VC_FORWARDED_ADDRESS, /* the client's address: X-Forwarded-For, X-Real-IP... */
    VC_FORWARDED_KEYED,   /* the scheme and host: in the cache key */
    VC_FORWARDED_OTHER,   /* the rest: an answer to it is not stored */
} vc_forwarded_kind_t;

/* The kind of a header by its name, in lower case. */
vc_forwarded_kind_t vc_forwarded_kind(const char *name, size_t len);

#endif
