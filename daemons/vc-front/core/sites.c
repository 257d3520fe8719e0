/*
 * A site's part in the core: its h2o host and the filters every path of
 * its answers has, and what is read once at start (error pages,
 * redirects).
 */
#include "latency.h"
#include "sites.h"
#include "vc_log.h"
#include "vc_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Error pages are read once, at start: "404 /errors/404.html" (relative
 * to the root) or an absolute path. */
int site_load_extras(site_rt_t *s, const vc_site_t *conf)
{
    for (size_t i = 0; i < conf->nerror_pages; i++) {
        int status = 0;
        char path[1024];
        if (sscanf(conf->error_pages[i], "%d %1023s", &status, path) != 2)
            continue;
        char *full = path[0] == '/' && strncmp(path, conf->root, strlen(conf->root)) != 0
                         ? vc_asprintf("%s%s", conf->root, path)
                         : vc_strdup(path);
        size_t len;
        char *body = vc_read_file(full, &len);
        if (body == NULL) {
            vc_log(VC_LOG_ERR, "site", "open() failed while reading the error page \"%s\" of site \"%s\"", full,
                   conf->name);
            free(full);
            return -1;
        }
        free(full);
        s->errors = vc_realloc(s->errors, (s->nerrors + 1) * sizeof(*s->errors));
        s->errors[s->nerrors++] = (error_page_t){status, h2o_iovec_init(body, len)};
    }
    for (size_t i = 0; i < conf->nredirects; i++) {
        char from[1024], to[2048];
        int status = 301;
        if (sscanf(conf->redirects[i], "%1023s %2047s %d", from, to, &status) < 2)
            continue;
        s->redirects = vc_realloc(s->redirects, (s->nredirects + 1) * sizeof(*s->redirects));
        s->redirects[s->nredirects++] = (redirect_rule_t){vc_strdup(from), vc_strdup(to), status};
    }
    return 0;
}

/* "Server: Velocity" unless the application sent its own, which nginx
 * passes through from php-fpm in place of its own. h2o's protocol layer
 * would add its server_name next to PHP's, so that is left empty and every
 * path adds the header through this filter instead. */
static void on_setup_server_header(h2o_filter_t *self, h2o_req_t *req, h2o_ostream_t **slot)
{
    (void)self;
    if (h2o_find_header(&req->res.headers, H2O_TOKEN_SERVER, -1) == -1)
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_SERVER, "Server", H2O_STRLIT("Velocity"));
    h2o_setup_next_ostream(req, slot);
}

void server_header_register(h2o_pathconf_t *pathconf)
{
    h2o_create_filter(pathconf, sizeof(h2o_filter_t))->on_setup_ostream = on_setup_server_header;
}

void front_path_filters(front_t *f, const site_rt_t *s, h2o_pathconf_t *pathconf)
{
    VC_CHECK_OBJ(f, FRONT_MAGIC);
    server_header_register(pathconf);
    if (s->conf->gzip && f->settings->gzip) {
        h2o_compress_args_t ca = {.min_size = 256, .gzip = {.quality = 1}, .brotli = {.quality = -1}};
        h2o_compress_register(pathconf, &ca);
    }
    if (f->access_log)
        h2o_access_log_register(pathconf, f->access_log);
    latency_register(pathconf);
}

h2o_pathconf_t *front_site_path(site_rt_t *s, const char *path)
{
    VC_ASSERT(s->hostconf->paths.size < s->hostconf->paths.capacity);
    return h2o_config_register_path(s->hostconf, path, 0);
}

/* The site's part in the core: its h2o host, in which backends register
 * their paths (seam_init_sites), and the path of answers made or
 * streamed. */
void site_setup(front_t *f, site_rt_t *s, const vc_site_t *conf)
{
    VC_CHECK_OBJ(f, FRONT_MAGIC);
    s->conf = conf;
    s->route.root = conf->root;
    s->route.root_len = strlen(conf->root);
    s->route.front_controller = conf->front_controller;
    s->route.entry_scripts = conf->entry_scripts;
    s->route.nentry_scripts = conf->nentry_scripts;
    s->route.deny = conf->deny;
    s->route.ndeny = conf->ndeny;
    s->route.never = (const char *const *)f->never;
    s->route.nnever = f->nnever;
    s->route.base = conf->deploy_to;
    char host[300];
    snprintf(host, sizeof(host), "site.%s.invalid", conf->name);
    s->hostconf = h2o_config_register_host(&f->gc, h2o_iovec_init(host, strlen(host)), 65535);
    h2o_vector_reserve(NULL, &s->hostconf->paths,
                       FRONT_SITE_PATHS + 1 + conf->ninternal_locations + conf->nsendfile_paths);
    s->answer_conf = front_site_path(s, "/.answers");
    front_path_filters(f, s, s->answer_conf);
}
