/*
 * The .htaccess files of the sites' trees, compiled (htaccess.h), by
 * directory: what the access rules (htaccess_access.c) and the rewrite
 * rules (htaccess_rewrite.c) of a request ask. A file is compiled when it
 * changes, looked at no more than once a second (now, in seconds of the
 * monotonic clock), never parsed per request; the cache starts again past
 * a bound, so that a client asking for many paths cannot grow it.
 */
#ifndef VC_FRONT_HTACCESS_CACHE_H
#define VC_FRONT_HTACCESS_CACHE_H

#include "htaccess.h"

#include <stddef.h>
#include <stdint.h>

/* dir's compiled .htaccess (len bytes of dir, no trailing '/'), or NULL
 * for none (or for a dir that is not a directory). *is_dir (may be NULL):
 * whether dir is a directory; where it is not, nothing below it has a
 * .htaccess, and a walk down the tree stops. */
const htaccess_t *htaccess_cached(const char *dir, size_t len, uint64_t now, int *is_dir);

/* No directory from the root (root_len bytes of file) down to file's own
 * holds a .htaccess: nothing of one applies to a request for file, today
 * (a lent connection's lease counts on it: php/lend_conn.c). */
int htaccess_none_above(const char *file, size_t root_len);

/* Changes when the cache starts again (every file it returned is freed):
 * whoever holds several of them across calls asks again. */
uint64_t htaccess_cache_generation(void);

#endif
