/* follow: the logs page's streams (follow.c). */
#ifndef VC_PANEL_FOLLOW_H
#define VC_PANEL_FOLLOW_H

#include "panel.h"

typedef struct follow follow_t;

follow_t *follow_new(panel_t *p);
void follow_destroy(follow_t **f);
/* Once a second: what the followed files gained. */
void follow_tick(follow_t *f);
/* GET /api/follow?what=events|access|error[&q=TEXT][&topic=PREFIX]. */
void follow_subscribe(preq_t *r);
size_t follow_clients(const follow_t *f);

#endif
