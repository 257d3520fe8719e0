/*
 * lockout: failed sign-ins, counted per account ("u:NAME") and per
 * client address ("a:ADDR"). From panel.slow_after failures on, each
 * next try must wait (1 s, 2 s, 4 s, ...); at panel.lockout_after the
 * key is locked for panel.lockout_time, the right password included.
 * Failures older than lockout_time are forgotten. Kept in memory: a
 * restart of vc-panel forgets them (docs/panel.md says so).
 */
#ifndef VC_PANEL_LOCKOUT_H
#define VC_PANEL_LOCKOUT_H

#include "panel.h"

/* Keys remembered at most; past it the stalest is forgotten first. */
#define LOCKOUT_KEYS 8192

/* cfg: where the panel keeps its settings (read at each call). */
lockout_t *lockout_new(const panel_settings_t *const *cfg);
void lockout_destroy(lockout_t **l);
/* How long key must still wait before another try, in ms (0: it may
 * try now); *locked says whether that is a lockout, not a slow-down. */
int64_t lockout_wait(lockout_t *l, const char *key, int64_t now_ms, int *locked);
void lockout_failed(lockout_t *l, const char *key, int64_t now_ms);
void lockout_passed(lockout_t *l, const char *key);

#endif
