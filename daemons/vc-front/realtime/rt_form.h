/*
 * application/x-www-form-urlencoded, as a query string or a form body
 * (the Pusher API's signed query, Mercure's subscriptions and updates):
 * name=value pairs split on '&', percent- and plus-decoded. A pair that
 * does not decode, or decodes to a NUL, makes the whole input malformed.
 */
#ifndef VC_FRONT_RT_FORM_H
#define VC_FRONT_RT_FORM_H

#include <stddef.h>

typedef struct rt_pair {
    char *name, *value; /* decoded, NUL-terminated */
} rt_pair_t;

typedef struct rt_form {
    rt_pair_t *p;
    size_t n;
} rt_form_t;

/* 0, or -1 if malformed or over max_pairs (f is then empty). */
int rt_form_parse(rt_form_t *f, const char *s, size_t len, size_t max_pairs);
void rt_form_free(rt_form_t *f);
/* The first value named name, or NULL; rt_form_next finds the next. */
const char *rt_form_get(const rt_form_t *f, const char *name);
/* Each value named name, in order: start with *at = 0. NULL at the end. */
const char *rt_form_next(const rt_form_t *f, const char *name, size_t *at);

#endif
