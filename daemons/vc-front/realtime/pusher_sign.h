/*
 * The Pusher protocol's signatures, with no sockets: a private or presence
 * channel's authorisation (the app's auth endpoint signs the socket id and
 * channel with the app's secret), and the HTTP API's signed query
 * (auth_key, auth_timestamp, auth_version, body_md5, auth_signature).
 * Comparisons take constant time.
 */
#ifndef VC_FRONT_PUSHER_SIGN_H
#define VC_FRONT_PUSHER_SIGN_H

#include "vc_realtime.h"

#include <stddef.h>
#include <stdint.h>

/* Seconds an API call's auth_timestamp may be from our clock (Pusher's). */
#define PUSHER_API_WINDOW_S 600

/* HMAC-SHA256 of msg with secret, in lower-case hex. */
void pusher_hmac_hex(const char *secret, const void *msg, size_t len, char out[65]);

/* 1 if auth is "KEY:HEX" for socket_id and channel (and channel_data for a
 * presence channel, else NULL), signed with app's secret. */
int pusher_channel_auth_ok(const vc_rt_app_t *app, const char *socket_id, const char *channel, const char *channel_data,
                           const char *auth);

typedef enum pusher_sign_result {
    PUSHER_SIGN_OK,
    PUSHER_SIGN_MALFORMED,     /* a parameter missing, doubled or badly encoded */
    PUSHER_SIGN_UNKNOWN_KEY,   /* auth_key is not the app's */
    PUSHER_SIGN_STALE,         /* auth_timestamp outside the window */
    PUSHER_SIGN_BODY_MISMATCH, /* body_md5 is not the body's */
    PUSHER_SIGN_BAD_SIGNATURE,
} pusher_sign_result_t;

/* Checks an API call: method and path as sent (no query), the raw query,
 * the body, our clock. On PUSHER_SIGN_OK, signature holds the call's
 * auth_signature and *timestamp its auth_timestamp (to refuse a replay). */
pusher_sign_result_t pusher_api_verify(const vc_rt_app_t *app, const char *method, const char *path, size_t path_len,
                                       const char *query, size_t query_len, const void *body, size_t body_len,
                                       int64_t now_s, char signature[65], int64_t *timestamp);
const char *pusher_sign_why(pusher_sign_result_t r);

#endif
