/* vc-cache's settings and supervision (vc_settings.h). The values are
 * read by the fronts too (what to look up, what to offer): their type is
 * the cache's contract, libcommon/vc_cache.h. */
#include "vc_cache.h"
#include "vc_util.h"

#include <stddef.h>

#define C(field) offsetof(cache_settings_t, field)

static const vc_setting_t settings[] = {
    {"cache.enabled", T_BOOL, C(enabled), 0, 0, "false: no site is cached"},
    {"cache.max_size", T_SIZE, C(max_size), 1 << 20, INT64_MAX,
     "bytes of entries kept; the least recently used go first past it"},
    {"cache.max_object", T_SIZE, C(max_object), 0, 1LL << 30, "a larger answer is not stored"},
    {"cache.session_cookies", T_LIST, C(session_cookies), 0, 0,
     "cookie patterns; a request with one bypasses the cache"},
    {"cache.strip_params", T_LIST, C(strip_params), 0, 0, "query parameters left out of the key (utm_*, fbclid)"},
    {"cache.grace", T_DURATION, C(grace_ms), 0, 86400000, "stale served while refreshed, unless the answer forbids it"},
    {"cache.lock_timeout", T_DURATION, C(lock_timeout_ms), 0, 600000,
     "a miss waits this long for the same page's answer"},
    {"cache.hit_for_miss", T_DURATION, C(hit_for_miss_ms), 0, 86400000,
     "an uncacheable page's misses stop waiting for this long"},
    {"cache.purge_token", T_STR, C(purge_token), 0, 0,
     "set: PURGE on the admin listener with \"Authorization: Bearer TOKEN\""},
    {"cache.debug", T_BOOL, C(debug), 0, 0, "Cache-Status says the key"},
};

static const vc_env_setting_t env[] = {
    {"VC_CACHE_ENABLED", "cache.enabled"},
};

static char **list_of(const char *const *names, size_t n, size_t *count)
{
    char **l = vc_calloc(n, sizeof(char *));
    for (size_t i = 0; i < n; i++)
        l[i] = vc_strdup(names[i]);
    *count = n;
    return l;
}

static void defaults(void *values, const char *data_dir)
{
    (void)data_dir;
    cache_settings_t *c = values;
    c->enabled = 1;
    c->max_size = 256LL << 20;
    c->max_object = 1 << 20;
    /* No stale answer the page did not allow (RFC 9111 4.2.4). */
    c->grace_ms = 0;
    /* As nginx's proxy_cache_lock_timeout. */
    c->lock_timeout_ms = 5000;
    /* As Varnish's built-in hit-for-miss. */
    c->hit_for_miss_ms = 120000;
    /* A visitor with a session, or signed in, sees pages made for them:
     * the session and sign-in cookies of PHP and of the common frameworks
     * and CMSs, as their sources name them (docs/CACHE.md). Patterns, as
     * fnmatch(3) reads them. */
    static const char *const sessions[] = {
        "PHPSESSID",                /* PHP; Symfony, Yii, Magento, Zend, CakePHP 4 */
        "*_session",                /* Laravel (APP_NAME_session), CodeIgniter, MediaWiki */
        "remember_*",               /* Laravel's remember-me */
        "REMEMBERME",               /* Symfony's remember-me */
        "wordpress_logged_in_*",    /* WordPress */
        "wordpress_sec_*",          /* WordPress, over HTTPS */
        "wp-postpass_*",            /* WordPress, a password-protected post */
        "comment_author_*",         /* WordPress, a comment's author */
        "wp_woocommerce_session_*", /* WooCommerce */
        "SESS*",                    /* Drupal */
        "SSESS*",                   /* Drupal, over HTTPS */
        "CAKEPHP",                  /* CakePHP */
        "_identity*",               /* Yii 2's sign-in */
        "X-Magento-Vary",           /* Magento 2: a customer's own context */
        "PrestaShop-*",             /* PrestaShop */
        "MoodleSession*",           /* Moodle */
        "nc_session_id",            /* Nextcloud */
        "phpbb3_*_sid",             /* phpBB */
        /* Joomla: its session cookie's name is an MD5, 32 hex digits. */
        "[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-"
        "f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-"
        "9a-"
        "f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]",
    };
    c->session_cookies = list_of(sessions, VC_ARRAY_SIZE(sessions), &c->nsession_cookies);
    /* Parameters trackers add to a link: the page is the same. */
    static const char *const strip[] = {"utm_*", "fbclid", "gclid", "dclid", "msclkid", "mc_cid", "mc_eid", "yclid"};
    c->strip_params = list_of(strip, VC_ARRAY_SIZE(strip), &c->nstrip_params);
}

static const vc_supervision_t supervision = {
    .binary = "vc-cache",
    .order = 15, /* after the bus, before the fronts that offer it answers */
    .copies = VC_COPIES_ONE,
};

static const char *const endpoints[] = {"cache-in", NULL};

const vc_section_t vc_cache_settings = {
    .name = "cache",
    .settings = settings,
    .nsettings = VC_ARRAY_SIZE(settings),
    .size = sizeof(cache_settings_t),
    .defaults = defaults,
    .supervision = &supervision,
    .endpoints = endpoints,
    .env = env,
    .nenv = VC_ARRAY_SIZE(env),
};
