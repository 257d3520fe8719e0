#include "vc_log.h"
#include "vc_util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Space taken ahead of a log file's end before lines are written into it.
 * On a full disk a write() of a line crossing into a new block writes what
 * fits and cuts the line; a line inside space already allocated cannot
 * fail. When no more can be taken, lines are dropped whole and counted. */
#define RESERVE (64 * 1024)

static struct {
    char daemon[32];
    int level;
    int json;
    int fd;
    const char *context;
    int reserving;     /* fd is a file that takes fallocate() */
    off_t reserved_to; /* what this process last took, as an offset */
    uint64_t dropped;  /* lines not written since the last that was */
    int dropped_errno; /* why the first of them was not */
    char dropped_since[40];
    int cut; /* a line went out in part: the next starts on a new line */
} L = {"vc", VC_LOG_INFO, 0, 2, NULL, 0, 0, 0, 0, "", 0};

static const char *const names[] = {"emerg", "alert", "crit", "error", "warn", "notice", "info", "debug"};

void vc_log_init(const char *daemon, int level, int json, int fd)
{
    snprintf(L.daemon, sizeof(L.daemon), "%s", daemon);
    L.level = level;
    L.json = json;
    L.fd = fd;
    struct stat st;
    L.reserving = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    L.reserved_to = 0;
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

/* Makes sure a line of len bytes lands in allocated space: 0, or a
 * negative errno when the disk has none left. */
static int take_room(size_t len)
{
    if (!L.reserving)
        return 0;
    off_t end = lseek(L.fd, 0, SEEK_END);
    if (end < 0)
        return 0;
    /* Other processes write to the same file, and a rotation by
     * copytruncate empties it: both show in where its end is now. */
    if (end + (off_t)len <= L.reserved_to && end + 2 * RESERVE > L.reserved_to)
        return 0;
    if (fallocate(L.fd, FALLOC_FL_KEEP_SIZE, end, (off_t)len + RESERVE) == 0) {
        L.reserved_to = end + (off_t)len + RESERVE;
        return 0;
    }
    if (errno == ENOSPC || errno == EDQUOT)
        return -errno;
    L.reserving = 0; /* a file system without fallocate(): plain writes */
    return 0;
}

static int put(const char *line, size_t len)
{
    int rc = take_room(len);
    if (rc < 0)
        return rc;
    for (size_t off = 0; off < len;) {
        ssize_t n = write(L.fd, line + off, len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (off > 0)
                L.cut = 1;
            return n < 0 ? -errno : -EIO;
        }
        off += (size_t)n;
    }
    return 0;
}

static void format_line(FILE *out, const char *when, int level, const char *component, const char *msg)
{
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
     * not interleave; what was dropped before is told first, in the same
     * write. */
    char *line = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&line, &len);
    if (out == NULL)
        return;
    if (L.cut)
        fputc('\n', out);
    if (L.dropped) {
        char note[256];
        snprintf(note, sizeof(note), "%llu log lines were dropped since %s: %s", (unsigned long long)L.dropped,
                 L.dropped_since, strerror(L.dropped_errno));
        format_line(out, when, VC_LOG_WARN, "log", note);
    }
    format_line(out, when, level, component, msg);
    fclose(out);
    int rc = put(line, len);
    if (rc == 0) {
        L.dropped = 0;
        L.cut = 0;
    } else if (L.dropped++ == 0) {
        L.dropped_errno = -rc;
        snprintf(L.dropped_since, sizeof(L.dropped_since), "%s", when);
    }
    free(line);
}

void vc_logf(int level, const char *component, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vc_logv(level, component, fmt, ap);
    va_end(ap);
}
