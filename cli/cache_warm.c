/*
 * vc cache warm: fills this node's cache ahead of visitors, from a sitemap
 * (sitemap index files followed, one level) or a list of URLs (one a line,
 * "-" for stdin). Each URL is asked of this node's own listener (its
 * scheme's: listen or tls_listen), whatever its host resolves to, with at
 * most --concurrency requests at a time (2: live traffic keeps the rest of
 * the pool). What happened to each is read from its Cache-Status: stored,
 * already there, not cacheable (and why), or an error. A progress bar on
 * a terminal; a summary at the end (--json for a machine). With --events
 * ID, progress goes on the bus too (cache.warm.progress each second,
 * cache.warm.done at the end), for the panel's warm-up.
 */
#include "cli.h"
#include "vc_bus.h"
#include "vc_config.h"
#include "vc_events.h"
#include "vc_util.h"

#include <curl/curl.h>
#include <libxml/parser.h>
#include <libxml/tree.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <zmq.h>

#define SITEMAP_MAX (50u << 20) /* the sitemaps protocol's own limit */
#define URLS_MAX 1000000

typedef struct url_list {
    char **v;
    size_t n, cap;
} url_list_t;

typedef struct warm {
    const vc_config_t *cfg;
    int insecure;
    url_list_t urls;
    size_t done, stored, already, uncacheable, errors;
    int bar; /* stderr is a terminal */
    /* --events ID: progress on the bus (the panel's warm-up shows it) */
    const char *id;
    void *zctx;
    vc_bus_t *bus;
    uint64_t said_ms;
    char why[512]; /* why it could not run */
} warm_t;

static void add_url(url_list_t *l, const char *u, size_t len)
{
    while (len && (u[len - 1] == '\r' || u[len - 1] == ' ' || u[len - 1] == '\t'))
        len--;
    while (len && (*u == ' ' || *u == '\t'))
        u++, len--;
    if (len == 0 || l->n >= URLS_MAX || (strncmp(u, "http://", 7) && strncmp(u, "https://", 8)))
        return;
    VC_GROW(l->v, l->cap, l->n + 1, 256);
    l->v[l->n] = vc_malloc(len + 1);
    memcpy(l->v[l->n], u, len);
    l->v[l->n++][len] = '\0';
}

/* CURLOPT_CONNECT_TO's "::host:port" for the listener of url's scheme
 * (one on every address is reached on loopback); 0 if there is none. */
static int listener_for(const warm_t *w, const char *url, char *out, size_t cap)
{
    int tls = strncmp(url, "https://", 8) == 0;
    if (tls ? w->cfg->ntls_listen == 0 : w->cfg->nlisten == 0)
        return 0;
    const char *l = tls ? w->cfg->tls_listen[0] : w->cfg->listen[0];
    const char *port = strrchr(l, ':');
    if (port == NULL)
        return 0;
    size_t hl = (size_t)(port - l);
    if (hl == 0 || (hl == 7 && !strncmp(l, "0.0.0.0", 7)))
        snprintf(out, cap, "::127.0.0.1%s", port);
    else if (hl == 4 && !strncmp(l, "[::]", 4))
        snprintf(out, cap, "::[::1]%s", port);
    else
        snprintf(out, cap, "::%s", l);
    return 1;
}

typedef struct fetch {
    char *url;
    char *body; /* a sitemap's */
    size_t len;
    char status[256]; /* the answer's Cache-Status */
    struct curl_slist *connect_to;
    char errbuf[CURL_ERROR_SIZE];
} fetch_t;

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    fetch_t *f = arg;
    size_t len = size * n;
    if (f->len + len > SITEMAP_MAX)
        return 0; /* too large: the transfer fails */
    f->body = vc_realloc(f->body, f->len + len + 1);
    memcpy(f->body + f->len, p, len);
    f->len += len;
    f->body[f->len] = '\0';
    return len;
}

static size_t on_discard(char *p, size_t size, size_t n, void *arg)
{
    (void)p, (void)arg;
    return size * n;
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
    fetch_t *f = arg;
    size_t len = size * n;
    if (len > 13 && strncasecmp(p, "cache-status:", 13) == 0) {
        size_t at = 13;
        while (at < len && p[at] == ' ')
            at++;
        size_t vl = len - at;
        while (vl && (p[at + vl - 1] == '\r' || p[at + vl - 1] == '\n'))
            vl--;
        snprintf(f->status, sizeof(f->status), "%.*s", (int)vl, p + at);
    }
    return len;
}

static CURL *easy(const warm_t *w, fetch_t *f, int keep_body)
{
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, f->url);
    curl_easy_setopt(c, CURLOPT_PRIVATE, f);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, keep_body ? on_body : on_discard);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, f);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, f);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, f->errbuf);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "vc-cache-warm/" VC_VERSION);
    curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, ""); /* a sitemap may come gzipped */
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    if (w->insecure) {
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    char to[300];
    if (listener_for(w, f->url, to, sizeof(to))) {
        f->connect_to = curl_slist_append(NULL, to);
        curl_easy_setopt(c, CURLOPT_CONNECT_TO, f->connect_to);
    }
    return c;
}

/* The <loc> of every <url> (or, for an index, <sitemap>) in a sitemap. */
static void locs(xmlNode *n, url_list_t *urls, url_list_t *maps)
{
    for (; n; n = n->next) {
        if (n->type == XML_ELEMENT_NODE && !strcmp((const char *)n->name, "loc") && n->parent) {
            xmlChar *t = xmlNodeGetContent(n);
            if (t) {
                int index = !strcmp((const char *)n->parent->name, "sitemap");
                add_url(index ? maps : urls, (const char *)t, strlen((const char *)t));
                xmlFree(t);
            }
        }
        locs(n->children, urls, maps);
    }
}

/* Fetches a sitemap (and, one level down, those an index names). */
static int read_sitemap(warm_t *w, const char *url, int depth)
{
    fetch_t f = {.url = (char *)url};
    CURL *c = easy(w, &f, 1);
    CURLcode rc = curl_easy_perform(c);
    long code = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(c);
    curl_slist_free_all(f.connect_to);
    if (rc != CURLE_OK || code != 200) {
        snprintf(w->why, sizeof(w->why), "the sitemap %s: %s", url,
                 rc != CURLE_OK ? (f.errbuf[0] ? f.errbuf : curl_easy_strerror(rc)) : "not a 200");
        fprintf(stderr, "vc cache warm: %s\n", w->why);
        free(f.body);
        return -1;
    }
    xmlDoc *doc =
        f.body ? xmlReadMemory(f.body, (int)f.len, url, NULL, XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING)
               : NULL;
    free(f.body);
    if (doc == NULL) {
        snprintf(w->why, sizeof(w->why), "the sitemap %s is not XML", url);
        fprintf(stderr, "vc cache warm: %s\n", w->why);
        return -1;
    }
    url_list_t maps = {0};
    locs(xmlDocGetRootElement(doc), &w->urls, &maps);
    xmlFreeDoc(doc);
    for (size_t i = 0; i < maps.n; i++) {
        if (depth == 0)
            read_sitemap(w, maps.v[i], 1);
        free(maps.v[i]);
    }
    free(maps.v);
    return 0;
}

static int read_list(warm_t *w, const char *path)
{
    FILE *in = strcmp(path, "-") ? fopen(path, "r") : stdin;
    if (in == NULL) {
        snprintf(w->why, sizeof(w->why), "cannot read %s", path);
        fprintf(stderr, "vc cache warm: %s\n", w->why);
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, in)) > 0)
        add_url(&w->urls, line, (size_t)(line[n - 1] == '\n' ? n - 1 : n));
    free(line);
    if (in != stdin)
        fclose(in);
    return 0;
}

/* On the bus with --events: at most once a second, and at the end. */
static void say(warm_t *w, int last)
{
    if (w->bus == NULL || (!last && vc_mono_ms() - w->said_ms < 1000))
        return;
    w->said_ms = vc_mono_ms();
    char n[6][24];
    const size_t v[6] = {w->done, w->urls.n, w->stored, w->already, w->uncacheable, w->errors};
    for (int i = 0; i < 6; i++)
        snprintf(n[i], sizeof(n[i]), "%zu", v[i]);
    if (!last)
        vc_bus_publish(w->bus, VC_EVENT(CACHE_WARM_PROGRESS), VC__SEVERITY__INFO, "id", w->id, "done", n[0], "total",
                       n[1], "stored", n[2], "already", n[3], "uncacheable", n[4], "errors", n[5], NULL);
    else
        vc_bus_publish(w->bus, VC_EVENT(CACHE_WARM_DONE), w->why[0] ? VC__SEVERITY__WARNING : VC__SEVERITY__INFO, "id",
                       w->id, "done", n[0], "total", n[1], "stored", n[2], "already", n[3], "uncacheable", n[4],
                       "errors", n[5], "result", w->why[0] ? w->why : "ok", NULL);
}

static void progress(warm_t *w, int last)
{
    say(w, last);
    if (!w->bar)
        return;
    size_t total = w->urls.n, filled = total ? 30 * w->done / total : 30;
    char bar[31];
    memset(bar, '#', filled);
    memset(bar + filled, '.', 30 - filled);
    bar[30] = '\0';
    fprintf(stderr, "\r[%s] %zu/%zu  stored %zu  already %zu  uncacheable %zu  errors %zu%s", bar, w->done, total,
            w->stored, w->already, w->uncacheable, w->errors, last ? "\n" : "");
}

static void count(warm_t *w, CURLcode rc, long code, const fetch_t *f)
{
    w->done++;
    if (rc != CURLE_OK || code >= 500 || code == 0)
        w->errors++;
    else if (strstr(f->status, "; stored"))
        w->stored++;
    else if (!strncmp(f->status, "Velocity; hit", 13))
        w->already++;
    else
        w->uncacheable++; /* a detail says why, or the cache did not see it */
}

static void run(warm_t *w, long concurrency)
{
    CURLM *m = curl_multi_init();
    curl_multi_setopt(m, CURLMOPT_MAX_TOTAL_CONNECTIONS, concurrency);
    size_t next = 0;
    int running = 0;
    while (next < w->urls.n || running) {
        while (next < w->urls.n && running < concurrency) {
            fetch_t *f = vc_calloc(1, sizeof(*f));
            f->url = w->urls.v[next++];
            curl_multi_add_handle(m, easy(w, f, 0));
            running++;
        }
        int still;
        curl_multi_perform(m, &still);
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(m, &left)) != NULL) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            fetch_t *f;
            long code = 0;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&f);
            curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &code);
            count(w, msg->data.result, code, f);
            curl_multi_remove_handle(m, msg->easy_handle);
            curl_easy_cleanup(msg->easy_handle);
            curl_slist_free_all(f->connect_to);
            free(f);
            running--;
            progress(w, 0);
        }
        if (running)
            curl_multi_poll(m, NULL, 0, 200, NULL);
    }
    curl_multi_cleanup(m);
    progress(w, 1);
}

int cache_warm(const vc_config_t *cfg, int argc, char **argv)
{
    warm_t w = {.cfg = cfg, .bar = isatty(2)};
    const char *sitemap = NULL, *list = NULL;
    long concurrency = 2;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--sitemap") && i + 1 < argc)
            sitemap = argv[++i];
        else if (!strcmp(argv[i], "--list") && i + 1 < argc)
            list = argv[++i];
        else if (!strcmp(argv[i], "--concurrency") && i + 1 < argc)
            concurrency = strtol(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--insecure"))
            w.insecure = 1;
        else if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "--events") && i + 1 < argc)
            w.id = argv[++i];
        else
            return -2;
    }
    if ((sitemap == NULL) == (list == NULL) || concurrency < 1 || concurrency > 64)
        return -2;
    if (w.id) {
        w.zctx = zmq_ctx_new();
        char *ep = vc_config_endpoint(cfg, "bus-in");
        w.bus = vc_bus_new(w.zctx, ep, "vc");
        free(ep);
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc = sitemap ? read_sitemap(&w, sitemap, 0) : read_list(&w, list);
    if (rc == 0)
        run(&w, concurrency);
    else
        progress(&w, 1);
    curl_global_cleanup();
    if (w.id) {
        vc_bus_destroy(&w.bus); /* its linger lets the last event leave */
        zmq_ctx_term(w.zctx);
    }
    if (rc == 0 && json)
        printf("{\"urls\":%zu,\"stored\":%zu,\"already\":%zu,\"uncacheable\":%zu,\"errors\":%zu}\n", w.urls.n, w.stored,
               w.already, w.uncacheable, w.errors);
    else if (rc == 0)
        printf("warmed %zu URLs: %zu stored, %zu already there, %zu not cacheable, %zu errors\n", w.urls.n, w.stored,
               w.already, w.uncacheable, w.errors);
    for (size_t i = 0; i < w.urls.n; i++)
        free(w.urls.v[i]);
    free(w.urls.v);
    return rc < 0 ? 1 : w.errors ? 1 : 0;
}
