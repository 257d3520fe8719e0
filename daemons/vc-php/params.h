/*
 * The CGI parameters a request gives PHP ($_SERVER, getenv()), built from
 * the front's RequestHead with the names, values and order php-fpm gets
 * from nginx's stock fastcgi.conf and fastcgi-php.conf.
 *
 * Apart from PHP so it can be fuzzed: every header name and value comes
 * from the client.
 */
#ifndef VC_PHP_PARAMS_H
#define VC_PHP_PARAMS_H

#include <stddef.h>

#include "request.pb-c.h"

/* One parameter. name and value are NUL-terminated (value may also hold
 * NULs: value_len counts them). */
typedef struct vc_param {
    const char *name;
    char *value;
    size_t value_len;
} vc_param_t;

/* Every parameter of one request, in one allocation. */
typedef struct vc_params {
    vc_param_t *v;
    size_t n;
    char *mem; /* v[] and the strings */
} vc_params_t;

/* Builds p from h. user and home are fpm's USER and HOME (clear_env keeps
 * them). */
void vc_params_build(vc_params_t *p, const Vc__RequestHead *h, const char *user, const char *home);
void vc_params_free(vc_params_t *p);

/* The last parameter called name (PHP keeps the last of repeats), or NULL. */
const vc_param_t *vc_params_find(const vc_params_t *p, const char *name, size_t len);

/* nginx's $remote_user: the user of an "Authorization: Basic" value, into
 * out (NUL-terminated). Returns its length, or 0 when there is none (not
 * Basic, bad base64, no colon, or longer than cap - 1). */
size_t vc_basic_auth_user(const char *value, size_t len, char *out, size_t cap);

#endif
