/*
 * After a switch, site.health_check is asked for through this node's own
 * front (its first plain listener, on loopback), with the site's first
 * host, until it answers 200 or fed.health_timeout is up. A release that
 * never does is switched away from (switch.c).
 */
#include "fed.h"
#include "vc_log.h"
#include "vc_util.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static size_t discard(char *p, size_t size, size_t n, void *arg)
{
    (void)p, (void)arg;
    return size * n;
}

/* The front's address as a URL host and port: a wildcard listener is
 * asked on loopback. */
static int front_address(const vc_config_t *cfg, char *out, size_t len)
{
    if (cfg->nlisten == 0)
        return -1;
    const char *l = cfg->listen[0], *colon = strrchr(l, ':');
    if (colon == NULL)
        return -1;
    size_t hlen = (size_t)(colon - l);
    int v6 = hlen > 0 && l[0] == '[';
    int any = hlen == 0 || !strncmp(l, "0.0.0.0", hlen) || !strncmp(l, "[::]", hlen) || !strncmp(l, "*", hlen);
    if (any)
        snprintf(out, len, "%s%s", v6 ? "[::1]" : "127.0.0.1", colon);
    else
        snprintf(out, len, "%s", l);
    return 0;
}

int health_check(fed_t *f, const vc_site_t *s, char *why, size_t wlen)
{
    VC_CHECK_OBJ(f, FED_MAGIC);
    if (s->health_check == NULL)
        return 0;
    char addr[300];
    if (front_address(f->d.cfg, addr, sizeof(addr)) < 0) {
        snprintf(why, wlen, "health_check: the suite has no plain listener to ask it through");
        return -1;
    }
    char *url = vc_asprintf("http://%s%s", addr, s->health_check);
    char *host = vc_asprintf("Host: %s", s->nhosts ? s->hosts[0] : "localhost");
    struct curl_slist *headers = curl_slist_append(NULL, host);
    CURL *c = curl_easy_init();
    long status = 0;
    CURLcode rc = CURLE_FAILED_INIT;
    int64_t deadline = (int64_t)vc_mono_ms() + f->cfg->health_timeout_ms;
    while (c) {
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_PROXY, "");
        int64_t left = deadline - (int64_t)vc_mono_ms();
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(left > 100 ? left : 100));
        rc = curl_easy_perform(c);
        status = 0;
        if (rc == CURLE_OK)
            curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        if (status == 200 || (int64_t)vc_mono_ms() >= deadline)
            break;
        nanosleep(&(struct timespec){0, 100000000}, NULL); /* the app may still be warming up */
    }
    if (status != 200) {
        if (rc == CURLE_OK)
            snprintf(why, wlen, "health_check %s answered %ld, not 200, within fed.health_timeout (%lld ms)",
                     s->health_check, status, (long long)f->cfg->health_timeout_ms);
        else
            snprintf(why, wlen, "health_check %s did not answer within fed.health_timeout (%lld ms): %s",
                     s->health_check, (long long)f->cfg->health_timeout_ms, curl_easy_strerror(rc));
    }
    if (c)
        curl_easy_cleanup(c);
    curl_slist_free_all(headers);
    free(host);
    free(url);
    return status == 200 ? 0 : -1;
}
