/*
 * Static files opened the kernel's way: beneath the site's root, or not
 * at all.
 *
 * route.c checks that a path's real location is inside the root, through
 * a one-second cache; h2o's file handler then opens the live path. A
 * symlink switched in between (by a site's own PHP, say) was followed out
 * of the root for up to a second: /etc/shadow was served. So while the
 * file handler runs for a request, every open() libh2o makes is turned
 * into openat2() relative to the root's directory descriptor with
 * RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS (Linux 5.6): the kernel refuses
 * an escape at the moment of opening. route.c's check stays, for speed
 * and for its answers, never as the guard.
 *
 * vc-front defines open() and __open_2() (what a fortified build calls
 * for open() with flags not known when compiling, as libh2o's filecache
 * does) itself, in beneath.c: libh2o calls them through the PLT, so the
 * executable's symbols are the ones it gets, and so does every other
 * library the front loads. Outside a guarded call they are libc's own
 * openat(), so the rest of the program sees libc's open() as it was.
 *
 * What RESOLVE_BENEATH changes for a site: a symlink inside the root that
 * stays inside it works if it is relative; an absolute one is refused,
 * even to a file inside the root (404), as is any ".." that climbs out.
 */
#ifndef VC_FRONT_BENEATH_H
#define VC_FRONT_BENEATH_H

#include <stddef.h>
#include <stdint.h>

/* From here to beneath_end(), open() of a path under root (root_len bytes,
 * no trailing '/') goes through openat2() beneath it; any other path is
 * refused (ENOENT). root is borrowed until beneath_end(). */
void beneath_begin(const char *root, size_t root_len);
void beneath_end(void);

/* The roots' directory descriptors are kept for one turn of the loop, as
 * h2o's open files are: a root switched on disk (a deploy's new release)
 * is the one opened from the next turn. */
void beneath_new_turn(void);

/* Opens refused as escapes (EXDEV, ELOOP) since start, for /metrics. */
uint64_t beneath_escapes_total(void);

#endif
