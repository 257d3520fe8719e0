/*
 * The SAPI module: how PHP sees a request (variables, body, cookies) and
 * how its output leaves (headers, body, flush). Modelled on what php-fpm
 * gives a script behind nginx, so scripts cannot tell the difference.
 */
#include "sapi.h"
#include "wall_notes.h"
#include "cache_purge.h"
#include "publish.h"
#include "socketio_api.h"
#include "pool_ini.h"
#include "worker_mode.h"
#include "vc_log.h"
#include "vc_util.h"

#include <php.h>
#include <php_main.h>
#include <php_variables.h>
#include <SAPI.h>
#include <ext/standard/head.h>
#include <main/php_output.h>
#include <main/http_status_codes.h>
#include <zend_exceptions.h>

#include <ctype.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* Output is sent in chunks of this size even without flush(), so a large
 * response streams instead of growing one buffer. */
#define OUT_CHUNK (64 * 1024)

/* The request PHP is running now; one at a time per process (NTS). */
static vc_request_t *current;
static char *ini_entries;
static char *user_name, *home_dir;

vc_request_t *vc_sapi_current(void)
{
    return current;
}

static const vc_param_t *find_param(const vc_request_t *r, const char *name, size_t len)
{
    return vc_params_find(&r->params, name, len);
}

/* ---- output ----------------------------------------------------------------- */

static void emit(vc_request_t *r, int final)
{
    if (r->final_sent)
        return;
    if (!SG(headers_sent) && !final)
        sapi_send_headers();
    r->emit(r, final);
    if (final)
        r->final_sent = 1;
    else if (r->aborted)
        /* As with fpm: connection_aborted() turns true, and the script ends
         * here unless it asked ignore_user_abort(). */
        php_handle_aborted_connection();
}

static size_t on_ub_write(const char *str, size_t len)
{
    vc_request_t *r = current;
    if (r == NULL || r->final_sent)
        return len; /* after fastcgi_finish_request() output goes nowhere */
    /* One echo of a large string leaves as messages of OUT_CHUNK: the
     * front holds a message whole before it can pass it on or spill it. */
    for (size_t done = 0; done < len;) {
        size_t n = len - done, room = r->out_len < OUT_CHUNK ? OUT_CHUNK - r->out_len : 0;
        if (n > room && room > 0)
            n = room;
        if (r->out_len + n > r->out_cap) {
            size_t cap = r->out_cap ? r->out_cap : 8192;
            while (cap < r->out_len + n)
                cap *= 2;
            r->out = vc_realloc(r->out, cap);
            r->out_cap = cap;
        }
        memcpy(r->out + r->out_len, str + done, n);
        r->out_len += n;
        done += n;
        if (r->out_len >= OUT_CHUNK)
            emit(r, 0);
    }
    return len;
}

static void on_flush(void *server_context)
{
    vc_request_t *r = server_context;
    /* As fpm's: flush() sends what PHP's output layer has written. Before
     * its first write (headers not sent) there is nothing, and header()
     * must still work: output_buffering holds the script's echoes. */
    if (r && !r->final_sent && SG(headers_sent))
        emit(r, 0);
}

/* Status line reason: from "HTTP/1.1 404 Not Found" or a Status header. */
static char *reason_from_line(const char *line)
{
    const char *sp = line ? strchr(line, ' ') : NULL;
    if (sp == NULL)
        return NULL;
    sp = strchr(sp + 1, ' ');
    return sp && sp[1] ? vc_strdup(sp + 1) : NULL;
}

static int on_send_headers(sapi_headers_struct *sh)
{
    vc_request_t *r = current;
    if (r == NULL)
        return SAPI_HEADER_SENT_SUCCESSFULLY;
    Vc__ResponseHead *resp = vc_malloc(sizeof(*resp));
    vc__response_head__init(resp);
    resp->id = r->head->id;
    resp->status = sh->http_response_code > 0 ? (uint32_t)sh->http_response_code : 200;
    char *reason = reason_from_line(sh->http_status_line);
    zend_llist_position pos;
    for (sapi_header_struct *h = zend_llist_get_first_ex(&sh->headers, &pos); h;
         h = zend_llist_get_next_ex(&sh->headers, &pos)) {
        const char *colon = memchr(h->header, ':', h->header_len);
        if (colon == NULL)
            continue;
        size_t nlen = (size_t)(colon - h->header);
        const char *v = colon + 1;
        while (*v == ' ' || *v == '\t')
            v++;
        size_t vlen = h->header_len - (size_t)(v - h->header);
        /* header("Content-Type:") removes it: nginx sends none. */
        if (vlen == 0 && nlen == 12 && strncasecmp(h->header, "Content-Type", 12) == 0)
            continue;
        /* "Status: 404 Not Found" sets the status, as in CGI. */
        if (nlen == 6 && strncasecmp(h->header, "Status", 6) == 0) {
            int code = atoi(v);
            if (code >= 100 && code <= 999) {
                resp->status = (uint32_t)code;
                const char *sp = memchr(v, ' ', vlen);
                free(reason);
                reason = sp ? vc_strndup(sp + 1, vlen - (size_t)(sp + 1 - v)) : NULL;
            }
            continue;
        }
        Vc__Header *hd = vc_malloc(sizeof(*hd));
        vc__header__init(hd);
        hd->name = vc_strndup(h->header, nlen);
        hd->value.data = (uint8_t *)vc_strndup(v, vlen);
        hd->value.len = vlen;
        resp->headers = vc_realloc(resp->headers, (resp->n_headers + 1) * sizeof(*resp->headers));
        resp->headers[resp->n_headers++] = hd;
    }
    if (reason == NULL) {
        /* As php-fpm's Status line: PHP's own table, or no reason at all
         * for a code it does not know. */
        reason = vc_strdup("");
        for (const http_response_status_code_pair *p = http_status_map; p->code; p++)
            if ((uint32_t)p->code == resp->status) {
                free(reason);
                reason = vc_strdup(p->str);
                break;
            }
    }
    resp->reason = reason;
    if (r->resp)
        vc__response_head__free_unpacked(r->resp, NULL);
    r->resp = resp;
    return SAPI_HEADER_SENT_SUCCESSFULLY;
}

/* ---- input ----------------------------------------------------------------- */

static size_t on_read_post(char *buf, size_t count)
{
    vc_request_t *r = current;
    size_t done = 0;
    while (r && done < count && r->body_i < r->nbody) {
        const vc_frame_t *m = &r->body[r->body_i];
        size_t avail = m->len - r->body_off;
        size_t n = avail < count - done ? avail : count - done;
        memcpy(buf + done, m->data + r->body_off, n);
        done += n;
        r->body_off += n;
        if (r->body_off == m->len) {
            r->body_i++;
            r->body_off = 0;
        }
    }
    return done;
}

static char *on_read_cookies(void)
{
    vc_request_t *r = current;
    const vc_param_t *p = r ? find_param(r, "HTTP_COOKIE", 11) : NULL;
    return p ? p->value : NULL;
}

/* A worker-mode pool: its scripts see FRANKENPHP_WORKER, as FrankenPHP's
 * workers do, so Symfony's runtime and Octane-style scripts that test for
 * it take their worker loop unmodified (the boot sees it too). */
static int worker_pool;

static void on_register_variables(zval *track_vars_array)
{
    vc_request_t *r = current;
    if (r == NULL)
        return;
    if (worker_pool)
        php_register_variable_safe("FRANKENPHP_WORKER", "1", 1, track_vars_array);
    for (size_t i = 0; i < r->params.n; i++) {
        const vc_param_t *p = &r->params.v[i];
        size_t new_len;
        char *val = p->value;
        /* The input filter may rewrite the value (filter extension). */
        if (sapi_module.input_filter(PARSE_SERVER, (char *)p->name, &val, p->value_len, &new_len))
            php_register_variable_safe(p->name, val, new_len, track_vars_array);
    }
    /* PHP_SELF as fpm computes it with cgi.fix_pathinfo=1. */
    const vc_param_t *sn = find_param(r, "SCRIPT_NAME", 11), *pi = find_param(r, "PATH_INFO", 9);
    char *self = vc_asprintf("%s%s", sn ? sn->value : "", pi ? pi->value : "");
    size_t new_len;
    char *val = self;
    if (sapi_module.input_filter(PARSE_SERVER, "PHP_SELF", &val, strlen(self), &new_len))
        php_register_variable_safe("PHP_SELF", val, new_len, track_vars_array);
    free(self);
}

static char *on_getenv(const char *name, size_t len)
{
    vc_request_t *r = current;
    const vc_param_t *p = r ? find_param(r, name, len) : NULL;
    return p ? p->value : NULL;
}

static void on_log_message(const char *message, int syslog_type)
{
    int level = syslog_type <= 3 ? VC_LOG_ERR : syslog_type == 4 ? VC_LOG_WARN : VC_LOG_NOTICE;
    vc_log(level, "php", "%s", message);
}

static zend_result on_get_request_time(double *t)
{
    /* The front stamps nothing yet; the worker's clock is close enough. */
    *t = (double)vc_now_us() / 1e6;
    return SUCCESS;
}

/* ---- functions fpm provides ----------------------------------------------- */

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_fastcgi_finish_request, 0, 0, _IS_BOOL, 0)
ZEND_END_ARG_INFO()
ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_getallheaders, 0, 0, IS_ARRAY, 0)
ZEND_END_ARG_INFO()
ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_frankenphp_handle_request, 0, 1, _IS_BOOL, 0)
ZEND_ARG_TYPE_INFO(0, callback, IS_CALLABLE, 0)
ZEND_END_ARG_INFO()

/* Sends the whole response now; the script keeps running, its further
 * output is discarded. */
static ZEND_FUNCTION(fastcgi_finish_request)
{
    ZEND_PARSE_PARAMETERS_NONE();
    vc_request_t *r = current;
    if (r == NULL || r->final_sent)
        RETURN_FALSE;
    php_output_end_all();
    php_header();
    emit(r, 1);
    RETURN_TRUE;
}

/* "HTTP_ACCEPT_ENCODING" -> "Accept-Encoding", as fpm's getallheaders(). */
static ZEND_FUNCTION(getallheaders)
{
    ZEND_PARSE_PARAMETERS_NONE();
    array_init(return_value);
    vc_request_t *r = current;
    for (size_t i = 0; r && i < r->params.n; i++) {
        const vc_param_t *p = &r->params.v[i];
        const char *n = p->name;
        const char *src;
        if (!strncmp(n, "HTTP_", 5))
            src = n + 5;
        else if (!strcmp(n, "CONTENT_TYPE") || !strcmp(n, "CONTENT_LENGTH"))
            src = n;
        else
            continue;
        zend_string *name = zend_string_alloc(strlen(src), 0);
        char *d = ZSTR_VAL(name);
        int upper = 1;
        for (const char *c = src; *c; c++) {
            if (*c == '_') {
                *d++ = '-';
                upper = 1;
            } else {
                *d++ = upper ? (char)toupper((unsigned char)*c) : (char)tolower((unsigned char)*c);
                upper = 0;
            }
        }
        *d = '\0';
        add_assoc_stringl_ex(return_value, ZSTR_VAL(name), ZSTR_LEN(name), p->value, p->value_len);
        zend_string_release(name);
    }
}

/* The Zend macros carry their own commas; keep one entry a line. */
/* clang-format off */
static const zend_function_entry functions[] = {
    ZEND_FE(fastcgi_finish_request, arginfo_fastcgi_finish_request)
    ZEND_FE(getallheaders, arginfo_getallheaders)
    ZEND_FALIAS(apache_request_headers, getallheaders, arginfo_getallheaders)
    ZEND_FALIAS(frankenphp_finish_request, fastcgi_finish_request, arginfo_fastcgi_finish_request)
    ZEND_FALIAS(frankenphp_request_headers, getallheaders, arginfo_getallheaders)
    ZEND_FE(frankenphp_handle_request, arginfo_frankenphp_handle_request)
    ZEND_FE(vc_cache_purge_tags, arginfo_vc_cache_purge_tags)
    ZEND_FE(vc_publish, arginfo_vc_publish)
    ZEND_FE(vc_mercure_publish, arginfo_vc_mercure_publish)
    ZEND_FE(vc_socketio_emit, arginfo_vc_socketio_emit)
    ZEND_FE(vc_socketio_join, arginfo_vc_socketio_join)
    ZEND_FE(vc_socketio_leave, arginfo_vc_socketio_leave)
    ZEND_FE(vc_socketio_disconnect, arginfo_vc_socketio_disconnect)
    ZEND_FE_END
};
/* clang-format on */

/* ---- the module ----------------------------------------------------------- */

static int on_startup(sapi_module_struct *m)
{
    return php_module_startup(m, NULL) == SUCCESS ? SUCCESS : FAILURE;
}

static int on_deactivate(void)
{
    return SUCCESS;
}

/* The name is fpm's: OPcache only runs under SAPIs it knows, and scripts
 * and extensions that ask php_sapi_name() should see what php-fpm would
 * say, since that is what we replace. */
static sapi_module_struct vc_sapi = {
    .name = "fpm-fcgi",
    .pretty_name = "Velocity",
    .startup = on_startup,
    .shutdown = php_module_shutdown_wrapper,
    .deactivate = on_deactivate,
    .ub_write = on_ub_write,
    .flush = on_flush,
    .getenv = on_getenv,
    .sapi_error = php_error,
    .send_headers = on_send_headers,
    .read_post = on_read_post,
    .read_cookies = on_read_cookies,
    .register_server_variables = on_register_variables,
    .log_message = on_log_message,
    .get_request_time = on_get_request_time,
    .default_post_reader = NULL,
    .input_filter = NULL,
};

int vc_sapi_startup(const vc_config_t *cfg)
{
    worker_pool = strcmp(cfg->php.mode, "worker") == 0;
    struct passwd *pw = getpwuid(geteuid());
    user_name = vc_strdup(pw ? pw->pw_name : "");
    home_dir = vc_strdup(pw ? pw->pw_dir : "/");

    /* The pool's directories and the configuration's directives, after
     * php.ini (they win). */
    ini_entries = pool_ini_entries(cfg);
    zend_signal_startup();
    /* sapi_startup() clears ini_entries (as php_embed_init() knows): set
     * after it, or every php.ini directive of the configuration was
     * dropped without a word. */
    sapi_startup(&vc_sapi);
    vc_sapi.ini_entries = ini_entries;
    vc_sapi.additional_functions = functions;
    if (cfg->php.ini_file && *cfg->php.ini_file)
        vc_sapi.php_ini_path_override = cfg->php.ini_file;
    vc_sapi.executable_location = NULL;
    if (vc_sapi.startup(&vc_sapi) == FAILURE) {
        vc_log(VC_LOG_CRIT, "sapi", "php_module_startup() failed");
        return -1;
    }
    wall_notes_install();
    return pool_ini_lock(cfg);
}

void vc_sapi_shutdown(void)
{
    php_module_shutdown();
    sapi_shutdown();
    free(ini_entries);
    ini_entries = NULL;
}

/* The strings SAPI may rewrite are our own copies, freed in unbind. */
static struct {
    char *method, *query, *uri, *path;
} owned;

void vc_sapi_bind(vc_request_t *r)
{
    const Vc__RequestHead *h = r->head;
    current = r;
    vc_params_build(&r->params, h, user_name, home_dir);
    owned.method = vc_strdup(h->method);
    owned.query = vc_strndup((const char *)h->query.data, h->query.len);
    owned.uri = vc_strndup((const char *)h->request_uri.data, h->request_uri.len);
    owned.path = vc_strdup(h->script_filename);
    const vc_param_t *ct = find_param(r, "CONTENT_TYPE", 12);
    SG(server_context) = r;
    SG(request_info).request_method = owned.method;
    SG(request_info).query_string = owned.query;
    SG(request_info).request_uri = owned.uri;
    SG(request_info).path_translated = owned.path;
    SG(request_info).content_type = ct && ct->value_len ? ct->value : NULL;
    SG(request_info).content_length = (zend_long)h->content_length;
    SG(request_info).proto_num = strcmp(h->protocol, "HTTP/1.0") == 0 ? 1000 : 1001;
    SG(request_info).auth_user = SG(request_info).auth_password = SG(request_info).auth_digest = NULL;
    SG(sapi_headers).http_response_code = 200;
}

void vc_sapi_auth(vc_request_t *r)
{
    const vc_param_t *auth = find_param(r, "HTTP_AUTHORIZATION", 18);
    if (auth)
        php_handle_auth_data(auth->value);
}

void vc_sapi_finish(vc_request_t *r)
{
    r->ending = 1;
    emit(r, 1);
}

void vc_sapi_unbind(vc_request_t *r)
{
    SG(server_context) = NULL;
    SG(request_info).request_method = NULL;
    SG(request_info).query_string = NULL;
    SG(request_info).request_uri = NULL;
    SG(request_info).path_translated = NULL;
    SG(request_info).content_type = NULL;
    free(owned.method);
    free(owned.query);
    free(owned.uri);
    free(owned.path);
    memset(&owned, 0, sizeof(owned));
    vc_params_free(&r->params);
    current = NULL;
}

/* A directory's php_value and php_flag (its .htaccess files, read by the
 * front), as mod_php sets them: before the request starts, so that the
 * upload and POST limits hold for its body, and only where PHP lets a
 * directory change the setting (PHP_INI_PERDIR): an admin one is left as
 * it is. PHP puts them back when the request ends (zend_ini_deactivate(),
 * as for ini_set()): test_43 checks that no worker keeps them. */
static void directory_ini(const Vc__RequestHead *h)
{
    for (size_t i = 0; i < h->n_ini; i++) {
        zend_string *name = zend_string_init(h->ini[i]->name, strlen(h->ini[i]->name), 0);
        zend_alter_ini_entry_chars(name, (const char *)h->ini[i]->value.data, h->ini[i]->value.len, PHP_INI_PERDIR,
                                   PHP_INI_STAGE_HTACCESS);
        zend_string_release(name);
    }
}

int vc_sapi_run(vc_request_t *r)
{
    vc_sapi_bind(r);
    int rc = 0;
    directory_ini(r->head);
    if (php_request_startup() == FAILURE) {
        vc_log(VC_LOG_ERR, "sapi", "php_request_startup() failed while starting \"%s\"", r->head->script_filename);
        rc = -1;
    } else {
        vc_sapi_auth(r);
        zend_file_handle fh;
        zend_stream_init_filename(&fh, r->head->script_filename);
        php_execute_script(&fh);
        zend_destroy_file_handle(&fh);
        php_request_shutdown(NULL);
        vc_sapi_finish(r);
    }
    vc_sapi_unbind(r);
    return rc;
}
