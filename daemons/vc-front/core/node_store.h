#ifndef VC_FRONT_NODE_STORE_H
#define VC_FRONT_NODE_STORE_H
/* The node's LMDB environment in the front: node_store.c. */
#include "front.h"

struct vc_store;
/* The node's LMDB environment (DATA/state), opened at first use in this
 * process (LMDB allows one handle a process): the cache and realtime
 * history read it. NULL (logged) if it cannot be opened. */
struct vc_store *front_store(front_t *f);

#endif
