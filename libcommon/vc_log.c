#include "vc_log.h"
#include "vc_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static struct {
    char daemon[32];
    int level;
    int json;
    int fd;
    const char *context;
} L = {"vc", VC_LOG_INFO, 0, 2, NULL};

static const char *const names[] = {"emerg", "alert", "crit", "error", "warn", "notice", "info", "debug"};

void vc_log_init(const char *daemon, int level, int json, int fd)
{
    snprintf(L.daemon, sizeof(L.daemon), "%s", daemon);
    L.level = level;
    L.json = json;
    L.fd = fd;
}

void vc_log_set_level(int level)
{
    L.level = level;
}
int vc_log_get_level(void)
{
    return L.level;
}
void vc_log_set_json(int json)
{
    L.json = json;
}
void vc_log_set_context(const char *id)
{
    L.context = id;
}

int vc_log_level_parse(const char *name)
{
    if (name == NULL)
        return -1;
    for (int i = 0; i < (int)VC_ARRAY_SIZE(names); i++)
        if (strcmp(name, names[i]) == 0)
            return i;
    if (strcmp(name, "warning") == 0)
        return VC_LOG_WARN;
    if (strcmp(name, "err") == 0)
        return VC_LOG_ERR;
    return -1;
}

const char *vc_log_level_name(int level)
{
    if (level < 0 || level >= (int)VC_ARRAY_SIZE(names))
        return "unknown";
    return names[level];
}

void vc_logv(int level, const char *component, const char *fmt, va_list ap)
{
    if (level > L.level)
        return;
    char msg[2048];
    vsnprintf(msg, sizeof(msg), fmt, ap);

    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char when[40];
    size_t w = strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(when + w, sizeof(when) - w, ".%03ldZ", ts.tv_nsec / 1000000);

    /* One write() per line so lines from several processes sharing the fd do
     * not interleave. */
    char *line = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&line, &len);
    if (out == NULL)
        return;
    if (L.json) {
        fprintf(out, "{\"time\":\"%s\",\"level\":\"%s\",\"daemon\":\"%s\",\"pid\":%d,\"component\":\"", when,
                vc_log_level_name(level), L.daemon, (int)getpid());
        vc_json_escape(out, component, strlen(component));
        fputc('"', out);
        if (L.context) {
            fputs(",\"id\":\"", out);
            vc_json_escape(out, L.context, strlen(L.context));
            fputc('"', out);
        }
        fputs(",\"msg\":\"", out);
        vc_json_escape(out, msg, strlen(msg));
        fputs("\"}\n", out);
    } else {
        fprintf(out, "%s [%s] %s[%d] %s: ", when, vc_log_level_name(level), L.daemon, (int)getpid(), component);
        if (L.context)
            fprintf(out, "[%s] ", L.context);
        fprintf(out, "%s\n", msg);
    }
    fclose(out);
    ssize_t unused = write(L.fd, line, len);
    (void)unused;
    free(line);
}

void vc_logf(int level, const char *component, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vc_logv(level, component, fmt, ap);
    va_end(ap);
}
