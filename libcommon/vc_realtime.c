#include "vc_realtime.h"
#include "vc_config.h"
#include "vc_util.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int field_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n >= VC_RT_FIELD_MAX)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
              c == '.'))
            return 0;
    }
    return 1;
}

int vc_rt_app_parse(const char *s, vc_rt_app_t *app, char *why, size_t whylen)
{
    char id[VC_RT_FIELD_MAX + 1], key[VC_RT_FIELD_MAX + 1], secret[VC_RT_FIELD_MAX + 1], extra[2];
    if (sscanf(s, "%128s %128s %128s %1s", id, key, secret, extra) != 3) {
        snprintf(why, whylen, "\"%s\" is not \"ID KEY SECRET\"", s);
        return -1;
    }
    if (!field_ok(id) || !field_ok(key) || !field_ok(secret)) {
        snprintf(why, whylen, "\"%s\": an id, key and secret are 1 to %d of A-Z, a-z, 0-9, '_', '-' and '.'", s,
                 VC_RT_FIELD_MAX - 1);
        return -1;
    }
    memset(app, 0, sizeof(*app));
    memcpy(app->id, id, strlen(id));
    memcpy(app->key, key, strlen(key));
    memcpy(app->secret, secret, strlen(secret));
    return 0;
}

static const char *const hook_names[] = {"channel_occupied", "channel_vacated", "member_added", "member_removed",
                                         "client_event"};

unsigned vc_rt_webhook_event(const char *name)
{
    for (size_t i = 0; i < VC_ARRAY_SIZE(hook_names); i++)
        if (strcmp(name, hook_names[i]) == 0)
            return 1u << i;
    return 0;
}

int vc_rt_webhook_parse(const char *s, vc_rt_webhook_t *hook, char *why, size_t whylen)
{
    memset(hook, 0, sizeof(*hook));
    size_t ul = strcspn(s, " \t");
    const char *rest = s + ul + strspn(s + ul, " \t");
    int scheme = strncmp(s, "http://", 7) == 0 ? 7 : strncmp(s, "https://", 8) == 0 ? 8 : 0;
    if (!scheme || ul <= (size_t)scheme || ul >= VC_RT_URL_MAX) {
        snprintf(why, whylen, "\"%s\" is not \"http(s)://HOST/PATH [EVENT,...]\"", s);
        return -1;
    }
    for (size_t i = 0; i < ul; i++)
        if ((unsigned char)s[i] <= ' ' || s[i] == 0x7f) {
            snprintf(why, whylen, "\"%s\": a control character in the URL", s);
            return -1;
        }
    memcpy(hook->url, s, ul);
    if (*rest == '\0') {
        hook->events = VC_RT_HOOK_ALL;
        return 0;
    }
    /* EVENT,EVENT...: nothing after it. */
    char list[256];
    size_t ll = strcspn(rest, " \t");
    if (ll >= sizeof(list) || rest[ll + strspn(rest + ll, " \t")] != '\0') {
        snprintf(why, whylen, "\"%s\": after the URL, one list of events separated by commas", s);
        return -1;
    }
    memcpy(list, rest, ll);
    list[ll] = '\0';
    for (char *save = NULL, *e = strtok_r(list, ",", &save); e; e = strtok_r(NULL, ",", &save)) {
        unsigned bit = vc_rt_webhook_event(e);
        if (bit == 0) {
            snprintf(why, whylen,
                     "\"%s\": no event \"%s\" (channel_occupied, channel_vacated, member_added, member_removed, "
                     "client_event)",
                     s, e);
            return -1;
        }
        hook->events |= bit;
    }
    if (hook->events == 0) {
        snprintf(why, whylen, "\"%s\": no event named", s);
        return -1;
    }
    return 0;
}

static void random_hex(char *out, size_t bytes)
{
    unsigned char b[64];
    randombytes_buf(b, bytes);
    sodium_bin2hex(out, bytes * 2 + 1, b, bytes);
}

void vc_rt_new_secret(char out[VC_RT_SECRET_LEN + 1])
{
    random_hex(out, VC_RT_SECRET_LEN / 2);
}

int vc_rt_default_app_read(const char *state_dir, vc_rt_app_t *app, char *err, size_t errlen)
{
    char *path = vc_asprintf("%s/realtime-app", state_dir);
    size_t len;
    char *text = vc_read_file(path, &len);
    int rc = -1;
    if (text == NULL) {
        snprintf(err, errlen, "\"%s\" cannot be read: %s", path, strerror(errno));
    } else {
        char why[256];
        text[strcspn(text, "\n")] = '\0';
        if ((rc = vc_rt_app_parse(text, app, why, sizeof(why))) < 0) {
            snprintf(err, errlen, "%s: %s", path, why);
            errno = EINVAL;
        }
        free(text);
    }
    free(path);
    return rc;
}

/* Writes the app to path, through a temporary file: linked in place when
 * made (link() fails if another process made it first), renamed over it
 * when rotated. 0, or -1 with errno. */
static int write_app(const char *path, const vc_rt_app_t *app, int replace)
{
    char *tmp = vc_asprintf("%s.%d", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        free(tmp);
        return -1;
    }
    char line[3 * VC_RT_FIELD_MAX + 4];
    int ln = snprintf(line, sizeof(line), "%s %s %s\n", app->id, app->key, app->secret);
    int ok = write(fd, line, (size_t)ln) == ln && fsync(fd) == 0;
    close(fd);
    if (ok)
        ok = replace ? rename(tmp, path) == 0 : link(tmp, path) == 0 || errno == EEXIST;
    int saved = errno;
    unlink(tmp);
    free(tmp);
    errno = saved;
    return ok ? 0 : -1;
}

int vc_rt_default_app(const char *state_dir, vc_rt_app_t *app, char *err, size_t errlen)
{
    char *path = vc_asprintf("%s/realtime-app", state_dir);
    for (int attempt = 0; attempt < 2; attempt++) {
        if (vc_rt_default_app_read(state_dir, app, err, errlen) == 0) {
            free(path);
            return 0;
        }
        if (errno != ENOENT) { /* unreadable, or not an app: err says */
            free(path);
            return -1;
        }
        vc_rt_app_t made;
        unsigned char n[4];
        randombytes_buf(n, sizeof(n));
        snprintf(made.id, sizeof(made.id), "%u", (unsigned)(n[0] << 16 | n[1] << 8 | n[2]) % 9000000 + 1000000);
        random_hex(made.key, 10);
        vc_rt_new_secret(made.secret);
        if (write_app(path, &made, 0) < 0)
            break;
    }
    snprintf(err, errlen, "the default realtime app in \"%s\" could not be read or made: %s", path, strerror(errno));
    free(path);
    return -1;
}

int vc_rt_default_app_rotate(const char *state_dir, vc_rt_app_t *app, char *err, size_t errlen)
{
    if (vc_rt_default_app_read(state_dir, app, err, errlen) < 0)
        return -1;
    vc_rt_new_secret(app->secret);
    char *path = vc_asprintf("%s/realtime-app", state_dir);
    int rc = write_app(path, app, 1);
    if (rc < 0)
        snprintf(err, errlen, "the default realtime app in \"%s\" could not be written: %s", path, strerror(errno));
    free(path);
    return rc;
}

size_t vc_rt_site_apps(const vc_site_t *s, const char *state_dir, vc_rt_app_t *out, size_t max, int *made, char *why,
                       size_t whylen)
{
    size_t n = 0;
    *made = 0;
    why[0] = '\0';
    for (size_t k = 0; k < s->nrealtime_apps && n < max; k++)
        if (vc_rt_app_parse(s->realtime_apps[k], &out[n], why, whylen) == 0)
            n++;
    if (s->nrealtime_apps || !s->is_default || max == 0)
        return n;
    if (vc_rt_default_app_read(state_dir, &out[0], why, whylen) < 0)
        return 0;
    *made = 1;
    return 1;
}

void vc_urn_uuid(char out[VC_URN_UUID_LEN + 1])
{
    unsigned char b[16];
    randombytes_buf(b, sizeof(b));
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122's variant */
    snprintf(out, VC_URN_UUID_LEN + 1, "urn:uuid:%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}
