/*
 * A deployed site's root is DEPLOY_TO/current/..., a link vc-fed moves
 * (docs/deploys.md). route.c keeps real paths for a second; when the link
 * moves, an inotify watch on DEPLOY_TO makes it forget them at once, so a
 * client never gets the old release from one path after the new one from
 * another.
 */
#ifndef VC_FRONT_RELEASE_WATCH_H
#define VC_FRONT_RELEASE_WATCH_H

#include "front.h"

/* Watches each deployed site's directory (none: nothing). */
void release_watch_start(front_t *f);
void release_watch_stop(void);

#endif
