/*
 * The name PHP puts in X-Accel-Redirect or X-Sendfile, as the front reads
 * it before it looks for the file (handoff.h). PHP runs the application's
 * code, so this is outside input: fuzz/fuzz_route.c feeds it anything.
 */
#ifndef VC_FRONT_HANDOFF_NAME_H
#define VC_FRONT_HANDOFF_NAME_H

#include <stddef.h>
#include <sys/types.h>

/* v (len bytes) into out (cap bytes): for X-Accel-Redirect, %-decoded up to a
 * '?' (nginx); for X-Sendfile, as it is (Debian's mod_xsendfile decodes
 * nothing). Its length, or -1 for a NUL, a ".." segment once decoded
 * (nginx refuses one; Apache's would have to stay inside the path) or no
 * room. */
ssize_t handoff_name(const char *v, size_t len, int accel, char *out, size_t cap);

#endif
