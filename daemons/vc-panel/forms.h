/*
 * forms: what the panel reads from a client, checked before anything
 * else sees it: a cookie, a query parameter, a JSON body, a name that
 * may reach a control verb, and X-Forwarded-For. Every function takes
 * the bytes as they came (not NUL-terminated) and refuses rather than
 * repairs. fuzz/fuzz_panel_forms.c runs them all.
 */
#ifndef VC_PANEL_FORMS_H
#define VC_PANEL_FORMS_H

#include <jansson.h>
#include <stddef.h>

/* The biggest JSON body the API reads. */
#define FORM_BODY_MAX 65536

/* Copies the value of the next cookie name from a Cookie header into
 * out, starting at *pos (0 for the first) and moving *pos past it: its
 * length, or -1 (an empty value, longer than outlen - 1, or with bytes
 * that are not a cookie-octet of RFC 6265: call again for the next one;
 * *pos == len: no more). A client may send a name twice (one cookie
 * planted by a sibling host): every one is looked at. */
int form_cookie(const char *header, size_t len, const char *name, size_t *pos, char *out, size_t outlen);

/* Copies query parameter name, percent-decoded, into out: its length,
 * or -1 (absent, too long, a bad escape, a control byte). */
int form_query(const char *query, size_t len, const char *name, char *out, size_t outlen);

/* A JSON object from a request body: a new reference, or NULL with why
 * (too big, not JSON, not an object, a string with a NUL). */
json_t *form_json(const char *body, size_t len, char *why, size_t whylen);

/* The string field key of obj if it is a string of at most max bytes
 * with no control character; else NULL. Borrowed from obj. */
const char *form_str(const json_t *obj, const char *key, size_t max);

/* Whether s is a name the suite uses for a site, a pool, a user or a
 * room: 1 to 63 of [A-Za-z0-9._@-], not starting with '.' or '-', so
 * never a path ("..", "/") nor an option. */
int form_name_ok(const char *s);

/* The client a trusted proxy names: the last address of X-Forwarded-For
 * (the one the proxy itself saw), copied into out; -1 if it is not an
 * IPv4 or IPv6 address. */
int form_forwarded_for(const char *header, size_t len, char *out, size_t outlen);

#endif
