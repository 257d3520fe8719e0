/*
 * vc-front's own settings ("front.*"), declared in vc_front_settings.c and read by
 * libcommon's configuration (vc_settings.h).
 */
#ifndef VC_FRONT_SETTINGS_H
#define VC_FRONT_SETTINGS_H

#include "vc_config.h"

typedef struct front_settings {
    int64_t processes;
    int64_t max_body;
    int64_t max_header_bytes;
    int64_t idle_timeout_ms;
    int64_t max_headers;
    int64_t max_connections;
    int64_t max_connections_per_address;
    int64_t header_timeout_ms; /* no request and no progress from a new connection by then: closed */
    int64_t h2_max_streams;
    int64_t php_timeout_ms;    /* no answer head from PHP by then: 504 */
    int64_t response_buffer;   /* bytes of a PHP answer held in memory per request */
    int64_t response_temp_max; /* then in a temporary file, up to this */
    char *temp_path;           /* where those files go (DATA/temp) */
    int64_t ban_ms;            /* an address cut for resets twice: refused this long */
    int gzip;
    int access_log_json;
    int realtime;                         /* WebSocket and the Pusher protocol on every site */
    int64_t realtime_max_message;         /* a frame or message from a client, an event's data */
    int64_t realtime_max_queue;           /* bytes queued for a client that does not read: then cut */
    int64_t realtime_activity_timeout_ms; /* a quiet client is pinged after this */
    int64_t realtime_max_channels;        /* subscriptions of one connection */
    int64_t realtime_client_events;       /* client events a connection may send a second */
    int64_t mercure_heartbeat_ms;         /* an SSE comment this often on a quiet subscription */
    char **trusted_proxies;               /* addresses and ranges whose forwarding headers reach PHP */
    size_t ntrusted_proxies;
} front_settings_t;

extern const vc_section_t vc_front_settings;

static inline const front_settings_t *front_settings(const vc_config_t *cfg)
{
    return (const front_settings_t *)vc_config_section(cfg, &vc_front_settings);
}

#endif
