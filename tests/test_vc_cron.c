/* Cron lines (libcommon/vc_cron.c) and command words (vc_words.c). */
#include "vc_cron.h"
#include "vc_test.h"
#include "vc_words.h"

#include <time.h>

/* Seconds since the epoch of a UTC time, as the tests run with TZ=UTC. */
static time_t utc(int y, int mo, int d, int h, int mi)
{
    struct tm tm = {.tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d, .tm_hour = h, .tm_min = mi};
    return timegm(&tm);
}

static time_t next_of(const char *line, time_t after)
{
    vc_cron_t c;
    const char *cmd;
    char err[200];
    if (vc_cron_parse(line, &c, &cmd, err, sizeof(err)) < 0) {
        fprintf(stderr, "refused: %s: %s\n", line, err);
        return -2;
    }
    return vc_cron_next(&c, after);
}

static int refused(const char *line, const char *why)
{
    vc_cron_t c;
    const char *cmd;
    char err[200] = "";
    int r = vc_cron_parse(line, &c, &cmd, err, sizeof(err));
    if (r == 0 || strstr(err, why) == NULL)
        fprintf(stderr, "%s: %s\n", line, err);
    return r < 0 && strstr(err, why) != NULL;
}

static void fields(void)
{
    time_t t0 = utc(2026, 12, 7, 10, 30); /* a Monday */
    CHECK(next_of("* * * * * php x", t0) == utc(2026, 12, 7, 10, 31));
    CHECK(next_of("*/15 * * * * php x", t0) == utc(2026, 12, 7, 10, 45));
    CHECK(next_of("5/20 * * * * php x", t0) == utc(2026, 12, 7, 10, 45));
    CHECK(next_of("0 3 * * * php x", t0) == utc(2026, 12, 8, 3, 0));
    CHECK(next_of("0 9-17/4 * * * php x", t0) == utc(2026, 12, 7, 13, 0));
    CHECK(next_of("0,30 * * * * php x", t0) == utc(2026, 12, 7, 11, 0));
    CHECK(next_of("0 0 1 jan * php x", t0) == utc(2027, 1, 1, 0, 0));
    CHECK(next_of("0 0 * * sun php x", t0) == utc(2026, 12, 13, 0, 0));
    CHECK(next_of("0 0 * * 7 php x", t0) == utc(2026, 12, 13, 0, 0)); /* 7 is Sunday */
    CHECK(next_of("0 0 * * Fri php x", t0) == utc(2026, 12, 11, 0, 0));
    /* Both days restricted: either (the 1st, or a Friday). */
    CHECK(next_of("0 0 1 * fri php x", t0) == utc(2026, 12, 11, 0, 0));
    CHECK(next_of("0 0 29 feb * php x", t0) == utc(2028, 2, 29, 0, 0));
    CHECK(next_of("0 0 30 feb * php x", t0) == -1);
    CHECK(next_of("@hourly php x", t0) == utc(2026, 12, 7, 11, 0));
    CHECK(next_of("@daily php x", t0) == utc(2026, 12, 8, 0, 0));
    CHECK(next_of("@weekly php x", t0) == utc(2026, 12, 13, 0, 0));
    CHECK(next_of("@monthly php x", t0) == utc(2027, 1, 1, 0, 0));
    CHECK(next_of("@yearly php x", t0) == utc(2027, 1, 1, 0, 0));
    /* The command is what follows. */
    vc_cron_t c;
    const char *cmd;
    char err[200];
    CHECK(vc_cron_parse("  1 2 3 4 5   php artisan schedule:run", &c, &cmd, err, sizeof(err)) == 0);
    CHECK_STR(cmd, "php artisan schedule:run");
    CHECK(vc_cron_parse("@daily  php bin/console x", &c, &cmd, err, sizeof(err)) == 0);
    CHECK_STR(cmd, "php bin/console x");
}

static void refusals(void)
{
    CHECK(refused("* * * * * * php x", "six time fields"));
    CHECK(refused("61 * * * * php x", "not a valid minute"));
    CHECK(refused("* 24 * * * php x", "not a valid hour"));
    CHECK(refused("* * 0 * * php x", "not a valid day of the month"));
    CHECK(refused("* * * 13 * php x", "not a valid month"));
    CHECK(refused("* * * * 8 php x", "not a valid day of the week"));
    CHECK(refused("5-1 * * * * php x", "not a valid minute"));
    CHECK(refused("*/0 * * * * php x", "not a valid minute"));
    CHECK(refused("1,,2 * * * * php x", "not a valid minute"));
    CHECK(refused("1, * * * * php x", "not a valid minute"));
    CHECK(refused("* * * foo * php x", "not a valid month"));
    CHECK(refused("* * * * *", "no command"));
    CHECK(refused("* * *", "five fields"));
    CHECK(refused("@reboot php x", "is not one of"));
    CHECK(refused("", "five fields"));
}

/* A time zone moves the minute: 03:00 in Paris is 02:00 UTC in winter. */
static void zones(void)
{
    vc_cron_t c;
    const char *cmd;
    char err[200];
    CHECK(vc_cron_parse("0 3 * * * php x", &c, &cmd, err, sizeof(err)) == 0);
    CHECK(vc_cron_next_in(&c, utc(2026, 12, 7, 10, 0), "Europe/Paris") == utc(2026, 12, 8, 2, 0));
    CHECK(vc_cron_next_in(&c, utc(2026, 7, 7, 10, 0), "Europe/Paris") == utc(2026, 7, 8, 1, 0));
    CHECK(vc_cron_next(&c, utc(2026, 12, 7, 10, 0)) == utc(2026, 12, 8, 3, 0)); /* TZ back as it was */
    CHECK(vc_cron_zone_known("Europe/Paris") && vc_cron_zone_known("UTC"));
    CHECK(!vc_cron_zone_known("Mars/Base") && !vc_cron_zone_known("../../etc/passwd") && !vc_cron_zone_known(""));
}

static void words(void)
{
    char **argv;
    size_t argc;
    char err[128];
    CHECK(vc_words_split("php artisan queue:work --sleep=3", &argv, &argc, err, sizeof(err)) == 0 && argc == 4);
    CHECK_STR(argv[3], "--sleep=3");
    vc_words_free(argv);
    CHECK(vc_words_split(" sh -c 'echo \"$HOME\" | wc'  \"a b\\\"c\" d\\ e ''", &argv, &argc, err, sizeof(err)) == 0);
    CHECK(argc == 6);
    if (argc == 6) {
        CHECK_STR(argv[2], "echo \"$HOME\" | wc");
        CHECK_STR(argv[3], "a b\"c");
        CHECK_STR(argv[4], "d e");
        CHECK_STR(argv[5], "");
        CHECK(argv[6] == NULL);
    }
    vc_words_free(argv);
    CHECK(vc_words_split("php 'x", &argv, &argc, err, sizeof(err)) < 0 && strstr(err, "unclosed"));
    CHECK(vc_words_split("php \"x", &argv, &argc, err, sizeof(err)) < 0 && strstr(err, "unclosed"));
    CHECK(vc_words_split("php x\\", &argv, &argc, err, sizeof(err)) < 0 && strstr(err, "backslash"));
    CHECK(vc_words_split("   ", &argv, &argc, err, sizeof(err)) < 0 && strstr(err, "no command"));
}

int main(void)
{
    setenv("TZ", "UTC", 1);
    tzset();
    fields();
    refusals();
    zones();
    words();
    return vc_test_result("vc_cron");
}
