/*
 * A minimal test harness: CHECK records a failure with file and line and
 * goes on; the test's main returns vc_test_result().
 */
#ifndef VC_TEST_H
#define VC_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int vc_test_failures;
static int vc_test_checks;

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        vc_test_checks++;                                                                                              \
        if (!(cond)) {                                                                                                 \
            vc_test_failures++;                                                                                        \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);                                   \
        }                                                                                                              \
    } while (0)

#define CHECK_STR(a, b)                                                                                                \
    do {                                                                                                               \
        const char *a_ = (a), *b_ = (b);                                                                               \
        vc_test_checks++;                                                                                              \
        if (a_ == NULL || b_ == NULL || strcmp(a_, b_) != 0) {                                                         \
            vc_test_failures++;                                                                                        \
            fprintf(stderr, "%s:%d: CHECK_STR failed: \"%s\" != \"%s\"\n", __FILE__, __LINE__, a_ ? a_ : "(null)",     \
                    b_ ? b_ : "(null)");                                                                               \
        }                                                                                                              \
    } while (0)

#define CHECK_CONTAINS(hay, needle)                                                                                    \
    do {                                                                                                               \
        const char *h_ = (hay), *n_ = (needle);                                                                        \
        vc_test_checks++;                                                                                              \
        if (h_ == NULL || strstr(h_, n_) == NULL) {                                                                    \
            vc_test_failures++;                                                                                        \
            fprintf(stderr, "%s:%d: \"%s\" does not contain \"%s\"\n", __FILE__, __LINE__, h_ ? h_ : "(null)", n_);    \
        }                                                                                                              \
    } while (0)

static inline int vc_test_result(const char *name)
{
    fprintf(stderr, "%s: %d checks, %d failed\n", name, vc_test_checks, vc_test_failures);
    return vc_test_failures ? 1 : 0;
}

/* A fresh temporary directory; caller frees the string. */
static inline char *vc_test_tmpdir(void)
{
    char tmpl[] = "/tmp/vc-test-XXXXXX";
    char *d = mkdtemp(tmpl);
    return d ? strdup(d) : NULL;
}

/* Writes text to dir/name, creating subdirectories as needed. */
static inline void vc_test_write(const char *dir, const char *name, const char *text)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    for (char *p = path + strlen(dir) + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(path, 0755);
            *p = '/';
        }
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static inline void vc_test_rmtree(const char *dir)
{
    char cmd[4200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}

#endif
