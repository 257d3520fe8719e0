#include "worker_mode.h"
#include "release_pin.h"
#include "sapi.h"
#include "vc_log.h"
#include "vc_util.h"
#include "worker_link.h"
#include "zygote.h"

#include <php_main.h>
#include <php_variables.h>
#include <SAPI.h>
#include <main/php_output.h>
#include <ext/session/php_session.h>
#include <ext/standard/basic_functions.h>
#include <ext/spl/spl_exceptions.h>
#include <zend_exceptions.h>
#include <zend_ini.h>

#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct {
    const vc_config_t *cfg;
    int zsock, sigfd;
    int booting;   /* in the zygote, running the worker script */
    int in_worker; /* forked: serving requests */
    int restore;   /* reset globals and statics between requests */
    worker_conn_t *conn;
    vc_request_t req;
    int have_req;
    vc_request_t boot;
    Vc__RequestHead boot_head;
    char *boot_tz; /* date_default_timezone_get() when the boot ended */
    /* The error and exception handlers the boot left (set_*_handler()) and
     * the depth of their stacks. */
    zval boot_error_handler, boot_exception_handler;
    int boot_error_depth, boot_exception_depth;
    /* register_shutdown_function() calls made by the boot: they belong to
     * the worker's long script and run when the worker ends. */
    HashTable *boot_shutdown_fns;
} worker_app;

/* ---- the post-boot snapshot ------------------------------------------------ */

typedef struct class_snap {
    zval *vals; /* UNDEF where the slot is the parent's (INDIRECT) */
    int n;
} class_snap_t;

static HashTable global_snap; /* name -> value */
static HashTable class_snaps; /* (zend_ulong)ce -> class_snap_t* */

static int is_auto_global(zend_string *name)
{
    return zend_hash_exists(CG(auto_globals), name);
}

static void snapshot_take(void)
{
    zend_hash_init(&global_snap, 64, NULL, ZVAL_PTR_DTOR, 1);
    zend_hash_init(&class_snaps, 64, NULL, NULL, 1);
    zend_string *key;
    zval *val;
    ZEND_HASH_FOREACH_STR_KEY_VAL(&EG(symbol_table), key, val)
    {
        if (key == NULL || is_auto_global(key))
            continue;
        if (Z_TYPE_P(val) == IS_INDIRECT)
            val = Z_INDIRECT_P(val);
        if (Z_TYPE_P(val) == IS_UNDEF)
            continue;
        ZVAL_DEREF(val);
        zval copy;
        ZVAL_COPY(&copy, val);
        zend_hash_add_new(&global_snap, key, &copy);
    }
    ZEND_HASH_FOREACH_END();
    zend_class_entry *ce;
    ZEND_HASH_FOREACH_PTR(EG(class_table), ce)
    {
        if (ce->type != ZEND_USER_CLASS || ce->default_static_members_count == 0)
            continue;
        if (zend_hash_index_exists(&class_snaps, (zend_ulong)(uintptr_t)ce))
            continue; /* an alias of a class already taken */
        class_snap_t *s = vc_malloc(sizeof(*s));
        s->n = ce->default_static_members_count;
        s->vals = vc_calloc((size_t)s->n, sizeof(zval));
        /* Statics PHP has not initialised yet (no access during the boot)
         * are still their defaults. */
        zval *table = CE_STATIC_MEMBERS(ce) ? CE_STATIC_MEMBERS(ce) : ce->default_static_members_table;
        for (int i = 0; i < s->n; i++) {
            zval *v = &table[i];
            if (Z_TYPE_P(v) == IS_INDIRECT) {
                ZVAL_UNDEF(&s->vals[i]);
                continue;
            }
            ZVAL_DEREF(v);
            ZVAL_COPY(&s->vals[i], v);
        }
        zend_hash_index_add_new_ptr(&class_snaps, (zend_ulong)(uintptr_t)ce, s);
    }
    ZEND_HASH_FOREACH_END();
}

static int same(const zval *a, const zval *b)
{
    return Z_TYPE_P(a) == Z_TYPE_P(b) && memcmp(&a->value, &b->value, sizeof(zend_value)) == 0;
}

/* Puts src's value into slot (dereferenced), releasing the old one last so a
 * destructor it runs sees the restored state. */
static void put(zval *slot, zval *src)
{
    ZVAL_DEREF(slot);
    if (same(slot, src))
        return;
    zval old;
    ZVAL_COPY_VALUE(&old, slot);
    ZVAL_COPY(slot, src);
    zval_ptr_dtor(&old);
}

static void snapshot_restore(void)
{
    /* Globals: new ones go, changed ones come back. */
    zend_string *key;
    zval *val;
    zend_string *gone[64];
    int ngone;
    do {
        ngone = 0;
        ZEND_HASH_FOREACH_STR_KEY_VAL(&EG(symbol_table), key, val)
        {
            if (key == NULL || is_auto_global(key) || zend_hash_exists(&global_snap, key))
                continue;
            if (Z_TYPE_P(val) == IS_INDIRECT) {
                /* A variable slot of the running worker script: empty it. */
                zval *cv = Z_INDIRECT_P(val);
                if (Z_TYPE_P(cv) != IS_UNDEF) {
                    zval old;
                    ZVAL_COPY_VALUE(&old, cv);
                    ZVAL_UNDEF(cv);
                    zval_ptr_dtor(&old);
                }
                continue;
            }
            if (ngone < (int)VC_ARRAY_SIZE(gone))
                gone[ngone++] = zend_string_copy(key);
        }
        ZEND_HASH_FOREACH_END();
        for (int i = 0; i < ngone; i++) {
            zend_hash_del(&EG(symbol_table), gone[i]);
            zend_string_release(gone[i]);
        }
    } while (ngone == (int)VC_ARRAY_SIZE(gone));
    ZEND_HASH_FOREACH_STR_KEY_VAL(&global_snap, key, val)
    {
        zval *cur = zend_hash_find(&EG(symbol_table), key);
        if (cur == NULL) {
            zval copy;
            ZVAL_COPY(&copy, val);
            zend_hash_add_new(&EG(symbol_table), key, &copy);
            continue;
        }
        if (Z_TYPE_P(cur) == IS_INDIRECT)
            cur = Z_INDIRECT_P(cur);
        put(cur, val);
    }
    ZEND_HASH_FOREACH_END();

    /* Static properties of the classes the boot declared: back to their
     * values after the boot. Classes first loaded by a request keep theirs:
     * they have no boot state to go back to, and frameworks fill such
     * statics once, lazily, with what the objects they build rely on from
     * then on (Symfony's cache adapters keep a closure in a static set by
     * their constructor; resetting it breaks every later request). */
    zend_class_entry *ce;
    ZEND_HASH_FOREACH_PTR(EG(class_table), ce)
    {
        if (ce->type != ZEND_USER_CLASS || ce->default_static_members_count == 0)
            continue;
        zval *table = CE_STATIC_MEMBERS(ce);
        if (table == NULL)
            continue;
        class_snap_t *s = zend_hash_index_find_ptr(&class_snaps, (zend_ulong)(uintptr_t)ce);
        if (s == NULL)
            continue;
        for (int i = 0; i < ce->default_static_members_count; i++) {
            if (Z_TYPE(table[i]) == IS_INDIRECT)
                continue;
            zval *src = &s->vals[i];
            if (Z_TYPE_P(src) == IS_UNDEF || Z_TYPE_P(src) == IS_CONSTANT_AST)
                continue;
            put(&table[i], src);
        }
    }
    ZEND_HASH_FOREACH_END();
}

/* ---- one request inside the long PHP request ------------------------------ */

/* The modules whose per-request state must be reset between requests:
 * filter always; session with the restore (without it, session_end()). */
static const char *const reset_modules[] = {"session", "filter", NULL};

static void reset_modules_call(int start)
{
    for (const char *const *name = reset_modules; *name; name++) {
        if (!worker_app.restore && strcmp(*name, "session") == 0)
            continue;
        zend_module_entry *m = zend_hash_str_find_ptr(&module_registry, *name, strlen(*name));
        if (m == NULL)
            continue;
        if (start && m->request_startup_func)
            m->request_startup_func(m->type, m->module_number);
        else if (!start && m->request_shutdown_func)
            m->request_shutdown_func(m->type, m->module_number);
    }
}

/* The session ends with its request, as the session module's request
 * shutdown would end it (data written, handler closed, id and $_SESSION
 * gone), but save handlers registered with session_set_save_handler()
 * stay, with the ini that names them, as the rest of the app's state does:
 * Symfony registers its handler once, when it builds its session storage,
 * and that storage serves every later request. (The module's own shutdown
 * frees the handlers, and session_start() then fails with "User session
 * functions are not defined".) */
static void session_end(void)
{
    if (PS(session_status) == php_session_active) {
        zend_try
        {
            php_session_flush(1);
        }
        zend_end_try();
    }
    if (!Z_ISUNDEF(PS(http_session_vars))) {
        zval_ptr_dtor(&PS(http_session_vars));
        ZVAL_UNDEF(&PS(http_session_vars));
    }
    if (PS(mod_data) || PS(mod_user_implemented)) {
        zend_try
        {
            PS(mod)->s_close(&PS(mod_data));
        }
        zend_end_try();
    }
    if (PS(id)) {
        zend_string_release(PS(id));
        PS(id) = NULL;
    }
    if (PS(session_vars)) {
        zend_string_release(PS(session_vars));
        PS(session_vars) = NULL;
    }
    PS(session_status) = php_session_none;
    PS(in_save_handler) = 0;
    PS(set_handler) = 0;
    PS(mod_data) = NULL;
    PS(mod_user_is_open) = 0;
    PS(define_sid) = 1;
    zend_hash_str_del(&EG(symbol_table), "_SESSION", sizeof("_SESSION") - 1);
}

/* Adapted from php_request_startup(): what a fresh request needs, minus
 * the engine, which keeps the booted application. */
static void request_startup(void)
{
    for (int i = 0; i < NUM_TRACK_VARS; i++) {
        zval_ptr_dtor(&PG(http_globals)[i]);
        ZVAL_UNDEF(&PG(http_globals)[i]);
    }
    php_output_activate();
    PG(header_is_being_sent) = 0;
    PG(connection_status) = PHP_CONNECTION_NORMAL;
    sapi_activate();
    /* Before $_SERVER is built, which reads PHP_AUTH_USER from it. */
    if (worker_app.have_req)
        vc_sapi_auth(&worker_app.req);
    if (PG(expose_php))
        sapi_add_header(SAPI_PHP_VERSION_HEADER, sizeof(SAPI_PHP_VERSION_HEADER) - 1, 1);
    if (PG(output_handler) && PG(output_handler)[0]) {
        zval oh;
        ZVAL_STRING(&oh, PG(output_handler));
        php_output_start_user(&oh, 0, PHP_OUTPUT_HANDLER_STDFLAGS);
        zval_ptr_dtor(&oh);
    } else if (PG(output_buffering)) {
        php_output_start_user(NULL, PG(output_buffering) > 1 ? PG(output_buffering) : 0, PHP_OUTPUT_HANDLER_STDFLAGS);
    } else if (PG(implicit_flush)) {
        php_output_set_implicit_flush(1);
    }
    php_hash_environment();
    /* The just-in-time superglobals: a script OPcache already holds is not
     * compiled again, so nothing else would build them afresh, and the
     * last request's $_REQUEST would show through. */
    zend_is_auto_global(ZSTR_KNOWN(ZEND_STR_AUTOGLOBAL_SERVER));
    zend_is_auto_global(ZSTR_KNOWN(ZEND_STR_AUTOGLOBAL_REQUEST));
    zend_is_auto_global(ZSTR_KNOWN(ZEND_STR_AUTOGLOBAL_ENV));
    reset_modules_call(1);
}

/* Adapted from php_request_shutdown(): flush, send headers, free what the
 * request read (post data, uploaded files). */
/* The date extension keeps date_default_timezone_set() in a module global
 * that only its request shutdown clears (not exported, so no reaching
 * it): a worker asks the function and sets the boot's zone back. */
static char *timezone_now(void)
{
    zval fn, ret;
    char *tz = NULL;
    ZVAL_STRING(&fn, "date_default_timezone_get");
    ZVAL_UNDEF(&ret);
    if (call_user_function(CG(function_table), NULL, &fn, &ret, 0, NULL) == SUCCESS && Z_TYPE(ret) == IS_STRING)
        tz = vc_strdup(Z_STRVAL(ret));
    zval_ptr_dtor(&ret);
    zval_ptr_dtor(&fn);
    return tz;
}

static void timezone_restore(void)
{
    char *tz = timezone_now();
    if (worker_app.boot_tz && tz && strcmp(tz, worker_app.boot_tz) != 0) {
        zval fn, ret, arg;
        ZVAL_STRING(&fn, "date_default_timezone_set");
        ZVAL_STRING(&arg, worker_app.boot_tz);
        ZVAL_UNDEF(&ret);
        call_user_function(CG(function_table), NULL, &fn, &ret, 1, &arg);
        zval_ptr_dtor(&ret);
        zval_ptr_dtor(&arg);
        zval_ptr_dtor(&fn);
    }
    free(tz);
}

static void handlers_take(void)
{
    ZVAL_COPY(&worker_app.boot_error_handler, &EG(user_error_handler));
    ZVAL_COPY(&worker_app.boot_exception_handler, &EG(user_exception_handler));
    worker_app.boot_error_depth = zend_stack_count(&EG(user_error_handlers));
    worker_app.boot_exception_depth = zend_stack_count(&EG(user_exception_handlers));
}

static void stack_trim(zend_stack *st, int depth)
{
    while (zend_stack_count(st) > depth) {
        zval_ptr_dtor((zval *)zend_stack_top(st));
        zend_stack_del_top(st);
    }
}

/* A request's set_error_handler() and set_exception_handler() end with it,
 * as with fpm, where each request starts with none: back to the boot's. */
static void handlers_restore(void)
{
    zval_ptr_dtor(&EG(user_error_handler));
    ZVAL_COPY(&EG(user_error_handler), &worker_app.boot_error_handler);
    zval_ptr_dtor(&EG(user_exception_handler));
    ZVAL_COPY(&EG(user_exception_handler), &worker_app.boot_exception_handler);
    stack_trim(&EG(user_error_handlers), worker_app.boot_error_depth);
    stack_trim(&EG(user_exception_handlers), worker_app.boot_exception_depth);
}

/* Runs the shutdown functions registered since the last call, then
 * forgets them, as php_request_shutdown() does first of all: their output
 * and headers are part of the answer, and $_SESSION is still there.
 * Returns 1 if one of them bailed out (exit(), a fatal error, an uncaught
 * exception): PHP stops running the rest then, and the worker, like one
 * whose handler did the same, must not serve another request. */
static int shutdown_functions_run(void)
{
    if (BG(user_shutdown_function_names) == NULL)
        return 0;
    bool unclean = CG(unclean_shutdown);
    CG(unclean_shutdown) = 0;
    php_call_shutdown_functions(); /* catches its own bailout */
    php_free_shutdown_functions();
    int bailed = CG(unclean_shutdown);
    CG(unclean_shutdown) = unclean || bailed;
    return bailed;
}

/* Returns 1 if the request's shutdown functions bailed out. */
static int request_shutdown(int restore)
{
    volatile int bailed = shutdown_functions_run(); /* across the zend_try below */
    zend_try
    {
        php_output_end_all();
    }
    zend_end_try();
    reset_modules_call(0);
    if (!restore)
        session_end();
    zend_try
    {
        php_output_deactivate();
    }
    zend_end_try();
    zend_try
    {
        sapi_deactivate();
    }
    zend_end_try();
    /* With the restore, ini_set() lasts one request, as in
     * php_request_shutdown(): back to the values the boot left. */
    if (restore)
        zend_ini_deactivate();
    zend_set_memory_limit(PG(memory_limit));
    return bailed;
}

/* What the boot changed with ini_set() becomes the baseline requests
 * return to, instead of being undone after the first request. */
static void ini_commit(void)
{
    if (EG(modified_ini_directives) == NULL)
        return;
    zend_ini_entry *e;
    ZEND_HASH_FOREACH_PTR(EG(modified_ini_directives), e)
    {
        if (e->modified) {
            if (e->orig_value && e->orig_value != e->value)
                zend_string_release(e->orig_value);
            e->orig_value = NULL;
            e->orig_modifiable = 0;
            e->modified = 0;
        }
    }
    ZEND_HASH_FOREACH_END();
    zend_hash_destroy(EG(modified_ini_directives));
    FREE_HASHTABLE(EG(modified_ini_directives));
    EG(modified_ini_directives) = NULL;
}

static int next_request(void)
{
    if (worker_next(worker_app.conn, &worker_app.req) < 0)
        return 0;
    vc_sapi_bind(&worker_app.req);
    worker_app.have_req = 1;
    request_startup();
    return 1;
}

static void __attribute__((noreturn)) leave(int code);

/* The request's garbage cycles (Symfony's Request and Response reference
 * each other) are collected once its answer is out, as php-fpm frees a
 * whole request's memory at its end. Left to PHP's own trigger (10,000
 * possible roots), a worker's heap grew by thousands of requests' garbage
 * before each collection: 13 MiB per Symfony worker instead of 5.6, and
 * the collection fell inside some unlucky request. FrankenPHP asks its
 * worker scripts to call gc_collect_cycles() after each request; here the
 * server does it, so worker scripts need not. Destructors that run here
 * have no request: their output goes nowhere, and an exception they throw
 * is uncaught with no PHP frame below it, so fatal, as at the end of a
 * script; the worker ends and the zygote forks a fresh one. */
static void collect_garbage(void)
{
    if (!gc_enabled())
        return;
    zend_try
    {
        gc_collect_cycles();
    }
    zend_catch
    {
        vc_log(VC_LOG_ERR, "gc", "a destructor failed while collecting a request's garbage: the worker ends");
        leave(1);
    }
    zend_end_try();
}

/* Returns 1 if the worker goes on. */
static int end_request(void)
{
    /* Without the restore, what PHP keeps per process (ini settings, the
     * default timezone, error and exception handlers) stays from one
     * request to the next, as in one long PHP request (FrankenPHP's
     * model). Frameworks count on it: Symfony's session storage sets its
     * session.* ini once, when it is built, and keeps being used. */
    if (worker_app.restore) {
        timezone_restore();
        handlers_restore();
    }
    if (request_shutdown(worker_app.restore))
        worker_set_last(worker_app.conn);
    vc_sapi_finish(&worker_app.req);
    vc_sapi_unbind(&worker_app.req);
    if (worker_app.restore) {
        /* Timed, and reported every 1,000 requests: what users of worker
         * mode pay for the isolation. */
        static uint64_t spent_us, count;
        uint64_t t0 = vc_now_us();
        snapshot_restore();
        spent_us += vc_now_us() - t0;
        if (++count % 1000 == 0)
            vc_log(VC_LOG_INFO, "restore", "restoring %u classes' statics and %u globals took %.1f us a request",
                   zend_hash_num_elements(&class_snaps), zend_hash_num_elements(&global_snap),
                   (double)spent_us / (double)count);
    }
    worker_app.have_req = 0;
    if (!worker_done(worker_app.conn, &worker_app.req))
        return 0;
    collect_garbage();
    return 1;
}

/* ---- boot and fork --------------------------------------------------------- */

/* Output of the boot (a worker script that echoes) goes to the log. */
static void boot_emit(vc_request_t *r, int final)
{
    if (r->out_len > 0)
        vc_log(VC_LOG_NOTICE, "boot", "the worker script printed %zu bytes while booting: %.*s", r->out_len,
               (int)(r->out_len > 200 ? 200 : r->out_len), r->out);
    r->out_len = 0;
}

/* The boot is over: clean the boot's request state, take the snapshot,
 * and fork. Returns in each worker, connected to the broker. */
static void fork_point(void)
{
    /* The boot's ini_set()s stay; the boot's request state goes, but not
     * its shutdown functions: they wait for the worker's end. */
    worker_app.boot_shutdown_fns = BG(user_shutdown_function_names);
    BG(user_shutdown_function_names) = NULL;
    php_output_end_all();
    ini_commit();
    request_shutdown(worker_app.restore);
    vc_sapi_unbind(&worker_app.boot);
    if (worker_app.boot.resp)
        vc__response_head__free_unpacked(worker_app.boot.resp, NULL);
    worker_app.boot.resp = NULL;
    if (worker_app.restore)
        snapshot_take();
    worker_app.boot_tz = timezone_now();
    handlers_take();
    worker_app.booting = 0;
    int link = zygote_serve(worker_app.cfg, worker_app.zsock, worker_app.sigfd); /* returns in the child only */
    worker_app.in_worker = 1;
    worker_app.conn = worker_connect(worker_app.cfg, link);
}

/* The worker is leaving after a fatal error or exit(): whatever the
 * request had, it gets its end, and the broker does not count on us. */
static void __attribute__((noreturn)) leave(int code)
{
    if (worker_app.have_req) {
        worker_set_last(worker_app.conn);
        zend_try
        {
            request_shutdown(worker_app.restore);
        }
        zend_end_try();
        vc_sapi_finish(&worker_app.req);
        vc_sapi_unbind(&worker_app.req);
        worker_app.have_req = 0;
        worker_done(worker_app.conn, &worker_app.req);
    }
    /* The end of the worker's long script: what was registered outside
     * any request (between frankenphp_handle_request() calls), then what
     * the boot registered, runs now, as at the end of any PHP script.
     * There is no request: what they print goes nowhere. */
    shutdown_functions_run();
    if (worker_app.boot_shutdown_fns) {
        BG(user_shutdown_function_names) = worker_app.boot_shutdown_fns;
        worker_app.boot_shutdown_fns = NULL;
        shutdown_functions_run();
    }
    worker_close(&worker_app.conn);
    _exit(code);
}

/* After the handler ran: exit() in it ends the request and the worker; an
 * uncaught exception goes to the user's exception handler if there is one,
 * else it is shown like any other and is fatal, so it bails out to
 * worker_mode_main, which ends this worker. */
static void after_call(void)
{
    if (EG(exception) == NULL)
        return;
    if (zend_is_unwind_exit(EG(exception))) {
        zend_clear_exception();
        leave(0);
    }
    /* set_exception_handler() gets it first, as at a script's top level;
     * handled, the request ends normally and the worker goes on. */
    if (Z_TYPE(EG(user_exception_handler)) != IS_UNDEF && !zend_is_graceful_exit(EG(exception))) {
        zend_user_exception_handler();
        if (EG(exception) == NULL)
            return;
    }
    zend_exception_error(EG(exception), E_ERROR);
}

ZEND_FUNCTION(frankenphp_handle_request)
{
    zend_fcall_info fci;
    zend_fcall_info_cache fcc;
    ZEND_PARSE_PARAMETERS_START(1, 1)
    Z_PARAM_FUNC(fci, fcc)
    ZEND_PARSE_PARAMETERS_END();

    if (!worker_app.booting && !worker_app.in_worker) {
        zend_throw_exception(spl_ce_RuntimeException, "frankenphp_handle_request() called while not in worker mode", 0);
        RETURN_THROWS();
    }
    if (worker_app.booting)
        fork_point();
    if (!next_request())
        RETURN_FALSE;
    zval retval;
    ZVAL_UNDEF(&retval);
    fci.retval = &retval;
    zend_call_function(&fci, &fcc);
    zval_ptr_dtor(&retval);
    after_call();
    if (!end_request())
        RETURN_FALSE;
    RETURN_TRUE;
}

/* A returned handler is called from C, with no PHP frame below it: there
 * PHP turns an uncaught exception into a fatal error at once, before a
 * set_exception_handler() handler could see it. The handler runs inside
 * this closure, which hands such an exception to the user's handler as a
 * script's top level would, and rethrows it when there is none. */
static const char trampoline_src[] = /* an expression: eval adds "return" */
    "static function (callable $h) {"
    "  try { $h(); } catch (\\Throwable $e) {"
    "    $f = set_exception_handler(null);"
    "    if ($f === null) { throw $e; }"
    "    set_exception_handler($f);"
    "    $f($e);"
    "  }"
    "}";

static int call(zval *fn)
{
    static zval trampoline;
    if (Z_TYPE(trampoline) == IS_UNDEF &&
        zend_eval_stringl(trampoline_src, sizeof(trampoline_src) - 1, &trampoline, "worker trampoline") != SUCCESS)
        ZVAL_NULL(&trampoline);
    zval retval;
    ZVAL_UNDEF(&retval);
    int ok = Z_TYPE(trampoline) == IS_OBJECT
                 ? call_user_function(CG(function_table), NULL, &trampoline, &retval, 1, fn) == SUCCESS
                 : call_user_function(CG(function_table), NULL, fn, &retval, 0, NULL) == SUCCESS;
    zval_ptr_dtor(&retval);
    after_call();
    return ok;
}

/* A worker script that returned its handler: serve with it. */
static void __attribute__((noreturn)) serve_returned(zval *ret)
{
    /* Static: they must survive the longjmp of a fatal error. */
    static zval *handler, *start;
    handler = ret;
    start = NULL;
    if (Z_TYPE_P(ret) == IS_ARRAY) {
        handler = zend_hash_str_find(Z_ARRVAL_P(ret), "handler", 7);
        start = zend_hash_str_find(Z_ARRVAL_P(ret), "on_worker_start", 15);
    }
    if (handler == NULL || !zend_is_callable(handler, 0, NULL) || (start && !zend_is_callable(start, 0, NULL))) {
        vc_log(VC_LOG_CRIT, "boot",
               "the worker script \"%s\" must call frankenphp_handle_request(), or return a callable, or "
               "return ['handler' => callable, 'on_worker_start' => callable]",
               worker_app.cfg->php.worker_script);
        zygote_boot_failed(worker_app.zsock);
        _exit(1);
    }
    fork_point();
    int code = 0;
    zend_try
    {
        if (start)
            call(start);
        while (next_request()) {
            call(handler);
            if (!end_request())
                break;
        }
    }
    zend_catch
    {
        code = 1;
    }
    zend_end_try();
    leave(code);
}

void worker_mode_main(const vc_config_t *cfg, int zsock, int sigfd)
{
    worker_app.cfg = cfg;
    worker_app.zsock = zsock;
    worker_app.sigfd = sigfd;
    worker_app.restore = cfg->php.worker_restore;
    /* The release this generation runs (release_pin.h). */
    static char *pinned; /* static: the boot's longjmp cannot clobber it */
    pinned = release_pins_path(cfg->php.worker_script);
    const char *script = pinned ? pinned : cfg->php.worker_script;

    /* The boot runs as a request of its own, as FrankenPHP's does. */
    char *dir = vc_strdup(script);
    vc__request_head__init(&worker_app.boot_head);
    worker_app.boot_head.method = "GET";
    worker_app.boot_head.protocol = "HTTP/1.1";
    worker_app.boot_head.scheme = "http";
    worker_app.boot_head.script_filename = (char *)script;
    worker_app.boot_head.script_name = (char *)script;
    worker_app.boot_head.document_root = dirname(dir);
    worker_app.boot.head = &worker_app.boot_head;
    worker_app.boot.emit = boot_emit;
    vc_sapi_bind(&worker_app.boot);
    if (php_request_startup() == FAILURE) {
        vc_log(VC_LOG_CRIT, "boot", "php_request_startup() failed while booting \"%s\"", script);
        zygote_boot_failed(zsock);
        _exit(1);
    }
    worker_app.booting = 1;
    /* As php_execute_script() does: past startup, so errors display
     * (display_errors), not as startup errors. */
    PG(during_request_startup) = 0;
    zval ret;
    ZVAL_UNDEF(&ret);
    zend_file_handle fh;
    zend_stream_init_filename(&fh, script);
    int bailed = 0;
    zend_try
    {
        zend_execute_scripts(ZEND_REQUIRE, &ret, 1, &fh);
    }
    zend_catch
    {
        bailed = 1;
    }
    zend_end_try();
    zend_destroy_file_handle(&fh);

    if (worker_app.in_worker) {
        /* A frankenphp_handle_request() loop ended in a worker: recycled,
         * or a fatal error bailed out of the handler. */
        leave(bailed ? 1 : 0);
    }
    if (bailed || EG(exception)) {
        vc_log(VC_LOG_CRIT, "boot", "the worker script \"%s\" failed while booting", script);
        zygote_boot_failed(zsock);
        _exit(1);
    }
    serve_returned(&ret);
}
