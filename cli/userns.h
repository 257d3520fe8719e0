/*
 * userns: `vc up --userns`, a suite started by a normal user that still
 * keeps the sites apart from it (docs/SECURITY.md, "Without root").
 *
 * Started as a normal user, everything runs as that user, and any site's
 * scripts can read the suite's keys and stop it. With --userns, `vc up`
 * first moves itself into a user namespace of its own, where that user is
 * root and the ids the administrator gave it in /etc/subuid and
 * /etc/subgid (what rootless podman uses) stand for the suite's user and
 * the pools' users. Inside, the suite does what it does as root: the
 * daemons run as "vc", each pool as its own user, with no capabilities.
 * Outside, those are ids nobody else has, which can read none of the
 * user's own files that are not readable by all.
 *
 * The mapping is written by Debian's set-user-ID newuidmap and newgidmap
 * (package uidmap), which check the ranges in /etc/subuid and /etc/subgid.
 */
#ifndef VC_CLI_USERNS_H
#define VC_CLI_USERNS_H

#include <stddef.h>
#include <sys/types.h>

/* Moves this process into a user namespace of its own, as its root.
 * Must run before any thread starts. Returns 0, or -1 with the reason
 * in err (root already, no range in /etc/subuid, newuidmap missing, user
 * namespaces off). */
int userns_enter(char *err, size_t errlen);

/* For the other commands: when the suite whose pid file this is runs in
 * a user namespace this user made (`vc up --userns`), joins it as its
 * root, so the state, keys and logs the suite's users own there can be
 * read as `vc` needs, and its root's commands are taken (root outside is
 * nobody there). Nothing otherwise. Must run
 * before any thread starts. */
void userns_join(const char *pidfile);

/* Whether userns_enter() ran in this process. */
int userns_active(void);

/* Inside: whether uid and gid have a place in the namespace's map; if
 * not, err says which range the administrator should widen. */
int userns_covers(const char *what, const char *user, uid_t uid, gid_t gid, char *err, size_t errlen);

#endif
