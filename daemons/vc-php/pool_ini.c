/*
 * The pool's own PHP settings, beyond php.ini (docs/configuration.md,
 * "Pools"): its session and temporary directories, the defaults a script
 * may change (php.ini), the admin settings it may not (php.admin_ini, as
 * php-fpm's php_admin_value), and open_basedir.
 */
#include "pool_ini.h"
#include "vc_log.h"
#include "vc_util.h"

#include <php.h>
#include <zend_ini.h>

#include <libgen.h>
#include <stdlib.h>
#include <string.h>

typedef struct text {
    char *s;
    size_t len, cap;
} text_t;

static void put(text_t *t, const char *s, size_t n)
{
    if (t->len + n + 1 > t->cap) {
        t->cap = (t->len + n + 1) * 2;
        t->s = vc_realloc(t->s, t->cap);
    }
    memcpy(t->s + t->len, s, n);
    t->len += n;
    t->s[t->len] = '\0';
}

static void puts_(text_t *t, const char *s)
{
    put(t, s, strlen(s));
}

char *pool_ini_entries(const vc_config_t *cfg)
{
    char *home = vc_config_pool_home(cfg->data_dir, cfg->php.name);
    text_t t = {0};
    puts_(&t, "");
    /* Each pool's sessions and uploads in its own directories, its user's
     * alone: another pool can neither read a session given its id nor
     * pick up an upload. OPcache's lock file too: in a shared /tmp any
     * user could hold it, and a walled pool's /tmp is read-only. Before
     * the pool's ini lines, which may say otherwise. */
    char *line = vc_asprintf("session.save_path=\"%s/sessions\"\nupload_tmp_dir=\"%s/tmp\"\nsys_temp_dir=\"%s/tmp\"\n"
                             "opcache.lockfile_path=\"%s/tmp\"\n",
                             home, home, home, home);
    puts_(&t, line);
    free(line);
    for (size_t i = 0; i < cfg->php.nini; i++) {
        puts_(&t, cfg->php.ini[i]);
        puts_(&t, "\n");
    }
    free(home);
    return t.s;
}

/* "public" and "web" are where frameworks put their front controller
 * (Symfony, Laravel, Drupal): the application beside it is theirs too. */
static void add_root(text_t *t, const char *root)
{
    puts_(t, root);
    puts_(t, ":");
    const char *base = strrchr(root, '/');
    if (base && (!strcmp(base, "/public") || !strcmp(base, "/web")) && base != root) {
        put(t, root, (size_t)(base - root));
        puts_(t, ":");
    }
}

char *pool_ini_open_basedir(const vc_config_t *cfg, const char *include_path)
{
    text_t t = {0};
    puts_(&t, "");
    for (size_t i = 0; i < cfg->nsites; i++) {
        const char *pool = cfg->sites[i].pool ? cfg->sites[i].pool : "default";
        if (strcmp(pool, cfg->php.name) == 0 && cfg->sites[i].root)
            add_root(&t, cfg->sites[i].root);
        /* A deployed site's releases and shared/, where its links lead. */
        if (strcmp(pool, cfg->php.name) == 0 && cfg->sites[i].deploy_to) {
            puts_(&t, cfg->sites[i].deploy_to);
            puts_(&t, ":");
        }
    }
    if (cfg->php.worker_script && *cfg->php.worker_script) {
        char *copy = vc_strdup(cfg->php.worker_script);
        puts_(&t, dirname(copy));
        puts_(&t, ":");
        free(copy);
    }
    /* Libraries installed for every app (Debian's /usr/share/php). */
    char *paths = vc_strdup(include_path ? include_path : "");
    char *save = NULL;
    for (char *p = strtok_r(paths, ":", &save); p; p = strtok_r(NULL, ":", &save))
        if (p[0] == '/') {
            puts_(&t, p);
            puts_(&t, ":");
        }
    free(paths);
    char *home = vc_config_pool_home(cfg->data_dir, cfg->php.name);
    char *dirs = vc_asprintf("%s/sessions:%s/tmp", home, home);
    puts_(&t, dirs);
    free(dirs);
    free(home);
    for (size_t i = 0; i < cfg->php.nopen_basedir_dirs; i++) {
        puts_(&t, ":");
        puts_(&t, cfg->php.open_basedir_dirs[i]);
    }
    return t.s;
}

/* As php-fpm's php_admin_value: the master value changes, and the entry
 * becomes PHP_INI_SYSTEM, so ini_set() and .user.ini cannot touch it. */
static int lock(const char *name, size_t nlen, const char *value)
{
    zend_ini_entry *e = zend_hash_str_find_ptr(EG(ini_directives), name, nlen);
    if (e == NULL)
        return -1;
    zend_string *v = zend_string_init(value, strlen(value), 1);
    if (e->on_modify && e->on_modify(e, v, e->mh_arg1, e->mh_arg2, e->mh_arg3, ZEND_INI_STAGE_ACTIVATE) != SUCCESS) {
        zend_string_release(v);
        return -2;
    }
    /* The old value may be interned or still referenced: left, as fpm
     * does (once per pool start). */
    e->value = v;
    e->modifiable = ZEND_INI_SYSTEM;
    /* Read once at startup: it must act now. */
    if (nlen == strlen("disable_functions") && !memcmp(name, "disable_functions", nlen) && *value)
        zend_disable_functions(value);
    return 0;
}

const char *pool_ini_wall(void)
{
    const char *w = getenv("VC_POOL_WALL");
    return w && (!strcmp(w, "namespace") || !strcmp(w, "user")) ? w : "none";
}

int pool_ini_lock(const vc_config_t *cfg)
{
    const vc_pool_t *p = &cfg->php;
    for (size_t i = 0; i < p->nadmin_ini; i++) {
        const char *eq = strchr(p->admin_ini[i], '=');
        char *value = vc_strdup(eq + 1);
        size_t vl = strlen(value);
        if (vl >= 2 && value[0] == '"' && value[vl - 1] == '"') { /* name="value", as in php.ini */
            memmove(value, value + 1, vl - 2);
            value[vl - 2] = '\0';
        }
        int r = lock(p->admin_ini[i], (size_t)(eq - p->admin_ini[i]), value);
        free(value);
        if (r < 0) {
            vc_log(VC_LOG_CRIT, "sapi", "php.admin_ini: \"%s\" %s (pool \"%s\")", p->admin_ini[i],
                   r == -1 ? "names no PHP directive" : "was refused by PHP", p->name);
            return -1;
        }
    }
    int own_basedir = 0; /* an admin_ini line that sets it wins */
    for (size_t i = 0; i < p->nadmin_ini; i++)
        own_basedir |= !strncmp(p->admin_ini[i], "open_basedir=", 13);
    /* "auto": on only where nothing else walls the pool off (cli/walls.c):
     * PHP checks every file a script opens against it, outside its
     * realpath cache, which halves a framework's rate. */
    const char *wall = pool_ini_wall();
    int basedir = p->open_basedir == VC_AUTO ? strcmp(wall, "none") == 0 : p->open_basedir;
    vc_log(VC_LOG_INFO, "sapi", "pool \"%s\": walled by %s%s", p->name,
           !strcmp(wall, "namespace") ? "its own mount namespace"
           : !strcmp(wall, "user")    ? "its own user"
                                      : "nothing but PHP",
           basedir || own_basedir ? ", with open_basedir" : "");
    if (basedir && !own_basedir) {
        char *dirs = pool_ini_open_basedir(cfg, INI_STR("include_path"));
        int r = lock("open_basedir", strlen("open_basedir"), dirs);
        if (r < 0)
            vc_log(VC_LOG_CRIT, "sapi", "open_basedir \"%s\" was refused by PHP (pool \"%s\")", dirs, p->name);
        else
            vc_log(VC_LOG_DEBUG, "sapi", "open_basedir for pool \"%s\": %s", p->name, dirs);
        free(dirs);
        if (r < 0)
            return -1;
    }
    return 0;
}
