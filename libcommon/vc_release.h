/*
 * vc_release: a release's manifest (docs/deploys.md), written by `vc deploy`
 * and read by vc-fed, which believes it only with a signature from a key
 * it trusts.
 *
 * The manifest is text, one line a fact, so what is signed is what an
 * operator can read:
 *
 *   velocity-release 1
 *   site shop
 *   id 20261205-011500-3f2a1b9c
 *   created 1764897300
 *   signer alice
 *   message Fix%20the%20cart
 *   d 755 public
 *   f 644 1234 HASH public/index.php
 *   l public/current.css css/v2.css
 *
 * Paths and texts are percent-escaped (bytes up to a space, '%' and 127 on).
 * Every entry's parent is a directory listed before it, so no entry is
 * written through a link; a link's target is relative and stays inside the
 * release, also as the kernel resolves it through the release's other links. HASH is BLAKE2b-256 of the file, in hex.
 */
#ifndef VC_RELEASE_H
#define VC_RELEASE_H

#include <stddef.h>
#include <stdint.h>

#define VC_RELEASE_HASH 32      /* BLAKE2b-256 */
#define VC_RELEASE_PUBLIC 32    /* Ed25519 */
#define VC_RELEASE_SECRET 64    /* Ed25519, with its public half */
#define VC_RELEASE_SIGNATURE 64 /* Ed25519, detached */
#define VC_RELEASE_ID_MAX 64
#define VC_RELEASE_NAME_MAX 64          /* a key's or a signer's name */
#define VC_RELEASE_MAX_BYTES (64 << 20) /* a manifest */
#define VC_RELEASE_MAX_FILE (4LL << 30) /* one file */

typedef enum { VC_REL_DIR = 'd', VC_REL_FILE = 'f', VC_REL_LINK = 'l' } vc_rel_kind_t;

typedef struct vc_rel_entry {
    vc_rel_kind_t kind;
    unsigned mode; /* permission bits, 0777 at most */
    uint64_t size;
    unsigned char hash[VC_RELEASE_HASH];
    char *path;   /* relative, unescaped */
    char *target; /* a link's */
} vc_rel_entry_t;

typedef struct vc_release {
    char *site, *id, *signer, *message;
    int64_t created; /* seconds */
    vc_rel_entry_t *entries;
    size_t n, cap;
} vc_release_t;

/* Reads a manifest. 0, or -1 with why (the line it stopped at). */
int vc_release_parse(const char *text, size_t len, vc_release_t *out, char *why, size_t wlen);
/* The manifest's text (NUL-terminated, *len without it); owned by the caller. */
char *vc_release_format(const vc_release_t *r, size_t *len);
/* Appends an entry, copying the strings. */
vc_rel_entry_t *vc_release_add(vc_release_t *r, vc_rel_kind_t kind, const char *path);
void vc_release_free(vc_release_t *r);

/* Whether a release path is relative, with no empty, "." or ".." part. */
int vc_release_path_ok(const char *p);
/* Whether a link at path with this target stays inside the release, as
 * text: the first check, made on each line as it is read. */
int vc_release_target_ok(const char *path, const char *target);
/* Whether every link stays inside the release as the kernel resolves it,
 * through the other links of the manifest (vc_release_links.c); made by
 * vc_release_parse on the whole manifest. 0, or -1 with why. */
int vc_release_links_ok(const vc_release_t *r, char *why, size_t wlen);
/* A release id: letters, digits, '-', '_' and '.', not starting with '.'. */
int vc_release_id_ok(const char *id);

/* The hash of a file's bytes: 0, or -1 (errno). */
int vc_release_hash_fd(int fd, unsigned char out[VC_RELEASE_HASH], uint64_t *size);
void vc_release_hex(const unsigned char *b, size_t n, char *out);
int vc_release_unhex(const char *hex, unsigned char *out, size_t n);

/* Signs text with a secret key; verifies with a public one (0: good). */
void vc_release_sign(const char *text, size_t len, const unsigned char sk[VC_RELEASE_SECRET],
                     unsigned char sig[VC_RELEASE_SIGNATURE]);
int vc_release_verify(const char *text, size_t len, const unsigned char sig[VC_RELEASE_SIGNATURE],
                      const unsigned char pk[VC_RELEASE_PUBLIC]);

#endif
