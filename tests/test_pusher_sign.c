/* The Pusher protocol's signatures (daemons/vc-front/realtime/pusher_sign.c),
 * against the worked examples of Pusher's own documentation. */
#include "realtime/pusher_sign.h"
#include "vc_test.h"
#include "vc_util.h"

static const vc_rt_app_t app = {.id = "3", .key = "278d425bdf160c739803", .secret = "7ad3773142a6692b25b8"};

static void channel_auth(void)
{
    /* "Authorizing users", the private channel example. */
    const char *good = "278d425bdf160c739803:58df8b0c36d6982b82c3ecf6b4662e34fe8c25bba48f5369f135bf843651c3a4";
    CHECK(pusher_channel_auth_ok(&app, "1234.1234", "private-foobar", NULL, good));
    CHECK(!pusher_channel_auth_ok(&app, "1234.1235", "private-foobar", NULL, good));
    CHECK(!pusher_channel_auth_ok(&app, "1234.1234", "private-foobaz", NULL, good));
    CHECK(!pusher_channel_auth_ok(&app, "1234.1234", "private-foobar", NULL, good + 1));
    CHECK(!pusher_channel_auth_ok(&app, "1234.1234", "private-foobar", NULL, NULL));
    CHECK(!pusher_channel_auth_ok(&app, "1234.1234", "private-foobar", NULL, "278d425bdf160c739803:"));
    /* Presence: channel_data is signed too. */
    const char *cd = "{\"user_id\":10,\"user_info\":{\"name\":\"Mr. Channels\"}}";
    const char *pres = "278d425bdf160c739803:31935e7d86dba64c2a90aed31fdc61869f9b22ba9d8863bba239c03ca481bc80";
    CHECK(pusher_channel_auth_ok(&app, "1234.1234", "presence-foobar", cd, pres));
    CHECK(!pusher_channel_auth_ok(&app, "1234.1234", "presence-foobar", "{\"user_id\":11}", pres));
}

static pusher_sign_result_t verify(const char *query, const char *body, int64_t now)
{
    char sig[65];
    int64_t ts = 0;
    return pusher_api_verify(&app, "POST", "/apps/3/events", 14, query, strlen(query), body, strlen(body), now, sig,
                             &ts);
}

static void api(void)
{
    /* "HTTP API reference", the worked example. */
    const char *body = "{\"name\":\"foo\",\"channels\":[\"project-3\"],\"data\":\"{\\\"some\\\":\\\"data\\\"}\"}";
    const char *q = "auth_key=278d425bdf160c739803&auth_timestamp=1353088179&auth_version=1.0&body_md5="
                    "ec365a775a4cd0599faeb73354201b6f&auth_signature="
                    "da454824c97ba181a32ccc17a72625ba02771f50b50e1e7430e47a1f3f457e6c";
    CHECK(verify(q, body, 1353088179) == PUSHER_SIGN_OK);
    CHECK(verify(q, body, 1353088179 + 599) == PUSHER_SIGN_OK);
    CHECK(verify(q, body, 1353088179 + 601) == PUSHER_SIGN_STALE);
    CHECK(verify(q, body, 1353088179 - 601) == PUSHER_SIGN_STALE);
    CHECK(verify(q, "{}", 1353088179) == PUSHER_SIGN_BODY_MISMATCH);
    /* Parameters in another order, and an upper-case name: the same call. */
    const char *q2 = "AUTH_VERSION=1.0&body_md5=ec365a775a4cd0599faeb73354201b6f&auth_timestamp=1353088179&auth_key="
                     "278d425bdf160c739803&auth_signature="
                     "da454824c97ba181a32ccc17a72625ba02771f50b50e1e7430e47a1f3f457e6c";
    CHECK(verify(q2, body, 1353088179) == PUSHER_SIGN_OK);
    char *bad = vc_strdup(q);
    bad[strlen(bad) - 1] = 'd';
    CHECK(verify(bad, body, 1353088179) == PUSHER_SIGN_BAD_SIGNATURE);
    free(bad);
    CHECK(verify("auth_key=nope&auth_timestamp=1&auth_signature="
                 "da454824c97ba181a32ccc17a72625ba02771f50b50e1e7430e47a1f3f457e6c",
                 "", 1) == PUSHER_SIGN_UNKNOWN_KEY);
    /* A parameter twice: neither counts. */
    char *twice = vc_asprintf("%s&auth_timestamp=1353088180", q);
    CHECK(verify(twice, body, 1353088179) == PUSHER_SIGN_MALFORMED);
    free(twice);
    CHECK(verify("auth_key=%zz", "", 1) == PUSHER_SIGN_MALFORMED);
    CHECK(verify("auth_key=%00", "", 1) == PUSHER_SIGN_MALFORMED);
    CHECK(verify("", "", 1) == PUSHER_SIGN_MALFORMED);
    CHECK(verify("novalue", "", 1) == PUSHER_SIGN_MALFORMED);
}

int main(void)
{
    channel_auth();
    api();
    return vc_test_result("pusher_sign");
}
