/*
 * Client headers that name the request in place of the connection and
 * the URL: X-Forwarded-*, Forwarded, X-Real-IP and kin, X-Host,
 * X-Original-URL, method overrides. Frameworks believe them when they
 * trust the proxy in front (Laravel's TrustProxies, Symfony's
 * trusted_proxies), and an answer made from them, stored by the cache,
 * would be served to everyone (cache poisoning). So, decided once for the
 * suite (docs/front.md, "Forwarding headers"), as nginx's realip decides
 * by the peer's address:
 *   - from a peer not in front.trusted_proxies they never reach PHP
 *     (taken out of the request), and so cannot change a stored answer;
 *   - from a trusted proxy they reach PHP as sent; the cache keys the
 *     answer by the forwarded scheme and host (X-Forwarded-Proto,
 *     X-Forwarded-Host, Forwarded's proto= and host=), and does not store
 *     an answer to a request with any other of them (a prefix, a port, an
 *     overridden method or URL).
 */
#ifndef VC_FRONT_FORWARDED_H
#define VC_FRONT_FORWARDED_H

#include "vc_front_settings.h"
#include "vc_forwarded.h"

#include <h2o.h>

/* The kind of a header (its name in lower case, as h2o keeps it). */
static inline vc_forwarded_kind_t forwarded_kind(const h2o_iovec_t *name)
{
    return vc_forwarded_kind(name->base, name->len);
}

struct conn_state;
/* Whether the request's peer is one of front.trusted_proxies. The
 * verdict is the connection's: kept in c (when there is one) and asked
 * once. */
int forwarded_trusted(const front_settings_t *fs, struct conn_state *c, h2o_req_t *req);

/* The scheme and host a trusted proxy forwarded for (either left as it
 * was when it named none). */
void forwarded_origin(h2o_req_t *req, const char **scheme, h2o_iovec_t *host);

#endif
