/*
 * vc key new NAME: a deployer's Ed25519 key (docs/deploys.md). The secret
 * half stays in the deployer's key directory, mode 0600; the public half
 * is printed, for `vc trust add` on the nodes.
 *
 * vc trust add|remove|list: the keys this node's vc-fed trusts to sign
 * releases. Its control socket takes them from root or the suite's user,
 * for this node; with --key SIGNER, a change signed by a key the nodes
 * already trust goes to every node of the cluster.
 */
#include "cli.h"
#include "deploy.h"
#include "vc_ctl.h"
#include "vc_release.h"
#include "vc_trust_change.h"
#include "vc_util.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#define B64(n) sodium_base64_ENCODED_LEN(n, sodium_base64_VARIANT_ORIGINAL)

char *cli_key_dir(void)
{
    const char *dir = getenv("VC_KEYS"), *home = getenv("HOME");
    if (dir && *dir)
        return vc_strdup(dir);
    return vc_asprintf("%s/.config/velocity/keys", home && *home ? home : ".");
}

static int name_ok(const char *name)
{
    size_t n = strlen(name);
    return n > 0 && n <= VC_RELEASE_NAME_MAX &&
           strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.@") == n;
}

static int write_new(const char *path, const char *text, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0)
        return -1;
    size_t n = strlen(text);
    int rc = write(fd, text, n) == (ssize_t)n && fsync(fd) == 0 ? 0 : -1;
    close(fd);
    return rc;
}

static int key_new(const char *name)
{
    if (!name_ok(name)) {
        fprintf(stderr, "vc key new: \"%s\": a name of up to %d letters, digits, '-', '_', '.' and '@'\n", name,
                VC_RELEASE_NAME_MAX);
        return 2;
    }
    if (sodium_init() < 0)
        return 1;
    char *dir = cli_key_dir();
    vc_mkdirs(dir, 0700);
    char *sec_path = vc_asprintf("%s/%s.key", dir, name), *pub_path = vc_asprintf("%s/%s.pub", dir, name);
    unsigned char pk[VC_RELEASE_PUBLIC], sk[VC_RELEASE_SECRET];
    crypto_sign_keypair(pk, sk);
    char sk64[B64(VC_RELEASE_SECRET)], pk64[B64(VC_RELEASE_PUBLIC)];
    sodium_bin2base64(sk64, sizeof(sk64), sk, sizeof(sk), sodium_base64_VARIANT_ORIGINAL);
    sodium_bin2base64(pk64, sizeof(pk64), pk, sizeof(pk), sodium_base64_VARIANT_ORIGINAL);
    char *sk_line = vc_asprintf("%s\n", sk64), *pk_line = vc_asprintf("%s\n", pk64);
    int rc = 0;
    if (write_new(sec_path, sk_line, 0600) < 0) {
        fprintf(stderr, "vc key new: cannot write \"%s\": %s%s\n", sec_path, strerror(errno),
                errno == EEXIST ? " (a key of that name exists; keys are never overwritten)" : "");
        rc = 1;
    } else if (write_new(pub_path, pk_line, 0644) < 0) {
        fprintf(stderr, "vc key new: cannot write \"%s\": %s\n", pub_path, strerror(errno));
        unlink(sec_path);
        rc = 1;
    } else {
        printf("%s\n", pk64);
        fprintf(stderr, "vc key new: the secret key is in %s (keep it there); on each node: vc trust add %s %s\n",
                sec_path, name, pk64);
    }
    sodium_memzero(sk, sizeof(sk));
    sodium_memzero(sk64, sizeof(sk64));
    sodium_memzero(sk_line, strlen(sk_line));
    free(sk_line);
    free(pk_line);
    free(sec_path);
    free(pub_path);
    free(dir);
    return rc;
}

int cli_key_load(const char *name, unsigned char sk[VC_RELEASE_SECRET], char *why, size_t wlen)
{
    char *dir = cli_key_dir(), *path = vc_asprintf("%s/%s.key", dir, name);
    size_t len = 0;
    char *text = vc_read_file(path, &len);
    struct stat st;
    size_t got = 0;
    int rc = -1;
    if (text == NULL)
        snprintf(why, wlen, "cannot read the key \"%s\": %s (vc key new %s; or --key NAME, VC_KEYS)", path,
                 strerror(errno), name);
    else if (stat(path, &st) == 0 && (st.st_mode & 077))
        snprintf(why, wlen, "the key \"%s\" may be read by others (mode %03o): chmod 600 it", path, st.st_mode & 0777);
    else if (sodium_base642bin(sk, VC_RELEASE_SECRET, text, len, "\n", &got, NULL, sodium_base64_VARIANT_ORIGINAL) !=
                 0 ||
             got != VC_RELEASE_SECRET)
        snprintf(why, wlen, "\"%s\" is not a key vc key new wrote", path);
    else
        rc = 0;
    if (text) {
        sodium_memzero(text, len);
        free(text);
    }
    free(path);
    free(dir);
    return rc;
}

int cmd_key(cli_t *cli, int argc, char **argv)
{
    (void)cli;
    if (argc == 3 && strcmp(argv[1], "new") == 0)
        return key_new(argv[2]);
    fprintf(stderr, "usage: vc key new NAME\n");
    return 2;
}

/* A public key given as itself or as the NAME.pub file vc key new wrote. */
static char *public_key_arg(const char *arg)
{
    size_t len = 0;
    char *text = strchr(arg, '/') || strstr(arg, ".pub") ? vc_read_file(arg, &len) : NULL;
    if (text == NULL)
        return vc_strdup(arg);
    text[strcspn(text, "\r\n")] = '\0';
    return text;
}

/* vc trust add|remove ... --key SIGNER: the change signed with the
 * deployer's key, for vc-fed to apply here and hand to every node. */
static int trust_signed(void *zctx, const vc_config_t *cfg, int add, const char *name, const char *b64,
                        const char *signer)
{
    vc_trust_change_t c = {.add = add, .at_ms = vc_wall_ms()};
    size_t pklen = 0;
    char why[512];
    unsigned char sk[VC_RELEASE_SECRET], sig[VC_RELEASE_SIGNATURE];
    if (!vc_trust_name_ok(name) || !vc_trust_name_ok(signer)) {
        fprintf(stderr, "vc trust: a key's name is up to %d letters, digits, '-', '_', '.', '@'\n",
                VC_RELEASE_NAME_MAX);
        return 1;
    }
    if (add && (sodium_base642bin(c.key, sizeof(c.key), b64, strlen(b64), NULL, &pklen, NULL,
                                  sodium_base64_VARIANT_ORIGINAL) != 0 ||
                pklen != sizeof(c.key))) {
        fprintf(stderr, "vc trust: \"%s\" is not a public key: `vc key new NAME` prints one\n", b64);
        return 1;
    }
    snprintf(c.name, sizeof(c.name), "%s", name);
    snprintf(c.signer, sizeof(c.signer), "%s", signer);
    if (cli_key_load(signer, sk, why, sizeof(why)) < 0) {
        fprintf(stderr, "vc trust: %s\n", why);
        return 1;
    }
    size_t len;
    char *text = vc_trust_change_format(&c, &len), sig_hex[2 * VC_RELEASE_SIGNATURE + 1];
    vc_release_sign(text, len, sk, sig);
    sodium_memzero(sk, sizeof(sk));
    vc_release_hex(sig, sizeof(sig), sig_hex);
    char *ep = vc_config_endpoint(cfg, "ctl-vc-fed");
    const char *args[] = {sig_hex};
    Vc__Reply *r = NULL;
    int rc = vc_ctl_call_payload(zctx, ep, "trust-change", args, 1, text, len, 10000, &r);
    free(ep);
    free(text);
    if (rc < 0)
        fprintf(stderr, "vc trust: vc-fed does not answer: %s\n", vc_strerror(rc));
    else if (!r->ok)
        fprintf(stderr, "vc trust: %s\n", r->message);
    else
        printf("%s\n", r->message);
    rc = rc < 0 || !r->ok;
    if (r)
        vc__reply__free_unpacked(r, NULL);
    return rc;
}

static void print_keys(const Vc__Reply *r, int json)
{
    if (json)
        printf("[");
    else
        printf("%-24s %-46s %s\n", "NAME", "PUBLIC KEY", "ADDED BY");
    for (size_t i = 0; i < r->n_records; i++) {
        const Vc__Record *k = r->records[i];
        if (json) {
            printf("%s{", i ? "," : "");
            cli_print_json_fields(k->fields, k->n_fields);
            printf("}");
        } else
            printf("%-24s %-46s %s\n", vc_record_get(k, "name"), vc_record_get(k, "public_key"),
                   vc_record_get(k, "added_by"));
    }
    if (json)
        printf("]\n");
}

int cmd_trust(cli_t *cli, int argc, char **argv)
{
    const char *verb = argc >= 2 ? argv[1] : "";
    const char *signer = argc >= 4 && !strcmp(argv[argc - 2], "--key") ? argv[argc - 1] : NULL;
    int json = argc == 3 && !strcmp(argv[2], "--json"), n = argc - (signer ? 2 : 0);
    if (!((!strcmp(verb, "add") && n == 4) || (!strcmp(verb, "remove") && n == 3) ||
          (!strcmp(verb, "list") && (argc == 2 || json)))) {
        fprintf(stderr, "usage: vc trust add NAME PUBLIC_KEY|FILE.pub [--key SIGNER] | remove NAME [--key SIGNER] | "
                        "list [--json]\n");
        return 2;
    }
    vc_config_t *cfg = cli_running_config(cli);
    if (cfg == NULL)
        return 1;
    if (cli_fed_absent(cfg)) {
        fprintf(stderr, "vc trust: %s\n", cli_fed_absent(cfg));
        vc_config_destroy(&cfg);
        return 1;
    }
    char *key = !strcmp(verb, "add") ? public_key_arg(argv[3]) : NULL;
    void *zctx = zmq_ctx_new();
    int rc;
    if (signer) {
        rc = trust_signed(zctx, cfg, key != NULL, argv[2], key, signer);
    } else {
        const char *args[2] = {argc >= 3 ? argv[2] : NULL, key};
        char daemon_verb[32];
        snprintf(daemon_verb, sizeof(daemon_verb), "trust-%s", verb);
        Vc__Reply *r = NULL;
        rc = cli_call(zctx, cfg, "vc-fed", daemon_verb, args, !strcmp(verb, "list") ? 0 : (size_t)argc - 2, &r) < 0 ||
             r == NULL || !r->ok;
        if (!rc && !strcmp(verb, "list"))
            print_keys(r, json);
        else if (!rc)
            printf("%s\n", r->message);
        else if (r)
            fprintf(stderr, "vc trust %s: %s\n", verb, r->message);
        if (r)
            vc__reply__free_unpacked(r, NULL);
    }
    free(key);
    zmq_ctx_term(zctx);
    vc_config_destroy(&cfg);
    return rc;
}
