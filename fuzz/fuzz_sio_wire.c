/* libFuzzer: the Engine.IO and Socket.IO packets a client sends
 * (daemons/vc-front/realtime/sio_wire.c), text and binary. The first
 * byte picks: even, a Socket.IO packet; 1 mod 4, an Engine.IO packet; 3
 * mod 4, a polling body split and each part decoded. What a decoder takes
 * must be what the front relies on (a namespace that starts with "/" and
 * holds no NUL or comma, an ack id below 2^53, data that fits its type),
 * and a Socket.IO packet written again reads back the same. */
#include "realtime/sio_wire.h"

#include <stdlib.h>
#include <string.h>

static void socketio(const char *s, size_t n)
{
    sio_packet_t p, again;
    char why[64];
    if (sio_decode(s, n, &p, why, sizeof(why)) != 0)
        return;
    if (p.nsp[0] != '/' || strchr(p.nsp, ',') || (p.has_id && p.id >= (UINT64_C(1) << 53)) ||
        ((p.type == SIO_BINARY_EVENT || p.type == SIO_BINARY_ACK) &&
         (p.attachments < 1 || p.attachments > SIO_ATTACHMENTS_MAX)) ||
        (p.data == NULL) != (p.json == NULL) || (p.type == SIO_DISCONNECT && p.data))
        abort();
    size_t len;
    char *text = sio_encode(p.type, p.attachments, p.nsp, p.has_id, p.id, p.json, p.json_len, &len);
    /* Data never opens with a digit (an id would have taken it), so the
     * text reads back as it was. */
    if (sio_decode(text, len, &again, why, sizeof(why)) != 0 || again.type != p.type || strcmp(again.nsp, p.nsp) ||
        again.has_id != p.has_id || again.id != p.id || again.attachments != p.attachments ||
        again.json_len != p.json_len)
        abort();
    sio_packet_clear(&again);
    free(text);
    sio_packet_clear(&p);
}

static void engineio(const char *s, size_t n)
{
    eio_packet_t p;
    uint8_t buf[4096];
    if (eio_decode(s, n, &p, buf, sizeof(buf)) != 0)
        return;
    if (p.type < EIO_OPEN || p.type > EIO_NOOP || (p.binary && (p.type != EIO_MESSAGE || p.len > sizeof(buf))))
        abort();
    if (p.type == EIO_MESSAGE && !p.binary)
        socketio(p.data, p.len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *s = (const char *)data + 1;
    size_t n = size - 1;
    if ((data[0] & 1) == 0) {
        socketio(s, n);
    } else if ((data[0] & 3) == 1) {
        engineio(s, n);
    } else {
        eio_part_t parts[64];
        int k = eio_split(s, n, parts, 64);
        for (int i = 0; i < k; i++) {
            if (parts[i].off + parts[i].len > n)
                abort();
            engineio(s + parts[i].off, parts[i].len);
        }
    }
    return 0;
}
