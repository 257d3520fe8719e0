/* Engine.IO v4 and Socket.IO v5 packets (daemons/vc-front/realtime/sio_wire.c),
 * from the examples of the protocols' own documents (engine.io-protocol and
 * socket.io-protocol, "Packet encoding" and "Exchange protocol"). */
#include "realtime/sio_wire.h"
#include "vc_test.h"

static int sio(const char *text, sio_packet_t *p)
{
    char why[64];
    return sio_decode(text, strlen(text), p, why, sizeof(why));
}

static void socketio_packets(void)
{
    sio_packet_t p;
    CHECK(sio("0", &p) == 0 && p.type == SIO_CONNECT && !strcmp(p.nsp, "/") && p.data == NULL);
    CHECK(sio("0/admin,", &p) == 0 && p.type == SIO_CONNECT && !strcmp(p.nsp, "/admin"));
    CHECK(sio("0/admin,{\"token\":\"123\"}", &p) == 0 && json_is_object(p.data) && p.json_len == 15);
    sio_packet_clear(&p);
    CHECK(sio("1/admin,", &p) == 0 && p.type == SIO_DISCONNECT && !strcmp(p.nsp, "/admin"));
    CHECK(sio("2[\"hello\",1]", &p) == 0 && p.type == SIO_EVENT && !p.has_id && json_array_size(p.data) == 2);
    sio_packet_clear(&p);
    CHECK(sio("2/admin,456[\"project:delete\",123]", &p) == 0 && p.has_id && p.id == 456 && !strcmp(p.nsp, "/admin"));
    sio_packet_clear(&p);
    CHECK(sio("3/admin,456[]", &p) == 0 && p.type == SIO_ACK && p.id == 456 && json_array_size(p.data) == 0);
    sio_packet_clear(&p);
    CHECK(sio("4{\"message\":\"Not authorized\"}", &p) == 0 && p.type == SIO_CONNECT_ERROR);
    sio_packet_clear(&p);
    CHECK(sio("51-[\"hello\",{\"_placeholder\":true,\"num\":0}]", &p) == 0 && p.type == SIO_BINARY_EVENT &&
          p.attachments == 1);
    sio_packet_clear(&p);
    CHECK(sio("61-/admin,456[{\"_placeholder\":true,\"num\":0}]", &p) == 0 && p.type == SIO_BINARY_ACK &&
          p.attachments == 1 && p.id == 456 && !strcmp(p.nsp, "/admin"));
    sio_packet_clear(&p);
    /* An event named by a number is taken, as the reference takes it. */
    CHECK(sio("2[1,2]", &p) == 0);
    sio_packet_clear(&p);
    /* The reference reads an empty message as a CONNECT to "/". */
    CHECK(sio("", &p) == 0 && p.type == SIO_CONNECT);
}

static void socketio_refusals(void)
{
    sio_packet_t p;
    const char *bad[] = {"7",
                         "x",
                         "2[]",
                         "2{}",
                         "2[\"connect\"]",
                         "2[\"disconnect\",1]",
                         "2[null]",
                         "1{}",
                         "0[]",
                         "0\"a\"",
                         "2[\"a\"",
                         "5-[\"a\"]",
                         "50-[\"a\"]",
                         "511-[\"a\"]",
                         "5[\"a\"]",
                         "51[\"a\"]",
                         "3{}",
                         "4[]",
                         "299999999999999999[\"a\"]",
                         "29007199254740992[\"a\"]"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int rc = sio(bad[i], &p);
        if (rc == 0)
            fprintf(stderr, "taken: %s\n", bad[i]);
        CHECK(rc == -1);
        sio_packet_clear(&p);
    }
    /* The largest ack id JavaScript holds exactly is taken. */
    CHECK(sio("29007199254740991[\"a\"]", &p) == 0 && p.id == 9007199254740991ULL);
    sio_packet_clear(&p);
}

static void socketio_encoding(void)
{
    size_t n;
    char *s = sio_encode(SIO_EVENT, 0, "/chat", 1, 12, "[\"a\"]", 5, &n);
    CHECK_STR(s, "2/chat,12[\"a\"]");
    CHECK(n == strlen(s));
    free(s);
    s = sio_encode(SIO_CONNECT, 0, "/", 0, 0, "{\"sid\":\"x\"}", 11, &n);
    CHECK_STR(s, "0{\"sid\":\"x\"}");
    free(s);
    s = sio_encode(SIO_DISCONNECT, 0, "/admin", 0, 0, NULL, 0, &n);
    CHECK_STR(s, "1/admin,");
    free(s);
    s = sio_encode(SIO_BINARY_ACK, 2, "/admin", 1, 7, "[{\"_placeholder\":true,\"num\":0}]", 32, &n);
    CHECK_STR(s, "62-/admin,7[{\"_placeholder\":true,\"num\":0}]");
    free(s);
}

static void engineio(void)
{
    eio_packet_t p;
    uint8_t buf[16];
    CHECK(eio_decode("4hello", 6, &p, buf, sizeof(buf)) == 0 && p.type == EIO_MESSAGE && p.len == 5 && !p.binary);
    CHECK(eio_decode("2", 1, &p, buf, sizeof(buf)) == 0 && p.type == EIO_PING && p.len == 0);
    CHECK(eio_decode("2probe", 6, &p, buf, sizeof(buf)) == 0 && p.type == EIO_PING && p.len == 5);
    CHECK(eio_decode("bAQIDBA==", 9, &p, buf, sizeof(buf)) == 0 && p.binary && p.len == 4 && buf[3] == 4);
    CHECK(eio_decode("bAQIDBA", 7, &p, buf, sizeof(buf)) == 0 && p.binary && p.len == 4);
    CHECK(eio_decode("b!!", 3, &p, buf, sizeof(buf)) == -1);
    CHECK(eio_decode("", 0, &p, buf, sizeof(buf)) == -1);
    CHECK(eio_decode("7", 1, &p, buf, sizeof(buf)) == -1);
    /* A polling body: "4hello", "2", a binary message. */
    const char body[] = "4hello\x1e"
                        "2\x1e"
                        "bAQIDBA==";
    eio_part_t parts[4];
    CHECK(eio_split(body, sizeof(body) - 1, parts, 4) == 3);
    CHECK(parts[1].off == 7 && parts[1].len == 1 && parts[2].len == 9);
    CHECK(eio_split(body, sizeof(body) - 1, parts, 2) == -1);
    char *out = NULL;
    size_t len = 0, cap = 0;
    eio_append(&out, &len, &cap, EIO_MESSAGE, 0, "hello", 5);
    eio_append(&out, &len, &cap, EIO_PING, 0, NULL, 0);
    eio_append(&out, &len, &cap, EIO_MESSAGE, 1, "\x01\x02\x03\x04", 4);
    CHECK(len == sizeof(body) - 1 && memcmp(out, body, len) == 0);
    free(out);
}

/* --decode: each line of stdin a JSON string, decoded as a Socket.IO
 * packet; a JSON line out for each, as integration/test_58_sio_wire.py
 * compares them with socket.io-parser's (the reference's) reading. */
static int decode_lines(void)
{
    char line[65536];
    while (fgets(line, sizeof(line), stdin)) {
        json_t *in = json_loads(line, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
        if (!json_is_string(in)) {
            json_decref(in);
            puts("null");
            continue;
        }
        sio_packet_t p;
        char why[64];
        json_t *out;
        if (sio_decode(json_string_value(in), json_string_length(in), &p, why, sizeof(why)) != 0) {
            out = json_pack("{s:b,s:s}", "ok", 0, "why", why);
        } else {
            out = json_pack("{s:b,s:i,s:s}", "ok", 1, "type", p.type, "nsp", p.nsp);
            if (p.has_id)
                json_object_set_new(out, "id", p.id_nan ? json_null() : json_real((double)p.id));
            if (p.attachments)
                json_object_set_new(out, "attachments", json_integer(p.attachments));
            if (p.data)
                json_object_set(out, "data", p.data);
            sio_packet_clear(&p);
        }
        char *text = json_dumps(out, JSON_COMPACT | JSON_ENCODE_ANY);
        puts(text);
        free(text);
        json_decref(out);
        json_decref(in);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--decode") == 0)
        return decode_lines();
    socketio_packets();
    socketio_refusals();
    socketio_encoding();
    engineio();
    return vc_test_result("sio_wire");
}
