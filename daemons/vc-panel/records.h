/*
 * records: the panel's two databases in LMDB, each a key to a JSON
 * object: `users` (NAME -> role, password hash, TOTP) and `sessions`
 * (hex SHA-256 of the cookie -> user, CSRF token, times). vc-panel is
 * their one writer (vc_store.h).
 */
#ifndef VC_PANEL_RECORDS_H
#define VC_PANEL_RECORDS_H

#include "vc_store.h"

#include <jansson.h>

#define PANEL_DB_USERS "users"
#define PANEL_DB_SESSIONS "sessions"

/* The record of key: a new reference, or NULL if there is none. */
json_t *records_get(vc_store_t *st, const char *db, const char *key);
/* Stores rec (borrowed) under key, or deletes key when rec is NULL.
 * 0 or a negative error. */
int records_put(vc_store_t *st, const char *db, const char *key, const json_t *rec);
/* Every record of db, {key: record} (a new reference; {} when empty). */
json_t *records_all(vc_store_t *st, const char *db);

#endif
