/* libFuzzer: a site's schedule and background commands as configuration
 * gives them (libcommon/vc_cron.c, vc_words.c). A cron line parsed has a
 * command inside the input and not empty, and every next run it finds is
 * one of its minutes, later than the time asked about; words split are
 * each inside the input's length. */
#include "vc_cron.h"
#include "vc_words.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int tz;
    if (!tz) {
        setenv("TZ", "UTC", 1);
        tzset();
        tz = 1;
    }
    char *line = malloc(size + 1);
    memcpy(line, data, size);
    line[size] = '\0';
    vc_cron_t c;
    const char *cmd;
    char err[256];
    if (vc_cron_parse(line, &c, &cmd, err, sizeof(err)) == 0) {
        if (cmd < line || cmd >= line + strlen(line) || *cmd == '\0' || *cmd == ' ')
            abort();
        time_t after = 1796000000; /* December 2026 */
        for (int i = 0; i < 3; i++) {
            time_t t = vc_cron_next(&c, after);
            if (t == -1)
                break;
            struct tm tm;
            if (t <= after || t % 60 != 0 || gmtime_r(&t, &tm) == NULL || !vc_cron_matches(&c, &tm))
                abort();
            after = t;
        }
    }
    char **argv;
    size_t argc;
    if (vc_words_split(line, &argv, &argc, err, sizeof(err)) == 0) {
        size_t total = 0;
        for (size_t i = 0; i < argc; i++)
            total += strlen(argv[i]);
        if (argc == 0 || argv[argc] != NULL || total > size)
            abort();
        vc_words_free(argv);
    }
    free(line);
    return 0;
}
