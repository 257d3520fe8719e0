/*
 * The supervisor's verbs for site files, which the panel calls (as the
 * suite's user, docs/SECURITY.md): list them, read one, write one, enable
 * or disable one. Every change is checked as `vc configtest` checks the
 * whole directory, and undone if refused (the answer is its file:line
 * reason); an accepted one that changes what is enabled is then
 * reloaded, the asker (DAEMON, the last argument) left to reload itself.
 * The files are root's, in the configuration directory: the panel never
 * writes there itself.
 */
#include "cli.h"
#include "sup.h"
#include "vc_log.h"
#include "vc_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SITE_FILE_MAX (256 * 1024)

/* A site's name as the panel may give it: a file name, never a path. */
static int name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63 || s[0] == '.' || s[0] == '-' || s[0] == '@')
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
              strchr("._-", s[i])))
            return 0;
    return 1;
}

/* The checks every verb shares: a configuration directory, a good name.
 * Sets *avail and *enabled (freed by the caller); 0, or -1 answered. */
static int paths(sup_t *s, const Vc__Command *cmd, size_t nargs, Vc__Reply *reply, char **avail, char **enabled)
{
    if (s->conf_dir == NULL) {
        vc_reply_fail(reply, "the suite runs with no configuration directory (--conf): no site files to change");
        return -1;
    }
    if (cmd->n_args < nargs || !name_ok(cmd->args[0])) {
        vc_reply_fail(reply, "a site's name is 1 to 63 of a-z, A-Z, 0-9, '.', '_', '-'");
        return -1;
    }
    *avail = vc_asprintf("%s/sites-available/%s.conf", s->conf_dir, cmd->args[0]);
    *enabled = vc_asprintf("%s/sites-enabled/%s.conf", s->conf_dir, cmd->args[0]);
    /* A file written in sites-enabled itself, not a link: that is the
     * site's file, changed in place. */
    struct stat st;
    if (lstat(*enabled, &st) == 0 && S_ISREG(st.st_mode)) {
        free(*avail);
        *avail = vc_strdup(*enabled);
    }
    return 0;
}

static int is_enabled(const char *enabled)
{
    struct stat st;
    return lstat(enabled, &st) == 0;
}

/* configtest of the directory as it is now: 0, or -1 with why. */
static int check(sup_t *s, char *why, size_t len)
{
    size_t nfiles;
    vc_config_t *cfg = cli_configtest_dir(s->conf_dir, s->data_dir, &nfiles, why, len);
    if (cfg == NULL)
        return -1;
    vc_config_destroy(&cfg);
    return 0;
}

/* Writes text to path through a temporary file and a rename: a reader
 * sees the old file or the new one. 0 or -errno. */
static int write_whole(const char *path, const void *text, size_t len, mode_t mode)
{
    char *tmp = vc_asprintf("%s.vc-new", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
    int r = fd < 0 ? -errno : 0;
    if (fd >= 0) {
        if (write(fd, text, len) != (ssize_t)len)
            r = -EIO;
        if (fsync(fd) != 0 && r == 0)
            r = -errno;
        close(fd);
        if (r == 0 && rename(tmp, path) != 0)
            r = -errno;
        if (r < 0)
            unlink(tmp);
    }
    free(tmp);
    return r;
}

/* The change is in place: reload (the asker, the last argument, reloads
 * itself) and answer once the daemons have it. */
static void reload_after(sup_t *s, const Vc__Command *cmd, size_t nargs, const char *done)
{
    const char *asker = cmd->n_args > nargs ? cmd->args[nargs] : NULL;
    char msg[sizeof(((sup_op_t *)0)->done) - 64];
    sup_op_t *op = sup_op_new(vc_ctl_defer(s->ctl), "");
    if (sup_reload(s, op, asker, msg, sizeof(msg)) == 0)
        snprintf(op->done, sizeof(op->done), "%s; %s", done, msg);
    else
        sup_op_fail(op, msg);
    sup_op_release(s, op);
}

void sup_site_list(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    sup_t *s = arg;
    if (s->conf_dir == NULL) {
        vc_reply_ok(reply, "no configuration directory");
        return;
    }
    char *dir = vc_asprintf("%s/sites-available", s->conf_dir);
    DIR *d = opendir(dir);
    size_t n = 0;
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
        size_t len = strlen(e->d_name);
        if (len <= 5 || strcmp(e->d_name + len - 5, ".conf") != 0)
            continue;
        char *name = vc_strndup(e->d_name, len - 5),
             *enabled = vc_asprintf("%s/sites-enabled/%s", s->conf_dir, e->d_name);
        Vc__Record *rec = vc_malloc(sizeof(*rec));
        vc__record__init(rec);
        vc_record_field(rec, "site", "%s", name);
        vc_record_field(rec, "enabled", "%s", is_enabled(enabled) ? "yes" : "no");
        reply->records = vc_realloc(reply->records, (reply->n_records + 1) * sizeof(*reply->records));
        reply->records[reply->n_records++] = rec;
        free(name);
        free(enabled);
        n++;
    }
    if (d)
        closedir(d);
    free(dir);
    vc_reply_ok(reply, "%zu site files", n);
}

void sup_site_get(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    char *avail = NULL, *enabled = NULL;
    if (paths(arg, cmd, 1, reply, &avail, &enabled) < 0)
        return;
    size_t len = 0;
    char *text = vc_read_file(avail, &len);
    if (text == NULL) {
        vc_reply_fail(reply, "no site file %s", cmd->args[0]);
    } else {
        vc_reply_ok(reply, "%s", cmd->args[0]);
        vc_reply_field(reply, "enabled", "%s", is_enabled(enabled) ? "yes" : "no");
        reply->payload.data = (uint8_t *)text; /* freed with the reply */
        reply->payload.len = len;
        text = NULL;
    }
    free(text);
    free(avail);
    free(enabled);
}

/* site-put NAME [ASKER] + the file's text */
void sup_site_put(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    sup_t *s = arg;
    char *avail = NULL, *enabled = NULL, why[1024];
    if (paths(s, cmd, 1, reply, &avail, &enabled) < 0)
        return;
    size_t oldlen = 0;
    char *old = vc_read_file(avail, &oldlen), *dir = vc_asprintf("%s/sites-available", s->conf_dir);
    int r = cmd->payload.len > SITE_FILE_MAX || memchr(cmd->payload.data, '\0', cmd->payload.len) ? -EINVAL : 0;
    if (r == 0)
        r = vc_mkdirs(dir, 0755) < 0 ? -errno : write_whole(avail, cmd->payload.data, cmd->payload.len, 0644);
    if (r < 0) {
        vc_reply_fail(reply, "cannot write %s: %s", avail,
                      r == -EINVAL ? "not a text file of 256 KiB or less" : vc_strerror(r));
    } else if (is_enabled(enabled) && check(s, why, sizeof(why)) < 0) {
        /* Back as it was: the running configuration never saw it. */
        if (old)
            write_whole(avail, old, oldlen, 0644);
        else
            unlink(avail);
        vc_reply_fail(reply, "%s", why);
    } else if (is_enabled(enabled)) {
        reload_after(s, cmd, 1, "saved");
    } else {
        vc_reply_ok(reply, "saved %s (not enabled)", cmd->args[0]);
    }
    free(old);
    free(dir);
    free(avail);
    free(enabled);
}

/* site-enable NAME [ASKER], site-disable NAME [ASKER] */
static void enable(sup_t *s, const Vc__Command *cmd, Vc__Reply *reply, int on)
{
    char *avail = NULL, *enabled = NULL, why[1024];
    if (paths(s, cmd, 1, reply, &avail, &enabled) < 0)
        return;
    char *target = vc_asprintf("../sites-available/%s.conf", cmd->args[0]);
    char *dir = vc_asprintf("%s/sites-enabled", s->conf_dir);
    struct stat st;
    if (on && stat(avail, &st) != 0) {
        vc_reply_fail(reply, "no site file %s", cmd->args[0]);
    } else if (on == is_enabled(enabled)) {
        vc_reply_ok(reply, "%s is %s already", cmd->args[0], on ? "enabled" : "disabled");
    } else if (!on && (lstat(enabled, &st) != 0 || !S_ISLNK(st.st_mode))) {
        vc_reply_fail(reply, "%s is not a link to sites-available: disable it by hand", enabled);
    } else if (on ? vc_mkdirs(dir, 0755) < 0 || symlink(target, enabled) != 0 : unlink(enabled) != 0) {
        vc_reply_fail(reply, "cannot change %s: %s", enabled, strerror(errno));
    } else if (check(s, why, sizeof(why)) < 0) {
        if (on)
            unlink(enabled);
        else if (symlink(target, enabled) != 0)
            vc_log(VC_LOG_ERR, "sites", "cannot put back %s: %s", enabled, strerror(errno));
        vc_reply_fail(reply, "%s", why);
    } else {
        reload_after(s, cmd, 1, on ? "enabled" : "disabled");
    }
    free(target);
    free(dir);
    free(avail);
    free(enabled);
}

void sup_site_enable(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    enable(arg, cmd, reply, 1);
}

void sup_site_disable(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    enable(arg, cmd, reply, 0);
}
