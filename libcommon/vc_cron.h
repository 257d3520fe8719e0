/*
 * Cron lines (site.schedule, docs/background.md): the five fields of
 * crontab(5) as cronie reads them (numbers, `*`, ranges, steps, lists,
 * month and day names, 7 for Sunday, and cron's rule that a day of the
 * month and a day of the week both restricted match either), the
 * shorthands @yearly, @annually, @monthly, @weekly, @daily, @midnight and
 * @hourly, then the command. @reboot and a sixth (seconds) field are
 * refused: a schedule runs by the minute.
 */
#ifndef VC_CRON_H
#define VC_CRON_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

typedef struct vc_cron {
    uint64_t minute; /* bit m: minute m (0-59) */
    uint32_t hour;   /* bit h (0-23) */
    uint32_t mday;   /* bit d (1-31) */
    uint16_t month;  /* bit m (1-12) */
    uint8_t wday;    /* bit d (0-6, Sunday 0) */
    uint8_t mday_star, wday_star;
} vc_cron_t;

/* Parses line into *c and points *command at what follows the fields
 * (never empty). 0, or -1 with a message in err that names the field. */
int vc_cron_parse(const char *line, vc_cron_t *c, const char **command, char *err, size_t errlen);

/* Whether the local time tm is one of c's minutes. */
int vc_cron_matches(const vc_cron_t *c, const struct tm *tm);

/* The first of c's minutes after `after`, in the process's time zone
 * (TZ), or -1 if there is none within five years (February 30). */
time_t vc_cron_next(const vc_cron_t *c, time_t after);

/* The same in the time zone tz (an IANA name such as "Europe/Paris";
 * NULL or "": the process's). Sets TZ for the call: not thread-safe. */
time_t vc_cron_next_in(const vc_cron_t *c, time_t after, const char *tz);

/* Whether tz names a time zone the system has (/usr/share/zoneinfo). */
int vc_cron_zone_known(const char *tz);

#endif
