/* A generation's releases (release_pin.h). */
#include "release_pin.h"
#include "vc_log.h"
#include "vc_util.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct pin {
    char *dir;     /* DEPLOY_TO */
    char *current; /* DEPLOY_TO/current */
    char *to;      /* DEPLOY_TO/releases/ID the link named at boot; NULL: none yet */
    size_t dir_len, current_len;
} pin_t;

static pin_t *pins;
static size_t npins;

void release_pins_load(const vc_config_t *cfg)
{
    for (size_t i = 0; i < cfg->nsites; i++) {
        const char *dir = cfg->sites[i].deploy_to;
        if (dir == NULL)
            continue;
        pins = vc_realloc(pins, (npins + 1) * sizeof(*pins));
        pin_t *p = &pins[npins++];
        p->dir = vc_strdup(dir);
        p->dir_len = strlen(dir);
        p->current = vc_asprintf("%s/current", dir);
        p->current_len = strlen(p->current);
        p->to = NULL;
        char target[PATH_MAX];
        ssize_t n = readlink(p->current, target, sizeof(target) - 1);
        if (n > 0) {
            target[n] = '\0';
            p->to = target[0] == '/' ? vc_strdup(target) : vc_asprintf("%s/%s", dir, target);
            vc_log(VC_LOG_INFO, "release", "site \"%s\" runs %s", cfg->sites[i].name, p->to);
        }
    }
}

static int under(const char *path, const char *dir, size_t len)
{
    return path && strncmp(path, dir, len) == 0 && (path[len] == '/' || path[len] == '\0');
}

char *release_pins_path(const char *path)
{
    for (size_t i = 0; i < npins; i++)
        if (pins[i].to && under(path, pins[i].current, pins[i].current_len))
            return vc_asprintf("%s%s", pins[i].to, path + pins[i].current_len);
    return NULL;
}

static void replace(char **field, char *with)
{
    if (with) {
        free(*field);
        *field = with;
    }
}

void release_pins_apply(Vc__RequestHead *h)
{
    for (size_t i = 0; i < npins; i++) {
        const pin_t *p = &pins[i];
        if (under(h->script_filename, p->current, p->current_len)) {
            /* Named through the link: this generation's release. */
            replace(&h->script_filename, release_pins_path(h->script_filename));
            replace(&h->document_root, release_pins_path(h->document_root));
            return;
        }
        if (!under(h->script_filename, p->dir, p->dir_len) || !under(h->document_root, p->current, p->current_len) ||
            strncmp(h->script_filename + p->dir_len, "/releases/", 10) != 0)
            continue;
        /* The front resolved the script into one release: the document
         * root is that release's too, whatever this generation started
         * with, so one request never sees two releases. */
        const char *id = h->script_filename + p->dir_len + 10;
        size_t id_len = strcspn(id, "/");
        replace(&h->document_root,
                vc_asprintf("%s/releases/%.*s%s", p->dir, (int)id_len, id, h->document_root + p->current_len));
        return;
    }
}
