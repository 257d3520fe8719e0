#include "vc_httpdate.h"

#include <strings.h>
#include <time.h>

static const char *const days[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
static const char *const long_days[] = {"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"};
static const char *const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                     "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

/* A reader over the value: each step takes exactly what the grammar says. */
typedef struct rd {
    const char *p, *end;
    int ok;
} rd_t;

static void lit(rd_t *r, const char *s)
{
    for (; *s && r->ok; s++, r->p++)
        if (r->p >= r->end || *r->p != *s)
            r->ok = 0;
}

static int digits(rd_t *r, int n)
{
    int v = 0;
    for (int i = 0; i < n && r->ok; i++, r->p++) {
        if (r->p >= r->end || *r->p < '0' || *r->p > '9')
            r->ok = 0;
        else
            v = v * 10 + (*r->p - '0');
    }
    return v;
}

/* One of names, case aside; its index, or -1. */
static int name_of(rd_t *r, const char *const *names, int n)
{
    if (!r->ok)
        return -1;
    for (int i = 0; i < n; i++) {
        size_t l = 0;
        while (names[i][l])
            l++;
        if ((size_t)(r->end - r->p) >= l && strncasecmp(r->p, names[i], l) == 0) {
            r->p += l;
            return i;
        }
    }
    r->ok = 0;
    return -1;
}

static void gmt(rd_t *r)
{
    if (r->ok && r->end - r->p >= 3 && strncasecmp(r->p, "GMT", 3) == 0)
        r->p += 3;
    else
        r->ok = 0;
}

/* hh:mm:ss */
static void time_of_day(rd_t *r, int *h, int *m, int *s)
{
    *h = digits(r, 2);
    lit(r, ":");
    *m = digits(r, 2);
    lit(r, ":");
    *s = digits(r, 2);
}

static int leap(int y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* Days from 1970-01-01 to y-m-d (m 1..12) in the proleptic Gregorian
 * calendar: years counted from March, so that February's leap day ends
 * each 400-year cycle's year. */
static int64_t days_since_epoch(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t cycle = (y >= 0 ? y : y - 399) / 400;
    int64_t year_of_cycle = y - cycle * 400;
    int day_of_year = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    int64_t day_of_cycle = year_of_cycle * 365 + year_of_cycle / 4 - year_of_cycle / 100 + day_of_year;
    return cycle * 146097 + day_of_cycle - 719468;
}

static int64_t to_epoch(int y, int mon, int d, int h, int mi, int s)
{
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (mon < 0 || d < 1 || d > mdays[mon] + (mon == 1 && leap(y)) || h > 23 || mi > 59 || s > 60 || y < 1970)
        return -1;
    int64_t t = days_since_epoch(y, mon + 1, d) * 86400 + h * 3600 + mi * 60 + s;
    /* A leap second is the next second, but not past the last one a date
     * can name: 9999-12-31 23:59:60 stays 23:59:59, so that every date
     * parsed prints back (vc_httpdate_format). */
    return t > 253402300799LL ? 253402300799LL : t;
}

int64_t vc_httpdate_parse(const char *v, size_t len)
{
    if (v == NULL || len < 24 || len > 40)
        return -1;
    rd_t r = {v, v + len, 1};
    int d, mon, y, h, mi, s;
    /* Which form: the character after the day name. */
    const char *comma = NULL;
    for (const char *p = v; p < v + len && p < v + 10; p++)
        if (*p == ',' || *p == ' ') {
            comma = *p == ',' ? p : NULL;
            break;
        }
    if (comma) {
        /* IMF-fixdate "Sun, 06 Nov 1994 08:49:37 GMT", or RFC 850
         * "Sunday, 06-Nov-94 08:49:37 GMT": one shape, two spellings. */
        int imf = comma - v == 3;
        const char *sep = imf ? " " : "-";
        name_of(&r, imf ? days : long_days, 7);
        lit(&r, ", ");
        d = digits(&r, 2);
        lit(&r, sep);
        mon = name_of(&r, months, 12);
        lit(&r, sep);
        y = digits(&r, imf ? 4 : 2);
        lit(&r, " ");
        time_of_day(&r, &h, &mi, &s);
        lit(&r, " ");
        gmt(&r);
        if (r.ok && !imf) {
            /* RFC 9110 5.6.7: more than 50 years ahead is the past. */
            int now_y = 1970 + (int)(time(NULL) / 31556952);
            y += (now_y / 100) * 100;
            if (y > now_y + 50)
                y -= 100;
        }
    } else { /* asctime: "Sun Nov  6 08:49:37 1994" */
        name_of(&r, days, 7);
        lit(&r, " ");
        mon = name_of(&r, months, 12);
        lit(&r, " ");
        if (r.ok && r.p < r.end && *r.p == ' ') {
            r.p++;
            d = digits(&r, 1);
        } else {
            d = digits(&r, 2);
        }
        lit(&r, " ");
        time_of_day(&r, &h, &mi, &s);
        lit(&r, " ");
        y = digits(&r, 4);
    }
    if (!r.ok || r.p != r.end)
        return -1;
    return to_epoch(y, mon, d, h, mi, s);
}

size_t vc_httpdate_format(int64_t t, char *out)
{
    if (t < 0 || t > 253402300799LL) /* 9999-12-31 23:59:59 */
        return 0;
    time_t tt = (time_t)t;
    struct tm tm;
    if (gmtime_r(&tt, &tm) == NULL)
        return 0;
    static const char digit[] = "0123456789";
    char *o = out;
    const char *dn = days[tm.tm_wday], *mn = months[tm.tm_mon];
    int y = tm.tm_year + 1900;
    *o++ = dn[0], *o++ = dn[1], *o++ = dn[2], *o++ = ',', *o++ = ' ';
    *o++ = digit[tm.tm_mday / 10], *o++ = digit[tm.tm_mday % 10], *o++ = ' ';
    *o++ = mn[0], *o++ = mn[1], *o++ = mn[2], *o++ = ' ';
    *o++ = digit[y / 1000], *o++ = digit[y / 100 % 10], *o++ = digit[y / 10 % 10], *o++ = digit[y % 10], *o++ = ' ';
    *o++ = digit[tm.tm_hour / 10], *o++ = digit[tm.tm_hour % 10], *o++ = ':';
    *o++ = digit[tm.tm_min / 10], *o++ = digit[tm.tm_min % 10], *o++ = ':';
    *o++ = digit[tm.tm_sec / 10], *o++ = digit[tm.tm_sec % 10];
    *o++ = ' ', *o++ = 'G', *o++ = 'M', *o++ = 'T';
    *o = '\0';
    return VC_HTTPDATE_LEN;
}
