/* vc-front's settings and supervision (vc_settings.h). */
#include "vc_front_settings.h"
#include "vc_cidr.h"
#include "vc_util.h"

#include <stddef.h>
#include <stdio.h>

#define F(field) offsetof(front_settings_t, field)
#define BIG INT64_MAX

static const vc_setting_t settings[] = {
    {"front.processes", T_INT, F(processes), 1, 64, "fronts sharing the ports"},
    {"front.max_body", T_SIZE, F(max_body), 0, BIG, "larger request bodies: 413"},
    {"front.max_header_bytes", T_SIZE, F(max_header_bytes), 1024, 1 << 24, "larger request headers: 431"},
    {"front.idle_timeout", T_DURATION, F(idle_timeout_ms), 100, 3600000,
     "a connection with no request in progress this long is closed"},
    {"front.gzip", T_BOOL, F(gzip), 0, 0, "false: no site's answers are compressed"},
    {"front.max_headers", T_INT, F(max_headers), 1, 100, "more request headers: 431"},
    {"front.max_connections", T_INT, F(max_connections), 1, 1000000,
     "at the limit the connection idle longest is closed for a new one"},
    {"front.max_connections_per_address", T_INT, F(max_connections_per_address), 1, 1000000,
     "more connections from one address are closed at once"},
    {"front.header_timeout", T_DURATION, F(header_timeout_ms), 100, 3600000,
     "a connection with no whole request and no progress by then: closed"},
    {"front.h2_max_streams", T_INT, F(h2_max_streams), 1, 1000, "concurrent HTTP/2 streams a connection may open"},
    {"front.php_timeout", T_DURATION, F(php_timeout_ms), 100, 3600000, "no answer from PHP by then: 504"},
    {"front.response_buffer", T_SIZE, F(response_buffer), 64 * 1024, 1LL << 30,
     "of a PHP answer its client has not read yet, held in memory"},
    {"front.response_temp_max", T_SIZE, F(response_temp_max), 0, BIG,
     "then in a temporary file (0: none); past it the worker waits"},
    {"front.temp_path", T_STR, F(temp_path), 0, 0, "where those temporary files go"},
    {"front.ban_time", T_DURATION, F(ban_ms), 0, 86400000, "an address cut for resets twice is refused this long"},
    {"front.access_log", T_LOGFORMAT, F(access_log_json), 0, 0, "\"combined\" or \"json\" lines"},
    {"front.realtime", T_BOOL, F(realtime), 0, 0, "WebSocket rooms: the Pusher protocol and Mercure"},
    {"front.realtime_max_message", T_SIZE, F(realtime_max_message), 256, 1 << 20,
     "a client's frame or message, an event's data; over it: 1009, 413"},
    {"front.realtime_max_queue", T_SIZE, F(realtime_max_queue), 4096, 1LL << 30,
     "queued for a client that does not read; past it: closed (1008)"},
    {"front.realtime_activity_timeout", T_DURATION, F(realtime_activity_timeout_ms), 1000, 3600000,
     "a quiet connection is pinged, then closed (4201)"},
    {"front.realtime_max_channels", T_INT, F(realtime_max_channels), 1, 100000, "channels one connection may join"},
    {"front.realtime_client_events", T_INT, F(realtime_client_events), 0, 100000,
     "client events a connection may send a second (then 4301)"},
    {"front.mercure_heartbeat", T_DURATION, F(mercure_heartbeat_ms), 1000, 3600000,
     "an SSE comment this often on a quiet Mercure subscription"},
    {"front.trusted_proxies", T_LIST, F(trusted_proxies), 0, 0,
     "addresses or ranges whose X-Forwarded-* headers are believed"},
};

static const vc_env_setting_t env[] = {
    {"VC_FRONT_PROCESSES", "front.processes"},
    {"VC_REALTIME", "front.realtime"},
};

static void defaults(void *values, const char *data_dir)
{
    front_settings_t *f = values;
    f->temp_path = vc_asprintf("%s/temp", data_dir);
    f->processes = 1;
    f->max_body = 8 * 1024 * 1024;
    f->max_header_bytes = 16 * 1024;
    f->idle_timeout_ms = 60000;
    f->max_headers = 64;
    f->max_connections = 10000;
    f->max_connections_per_address = 1024;
    f->header_timeout_ms = 10000;
    f->response_buffer = 4 << 20;
    f->response_temp_max = 1LL << 30;
    f->h2_max_streams = 100;
    /* Longer than a queue wait (30 s) plus a script's limit and grace. */
    f->php_timeout_ms = 90000;
    f->ban_ms = 60000;
    f->gzip = 1;
    f->realtime = 1;
    /* Pusher's own limits where it has them: 10 KB events (ours allow
     * more), 100 channels to a connection, 10 client events a second. */
    f->realtime_max_message = 64 * 1024;
    f->realtime_max_queue = 512 * 1024;
    f->realtime_activity_timeout_ms = 30000;
    f->realtime_max_channels = 100;
    f->realtime_client_events = 10;
    f->mercure_heartbeat_ms = 15000; /* under most proxies' idle timeouts */
}

/* Each trusted proxy an address or a range (docs/front.md). */
static int validate(const vc_config_t *cfg, const void *values, char *why, size_t len)
{
    (void)cfg;
    const front_settings_t *f = values;
    for (size_t i = 0; i < f->ntrusted_proxies; i++) {
        vc_cidr_t c;
        if (vc_cidr_parse(f->trusted_proxies[i], &c) < 0) {
            snprintf(why, len, "front.trusted_proxies: \"%s\" is not an address or a range (\"10.0.0.0/8\", \"::1\")",
                     f->trusted_proxies[i]);
            return -1;
        }
    }
    return 0;
}

static const vc_supervision_t supervision = {
    .binary = "vc-front",
    .order = 30, /* after the pools it sends to */
    .copies = VC_COPIES_SETTING,
    .copies_setting = "front.processes",
    .serves_clients = 1,
    .overlaps = 1,
    .reload_by_replacing = 1,
};

const vc_section_t vc_front_settings = {
    .name = "front",
    .settings = settings,
    .nsettings = VC_ARRAY_SIZE(settings),
    .size = sizeof(front_settings_t),
    .defaults = defaults,
    .validate = validate,
    .env = env,
    .nenv = VC_ARRAY_SIZE(env),
    .supervision = &supervision,
};
