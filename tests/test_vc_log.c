#include "vc_log.h"
#include "vc_test.h"

static char *capture(int json, int level, const char *ctx)
{
    int p[2];
    if (pipe(p) != 0)
        return NULL;
    vc_log_init("vc-test", VC_LOG_INFO, json, p[1]);
    vc_log_set_context(ctx);
    vc_log(level, "unit", "value \"%s\" %d", "q\n", 42);
    vc_log_set_context(NULL);
    close(p[1]);
    static char buf[4096];
    ssize_t n = read(p[0], buf, sizeof(buf) - 1);
    close(p[0]);
    buf[n > 0 ? n : 0] = '\0';
    return buf;
}

int main(void)
{
    CHECK(vc_log_level_parse("debug") == VC_LOG_DEBUG);
    CHECK(vc_log_level_parse("warn") == VC_LOG_WARN);
    CHECK(vc_log_level_parse("warning") == VC_LOG_WARN);
    CHECK(vc_log_level_parse("error") == VC_LOG_ERR);
    CHECK(vc_log_level_parse("loud") == -1);
    CHECK_STR(vc_log_level_name(VC_LOG_NOTICE), "notice");

    char *text = capture(0, VC_LOG_WARN, "r1");
    CHECK_CONTAINS(text, "[warn] vc-test[");
    CHECK_CONTAINS(text, "unit: [r1] value \"q\n\" 42\n");

    char *json = capture(1, VC_LOG_ERR, NULL);
    CHECK_CONTAINS(json, "\"level\":\"error\"");
    CHECK_CONTAINS(json, "\"daemon\":\"vc-test\"");
    CHECK_CONTAINS(json, "\"msg\":\"value \\\"q\\n\\\" 42\"}\n");
    CHECK(strstr(json, "\"id\"") == NULL);

    /* Below the level: nothing is written. */
    char *quiet = capture(0, VC_LOG_DEBUG, NULL);
    CHECK_STR(quiet, "");
    return vc_test_result("vc_log");
}
