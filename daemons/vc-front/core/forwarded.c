#include "forwarded.h"
#include "front.h"
#include "vc_cidr.h"
#include "vc_util.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* fs's trusted_proxies, parsed once (a front's settings do not change:
 * a reload replaces the front). */
static const front_settings_t *parsed_for;
static vc_cidr_t *nets;
static size_t nnets;

static void parse_proxies(const front_settings_t *fs)
{
    free(nets);
    nets = vc_calloc(fs->ntrusted_proxies + 1, sizeof(*nets));
    nnets = 0;
    for (size_t i = 0; i < fs->ntrusted_proxies; i++)
        if (vc_cidr_parse(fs->trusted_proxies[i], &nets[nnets]) == 0) /* checked by the configuration */
            nnets++;
    parsed_for = fs;
}

static int peer_trusted(const front_settings_t *fs, const struct sockaddr *peer)
{
    if (parsed_for != fs)
        parse_proxies(fs);
    for (size_t i = 0; i < nnets; i++)
        if (vc_cidr_match(&nets[i], peer))
            return 1;
    return 0;
}

int forwarded_trusted(const front_settings_t *fs, conn_state_t *c, h2o_req_t *req)
{
    if (fs->ntrusted_proxies == 0)
        return 0;
    if (c && c->proxy)
        return c->proxy > 0;
    struct sockaddr_storage ss;
    const struct sockaddr *peer = (const struct sockaddr *)&ss;
    if (c)
        peer = (const struct sockaddr *)&c->peer;
    else if (!req->conn->callbacks->get_peername(req->conn, (struct sockaddr *)&ss))
        return 0;
    int yes = peer_trusted(fs, peer);
    if (c)
        c->proxy = yes ? 1 : -1;
    return yes;
}

/* The value of NAME= in the first element of a Forwarded header (RFC
 * 7239), quotes taken off. */
static h2o_iovec_t forwarded_param(h2o_iovec_t v, const char *name)
{
    size_t nl = strlen(name);
    const char *end = memchr(v.base, ',', v.len);
    end = end ? end : v.base + v.len;
    for (const char *p = v.base; p < end;) {
        while (p < end && (*p == ' ' || *p == ';'))
            p++;
        const char *semi = memchr(p, ';', (size_t)(end - p));
        const char *stop = semi ? semi : end;
        if ((size_t)(stop - p) > nl && strncasecmp(p, name, nl) == 0 && p[nl] == '=') {
            const char *val = p + nl + 1;
            size_t len = (size_t)(stop - val);
            while (len && val[len - 1] == ' ')
                len--;
            if (len >= 2 && val[0] == '"' && val[len - 1] == '"') {
                val++;
                len -= 2;
            }
            return h2o_iovec_init(val, len);
        }
        p = stop;
    }
    return h2o_iovec_init(NULL, 0);
}

void forwarded_origin(h2o_req_t *req, const char **scheme, h2o_iovec_t *host)
{
    for (size_t i = 0; i < req->headers.size; i++) {
        const h2o_header_t *h = &req->headers.entries[i];
        h2o_iovec_t proto = {NULL, 0}, fhost = {NULL, 0};
        if (h2o_memis(h->name->base, h->name->len, H2O_STRLIT("x-forwarded-proto")))
            proto = h->value;
        else if (h2o_memis(h->name->base, h->name->len, H2O_STRLIT("x-forwarded-host")))
            fhost = h->value;
        else if (h2o_memis(h->name->base, h->name->len, H2O_STRLIT("forwarded"))) {
            proto = forwarded_param(h->value, "proto");
            fhost = forwarded_param(h->value, "host");
        }
        /* A chain of proxies: the first is the client's. */
        const char *comma = proto.len ? memchr(proto.base, ',', proto.len) : NULL;
        if (comma)
            proto.len = (size_t)(comma - proto.base);
        comma = fhost.len ? memchr(fhost.base, ',', fhost.len) : NULL;
        if (comma)
            fhost.len = (size_t)(comma - fhost.base);
        if (h2o_memis(proto.base, proto.len, H2O_STRLIT("https")))
            *scheme = "https";
        else if (h2o_memis(proto.base, proto.len, H2O_STRLIT("http")))
            *scheme = "http";
        if (fhost.len)
            *host = fhost;
    }
}
