/*
 * Realtime apps (Pusher protocol): an app is an id, a key the clients
 * connect with, and a secret that signs channel authorisations and API
 * calls. A site lists its own in site.realtime_apps ("ID KEY SECRET");
 * the default site, if it lists none, has one made at first start and
 * kept in DATA/state/realtime-app (mode 0600), so that the example works
 * with no configuration. `vc rooms apps` shows them.
 */
#ifndef VC_REALTIME_H
#define VC_REALTIME_H

#include <stddef.h>

#define VC_RT_FIELD_MAX 128

typedef struct vc_rt_app {
    char id[VC_RT_FIELD_MAX], key[VC_RT_FIELD_MAX], secret[VC_RT_FIELD_MAX];
} vc_rt_app_t;

/* "ID KEY SECRET": each 1 to 127 of [A-Za-z0-9_.-]. 0, or -1 with why. */
int vc_rt_app_parse(const char *s, vc_rt_app_t *app, char *why, size_t whylen);

/* A webhook: the app's server hears of its channels (Pusher's webhooks).
 * site.realtime_webhooks lists "URL [EVENT,EVENT...]" for every app of
 * the site; with no events named, all of them. */
enum {
    VC_RT_HOOK_CHANNEL_OCCUPIED = 1 << 0,
    VC_RT_HOOK_CHANNEL_VACATED = 1 << 1,
    VC_RT_HOOK_MEMBER_ADDED = 1 << 2,
    VC_RT_HOOK_MEMBER_REMOVED = 1 << 3,
    VC_RT_HOOK_CLIENT_EVENT = 1 << 4,
    VC_RT_HOOK_ALL = (1 << 5) - 1,
};
#define VC_RT_URL_MAX 1024
typedef struct vc_rt_webhook {
    char url[VC_RT_URL_MAX]; /* http:// or https:// */
    unsigned events;         /* VC_RT_HOOK_* */
} vc_rt_webhook_t;

/* 0, or -1 with why. */
int vc_rt_webhook_parse(const char *s, vc_rt_webhook_t *hook, char *why, size_t whylen);
/* The VC_RT_HOOK_* of a webhook event's name ("channel_occupied"), or 0. */
unsigned vc_rt_webhook_event(const char *name);

/* The default site's app: read from state_dir/realtime-app, made there
 * first if it is not (atomically: two fronts starting at once agree).
 * 0, or -1 with err. */
int vc_rt_default_app(const char *state_dir, vc_rt_app_t *app, char *err, size_t errlen);
/* Only read: 0, or -1 with err and errno (ENOENT: not made yet). */
int vc_rt_default_app_read(const char *state_dir, vc_rt_app_t *app, char *err, size_t errlen);
/* A new secret for it, written in place (renamed over the old file), in
 * app: 0, or -1 with err. The fronts and vc-bus take it at a reload. */
int vc_rt_default_app_rotate(const char *state_dir, vc_rt_app_t *app, char *err, size_t errlen);

/* A site's apps, at most max into out: those its settings name, or, for
 * the default site naming none, the one its front made at first start
 * (read, never made here: a file made by another user might not be
 * readable by the suite's). *made says it is that one. Returns how many;
 * 0 with why (and errno: ENOENT when not made yet) if it cannot be read. */
struct vc_site;
size_t vc_rt_site_apps(const struct vc_site *s, const char *state_dir, vc_rt_app_t *out, size_t max, int *made,
                       char *why, size_t whylen);

/* A new secret: 32 random bytes in hex. */
#define VC_RT_SECRET_LEN 64
void vc_rt_new_secret(char out[VC_RT_SECRET_LEN + 1]);

/* A new update id, "urn:uuid:" and a random (version 4) UUID, as Mercure
 * hubs make them; out holds VC_URN_UUID_LEN + 1 bytes. */
#define VC_URN_UUID_LEN 45
void vc_urn_uuid(char out[VC_URN_UUID_LEN + 1]);

#endif
