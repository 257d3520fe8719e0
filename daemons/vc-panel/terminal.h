/* terminal: a shell in the page (terminal.c). */
#ifndef VC_PANEL_TERMINAL_H
#define VC_PANEL_TERMINAL_H

#include "panel.h"

/* Once a second: terminals whose session ended are closed. */
void terminal_tick(panel_t *p);
/* The terminals open now. */
size_t terminal_count(void);

#endif
