#include "vc_config.h"
#include "vc_mesh.h"
#include "vc_bus_settings.h"
#include "vc_front_settings.h"
#include "config_source.h"
#include "vc_test.h"
#include "vc_util.h"

static char *root;

static Vc__ConfigVersion *version(void)
{
    Vc__ConfigVersion *v = vc_malloc(sizeof(*v));
    vc__config_version__init(v);
    return v;
}

/* Parses one main file (and optionally a site); returns the error text or
 * "" on success. */
static const char *parse(const char *main_text, const char *site_text, vc_config_t **out)
{
    static char err[1024];
    err[0] = '\0';
    Vc__ConfigVersion *v = version();
    if (main_text)
        add(v, "/etc/vc/vc.conf", main_text, 0);
    if (site_text)
        add(v, "/etc/vc/sites-enabled/shop.conf", site_text, 1);
    vc_config_t *cfg = vc_config_parse(v, "/data", err, sizeof(err));
    vc_config_version_free(&v);
    if (out)
        *out = cfg;
    else
        vc_config_destroy(&cfg);
    return cfg ? "" : err;
}

/* The site file the site and gathering checks read. */
static void shop_site(char *buf, size_t len)
{
    snprintf(buf, len, "site: {\n  hosts = [\"Shop.Example\", \"www.shop.example\"];\n  root = \"%s\";\n};\n", root);
}

static void values_and_errors(void)
{
    vc_config_t *cfg;

    /* Defaults with nothing at all. */
    CHECK_STR(parse(NULL, NULL, &cfg), "");
    CHECK(cfg->php.workers == 4);
    CHECK_STR(cfg->php.mode, "classic");
    CHECK(cfg->nlisten == 1 && !strcmp(cfg->listen[0], ":8080"));
    CHECK(front_settings(cfg)->max_body == 8 * 1024 * 1024);
    CHECK(cfg->nsites == 1 && cfg->sites[0].is_default);
    CHECK_STR(cfg->run_dir, "/data/run");
    char *ep = vc_config_endpoint(cfg, "php");
    CHECK_STR(ep, "ipc:///data/run/php/php.sock"); /* the pool's own directory */
    free(ep);
    vc_config_destroy(&cfg);
    CHECK(cfg == NULL);

    /* Values of every type. */
    CHECK_STR(parse("listen = [\"127.0.0.1:9000\", \"[::1]:9000\"];\n"
                    "php: { workers = 8; mode = \"fork\"; ini = [\"memory_limit=64M\"]; queue_timeout = \"2s\"; };\n"
                    "front: { max_body = \"1M\"; gzip = false; };\n"
                    "log: { level = \"debug\"; format = \"json\"; };\n"
                    "endpoints: { php = \"tcp://127.0.0.1:7000\"; };\n",
                    NULL, &cfg),
              "");
    CHECK(cfg->nlisten == 2);
    CHECK(cfg->php.workers == 8);
    CHECK_STR(cfg->php.mode, "fork");
    CHECK(cfg->php.nini == 1);
    CHECK(cfg->php.queue_timeout_ms == 2000);
    CHECK(front_settings(cfg)->max_body == 1024 * 1024);
    CHECK(front_settings(cfg)->gzip == 0);
    CHECK(cfg->log_json == 1);
    ep = vc_config_endpoint(cfg, "php");
    CHECK_STR(ep, "tcp://127.0.0.1:7000");
    free(ep);
    vc_config_destroy(&cfg);

    /* Errors name the file and the line. */
    CHECK_STR(parse("php: {\n  workers = 4;\n  mode = = \"classic\";\n};\n", NULL, NULL),
              "/etc/vc/vc.conf:3: syntax error");
    CHECK_STR(parse("\n\nphp: { wrokers = 4; };\n", NULL, NULL), "/etc/vc/vc.conf:3: unknown setting \"php.wrokers\"");
    CHECK_STR(parse("php: { workers = \"many\"; };\n", NULL, NULL),
              "/etc/vc/vc.conf:1: php.workers: expected a number or \"auto\", got \"many\"");
    CHECK_STR(parse("php: { workers = 0; };\n", NULL, NULL),
              "/etc/vc/vc.conf:1: php.workers: 0 is out of range [1, 1024] (or \"auto\")");
    CHECK_STR(parse("php: { max_requests = \"x\"; };\n", NULL, NULL),
              "/etc/vc/vc.conf:1: php.max_requests: expected a whole number");
    CHECK_STR(parse("php: { min_workers = 8; max_workers = 2; };\n", NULL, NULL),
              "configuration: php.min_workers (8) is above php.max_workers (2)");
    CHECK_STR(parse("php: { workers = \"auto\"; };\n", NULL, &cfg), "");
    CHECK(cfg && cfg->php.workers == 0);
    vc_config_destroy(&cfg);
    CHECK_STR(parse("front: { max_body = \"8 apples\"; };\n", NULL, NULL),
              "/etc/vc/vc.conf:1: front.max_body: expected a size like 8M, got \"8 apples\"");
}

static void sections(void)
{
    vc_config_t *cfg;

    /* A daemon's own section (libcommon/settings/vc_front_settings.c): the same
     * errors, its defaults, its environment, and a string it owns. */
    CHECK_STR(parse("\nfront: {\n  processes = 65;\n};\n", NULL, NULL),
              "/etc/vc/vc.conf:3: front.processes: 65 is out of range [1, 64]");
    CHECK_STR(parse("front: { proceses = 2; };\n", NULL, NULL),
              "/etc/vc/vc.conf:1: unknown setting \"front.proceses\"");
    CHECK_STR(parse("bus: { journal_max = 5; };\nfront: { temp_path = \"/t\"; };\n", NULL, &cfg), "");
    CHECK(cfg && bus_settings(cfg)->journal_max == 5 && front_settings(cfg)->processes == 1);
    CHECK(cfg && !strcmp(front_settings(cfg)->temp_path, "/t"));
    vc_config_destroy(&cfg);
    CHECK_STR(parse(NULL, NULL, &cfg), "");
    CHECK(cfg && !strcmp(front_settings(cfg)->temp_path, "/data/temp") && bus_settings(cfg)->journal_max == 10000);
    vc_config_destroy(&cfg);
    {
        int named = 0;
        for (size_t i = 0; vc_config_env_name(i); i++)
            named +=
                !strcmp(vc_config_env_name(i), "VC_FRONT_PROCESSES") || !strcmp(vc_config_env_name(i), "VC_WORKERS");
        CHECK(named == 2);
        int supervised = 0;
        for (size_t i = 0; vc_sections[i]; i++)
            supervised += vc_sections[i]->supervision != NULL;
        CHECK(supervised == 9); /* vc-acme, vc-bus, vc-cache, vc-fed, vc-mesh, vc-nats, vc-panel, vc-php, vc-front */
    }
    /* A section's own check names the line of the setting it refuses. */
    const char *why = parse("\ncluster: { node = \"a\";\n nats = [\"nats://10.0.0.1:4222\"]; };\n", NULL, NULL);
    CHECK(!strncmp(why, "/etc/vc/vc.conf:3: cluster.nats: ", 33));
    /* A string its defaults leave unset is "". */
    CHECK_STR(parse(NULL, NULL, &cfg), "");
    CHECK(cfg && vc_mesh_settings_of(cfg)->node != NULL && vc_mesh_settings_of(cfg)->node[0] == '\0');
    vc_config_destroy(&cfg);
    /* A daemon's own endpoints and control endpoint may be moved; others
     * are a typo. */
    CHECK_STR(
        parse("endpoints: { cache-in = \"ipc:///x/c.sock\"; ctl-vc-cache = \"ipc:///x/k.sock\"; };\n", NULL, NULL), "");
    CHECK(strstr(parse("endpoints: { cache-inn = \"ipc:///x/c.sock\"; };\n", NULL, NULL), "cache-inn") != NULL);
    CHECK_STR(parse("php: { mode = \"turbo\"; };\n", NULL, NULL),
              "configuration: php.mode: \"turbo\" is not one of classic, worker, fork");
    CHECK_STR(parse("php: { mode = \"worker\"; };\n", NULL, NULL),
              "configuration: php.mode is worker but php.worker_script is not set");
}

static void sites(void)
{
    vc_config_t *cfg;

    /* Sites. */
    char site[512];
    shop_site(site, sizeof(site));
    CHECK_STR(parse(NULL, site, &cfg), "");
    CHECK(cfg->nsites == 1);
    CHECK_STR(cfg->sites[0].name, "shop");
    CHECK_STR(cfg->sites[0].hosts[0], "shop.example");
    CHECK(vc_config_site_for_host(cfg, "SHOP.example:8080", 17) == &cfg->sites[0]);
    CHECK(vc_config_site_for_host(cfg, "other", 5) == &cfg->sites[0]); /* the only site */
    vc_config_destroy(&cfg);
    /* Wildcards: a whole first label; the name itself wins, then the
     * longest wildcard (as nginx). */
    CHECK(vc_host_match("*.a.test", "x.a.test", 8) == 1 && vc_host_match("*.a.test", "y.x.A.TEST", 10) == 1);
    CHECK(vc_host_match("*.a.test", "a.test", 6) == 0 && vc_host_match("*.a.test", "xa.test", 7) == 0);
    CHECK(vc_host_match("a.test", "A.test", 6) == 2 && vc_host_match("*.a.test", "*.a.test", 8) == 2);
    char wild[512];
    snprintf(wild, sizeof(wild), "site: { hosts = [\"*.example\", \"www.shop.example\"]; root = \"%s\"; };\n", root);
    CHECK_STR(parse(NULL, wild, &cfg), "");
    CHECK(vc_config_site_for_host(cfg, "a.example", 9) == &cfg->sites[0]);
    vc_config_destroy(&cfg);
    snprintf(wild, sizeof(wild),
             "site: { hosts = [\"a\"]; root = \"%s\"; entry_scripts = [\"/index.php\", \"wp-admin/*.php\"]; };\n",
             root);
    CHECK_STR(parse(NULL, wild, &cfg), "");
    CHECK(cfg && cfg->sites[0].nentry_scripts == 2 && !strcmp(cfg->sites[0].entry_scripts[0], "index.php"));
    vc_config_destroy(&cfg);
    snprintf(wild, sizeof(wild), "site: { hosts = [\"a\"]; root = \"%s\"; entry_scripts = [\"../x.php\"]; };\n", root);
    CHECK_STR(parse(NULL, wild, NULL), "/etc/vc/sites-enabled/shop.conf:1: site \"shop\": entry script \"../x.php\" is "
                                       "not a path from the root like \"index.php\" or \"wp-admin/*.php\"");
    snprintf(wild, sizeof(wild), "site: { hosts = [\"a.*.example\"]; root = \"%s\"; };\n", root);
    CHECK(strstr(parse(NULL, wild, NULL), "a wildcard is a whole first label") != NULL);
    CHECK_STR(parse(NULL, "site: {\n  hosts = [\"a\"];\n  root = \"/does/not/exist\";\n};\n", NULL),
              "/etc/vc/sites-enabled/shop.conf:1: site \"shop\": root \"/does/not/exist\" is not a directory");
    CHECK_STR(parse(NULL, "site: { root = \"relative\"; hosts = [\"a\"]; };\n", NULL),
              "/etc/vc/sites-enabled/shop.conf:1: site \"shop\": root \"relative\" is not an absolute path");
    CHECK_STR(parse(NULL, "site: { hosts = [\"a\"]; };\nextra = 1;\n", NULL),
              "/etc/vc/sites-enabled/shop.conf:2: unknown setting \"extra\" outside site");
    CHECK_STR(
        parse(NULL, "hosts = [\"a\"];\n", NULL),
        "/etc/vc/sites-enabled/shop.conf: a site file holds one group: site = { hosts = [...]; root = \"...\"; };");

    /* Two sites, one host: refused, naming both. */
    {
        char err[1024];
        Vc__ConfigVersion *v = version();
        add(v, "/etc/vc/sites-enabled/a.conf", site, 1);
        add(v, "/etc/vc/sites-enabled/b.conf", site, 1);
        CHECK(vc_config_parse(v, "/data", err, sizeof(err)) == NULL);
        CHECK_CONTAINS(err, "/etc/vc/sites-enabled/b.conf:1: host \"shop.example\" is already served by site \"a\"");
        vc_config_version_free(&v);
    }
}

static void pools(void)
{
    vc_config_t *cfg;

    /* Pools: the php block is "default"; named ones start from the
     * built-in defaults; a site names its pool. */
    {
        char site_pool[640];
        snprintf(site_pool, sizeof(site_pool), "site: {\n  hosts = [\"a\"];\n  root = \"%s\";\n  pool = \"%s\";\n};\n",
                 root, "shop");
        CHECK_STR(parse("php: { workers = 2; };\npools: {\n  shop: { user = \"shop\"; workers = 6;\n"
                        "    admin_ini = [\"disable_functions=exec\"]; open_basedir = false; };\n};\n",
                        site_pool, &cfg),
                  "");
        CHECK(cfg && cfg->npools == 1 && cfg->php.workers == 2);
        const vc_pool_t *shop = cfg ? vc_config_pool(cfg, "shop") : NULL;
        CHECK(shop && shop->workers == 6 && !strcmp(shop->user, "shop") && shop->nadmin_ini == 1);
        CHECK(shop && !shop->open_basedir && !strcmp(shop->mode, "classic") && shop->queue_limit == 1024);
        CHECK(cfg && vc_config_pool(cfg, "default") == &cfg->php && cfg->php.open_basedir == VC_AUTO &&
              cfg->php.private_mounts == VC_AUTO);
        CHECK(cfg && vc_config_pool(cfg, "nope") == NULL);
        CHECK(cfg && vc_config_select_pool(cfg, "shop") == 0 && cfg->php.workers == 6 &&
              !strcmp(cfg->php.name, "shop") && !strcmp(cfg->pools[0].name, "default"));
        vc_config_destroy(&cfg);
        CHECK_STR(parse("pools: { shop: { workers = 2; }; };\n", site_pool, &cfg), "");
        vc_config_destroy(&cfg);
        CHECK_STR(parse(NULL, site_pool, NULL),
                  "/etc/vc/sites-enabled/shop.conf:1: site \"shop\": pool \"shop\" is not declared under pools");
        CHECK_STR(parse("pools: {\n  Shop: { workers = 2; };\n};\n", NULL, NULL),
                  "/etc/vc/vc.conf:2: pools.Shop: a pool's name is 1 to 32 of a-z, 0-9, _ and -, and not "
                  "\"default\" (the php block)");
        CHECK_STR(parse("pools: {\n  shop: { workerz = 2; };\n};\n", NULL, NULL),
                  "/etc/vc/vc.conf:2: unknown setting \"php.workerz\"");
        CHECK_STR(parse("pools: {\n  shop: { admin_ini = [\"x\"]; };\n};\n", NULL, NULL),
                  "/etc/vc/vc.conf:2: pools.shop.admin_ini: \"x\" is not a name=value directive");
        CHECK_STR(parse("php: { open_basedir_dirs = [\"rel\"]; };\n", NULL, NULL),
                  "configuration: php.open_basedir_dirs: \"rel\" is not an absolute path");
        CHECK_STR(parse("php: { writable_dirs = [\"var\"]; };\n", NULL, NULL),
                  "configuration: php.writable_dirs: \"var\" is not an absolute path");
        /* true, false or "auto", and nothing else. */
        CHECK_STR(parse("php: { private_mounts = \"auto\"; open_basedir = true; };\n", NULL, &cfg), "");
        CHECK(cfg && cfg->php.private_mounts == VC_AUTO && cfg->php.open_basedir == 1);
        vc_config_destroy(&cfg);
        CHECK_STR(parse("php: {\n  private_mounts = \"sometimes\"; };\n", NULL, NULL),
                  "/etc/vc/vc.conf:2: php.private_mounts: expected true or false or \"auto\", got \"sometimes\"");
        CHECK_STR(parse("php: {\n  open_basedir = 1; };\n", NULL, NULL),
                  "/etc/vc/vc.conf:2: php.open_basedir: expected true, false or \"auto\"");
        CHECK_STR(parse("log_dir = \"logs\";\n", NULL, NULL),
                  "configuration: log_dir \"logs\" is not an absolute path");
        CHECK_STR(parse("log_dir = \"/var/log/vc\";\n", NULL, &cfg), "");
        CHECK(cfg && !strcmp(cfg->log_dir, "/var/log/vc"));
        vc_config_destroy(&cfg);
    }

    /* What PHP opens later is checked by the supervisor and configtest: a
     * missing php.ini ran PHP with none (display_errors=1), a missing
     * worker script failed at boot. */
    {
        char err[1024];
        CHECK_STR(parse("php: {\n  ini_file = \"/no/such/php.ini\";\n};\n", NULL, &cfg), "");
        CHECK(cfg && vc_config_check_files(cfg, err, sizeof(err)) < 0);
        CHECK_STR(err, "configuration: php.ini_file: \"/no/such/php.ini\" cannot be read: No such file or directory");
        vc_config_destroy(&cfg);
        CHECK_STR(
            parse("pools: {\n  shop: { mode = \"worker\"; worker_script = \"/no/such.php\"; };\n};\n", NULL, &cfg), "");
        CHECK(cfg && vc_config_check_files(cfg, err, sizeof(err)) < 0);
        CHECK_STR(err, "/etc/vc/vc.conf:2: pools.shop.worker_script: \"/no/such.php\" cannot be read: No such file or "
                       "directory");
        vc_config_destroy(&cfg);
        CHECK_STR(parse("pools: {\n  shop: { writable_dirs = [\"/tmp\", \"/no/such/dir\"]; };\n};\n", NULL, &cfg), "");
        CHECK(cfg && vc_config_check_files(cfg, err, sizeof(err)) < 0);
        CHECK_STR(err, "/etc/vc/vc.conf:2: pools.shop.writable_dirs: \"/no/such/dir\" cannot be used: No such file "
                       "or directory");
        vc_config_destroy(&cfg);
        CHECK_STR(parse(NULL, NULL, &cfg), "");
        CHECK(cfg && vc_config_check_files(cfg, err, sizeof(err)) == 0);
        vc_config_destroy(&cfg);
    }
    CHECK_STR(parse("endpoints: {\n  phpp = \"tcp://127.0.0.1:9000\";\n};\n", NULL, NULL),
              "/etc/vc/vc.conf:2: endpoints.phpp: not an endpoint of the suite (php, bus-in, bus-out, ctl-vc, "
              "ctl-vc-bus, ctl-vc-php, ctl-vc-front)");

    /* One address, two uses: refused (port 0 asks the kernel for any). */
    CHECK_STR(parse("listen = [\":8080\"];\nadmin_listen = \"127.0.0.1:8080\";\n", NULL, NULL),
              "configuration: listen \":8080\" and admin_listen \"127.0.0.1:8080\" are the same address: give each "
              "its own port");
    CHECK_STR(parse("listen = [\"127.0.0.1:9000\"];\ntls_listen = [\"127.0.0.1:9000\"];\n", NULL, NULL),
              "configuration: listen \"127.0.0.1:9000\" and tls_listen \"127.0.0.1:9000\" are the same address: "
              "give each its own port");
    CHECK_STR(parse("listen = [\"127.0.0.1:9000\"];\ntls_listen = [\"127.0.0.2:9000\"];\n", NULL, NULL), "");
}

static void precedence(void)
{
    vc_config_t *cfg;

    /* Precedence: files < environment < command line. */
    {
        char err[1024];
        Vc__ConfigVersion *v = version();
        add(v, "/etc/vc/vc.conf", "php: { workers = 2; mode = \"fork\"; };\n", 0);
        setenv("VC_WORKERS", "6", 1);
        setenv("VC_ROOT", root, 1);
        setenv("VC_FRONT_PROCESSES", "3", 1);
        Vc__ConfigVersion *g = vc_config_gather(NULL, err, sizeof(err));
        unsetenv("VC_WORKERS");
        unsetenv("VC_ROOT");
        unsetenv("VC_FRONT_PROCESSES");
        CHECK(g != NULL && g->n_env == 3);
        v->env = g->env;
        v->n_env = g->n_env;
        g->env = NULL;
        g->n_env = 0;
        vc_config_version_free(&g);
        cfg = vc_config_parse(v, "/data", err, sizeof(err));
        CHECK(cfg && cfg->php.workers == 6);
        CHECK(cfg && front_settings(cfg)->processes == 3);
        CHECK(cfg && !strcmp(cfg->php.mode, "fork"));
        CHECK(cfg && !strcmp(cfg->sites[0].root, root));
        vc_config_destroy(&cfg);
        vc_config_version_override(v, "php.workers", "9");
        cfg = vc_config_parse(v, "/data", err, sizeof(err));
        CHECK(cfg && cfg->php.workers == 9);
        vc_config_destroy(&cfg);
        vc_config_version_override(v, "php.workers", "lots");
        CHECK(vc_config_parse(v, "/data", err, sizeof(err)) == NULL);
        CHECK_STR(err, "option --php.workers: php.workers: expected a number or \"auto\", got \"lots\"");
        vc_config_version_free(&v);
    }

    /* Gathering a directory: vc.conf, conf-enabled, sites-enabled. */
    {
        char err[1024];
        char *conf = vc_test_tmpdir();
        vc_test_write(conf, "vc.conf", "php: { workers = 3; };\n");
        vc_test_write(conf, "conf-enabled/b.conf", "php: { workers = 5; };\n");
        vc_test_write(conf, "conf-enabled/a.conf", "php: { workers = 4; };\n");
        vc_test_write(conf, "conf-enabled/ignored.txt", "garbage");
        char site[512];
        shop_site(site, sizeof(site));
        vc_test_write(conf, "sites-enabled/shop.conf", site);
        Vc__ConfigVersion *v = vc_config_gather(conf, err, sizeof(err));
        CHECK(v != NULL && v->n_files == 4);
        cfg = v ? vc_config_parse(v, "/data", err, sizeof(err)) : NULL;
        CHECK(cfg && cfg->php.workers == 5); /* b.conf is read last */
        CHECK(cfg && cfg->nsites == 1 && !strcmp(cfg->sites[0].name, "shop"));
        vc_config_destroy(&cfg);
        vc_config_version_free(&v);
        vc_test_rmtree(conf);
        free(conf);
    }
    vc_test_rmtree(root);
    free(root);
}

int main(void)
{
    root = vc_test_tmpdir();
    values_and_errors();
    sections();
    sites();
    pools();
    precedence();
    return vc_test_result("vc_config");
}
