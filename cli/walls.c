/*
 * Walls around a pool, beyond its own user (docs/SECURITY.md, "The
 * pool's wall"): the mount namespace by default where the machine allows
 * one, the system call filter when asked. Raised in
 * the pool's process after fork and before it becomes the pool's user and
 * runs vc-php, so the broker, the zygote and every worker are inside:
 *
 *  php.private_mounts  a mount namespace of its own, as systemd's
 *                      ProtectSystem=strict with ReadWritePaths and
 *                      InaccessiblePaths: the whole file system read-only
 *                      but for the pool's own sites, sessions, temporary
 *                      files and sockets; the suite's state, keys, logs,
 *                      answers' temporary files, configuration, other
 *                      pools' directories and sites, /root and /home
 *                      hidden under empty read-only mounts; the sites'
 *                      TLS keys replaced by an empty file no one
 *                      may read.
 *  php.syscall_filter  a seccomp filter (libseccomp): system calls PHP
 *                      never makes (ptrace, pidfd_getfd, mount, kernel
 *                      keyrings, BPF, modules, ...) fail with EPERM; by
 *                      default wherever no no_new_privs is needed for it.
 *
 * Started as root, the mount namespace needs nothing more; started as a
 * normal user, it is made inside a user namespace that maps the user to
 * itself (so posix_geteuid() still says who runs PHP), whose capabilities
 * vc-php's exec then drops.
 */
#include "walls.h"
#include "vc_config.h"
#include "vc_log.h"
#include "vc_mesh.h"
#include "vc_util.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

/* What PHP, its extensions and the programs a script runs never need.
 * unshare and setns: once walled, a pool makes no namespace of its own. */
static const char *const denied[] = {
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "pidfd_open",
    "pidfd_getfd",
    "kcmp",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "swapon",
    "swapoff",
    "reboot",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "add_key",
    "request_key",
    "keyctl",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "acct",
    "quotactl",
    "iopl",
    "ioperm",
    "open_by_handle_at",
    "name_to_handle_at",
    "lookup_dcookie",
    "unshare",
    "setns",
    "fsopen",
    "fsmount",
    "fsconfig",
    "move_mount",
    "open_tree",
    "mount_setattr",
};

typedef struct paths {
    char **p;
    size_t n, cap;
} paths_t;

static void add(paths_t *ps, char *owned)
{
    VC_GROW(ps->p, ps->cap, ps->n + 1, 16);
    ps->p[ps->n++] = owned;
}

static void paths_free(paths_t *ps)
{
    for (size_t i = 0; i < ps->n; i++)
        free(ps->p[i]);
    free(ps->p);
}

/* a is b, or a directory above it. */
static int covers(const char *a, const char *b)
{
    size_t n = strlen(a);
    return strncmp(a, b, n) == 0 && (b[n] == '\0' || b[n] == '/' || (n > 0 && a[n - 1] == '/'));
}

static const vc_pool_t *pool_conf(const vc_config_t *cfg, int pool)
{
    return pool == 0 ? &cfg->php : &cfg->pools[pool - 1];
}

static const char *pool_name(const vc_config_t *cfg, int pool)
{
    return pool == 0 ? "default" : cfg->pools[pool - 1].name;
}

static int site_in_pool(const vc_site_t *site, const char *pool)
{
    return strcmp(site->pool ? site->pool : "default", pool) == 0;
}

static int write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = write(fd, text, strlen(text));
    close(fd);
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* A mount namespace of our own; a user namespace first when not root. */
static int own_namespace(char *err, size_t errlen)
{
    if (geteuid() == 0) {
        if (unshare(CLONE_NEWNS) == 0)
            return 0;
        snprintf(err, errlen, "unshare(CLONE_NEWNS) failed: %s", strerror(errno));
        return -1;
    }
    uid_t uid = getuid();
    gid_t gid = getgid();
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
        snprintf(err, errlen,
                 "unshare(CLONE_NEWUSER) failed: %s (started as a normal user, php.private_mounts needs "
                 "unprivileged user namespaces: sysctl kernel.unprivileged_userns_clone=1)",
                 strerror(errno));
        return -1;
    }
    char map[64];
    write_file("/proc/self/setgroups", "deny");
    snprintf(map, sizeof(map), "%d %d 1", (int)uid, (int)uid);
    int rc = write_file("/proc/self/uid_map", map);
    snprintf(map, sizeof(map), "%d %d 1", (int)gid, (int)gid);
    if (rc == 0)
        rc = write_file("/proc/self/gid_map", map);
    if (rc != 0)
        snprintf(err, errlen, "writing the user namespace's maps failed: %s", strerror(errno));
    return rc;
}

static int has(const paths_t *ps, const char *path)
{
    for (size_t i = 0; i < ps->n; i++)
        if (strcmp(ps->p[i], path) == 0)
            return 1;
    return 0;
}

/* A Debian-packaged application keeps its code in /usr/share/APP (or
 * links to it from /var/lib/APP, as MediaWiki does), and what it writes
 * and reads besides in /etc/APP, /var/lib/APP and /var/cache/APP, owned
 * by the pool's user where it writes there. Those of a site's root (as
 * given, and with its links resolved) that exist. */
static void app_dirs(paths_t *out, const char *root)
{
    char *real = realpath(root, NULL);
    const char *roots[] = {root, real};
    for (size_t r = 0; r < VC_ARRAY_SIZE(roots) && roots[r]; r++) {
        static const char *const homes[] = {"/usr/share/", "/var/lib/"};
        for (size_t h = 0; h < VC_ARRAY_SIZE(homes); h++) {
            size_t n = strlen(homes[h]);
            if (strncmp(roots[r], homes[h], n) != 0)
                continue;
            const char *app = roots[r] + n;
            size_t len = strcspn(app, "/");
            if (len == 0 || (len <= 2 && app[0] == '.'))
                continue;
            static const char *const dirs[] = {"/etc/", "/var/lib/", "/var/cache/"};
            for (size_t d = 0; d < VC_ARRAY_SIZE(dirs); d++) {
                char *dir = vc_asprintf("%s%.*s", dirs[d], (int)len, app);
                struct stat st;
                if (!has(out, dir) && lstat(dir, &st) == 0 && S_ISDIR(st.st_mode))
                    add(out, dir);
                else
                    free(dir);
            }
        }
    }
    free(real);
}

/* The root file system read-only in our mount namespace. */
static int root_read_only(char *err, size_t errlen)
{
    /* The flags the kernel keeps locked on an inherited mount must be
     * given again with the remount (a user namespace refuses it
     * otherwise). */
    struct statvfs sv;
    unsigned long locked = 0;
    if (statvfs("/", &sv) == 0)
        locked = (sv.f_flag & ST_NOSUID ? MS_NOSUID : 0) | (sv.f_flag & ST_NODEV ? MS_NODEV : 0) |
                 (sv.f_flag & ST_NOEXEC ? MS_NOEXEC : 0) | (sv.f_flag & ST_NOATIME ? MS_NOATIME : 0) |
                 (sv.f_flag & ST_RELATIME ? MS_RELATIME : 0);
    if (mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | locked, NULL) != 0) {
        snprintf(err, errlen, "mount(MS_REMOUNT, MS_RDONLY) of / failed: %s", strerror(errno));
        return -1;
    }
    return 0;
}

/* What a pool's wall holds: the paths that stay writable (keep; the first
 * *nown are its own sites), those it reads and so are never hidden (need),
 * those hidden under empty mounts (hide), and the secret files covered
 * by an empty one (keys). The same for the same configuration, so a
 * reload compares them (walls_plan_text). */
typedef struct plan {
    paths_t keep, need, hide, keys;
    size_t nown;
} plan_t;

static void plan_free(plan_t *pl)
{
    paths_free(&pl->keep);
    paths_free(&pl->need);
    paths_free(&pl->hide);
    paths_free(&pl->keys);
}

static void plan_wall(const walls_ctx_t *w, plan_t *pl)
{
    const vc_config_t *cfg = w->cfg;
    const char *name = pool_name(cfg, w->pool);
    const vc_pool_t *pc = pool_conf(cfg, w->pool);
    memset(pl, 0, sizeof(*pl));
    paths_t *keep = &pl->keep, *need = &pl->need, *hide = &pl->hide;
    /* Written by the pool: its home (sessions, tmp), its sockets, its
     * sites, their applications' own directories, and what it declares. */
    add(keep, vc_config_pool_home(w->data_dir, name));
    char *daemon = w->pool ? vc_asprintf("vc-php.%s", name) : vc_strdup("vc-php");
    add(keep, vc_config_run_dir_of(cfg, daemon));
    free(daemon);
    /* A deployed site's whole directory: the root moves between releases
     * (a bind mount would pin the one it resolved to), shared/ is written. */
    for (size_t i = 0; i < cfg->nsites; i++)
        if (site_in_pool(&cfg->sites[i], name))
            add(keep, vc_strdup(cfg->sites[i].deploy_to ? cfg->sites[i].deploy_to : cfg->sites[i].root));
    /* What else it writes may hold another pool's site (a root /var/www/public
     * makes /var/www writable): that one stays hidden inside it. */
    pl->nown = keep->n;
    for (size_t i = 0; i < cfg->nsites; i++)
        if (site_in_pool(&cfg->sites[i], name) && !cfg->sites[i].deploy_to) {
            /* Beside a public/ or web/ root is the framework's application
             * (Symfony's var/, Laravel's storage/), as open_basedir has it. */
            const char *root = cfg->sites[i].root;
            const char *base = strrchr(root, '/');
            if (base && base != root && (!strcmp(base, "/public") || !strcmp(base, "/web")))
                add(keep, vc_strndup(root, (size_t)(base - root)));
            app_dirs(keep, root);
        }
    if (pc->worker_script && strrchr(pc->worker_script, '/') > pc->worker_script)
        add(keep, vc_strndup(pc->worker_script, (size_t)(strrchr(pc->worker_script, '/') - pc->worker_script)));
    for (size_t i = 0; i < pc->nwritable_dirs; i++)
        add(keep, vc_strdup(pc->writable_dirs[i]));
    /* Read by it, so never under what is hidden. */
    add(need, vc_strdup(w->bin_dir));
    add(need, vc_config_pool_file(w->data_dir, name));
    add(need, vc_asprintf("%s/run", w->data_dir)); /* the bus's socket */
    if (pc->ini_file)
        add(need, vc_strdup(pc->ini_file));
    if (pc->worker_script)
        add(need, vc_strdup(pc->worker_script));
    for (size_t i = 0; i < pc->nopen_basedir_dirs; i++)
        add(need, vc_strdup(pc->open_basedir_dirs[i]));
    /* Hidden: the suite's own state and every other pool's. */
    static const char *const own[] = {"state", "tls", "temp"};
    for (size_t i = 0; i < VC_ARRAY_SIZE(own); i++)
        add(hide, vc_asprintf("%s/%s", w->data_dir, own[i]));
    add(hide, vc_strdup(cfg->log_dir));
    for (size_t i = 0; i <= cfg->npools; i++) {
        if ((int)i == w->pool)
            continue;
        add(hide, vc_config_pool_home(w->data_dir, pool_name(cfg, (int)i)));
        char *d = i ? vc_asprintf("vc-php.%s", pool_name(cfg, (int)i)) : vc_strdup("vc-php");
        add(hide, vc_config_run_dir_of(cfg, d));
        free(d);
    }
    for (size_t i = 0; i < cfg->nsites; i++)
        if (!site_in_pool(&cfg->sites[i], name)) {
            add(hide, vc_strdup(cfg->sites[i].deploy_to ? cfg->sites[i].deploy_to : cfg->sites[i].root));
            app_dirs(hide, cfg->sites[i].root); /* another app's configuration: its database's password */
        }
    if (w->conf_dir)
        add(hide, vc_strdup(w->conf_dir));
    if (cfg->config_releases) /* site files, and the certificates' keys */
        add(hide, vc_strdup(cfg->config_releases));
    add(hide, vc_strdup("/root"));
    add(hide, vc_strdup("/home"));

    /* A site's key the pool's user could read (a careless chmod), and the
     * cluster's credentials and secret (NATS would take a pool's PHP for
     * the suite): an empty file no one may read goes over each. */
    const mesh_settings_t *m = vc_mesh_settings_of(cfg);
    const char *secrets[] = {m->password_file, m->secret_file, m->credentials};
    for (size_t i = 0; i < cfg->nsites + VC_ARRAY_SIZE(secrets); i++) {
        const char *key = i < cfg->nsites ? cfg->sites[i].tls_key : secrets[i - cfg->nsites];
        struct stat st;
        if (key && key[0] && stat(key, &st) == 0 && S_ISREG(st.st_mode))
            add(&pl->keys, vc_strdup(key));
    }
}

char *walls_plan_text(const walls_ctx_t *w)
{
    const vc_pool_t *pc = pool_conf(w->cfg, w->pool);
    size_t cap = 256, len = 0;
    char *out = vc_malloc(cap);
    len = (size_t)snprintf(out, cap, "mounts %d filter %d\n", pc->private_mounts, pc->syscall_filter);
    if (pc->private_mounts == 0)
        return out;
    plan_t pl;
    plan_wall(w, &pl);
    const paths_t *lists[] = {&pl.keep, &pl.need, &pl.hide, &pl.keys};
    for (size_t l = 0; l < VC_ARRAY_SIZE(lists); l++)
        for (size_t i = 0; i < lists[l]->n; i++) {
            size_t n = strlen(lists[l]->p[i]) + 4;
            VC_GROW(out, cap, len + n + 1, 256);
            len += (size_t)snprintf(out + len, cap - len, "%zu %s\n", l, lists[l]->p[i]);
        }
    plan_free(&pl);
    return out;
}

static int private_mounts(const walls_ctx_t *w, char *err, size_t errlen)
{
    plan_t pl;
    plan_wall(w, &pl);
    const paths_t keep = pl.keep, need = pl.need, hide = pl.hide;
    size_t nown = pl.nown;
    int rc = own_namespace(err, errlen);
    if (rc == 0 && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
        snprintf(err, errlen, "mount(MS_PRIVATE) failed: %s", strerror(errno));
        rc = -1;
    }
    /* What stays writable becomes a mount of its own first, so making /
     * read-only leaves it as it was. */
    for (size_t i = 0; rc == 0 && i < keep.n; i++)
        if (mount(keep.p[i], keep.p[i], NULL, MS_BIND | MS_REC, NULL) != 0) {
            snprintf(err, errlen, "mount(MS_BIND) failed for \"%s\": %s", keep.p[i], strerror(errno));
            rc = -1;
        }
    for (size_t i = 0; rc == 0 && i < hide.n; i++) {
        int needed = 0;
        for (size_t k = 0; k < keep.n && !needed; k++)
            needed = covers(hide.p[i], keep.p[k]) || (k < nown && covers(keep.p[k], hide.p[i]));
        for (size_t k = 0; k < need.n && !needed; k++)
            needed = covers(hide.p[i], need.p[k]);
        struct stat st;
        if (needed || lstat(hide.p[i], &st) != 0 || !S_ISDIR(st.st_mode))
            continue;
        if (mount("none", hide.p[i], "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=0") != 0) {
            snprintf(err, errlen, "mount(tmpfs) failed over \"%s\": %s", hide.p[i], strerror(errno));
            rc = -1;
        }
    }
    /* The keys (plan_wall): an empty file no one may read over each. */
    char *no_key = vc_asprintf("%s/run/no-key", w->data_dir);
    int fd = rc == 0 ? open(no_key, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0) : -1;
    if (fd >= 0)
        close(fd);
    for (size_t i = 0; rc == 0 && i < pl.keys.n; i++) {
        struct stat st;
        if (stat(pl.keys.p[i], &st) != 0)
            continue; /* in a directory hidden above: not there to cover (config_releases' keys) */
        if (mount(no_key, pl.keys.p[i], NULL, MS_BIND, NULL) != 0) {
            snprintf(err, errlen, "mount(MS_BIND) of \"%s\" over \"%s\" failed: %s", no_key, pl.keys.p[i],
                     strerror(errno));
            rc = -1;
        }
    }
    free(no_key);
    if (rc == 0)
        rc = root_read_only(err, errlen);
    plan_free(&pl);
    return rc;
}

static int syscall_filter(int in_userns, char *err, size_t errlen)
{
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (ctx == NULL) {
        snprintf(err, errlen, "seccomp_init() failed");
        return -1;
    }
    /* A binary tree of the rules rather than a list: every system call
     * the pool makes runs the filter. */
    seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2); /* refused by an older libseccomp: a list */
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < VC_ARRAY_SIZE(denied); i++) {
        int nr = seccomp_syscall_resolve_name(denied[i]);
        if (nr != __NR_SCMP_ERROR && seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0) != 0) {
            snprintf(err, errlen, "seccomp_rule_add() failed for %s", denied[i]);
            rc = -1;
        }
    }
    /* Without CAP_SYS_ADMIN (root, or a user namespace of our own) the
     * kernel takes a filter only from a process that can gain no
     * privilege: then mail()'s set-group-ID sendmail cannot either. */
    if (rc == 0 && geteuid() != 0 && !in_userns)
        prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    if (rc == 0 && (rc = seccomp_load(ctx)) != 0)
        snprintf(err, errlen, "seccomp_load() failed: %s", strerror(-rc));
    seccomp_release(ctx);
    return rc == 0 ? 0 : -1;
}

int walls_raise(const walls_ctx_t *w, int *mounted, char *err, size_t errlen)
{
    const vc_pool_t *pc = pool_conf(w->cfg, w->pool);
    /* "auto" where none can be made: the pool's user, or open_basedir,
     * walls it instead (vc-php). */
    *mounted = pc->private_mounts == VC_AUTO ? walls_namespace_possible() : pc->private_mounts;
    if (*mounted && private_mounts(w, err, errlen) < 0)
        return -1;
    /* "auto": wherever it needs no no_new_privs (started as root, or in
     * the pool's own user namespace), which would keep mail()'s
     * set-group-ID sendmail from its group. */
    int in_userns = *mounted && geteuid() != 0;
    int filter = pc->syscall_filter == VC_AUTO ? geteuid() == 0 || in_userns : pc->syscall_filter;
    if (filter && syscall_filter(in_userns, err, errlen) < 0)
        return -1;
    return 0;
}

/* Why no namespace can be made here, when none can. */
static char impossible[256];

int walls_namespace_possible(void)
{
    static int known = -1;
    if (known >= 0)
        return known;
    /* Tried in a child, the namespace would stay with us, as far as a
     * pool goes: a chroot (whose / is no mount) takes the namespace but
     * refuses the mounts. The child says why not through a pipe. */
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) {
        snprintf(impossible, sizeof(impossible), "pipe() failed: %s", strerror(errno));
        return known = 0;
    }
    pid_t pid = fork();
    if (pid == 0) {
        char err[256] = "";
        int rc = own_namespace(err, sizeof(err));
        if (rc == 0 && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
            snprintf(err, sizeof(err), "mount(MS_PRIVATE) of / failed: %s (a chroot's / is no mount)", strerror(errno));
            rc = -1;
        }
        if (rc == 0)
            rc = root_read_only(err, sizeof(err));
        if (rc != 0 && write(p[1], err, strlen(err)) < 0)
            rc = -2;
        _exit(rc == 0 ? 0 : 1);
    }
    close(p[1]);
    int status = 0;
    known = pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!known) {
        ssize_t n = read(p[0], impossible, sizeof(impossible) - 1);
        impossible[n > 0 ? n : 0] = '\0';
        if (n <= 0)
            snprintf(impossible, sizeof(impossible), "fork() failed: %s", strerror(errno));
    }
    close(p[0]);
    return known;
}

int walls_check(const vc_config_t *cfg, char *err, size_t errlen)
{
    for (size_t i = 0; i <= cfg->npools; i++) {
        int asked = pool_conf(cfg, (int)i)->private_mounts;
        if (asked == VC_AUTO && !walls_namespace_possible())
            vc_log(VC_LOG_NOTICE, "up",
                   "pool \"%s\": no mount namespace can be made here (%s): its wall is its user, and "
                   "open_basedir where it shares its user",
                   pool_name(cfg, (int)i), impossible);
        if (asked != 1 || walls_namespace_possible())
            continue;
        snprintf(err, errlen, "pool \"%s\": php.private_mounts needs a mount namespace, which cannot be made here: %s",
                 pool_name(cfg, (int)i), impossible);
        return -1;
    }
    return 0;
}
