/*
 * Symlinks out of a site's root that the front follows: those owned by
 * root. A Debian-packaged application's root is such a tree (MediaWiki's
 * /var/lib/mediawiki links index.php, resources/ and skins/ into
 * /usr/share/mediawiki), made by its package, as Apache (FollowSymLinks)
 * and nginx serve it. A link a site's PHP makes is its pool's user's,
 * never root's (php.user = "root" is refused), so what its code can
 * create still stays inside the root (docs/SECURITY.md, "Symlinks").
 */
#ifndef VC_FRONT_ROOT_LINKS_H
#define VC_FRONT_ROOT_LINKS_H

#include <stddef.h>

/* path is below root (root's first root_len bytes): every symlink met on
 * the way from root to path, the last component included, is owned by
 * root, and there is at least one. 1 or 0; a few lstat() calls, made only
 * for a path that resolves outside the root. */
int root_links_only(const char *root, size_t root_len, const char *path);

#endif
