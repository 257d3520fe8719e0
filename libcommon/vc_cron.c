/* Cron lines (vc_cron.h). */
#include "vc_cron.h"
#include "vc_util.h"

#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

typedef struct field {
    const char *name;
    int lo, hi;
    const char *const *names; /* names[i] is lo + i; NULL: numbers only */
} field_t;

static const char *const months[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                     "jul", "aug", "sep", "oct", "nov", "dec"};
static const char *const days[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};

static const field_t fields[5] = {
    {"minute", 0, 59, NULL},  {"hour", 0, 23, NULL},           {"day of the month", 1, 31, NULL},
    {"month", 1, 12, months}, {"day of the week", 0, 7, days}, /* 7 is Sunday too */
};

/* A number or a name at *p (moved past it): its value, or -1. */
static int value(const field_t *f, const char **p)
{
    const char *s = *p;
    if (isdigit((unsigned char)*s)) {
        long v = 0;
        while (isdigit((unsigned char)*s) && v < 1000)
            v = v * 10 + (*s++ - '0');
        *p = s;
        return v >= f->lo && v <= f->hi ? (int)v : -1;
    }
    if (f->names == NULL)
        return -1;
    for (int i = 0; i <= f->hi - f->lo && (f->names != days || i < 7); i++)
        if (strncasecmp(s, f->names[i], 3) == 0 && !isalpha((unsigned char)s[3])) {
            *p = s + 3;
            return f->lo + i;
        }
    return -1;
}

/* One field's text (up to its end) into the bits of its values. */
static int field_parse(const field_t *f, const char *s, const char *end, uint64_t *bits, int *star)
{
    *bits = 0;
    *star = end - s == 1 && *s == '*';
    while (s < end) {
        int lo, hi, step = 1, single = 0;
        if (*s == '*') {
            lo = f->lo;
            hi = f->hi;
            s++;
        } else {
            if ((lo = value(f, &s)) < 0)
                return -1;
            hi = lo;
            single = *s != '-';
            if (*s == '-') {
                s++;
                if ((hi = value(f, &s)) < 0 || hi < lo)
                    return -1;
            }
        }
        if (*s == '/') {
            s++;
            if (!isdigit((unsigned char)*s))
                return -1;
            long n = 0;
            while (isdigit((unsigned char)*s) && n < 1000)
                n = n * 10 + (*s++ - '0');
            if (n < 1 || n > f->hi)
                return -1;
            step = (int)n;
            if (single)
                hi = f->hi; /* "5/15": from 5 to the end, as cronie */
        }
        for (int v = lo; v <= hi; v += step)
            *bits |= 1ull << v;
        if (s < end && *s != ',')
            return -1;
        if (s < end)
            s++;
        if (s == end && end[-1] == ',')
            return -1;
    }
    return *bits ? 0 : -1;
}

static const struct {
    const char *name, *fields;
} shorthands[] = {
    {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"}, {"@weekly", "0 0 * * 0"},
    {"@daily", "0 0 * * *"},  {"@midnight", "0 0 * * *"}, {"@hourly", "0 * * * *"},
};

static int fields_parse(const char *s, vc_cron_t *c, const char **after, char *err, size_t errlen)
{
    uint64_t bits[5];
    int star[5];
    for (int i = 0; i < 5; i++) {
        while (*s == ' ' || *s == '\t')
            s++;
        const char *end = s;
        while (*end && *end != ' ' && *end != '\t')
            end++;
        if (end == s) {
            snprintf(err, errlen, "a cron line has five fields (minute hour day month weekday) before its command");
            return -1;
        }
        if (field_parse(&fields[i], s, end, &bits[i], &star[i]) < 0) {
            snprintf(err, errlen, "\"%.*s\" is not a valid %s (%d-%d%s, *, ranges, steps, lists)", (int)(end - s), s,
                     fields[i].name, fields[i].lo, i == 4 ? 6 : fields[i].hi, fields[i].names ? ", or names" : "");
            return -1;
        }
        s = end;
    }
    c->minute = bits[0];
    c->hour = (uint32_t)bits[1];
    c->mday = (uint32_t)bits[2];
    c->month = (uint16_t)bits[3];
    c->wday = (uint8_t)((bits[4] | (bits[4] >> 7)) & 0x7f); /* 7 is 0 */
    c->mday_star = (uint8_t)star[2];
    c->wday_star = (uint8_t)star[4];
    *after = s;
    return 0;
}

int vc_cron_parse(const char *line, vc_cron_t *c, const char **command, char *err, size_t errlen)
{
    memset(c, 0, sizeof(*c));
    const char *s = line;
    while (*s == ' ' || *s == '\t')
        s++;
    const char *rest;
    if (*s == '@') {
        size_t n = strcspn(s, " \t");
        size_t i = 0;
        while (i < VC_ARRAY_SIZE(shorthands) && (strlen(shorthands[i].name) != n || strncmp(s, shorthands[i].name, n)))
            i++;
        if (i == VC_ARRAY_SIZE(shorthands)) {
            snprintf(err, errlen,
                     "\"%.*s\" is not one of @yearly, @annually, @monthly, @weekly, @daily, @midnight, "
                     "@hourly",
                     (int)n, s);
            return -1;
        }
        fields_parse(shorthands[i].fields, c, &rest, err, errlen);
        rest = s + n;
    } else if (fields_parse(s, c, &rest, err, errlen) < 0) {
        return -1;
    }
    while (*rest == ' ' || *rest == '\t')
        rest++;
    if (*rest == '\0') {
        snprintf(err, errlen, "no command after the schedule");
        return -1;
    }
    /* A sixth time field (seconds, or a year) would be read as the
     * command and run as one: refused. */
    if (strspn(rest, "0123456789*/,-") == strcspn(rest, " \t")) {
        snprintf(err, errlen, "six time fields: a schedule has five (minute hour day month weekday), then the command");
        return -1;
    }
    *command = rest;
    return 0;
}

/* crontab(5): a day of the month and a day of the week both restricted
 * match either. */
static int day_matches(const vc_cron_t *c, const struct tm *tm)
{
    int md = c->mday >> tm->tm_mday & 1, wd = c->wday >> tm->tm_wday & 1;
    return !c->mday_star && !c->wday_star ? md || wd : md && wd;
}

int vc_cron_matches(const vc_cron_t *c, const struct tm *tm)
{
    return (c->minute >> tm->tm_min & 1) && (c->hour >> tm->tm_hour & 1) && (c->month >> (tm->tm_mon + 1) & 1) &&
           day_matches(c, tm);
}

/* tm moved to the start of the next day, hour or minute (mktime()
 * normalises; a DST gap is stepped over). */
static time_t step(struct tm *tm, int what)
{
    if (what == 0) {
        tm->tm_mday++;
        tm->tm_hour = 0;
        tm->tm_min = 0;
    } else if (what == 1) {
        tm->tm_hour++;
        tm->tm_min = 0;
    } else {
        tm->tm_min++;
    }
    tm->tm_sec = 0;
    tm->tm_isdst = -1;
    return mktime(tm);
}

time_t vc_cron_next(const vc_cron_t *c, time_t after)
{
    time_t t = after - after % 60 + 60, end = after + 5 * 366 * 86400L;
    struct tm tm;
    while (t <= end) {
        if (localtime_r(&t, &tm) == NULL)
            return -1;
        time_t next;
        if (!(c->month >> (tm.tm_mon + 1) & 1)) {
            tm.tm_mon++;
            tm.tm_mday = 1;
            tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
            tm.tm_isdst = -1;
            next = mktime(&tm);
        } else if (!day_matches(c, &tm)) {
            next = step(&tm, 0);
        } else if (!(c->hour >> tm.tm_hour & 1)) {
            next = step(&tm, 1);
        } else if (!(c->minute >> tm.tm_min & 1)) {
            next = step(&tm, 2);
        } else {
            return t;
        }
        /* Time must move on, whatever a DST change makes of it. */
        t = next > t ? next : t + 60;
    }
    return -1;
}

time_t vc_cron_next_in(const vc_cron_t *c, time_t after, const char *tz)
{
    if (tz == NULL || *tz == '\0')
        return vc_cron_next(c, after);
    char *old = getenv("TZ") ? vc_strdup(getenv("TZ")) : NULL;
    setenv("TZ", tz, 1);
    tzset();
    time_t t = vc_cron_next(c, after);
    if (old)
        setenv("TZ", old, 1);
    else
        unsetenv("TZ");
    tzset();
    free(old);
    return t;
}

int vc_cron_zone_known(const char *tz)
{
    if (tz == NULL || *tz == '\0' || tz[0] == '/' || strstr(tz, "..") || strlen(tz) > 64)
        return 0;
    for (const char *p = tz; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("/_+-", *p))
            return 0;
    char path[128];
    snprintf(path, sizeof(path), "/usr/share/zoneinfo/%s", tz);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char magic[4];
    int ok = read(fd, magic, 4) == 4 && memcmp(magic, "TZif", 4) == 0;
    close(fd);
    return ok;
}
