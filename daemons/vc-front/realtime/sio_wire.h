/*
 * Engine.IO v4 and Socket.IO v5 packets: what a client
 * of socket.io 4.8 sends and expects, decoded and encoded here, checked
 * as the reference server checks them. Nothing here does I/O: a
 * connection hands its frames or a polling body in, and sends what comes
 * out. fuzz/fuzz_sio_wire.c drives every decoder.
 *
 * Engine.IO packet: a type digit (0 open, 1 close, 2 ping, 3 pong,
 * 4 message, 5 upgrade, 6 noop) then its data; a binary message is a
 * WebSocket binary frame, or over long-polling "b" and its base64. A
 * polling body is packets joined by the record separator (0x1e).
 *
 * Socket.IO packet (inside an Engine.IO message):
 *   TYPE [ATTACHMENTS "-"] [NAMESPACE ","] [ACK_ID] [JSON]
 * TYPE 0 CONNECT, 1 DISCONNECT, 2 EVENT, 3 ACK, 4 CONNECT_ERROR,
 * 5 BINARY_EVENT, 6 BINARY_ACK; the namespace is written unless it is
 * "/"; a binary packet's attachments follow it as binary messages.
 */
#ifndef VC_FRONT_SIO_WIRE_H
#define VC_FRONT_SIO_WIRE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

enum { EIO_OPEN, EIO_CLOSE, EIO_PING, EIO_PONG, EIO_MESSAGE, EIO_UPGRADE, EIO_NOOP };

typedef struct eio_packet {
    int type;         /* EIO_* */
    int binary;       /* a binary message (data is its bytes) */
    const char *data; /* into the input, or into the caller's buffer for base64 */
    size_t len;
} eio_packet_t;

/* One text packet (a WebSocket text frame, or one part of a polling
 * body). A "b" packet (polling's binary) is decoded into buf (cap bytes).
 * 0, or -1 for what the reference answers with a parse error. */
int eio_decode(const char *s, size_t n, eio_packet_t *p, uint8_t *buf, size_t cap);

/* The parts of a polling body: up to max of them, as offsets and lengths.
 * Returns how many, or -1 if there are more than max. */
typedef struct eio_part {
    size_t off, len;
} eio_part_t;
int eio_split(const char *body, size_t n, eio_part_t *parts, size_t max);

/* Appends packet (type, data) to a polling body being built in *out
 * (realloc'd; *len, *cap), after a record separator if it is not the
 * first; a binary message as "b" and its base64. */
void eio_append(char **out, size_t *len, size_t *cap, int type, int binary, const void *data, size_t dlen);

enum { SIO_CONNECT, SIO_DISCONNECT, SIO_EVENT, SIO_ACK, SIO_CONNECT_ERROR, SIO_BINARY_EVENT, SIO_BINARY_ACK };
#define SIO_NSP_MAX 256
#define SIO_ATTACHMENTS_MAX 10 /* as socket.io-parser's maxAttachments */

typedef struct sio_packet {
    int type;                  /* SIO_* */
    unsigned attachments;      /* binary packets: 1 to SIO_ATTACHMENTS_MAX */
    char nsp[SIO_NSP_MAX + 1]; /* "/" when the packet names none */
    int has_id;
    uint64_t id;      /* an ack id, below 2^53 */
    int id_nan;       /* an id the reference reads as NaN ("1 2"): its ack's id is written "NaN" (SIO_ID_NAN) */
    const char *json; /* the data as the client wrote it (into the input), NULL: none */
    size_t json_len;
    json_t *data; /* the same parsed (it was checked so), NULL: none; freed by sio_packet_clear */
} sio_packet_t;

#define SIO_ID_NAN UINT64_MAX

/* One Socket.IO packet from the text of an Engine.IO message. 0, or -1
 * with why (the reference closes the connection then). */
int sio_decode(const char *s, size_t n, sio_packet_t *p, char *why, size_t wlen);
void sio_packet_clear(sio_packet_t *p);

/* The text of a packet (malloc'd, *len set), attachments written for a
 * binary one, its data the JSON text json
 * (jlen bytes; NULL: none) as it is: a client's arguments relayed, or
 * PHP's json_encode(), are never parsed and written again. */
char *sio_encode(int type, unsigned attachments, const char *nsp, int has_id, uint64_t id, const char *json,
                 size_t jlen, size_t *len);

/* Whether an event's name is one the protocol keeps for itself
 * ("connect", "disconnect", ...): a client may not send it. */
int sio_reserved_event(const char *name);

#endif
