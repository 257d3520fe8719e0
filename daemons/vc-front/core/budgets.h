/*
 * Budgets of a client connection (budgets.c).
 */
#ifndef VC_FRONT_BUDGETS_H
#define VC_FRONT_BUDGETS_H

#include "front.h"

/* c (may be NULL) cancelled a PHP request before its answer: past
 * CONN_RESET_BUDGET the connection is cut, and an address cut too often
 * is banned with all its connections. */
void budgets_charge_reset(conn_state_t *c);

#endif
