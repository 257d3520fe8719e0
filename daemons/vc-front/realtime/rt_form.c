#include "rt_form.h"
#include "vc_util.h"

#include <stdlib.h>
#include <string.h>

static int unhex(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c |= 0x20;
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static char *decode(const char *s, size_t n)
{
    char *out = vc_malloc(n + 1), *o = out;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%') {
            int a = i + 2 < n ? unhex((unsigned char)s[i + 1]) : -1;
            int b = i + 2 < n ? unhex((unsigned char)s[i + 2]) : -1;
            if (a < 0 || b < 0 || a * 16 + b == 0) {
                free(out);
                return NULL;
            }
            *o++ = (char)(a * 16 + b);
            i += 2;
        } else if (s[i] == '\0') {
            free(out);
            return NULL;
        } else {
            *o++ = s[i] == '+' ? ' ' : s[i];
        }
    }
    *o = '\0';
    return out;
}

int rt_form_parse(rt_form_t *f, const char *s, size_t len, size_t max_pairs)
{
    f->p = NULL;
    f->n = 0;
    for (size_t at = 0; at < len;) {
        const char *amp = memchr(s + at, '&', len - at);
        size_t end = amp ? (size_t)(amp - s) : len;
        if (end > at) {
            if (f->n == max_pairs)
                goto bad;
            const char *eq = memchr(s + at, '=', end - at);
            size_t nl = eq ? (size_t)(eq - s - at) : end - at;
            char *name = decode(s + at, nl), *value = eq ? decode(eq + 1, (size_t)(s + end - eq - 1)) : vc_strdup("");
            if (name == NULL || value == NULL) {
                free(name);
                free(value);
                goto bad;
            }
            f->p = vc_realloc(f->p, (f->n + 1) * sizeof(*f->p));
            f->p[f->n++] = (rt_pair_t){name, value};
        }
        at = end + 1;
    }
    return 0;
bad:
    rt_form_free(f);
    return -1;
}

void rt_form_free(rt_form_t *f)
{
    for (size_t i = 0; i < f->n; i++) {
        free(f->p[i].name);
        free(f->p[i].value);
    }
    free(f->p);
    f->p = NULL;
    f->n = 0;
}

const char *rt_form_next(const rt_form_t *f, const char *name, size_t *at)
{
    for (; *at < f->n; (*at)++)
        if (strcmp(f->p[*at].name, name) == 0)
            return f->p[(*at)++].value;
    return NULL;
}

const char *rt_form_get(const rt_form_t *f, const char *name)
{
    size_t at = 0;
    return rt_form_next(f, name, &at);
}
