/*
 * vc_curve: CurveZMQ on the suite's ZeroMQ sockets that cross a network
 * (tcp:// endpoints: control, events, rooms, the cache's input). One
 * keypair for the suite, from `curve_secret_key` (Z85, 40 characters;
 * `vc keygen` makes one): a socket that binds is a CURVE server with it;
 * one that connects is a CURVE client that expects that server and shows
 * the same key. A ZAP handler in each process that binds admits only
 * clients showing the suite's public key, so holding the secret is what
 * lets a daemon in; traffic is encrypted. ipc:// sockets stay as they are
 * (their files' rights guard them).
 */
#ifndef VC_CURVE_H
#define VC_CURVE_H

/* Whether s is a CURVE secret key in Z85. */
int vc_curve_valid(const char *secret_z85);

/* Sets the suite's key for this process: 0, or -1 if it is not a CURVE
 * secret key in Z85. NULL or "": none (no CURVE). */
int vc_curve_use(const char *secret_z85);

/* Whether a socket to this endpoint gets CURVE (a key is set and the
 * endpoint is tcp://). */
int vc_curve_applies(const char *endpoint);

/* Makes s a CURVE server (bind) or client; for a server, starts the ZAP
 * handler of zctx if none runs. 0, or a negative errno. */
int vc_curve_setup(void *zctx, void *s, int bind);

/* A new secret key, Z85, in out (41 bytes). 0 or -1. */
int vc_curve_keygen(char out[41]);

#endif
