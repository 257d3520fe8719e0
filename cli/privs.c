#include "privs.h"
#include "vc_beneath.h"
#include "userns.h"
#include "vc_log.h"
#include "vc_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int lookup(const char *what, const char *name, uid_t *uid, gid_t *gid, char *err, size_t errlen)
{
    struct passwd *pw = name && *name ? getpwnam(name) : NULL;
    if (pw == NULL) {
        snprintf(err, errlen,
                 "%s: the user \"%s\" does not exist: create it (adduser --system --group --no-create-home %s) "
                 "or name another",
                 what, name ? name : "", name ? name : "NAME");
        return -1;
    }
    if (pw->pw_uid == 0) {
        snprintf(err, errlen, "%s is \"%s\", which is root: name an unprivileged user, or set allow_root = true", what,
                 name);
        return -1;
    }
    *uid = pw->pw_uid;
    *gid = pw->pw_gid;
    return 0;
}

static int resolve_pool(privs_pool_t *pp, const vc_pool_t *p, uid_t suite_uid, char *err, size_t errlen)
{
    char what[64];
    snprintf(what, sizeof(what), "%s%s.user", strcmp(p->name, "default") ? "pools." : "php",
             strcmp(p->name, "default") ? p->name : "");
    if (lookup(what, p->user, &pp->uid, &pp->gid, err, errlen) < 0)
        return -1;
    if (p->group && *p->group) {
        struct group *gr = getgrnam(p->group);
        if (gr == NULL) {
            snprintf(err, errlen, "%s: the group \"%s\" of pool \"%s\" does not exist", what, p->group, p->name);
            return -1;
        }
        pp->gid = gr->gr_gid;
    }
    if (pp->uid == suite_uid) {
        snprintf(err, errlen,
                 "%s is \"%s\", the suite's own user: PHP would own the suite's keys and state; "
                 "name another",
                 what, p->user);
        return -1;
    }
    snprintf(pp->user, sizeof(pp->user), "%s", p->user);
    return 0;
}

int privs_resolve(privs_t *pv, const vc_config_t *cfg, char *err, size_t errlen)
{
    memset(pv, 0, sizeof(*pv));
    pv->npools = 1 + cfg->npools;
    pv->pools = vc_calloc(pv->npools, sizeof(*pv->pools));
    for (size_t i = 0; i < pv->npools; i++)
        snprintf(pv->pools[i].name, sizeof(pv->pools[i].name), "%s", i ? cfg->pools[i - 1].name : "default");
    if (geteuid() != 0) {
        struct passwd *me = getpwuid(geteuid());
        const char *name = me ? me->pw_name : "this user";
        vc_log(
            VC_LOG_WARN, "up",
            "started as %s, not root: the sites are not separated from the suite. Their PHP runs as %s too, as "
            "the daemons do: any site's scripts can read the TLS keys, the state (LMDB) and every other site's "
            "files, and stop or change the suite. Started as root, the suite runs as \"%s\" and each pool as "
            "its own user, and so it does started by this user with `vc up --userns` where the administrator gave it "
            "a range in /etc/subuid (docs/SECURITY.md)",
            name, name, cfg->user);
        return 0;
    }
    if (cfg->allow_root) {
        vc_log(VC_LOG_WARN, "up", "allow_root is set: the daemons and PHP run as root");
        return 0;
    }
    if (lookup("user", cfg->user, &pv->uid, &pv->gid, err, errlen) < 0)
        return -1;
    snprintf(pv->user, sizeof(pv->user), "%s", cfg->user);
    if (userns_covers("user", pv->user, pv->uid, pv->gid, err, errlen) < 0)
        return -1;
    for (size_t i = 0; i < pv->npools; i++)
        if (resolve_pool(&pv->pools[i], i ? &cfg->pools[i - 1] : &cfg->php, pv->uid, err, errlen) < 0 ||
            userns_covers(pv->pools[i].name, pv->pools[i].user, pv->pools[i].uid, pv->pools[i].gid, err, errlen) < 0)
            return -1;
    pv->drop = 1;
    return 0;
}

void privs_fini(privs_t *pv)
{
    free(pv->pools);
    pv->pools = NULL;
    pv->npools = 0;
}

/* Owner and mode of a directory or regular file, never through a symlink:
 * a link planted in the data directory must not hand us a file elsewhere. */
static int own(const char *path, uid_t uid, gid_t gid, mode_t mode, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !(S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)) || fchown(fd, uid, gid) != 0 ||
        fchmod(fd, mode) != 0) {
        snprintf(err, errlen, "cannot give \"%s\" to uid %d: %s", path, (int)uid,
                 fd < 0                ? strerror(errno)
                 : S_ISLNK(st.st_mode) ? "a symlink"
                                       : strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    return 0;
}

/* A directory and the regular files in it (one level: state, tls, log). */
static int own_tree(const char *dir, uid_t uid, gid_t gid, mode_t dmode, mode_t fmode, char *err, size_t errlen)
{
    vc_mkdirs(dir, dmode);
    if (own(dir, uid, gid, dmode, err, errlen) < 0)
        return -1;
    DIR *d = opendir(dir);
    if (d == NULL)
        return 0;
    int rc = 0;
    for (struct dirent *e; rc == 0 && (e = readdir(d)) != NULL;) {
        if (e->d_type != DT_REG)
            continue; /* links, sockets and subdirectories are left alone */
        char *p = vc_asprintf("%s/%s", dir, e->d_name);
        rc = own(p, uid, gid, fmode, err, errlen);
        free(p);
    }
    closedir(d);
    return rc;
}

/* Whether uid can do `how` (access(2) bits) on path: asked in a child that
 * becomes uid, so every directory above counts as the kernel counts it. */
static int reachable(const char *path, uid_t uid, gid_t gid, int how)
{
    pid_t pid = fork();
    if (pid == 0) {
        if (setgroups(1, &gid) != 0 || setresgid(gid, gid, gid) != 0 || setresuid(uid, uid, uid) != 0)
            _exit(2);
        _exit(access(path, how) == 0 ? 0 : 1);
    }
    int status = 0;
    return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* A pool's directories: its sockets (DATA/run/php[.NAME], the suite's
 * group may enter to connect), its sessions and temporary files
 * (DATA/pools/NAME/{sessions,tmp}, its alone). */
static int prepare_pool(const privs_t *pv, const privs_pool_t *pp, const char *data_dir, char *err, size_t errlen)
{
    char *daemon = strcmp(pp->name, "default") ? vc_asprintf("vc-php.%s", pp->name) : vc_strdup("vc-php");
    char *run = vc_asprintf("%s/run/%s", data_dir, daemon + 3);
    char *home = vc_config_pool_home(data_dir, pp->name);
    char *sessions = vc_asprintf("%s/sessions", home), *tmp = vc_asprintf("%s/tmp", home);
    char *pools = vc_asprintf("%s/pools", data_dir);
    vc_mkdirs(run, 0750);
    vc_mkdirs(sessions, 0700);
    vc_mkdirs(tmp, 0700);
    int rc = 0;
    if (pv->drop) {
        /* Set-group-ID: the sockets the pool makes take the suite's group. */
        rc = own(run, pp->uid, pv->gid, 02750, err, errlen);
        if (rc == 0)
            rc = own(pools, 0, 0, 0711, err, errlen);
        if (rc == 0)
            rc = own(home, pp->uid, pp->gid, 0700, err, errlen);
        if (rc == 0)
            rc = own(sessions, pp->uid, pp->gid, 0700, err, errlen);
        if (rc == 0)
            rc = own(tmp, pp->uid, pp->gid, 0700, err, errlen);
        if (rc == 0 && !reachable(run, pp->uid, pp->gid, W_OK | X_OK)) {
            snprintf(err, errlen,
                     "the user \"%s\" of pool \"%s\" cannot reach \"%s\": a directory above the data "
                     "directory is not searchable (chmod o+x)",
                     pp->user, pp->name, run);
            rc = -1;
        }
    }
    free(daemon);
    free(run);
    free(home);
    free(sessions);
    free(tmp);
    free(pools);
    return rc;
}

/* The fronts read the sites' certificates and keys as the suite's user:
 * said at start, not as a front that cannot start. */
static int keys_readable(const privs_t *pv, const vc_config_t *cfg, char *err, size_t errlen)
{
    for (size_t i = 0; i < cfg->nsites; i++) {
        const vc_site_t *s = &cfg->sites[i];
        const char *files[2] = {s->tls_cert, s->tls_key};
        for (int k = 0; k < 2; k++)
            if (files[k] && !reachable(files[k], pv->uid, pv->gid, R_OK)) {
                snprintf(err, errlen,
                         "%s:%d: site \"%s\": user \"%s\" cannot read \"%s\" (give it to the suite's group: "
                         "chgrp %s FILE; chmod g+r FILE)",
                         s->source, s->line, s->name, pv->user, files[k], pv->user);
                return -1;
            }
    }
    return 0;
}

/* A deployed site's directory (docs/deploys.md), and the configuration
 * releases' (config_releases): what does not exist yet
 * is made, DEPLOY_TO for vc-fed (the suite's user), which writes the
 * releases and the current link, and each shared path for the site's
 * pool, whose PHP writes there. What exists is left as its owner has it.
 * Root makes them, so each is opened part by part below its allowed base
 * and never through a link (libcommon/vc_beneath.h): the suite's user
 * owns DEPLOY_TO and a pool its shared paths, and either could otherwise
 * swap a link in to have root make and give away a directory anywhere. */
static void prepare_deploy(const privs_t *pv, const vc_config_t *cfg, const vc_site_t *s)
{
    char *base = vc_config_deploy_base(cfg, s->deploy_to), *real = vc_config_resolve_prefix(s->deploy_to);
    char why[1024];
    int made, dfd = -1, sfd = -1;
    if (base == NULL) {
        vc_log(VC_LOG_ERR, "up", "site \"%s\": deploy_to \"%s\" is not below one of deploy.allowed_bases: not made",
               s->name, s->deploy_to);
        goto done;
    }
    const privs_pool_t *pp = &pv->pools[0];
    for (size_t p = 1; p < pv->npools && s->pool; p++)
        if (strcmp(pv->pools[p].name, s->pool) == 0)
            pp = &pv->pools[p];
    dfd = vc_mkdirs_beneath(base, real + strlen(base) + 1, 0755, pv->drop ? pv->uid : (uid_t)-1, pv->gid, &made, why,
                            sizeof(why));
    if (dfd >= 0)
        sfd = vc_mkdirs_at(dfd, "shared", 0755, pv->drop ? pv->uid : (uid_t)-1, pv->gid, &made, why, sizeof(why));
    for (size_t k = 0; sfd >= 0 && k < s->nshared; k++) {
        int fd =
            vc_mkdirs_at(sfd, s->shared[k], 0755, pv->drop ? pp->uid : (uid_t)-1, pp->gid, &made, why, sizeof(why));
        if (fd < 0)
            vc_log(VC_LOG_ERR, "up", "site \"%s\": shared path %s: not made", s->name, why);
        else
            close(fd);
    }
    if (dfd < 0 || sfd < 0)
        vc_log(VC_LOG_ERR, "up", "site \"%s\": deploy_to %s: not made", s->name, why);
done:
    if (sfd >= 0)
        close(sfd);
    if (dfd >= 0)
        close(dfd);
    free(base);
    free(real);
}

void privs_prepare_deploys(const privs_t *pv, const vc_config_t *cfg)
{
    /* The configuration releases (config_releases) are vc-fed's alone;
     * the main file, root's, names them. */
    if (cfg->config_releases && mkdir(cfg->config_releases, 0750) == 0)
        privs_give(pv, cfg->config_releases);
    for (size_t i = 0; i < cfg->nsites; i++)
        if (cfg->sites[i].deploy_to)
            prepare_deploy(pv, cfg, &cfg->sites[i]);
}

int privs_prepare(const privs_t *pv, const vc_config_t *cfg, const char *data_dir, char *err, size_t errlen)
{
    int rc = 0;
    if (pv->drop) {
        char *run = vc_asprintf("%s/run", data_dir), *state = vc_asprintf("%s/state", data_dir);
        char *tls = vc_asprintf("%s/tls", data_dir), *log = vc_strdup(cfg->log_dir);
        /* The data and run directories can be crossed, not listed: a pool
         * reaches its own directories and the bus's socket through them. */
        rc = own(data_dir, pv->uid, pv->gid, 0711, err, errlen);
        if (rc == 0)
            rc = own(run, pv->uid, pv->gid, 0711, err, errlen);
        if (rc == 0)
            rc = own_tree(state, pv->uid, pv->gid, 0700, 0600, err, errlen);
        if (rc == 0)
            rc = own_tree(tls, pv->uid, pv->gid, 0700, 0600, err, errlen);
        if (rc == 0)
            rc = own_tree(log, pv->uid, pv->gid, 0750, 0640, err, errlen);
        if (rc == 0 && !reachable(run, pv->uid, pv->gid, X_OK)) {
            snprintf(err, errlen,
                     "user \"%s\" cannot reach the data directory \"%s\": a directory above it is not "
                     "searchable (chmod o+x), or move the data directory (--data)",
                     pv->user, data_dir);
            rc = -1;
        }
        free(run);
        free(state);
        free(tls);
        free(log);
        if (rc == 0)
            rc = keys_readable(pv, cfg, err, errlen);
    }
    for (size_t i = 0; rc == 0 && i < pv->npools; i++)
        rc = prepare_pool(pv, &pv->pools[i], data_dir, err, errlen);
    if (rc == 0)
        privs_prepare_deploys(pv, cfg);
    return rc;
}

static int write_one(const char *path, gid_t gid, int drop, const uint8_t *buf, size_t len, char *err, size_t errlen)
{
    char *tmp = vc_asprintf("%s.new", path);
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    int rc = fd >= 0 && (!drop || (fchown(fd, 0, gid) == 0 && fchmod(fd, 0640) == 0)) &&
                     write(fd, buf, len) == (ssize_t)len && close(fd) == 0 && rename(tmp, path) == 0
                 ? 0
                 : -1;
    if (rc < 0) {
        snprintf(err, errlen, "cannot write the pool's configuration \"%s\": %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        unlink(tmp);
    }
    free(tmp);
    return rc;
}

int privs_write_pool_config(const privs_t *pv, const vc_config_t *cfg, const char *data_dir, const Vc__ConfigVersion *v,
                            char *err, size_t errlen)
{
    /* Ours alone to write: a pool that could replace its file would
     * choose its own settings (its admin_ini, its user) at the next
     * reload. */
    char *dir = vc_asprintf("%s/run/pools", data_dir);
    vc_mkdirs(dir, 0755);
    free(dir);
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < pv->npools; i++) {
        Vc__ConfigVersion *mine = vc_config_for_pool(v, cfg, pv->pools[i].name, err, errlen);
        vc_config_t *check = mine ? vc_config_parse(mine, data_dir, err, errlen) : NULL;
        if (check == NULL) {
            /* The pool would refuse its copy at start: say so here. */
            char why[512];
            snprintf(why, sizeof(why), "%s", err);
            snprintf(err, errlen, "the pool %s's copy of the configuration, without its secrets, is refused: %s",
                     pv->pools[i].name, why);
            vc_config_version_free(&mine);
            rc = -1;
            break;
        }
        vc_config_destroy(&check);
        size_t len = protobuf_c_message_get_packed_size(&mine->base);
        uint8_t *buf = vc_malloc(len ? len : 1);
        protobuf_c_message_pack(&mine->base, buf);
        char *path = vc_config_pool_file(data_dir, pv->pools[i].name);
        rc = write_one(path, pv->pools[i].gid, pv->drop, buf, len, err, errlen);
        free(path);
        free(buf);
        vc_config_version_free(&mine);
    }
    return rc;
}

/* Each directory from path up to "/" must be owned by root or by owner
 * (when have_owner), and writable by no one else. */
static int check_tree(const char *path, const char *what, int have_owner, uid_t owner, gid_t group, char *err,
                      size_t errlen)
{
    char *p = vc_strdup(path);
    int rc = 0;
    for (;;) {
        struct stat st;
        if (lstat(p, &st) != 0)
            break; /* made by us below */
        int ours = st.st_uid == 0 || (have_owner && st.st_uid == owner);
        int group_ok = !(st.st_mode & S_IWGRP) || st.st_gid == 0 || (have_owner && st.st_gid == group);
        int others_ok = !(st.st_mode & S_IWOTH) || (S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX));
        if (!ours || !group_ok || !others_ok) {
            snprintf(err, errlen,
                     "the %s \"%s\" is not safe: \"%s\" is %s (a suite started as root refuses it, as sshd's "
                     "StrictModes does: whoever can write there can plant a link the suite would follow as root); "
                     "chown root, chmod go-w, or use another directory",
                     what, path, p,
                     !ours       ? "owned by another user"
                     : !group_ok ? "writable by its group"
                                 : "writable by others");
            rc = -1;
            break;
        }
        char *slash = strrchr(p, '/');
        if (slash == NULL || slash == p) {
            if (strcmp(p, "/") == 0 || slash == NULL)
                break;
            p[1] = '\0'; /* then "/" itself */
            continue;
        }
        *slash = '\0';
    }
    free(p);
    return rc;
}

int privs_check_tree(const privs_t *pv, const char *path, const char *what, char *err, size_t errlen)
{
    /* In a user namespace, what root and others own outside shows as
     * nobody's: the tree was checked before going in. */
    if (geteuid() != 0 || userns_active())
        return 0;
    return check_tree(path, what, pv->drop, pv->uid, pv->gid, err, errlen);
}

int privs_check_tree_outside(const char *path, const char *what, char *err, size_t errlen)
{
    return check_tree(path, what, 1, getuid(), getgid(), err, errlen);
}

void privs_give(const privs_t *pv, const char *path)
{
    if (pv->drop && lchown(path, pv->uid, pv->gid) != 0)
        vc_log(VC_LOG_WARN, "up", "lchown() failed while giving \"%s\" to %s: %s", path, pv->user, strerror(errno));
}

static void __attribute__((noreturn)) cannot(const char *what, const char *who)
{
    fprintf(stderr, "vc: %s failed while becoming \"%s\": %s\n", what, who, strerror(errno));
    _exit(126);
}

int privs_pool_user_is_own(const privs_t *pv, int pool)
{
    if (!pv->drop || pv->pools[pool].uid == pv->uid)
        return 0;
    for (size_t i = 0; i < pv->npools; i++)
        if ((int)i != pool && pv->pools[i].uid == pv->pools[pool].uid)
            return 0;
    return 1;
}

void privs_become(const privs_t *pv, int pool)
{
    if (!pv->drop)
        return;
    const privs_pool_t *pp = pool >= 0 && (size_t)pool < pv->npools ? &pv->pools[pool] : NULL;
    uid_t uid = pp ? pp->uid : pv->uid;
    gid_t gid = pp ? pp->gid : pv->gid;
    const char *who = pp ? pp->user : pv->user;
    /* Empty the bounding set while we may (root): a set-user-ID program a
     * script runs then gets no capability either. */
    for (int cap = 0; cap < 64; cap++)
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL)
            cannot("prctl(PR_CAPBSET_DROP)", who);
    /* The pool keeps its user's own groups (a group that may read the
     * site's files), as php-fpm's pools do; the daemons only theirs. */
    if ((pp ? initgroups(who, gid) : setgroups(1, &gid)) != 0)
        cannot("setgroups()", who);
    if (setresgid(gid, gid, gid) != 0)
        cannot("setresgid()", who);
    if (setresuid(uid, uid, uid) != 0)
        cannot("setresuid()", who);
    /* Going from root to another uid cleared every capability; check. */
    if (setuid(0) == 0)
        cannot("dropping root (setuid(0) still works)", who);
    /* The daemons never run another program: none may gain privileges.
     * The pool may (mail() runs sendmail, set-group-ID on Debian). */
    if (pp == NULL)
        prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
}
