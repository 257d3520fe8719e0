/*
 * DATA/log/access.log: h2o writes a line for each request it answers;
 * a request a worker answered on a lent connection (docs/php.md, "Lent
 * connections") comes from the worker as a record, and is written here
 * as the line h2o would have written, in the same format.
 */
#ifndef VC_FRONT_ACCESS_LOG_H
#define VC_FRONT_ACCESS_LOG_H

#include "front.h"
#include "vc_lent_log.h"

/* Opens the log (combined, or one JSON object a line, front.access_log_json).
 * 0, or -1 (logged). */
int access_log_open(front_t *f);

/* The line for a request of site s served on connection c elsewhere:
 * rec and the texts after it (vc_lent_log.h). */
void access_log_lent(front_t *f, const site_rt_t *s, const conn_state_t *c, const vc_lent_log_t *rec,
                     const char *texts);

#endif
