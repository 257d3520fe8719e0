/*
 * vc_store: the shared LMDB environment (DATA/state).
 *
 * Every named database has exactly one writing daemon; everybody else reads.
 * Open it after fork(), never before: an LMDB environment must not cross a
 * fork. Readers never block and never hold a transaction across a blocking
 * call. The map grows by itself when a write finds it full, and a reader
 * whose map another process grew picks up the new size.
 */
#ifndef VC_STORE_H
#define VC_STORE_H

#include <lmdb.h>
#include <stddef.h>
#include <stdint.h>

/* Bumped when the layout of any database changes incompatibly. */
#define VC_STORE_SCHEMA 1

/* The named databases and their writers. */
#define VC_DB_META "meta"     /* vc: schema version */
#define VC_DB_CONFIG "config" /* vc: configuration versions */
#define VC_DB_EVENTS "events" /* vc-bus: the event journal */
/* vc-bus: room messages kept for replay, ROOM "\0" u64-id -> RoomMessage,
 * bounded per room (bus.room_history). */
#define VC_DB_ROOM_HISTORY "room_history"
/* vc-bus: each presence room's members across the node, ROOM -> a JSON
 * object {USER_ID: user_info}. */
#define VC_DB_PRESENCE "presence"

/* vc-acme: HTTP-01 answers, TOKEN -> key authorization, while a CA
 * checks them; the fronts answer /.well-known/acme-challenge/TOKEN. */
#define VC_DB_ACME_HTTP01 "acme_http01"
/* vc-acme: TLS-ALPN-01 answers, HOST -> the challenge certificate and its
 * key (PEM), while a CA checks them; the fronts hand it to a handshake
 * for HOST that offers only ALPN "acme-tls/1". */
#define VC_DB_ACME_ALPN "acme_alpn"
/* vc-acme: each ACME site's certificate and schedule, SITE -> JSON. */
#define VC_DB_ACME_CERTS "acme_certs"

/* vc-fed: each site's releases, "SITE/ID" -> Release (fed.proto), and the
 * keys this node trusts to sign them, NAME -> TrustedKey. */
#define VC_DB_RELEASES "releases"
#define VC_DB_TRUST "trust"

typedef struct vc_store vc_store_t;

/* Opens (creating) the environment in dir with the given initial map size.
 * Returns NULL and writes the reason into err on failure. */
vc_store_t *vc_store_open(const char *dir, size_t map_size, char *err, size_t errlen);
void vc_store_destroy(vc_store_t **st);
MDB_env *vc_store_env(vc_store_t *st);

/* Runs fn inside a write transaction on the named database (created if
 * missing) and commits if fn returns >= 0. A full map is grown (doubled) and
 * fn run again (fn returns vc_store_err() of its puts, so a full map shows
 * as -ENOSPC), so fn must be repeatable. Returns fn's result, or a
 * negative error. */
typedef int (*vc_store_write_fn)(MDB_txn *txn, MDB_dbi dbi, void *ctx);
int vc_store_write(vc_store_t *st, const char *db, vc_store_write_fn fn, void *ctx);

/* Runs fn inside a read-only transaction. Values fn sees are pointers into
 * the map, valid only until fn returns: copy what you keep. A database that
 * does not exist yet reads as empty (fn is not called, returns
 * -VC_ERR_NOTFOUND). */
typedef int (*vc_store_read_fn)(MDB_txn *txn, MDB_dbi dbi, void *ctx);
int vc_store_read(vc_store_t *st, const char *db, vc_store_read_fn fn, void *ctx);

/* Big-endian u64 keys sort numerically in LMDB's default byte order. */
void vc_store_u64_key(uint64_t v, unsigned char out[8]);
uint64_t vc_store_u64_from_key(const void *key);

/* Maps an LMDB return code to our negative error. */
int vc_store_err(int rc);

/* Inside a write: stores the message m packed under key k (vc_store_err's
 * result), or with m NULL deletes k (-VC_ERR_NOTFOUND if it was not there). */
struct ProtobufCMessage;
int vc_store_put_proto(MDB_txn *txn, MDB_dbi dbi, MDB_val *k, const struct ProtobufCMessage *m);

#endif
