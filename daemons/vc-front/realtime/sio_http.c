#include "sio_http.h"

#include <stdio.h>
#include <string.h>

const char *sio_query_param(h2o_req_t *req, const char *name, char *buf, size_t cap)
{
    if (req->query_at == SIZE_MAX)
        return NULL;
    const char *q = req->path.base + req->query_at + 1, *end = req->path.base + req->path.len;
    size_t nl = strlen(name);
    while (q < end) {
        const char *amp = memchr(q, '&', (size_t)(end - q)), *stop = amp ? amp : end;
        if ((size_t)(stop - q) > nl && memcmp(q, name, nl) == 0 && q[nl] == '=') {
            size_t vl = (size_t)(stop - q) - nl - 1;
            if (vl >= cap)
                vl = cap - 1;
            memcpy(buf, q + nl + 1, vl);
            buf[vl] = '\0';
            return buf;
        }
        q = stop + 1;
    }
    return NULL;
}

static const char *const messages[] = {"Transport unknown", "Session ID unknown", "Bad handshake method",
                                       "Bad request",       "Forbidden",          "Unsupported protocol version"};

int sio_refuse(h2o_req_t *req, int upgrade, int code)
{
    const char *msg = messages[code];
    if (upgrade) {
        req->res.status = 400;
        req->res.reason = "Bad Request";
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, H2O_STRLIT("text/html"));
        h2o_send_inline(req, msg, strlen(msg));
        return 1;
    }
    char body[96];
    int n = snprintf(body, sizeof(body), "{\"code\":%d,\"message\":\"%s\"}", code, msg);
    req->res.status = code == SIO_E_FORBIDDEN ? 403 : 400;
    req->res.reason = code == SIO_E_FORBIDDEN ? "Forbidden" : "Bad Request";
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, H2O_STRLIT("application/json"));
    h2o_send_inline(req, body, (size_t)n);
    return 1;
}

int sio_answer(h2o_req_t *req, int status, const char *type, const char *body, size_t len)
{
    req->res.status = status;
    req->res.reason = status == 200   ? "OK"
                      : status == 413 ? "Payload Too Large"
                      : status == 400 ? "Bad Request"
                                      : "Internal Server Error";
    if (type)
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, type, strlen(type));
    h2o_iovec_t copy = h2o_strdup(&req->pool, body, len);
    h2o_send_inline(req, copy.base, copy.len);
    return 1;
}
