/*
 * What the pool's wall refused a script (docs/SECURITY.md, "The pool's
 * wall"): the root file system is read-only to a pool but for its sites,
 * sessions and temporary files, and an application that keeps its data
 * beside its tree (MediaWiki's SQLite directory, a /srv/app-data) would
 * otherwise just see "Read-only file system" (MediaWiki: "the wiki is in
 * read-only mode"). Each directory refused is logged once a worker, with
 * the fix.
 */
#ifndef VC_PHP_WALL_NOTES_H
#define VC_PHP_WALL_NOTES_H

/* After php_module_startup(): PHP's errors pass through here first. */
void wall_notes_install(void);

#endif
