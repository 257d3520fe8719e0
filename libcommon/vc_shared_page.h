/*
 * Memory one process makes and another maps: a memfd the maker sends
 * with SCM_RIGHTS (a worker's clock, daemons/vc-php/worker_clock.h; the
 * quiet words of a worker's lent connections, vc_lent_quiet.h). The
 * maker seals it at its size, so the other process, the less trusted of
 * the two, cannot shrink it under the maker's mapping: a read past the
 * end of a shrunk memfd is SIGBUS.
 */
#ifndef VC_SHARED_PAGE_H
#define VC_SHARED_PAGE_H

#include <stddef.h>

/* A new sealed memfd of size bytes (zeroed), mapped here (*map): its
 * descriptor to send (close it once sent), or -1 (logged) with *map NULL. */
int vc_shared_page_create(const char *name, size_t size, void **map);

/* The receiver's mapping of a descriptor it was sent, which it closes;
 * NULL if it is not a memfd of at least size bytes sealed against
 * shrinking. */
void *vc_shared_page_map(int fd, size_t size);

/* Unmaps *map (either side's) and sets it NULL. */
void vc_shared_page_unmap(void **map, size_t size);

#endif
