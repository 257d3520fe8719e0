/*
 * vc_tickets: TLS session ticket keys shared by every front process.
 *
 * The supervisor owns DATA/tls/tickets (mode 0600): a few keys, newest
 * first, each 16 bytes of name, 32 of HMAC key and 32 of AES key. It makes
 * a new key every VC_TICKETS_ROTATE_S and keeps the previous ones, so a
 * ticket issued by any front resumes on any front until its key ages out.
 */
#ifndef VC_TICKETS_H
#define VC_TICKETS_H

#include <stddef.h>
#include <stdint.h>

#define VC_TICKETS_KEEP 3
#define VC_TICKETS_ROTATE_S (12 * 3600)

typedef struct vc_ticket_key {
    unsigned char name[16], hmac[32], aes[32];
} vc_ticket_key_t;

/* Writes a fresh key in front of the ones in path (atomically, 0600) if
 * the newest is older than max_age_s or the file is missing. Returns 1 if
 * it rotated, 0 if not, -1 on error. */
int vc_tickets_rotate(const char *path, long max_age_s);

/* Reads up to VC_TICKETS_KEEP keys; returns how many (0 if none). */
int vc_tickets_load(const char *path, vc_ticket_key_t keys[VC_TICKETS_KEEP]);

#endif
