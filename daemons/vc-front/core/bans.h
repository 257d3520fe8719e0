/*
 * Client addresses refused for a while because their connections keep
 * being cut over the reset budget: a per-connection budget alone lets an
 * attacker open connection after connection, each spending its budget of
 * PHP work (HTTP/2 rapid reset and MadeYouReset with a fast client).
 * Per front process; bounded memory (a fixed table, oldest entry evicted).
 */
#ifndef VC_FRONT_BANS_H
#define VC_FRONT_BANS_H

#include <stdint.h>
#include <sys/socket.h>

/* Cuts within BAN_WINDOW_MS that ban an address. */
#define BAN_CUTS 2
#define BAN_WINDOW_MS 60000

typedef struct bans bans_t;

/* A client's address as 16 bytes (IPv4 mapped into IPv6), and its hash:
 * what every per-address table of the front keys on. Returns -1 for a
 * family that has no address (a Unix socket). */
int bans_addr_key(const struct sockaddr *sa, uint8_t key[16]);
uint32_t bans_addr_hash(const uint8_t key[16]);

bans_t *bans_new(void);
void bans_free(bans_t *b);

/* A connection from sa was cut over its budget. Returns the ban in ms it
 * starts now (0: none yet); ban_ms is the first ban, doubled for each
 * further one up to 16 times it. */
uint64_t bans_note_cut(bans_t *b, const struct sockaddr *sa, uint64_t now_ms, uint64_t ban_ms);

/* Whether sa is banned at now_ms. */
int bans_is_banned(bans_t *b, const struct sockaddr *sa, uint64_t now_ms);

/* Addresses banned now. */
unsigned bans_active(bans_t *b, uint64_t now_ms);

#endif
