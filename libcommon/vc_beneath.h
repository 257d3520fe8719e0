/*
 * Paths judged where they are used (docs/SECURITY.md, "Paths"): what the
 * root supervisor makes, chowns or checks is opened one part at a time
 * with openat2(), never through a symbolic link and never above the
 * directory it starts from, so a link a site's PHP or the suite's user
 * swaps in cannot send root's mkdir() or chown() elsewhere.
 */
#ifndef VC_BENEATH_H
#define VC_BENEATH_H

#include <stdint.h>
#include <sys/types.h>

/* openat2(dirfd, rel, flags | O_CLOEXEC) with these RESOLVE_* flags. The
 * fd, or -1 with errno (ENOSYS where the kernel has no openat2, before
 * Linux 5.6). */
int vc_openat2(int dirfd, const char *rel, int flags, uint64_t resolve);

/* Opens base (a directory root trusts: its links are followed), then each
 * part of rel below it with no link followed and no "..": a part that is
 * missing is made (mode), and the last, if made here, given to uid:gid
 * (-1: left as made). Returns an O_PATH descriptor of the last directory,
 * or -1 with why (the part that was a link, or not a directory). *made
 * says whether the last one was made now. */
int vc_mkdirs_beneath(const char *base, const char *rel, mode_t mode, uid_t uid, gid_t gid, int *made, char *why,
                      size_t wlen);

/* The same below an open directory. */
int vc_mkdirs_at(int dirfd, const char *rel, mode_t mode, uid_t uid, gid_t gid, int *made, char *why, size_t wlen);

/* Whether a link at the path rel below the directory dirfd, followed the
 * way the kernel follows it, stays below dirfd: 1 yes (or it leads
 * nowhere yet), 0 no (it leaves, or loops), -1 with errno if it cannot be told. */
int vc_stays_beneath(int dirfd, const char *rel);

#endif
