/*
 * vc_proc: what every daemon does as a process: signals as a file
 * descriptor, its pid file, telling its supervisor it is ready, and dying
 * with its supervisor.
 */
#ifndef VC_PROC_H
#define VC_PROC_H

#include <signal.h>
#include <sys/types.h>

/* Blocks SIGTERM, SIGINT, SIGHUP, SIGCHLD and SIGQUIT and returns a
 * signalfd (non-blocking, close-on-exec) that delivers them, for a poll
 * loop. Ignores SIGPIPE. Returns -errno on failure. */
int vc_proc_signalfd(void);
/* Reads one pending signal from the fd: its number, or 0 if none. */
int vc_proc_read_signal(int fd);
/* Undoes the mask (in a child before exec, or before running PHP). */
void vc_proc_unblock_signals(void);

/* Writes the pid file atomically (write a temporary, rename). 0 or -errno. */
int vc_proc_pidfile_write(const char *path);
/* The pid in a pid file if that process is alive, else 0. */
pid_t vc_proc_pidfile_alive(const char *path);
/* The same, if that process also runs the program we run (its name): a
 * daemon's own pid file, whose pid may have been reused. */
pid_t vc_proc_pidfile_ours(const char *path);

/* Takes the readiness descriptor named by VC_READY_FD (close-on-exec,
 * the variable unset); vc_proc_ready() takes it too if not done. */
void vc_proc_ready_take(void);
/* Tells the supervisor we are ready: writes one byte to the descriptor named
 * by VC_READY_FD, if set, and closes it. */
void vc_proc_ready(void);

/* Call in a child right after fork(), with the parent's pid: the kernel
 * sends sig to the child when the parent dies, so nothing is left behind
 * when a supervisor is killed. Exits at once if the parent is already gone. */
void vc_proc_die_with_parent(int sig, pid_t parent);
/* Forks a child linked to this process by a SOCK_SEQPACKET pair (both
 * ends close-on-exec), which the kernel sends sig when this process dies.
 * Returns the child's pid in the parent and 0 in the child, each with its
 * own end in *end (the other end closed); -1 (errno set) if it could not. */
pid_t vc_proc_fork_linked(int sig, int *end);

/* An exclusive lock on path (made if missing), held until the returned
 * descriptor (close-on-exec) is closed or the process ends: one suite per
 * data directory, with no race between two starting together. -1 with
 * errno EWOULDBLOCK when another holds it (still, after 200 ms of tries:
 * a look by vc_proc_lock_held holds it for an instant). */
int vc_proc_lock(const char *path);
/* 1 if a process holds path's lock, 0 if none does, -1 without the file:
 * proof that a pid file names a live supervisor, not a recycled pid. */
int vc_proc_lock_held(const char *path);

#endif
