/* PHP's "Read-only file system" warnings, turned into the fix (wall_notes.h). */
#include "wall_notes.h"
#include "worker_clock.h"
#include "vc_log.h"
#include "vc_util.h"

#include <main/php.h>
#include <string.h>

#define NOTED_MAX 64

static void (*next_error_cb)(int type, zend_string *file, const uint32_t line, zend_string *message);
static char *noted[NOTED_MAX];
static size_t nnoted;

/* The path a file function names: "file_put_contents(/srv/x/a.db): Failed
 * to open stream: Read-only file system". Its directory into dir. */
static int refused_dir(const char *msg, char *dir, size_t len)
{
    const char *open = strchr(msg, '('), *close = open ? strstr(open, "): ") : NULL;
    if (open == NULL || close == NULL || close - open < 2 || open[1] != '/')
        return -1;
    size_t n = (size_t)(close - open - 1);
    if (n >= len)
        return -1;
    memcpy(dir, open + 1, n);
    dir[n] = '\0';
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)dir[i] < 0x20)
            return -1; /* a script's own text, not a path: not into the log */
    char *slash = strrchr(dir, '/');
    if (slash == dir)
        slash[1] = '\0';
    else if (slash)
        *slash = '\0';
    return 0;
}

static void on_error(int type, zend_string *file, const uint32_t line, zend_string *message)
{
    const char *msg = ZSTR_VAL(message);
    char dir[1024];
    if (strstr(msg, "Read-only file system") && refused_dir(msg, dir, sizeof(dir)) == 0) {
        worker_clock_count_refused();
        int seen = 0;
        for (size_t i = 0; i < nnoted && !seen; i++)
            seen = strcmp(noted[i], dir) == 0;
        if (!seen && nnoted < NOTED_MAX) {
            noted[nnoted++] = vc_strdup(dir);
            vc_log(VC_LOG_WARN, "wall",
                   "%s:%u: a write in \"%s\" was refused: the pool's wall keeps the file system read-only but for "
                   "its sites, sessions and temporary files; if the application keeps data there, add it to the "
                   "pool: php.writable_dirs = [\"%s\"] (docs/SECURITY.md, \"The pool's wall\")",
                   file ? ZSTR_VAL(file) : "-", line, dir, dir);
        }
    }
    next_error_cb(type, file, line, message);
}

void wall_notes_install(void)
{
    if (next_error_cb == NULL) {
        next_error_cb = zend_error_cb;
        zend_error_cb = on_error;
    }
}
