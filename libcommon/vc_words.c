/* A command line into its words (vc_words.h). */
#include "vc_words.h"
#include "vc_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WORDS_MAX_LINE 4096

void vc_words_free(char **argv)
{
    for (char **w = argv; w && *w; w++)
        free(*w);
    free(argv);
}

int vc_words_split(const char *s, char ***argv, size_t *argc, char *err, size_t errlen)
{
    *argv = NULL;
    *argc = 0;
    size_t len = strlen(s);
    if (len > WORDS_MAX_LINE) {
        snprintf(err, errlen, "a command of more than %d bytes", WORDS_MAX_LINE);
        return -1;
    }
    char **out = vc_calloc(len / 2 + 2, sizeof(*out)); /* at most a word every two bytes */
    char *word = vc_malloc(len + 1);
    size_t n = 0, wl = 0;
    int in_word = 0;
    const char *why = NULL;
    for (const char *p = s; *p; p++) {
        if (*p == ' ' || *p == '\t' || *p == '\n') {
            if (in_word) {
                word[wl] = '\0';
                out[n++] = vc_strdup(word);
                wl = 0;
                in_word = 0;
            }
            continue;
        }
        in_word = 1;
        if (*p == '\'') {
            const char *q = strchr(p + 1, '\'');
            if (q == NULL) {
                why = "an unclosed ' quote";
                break;
            }
            memcpy(word + wl, p + 1, (size_t)(q - p - 1));
            wl += (size_t)(q - p - 1);
            p = q;
        } else if (*p == '"') {
            for (p++; *p && *p != '"'; p++) {
                if (*p == '\\' && p[1] && strchr("\"\\$`", p[1]))
                    p++;
                word[wl++] = *p;
            }
            if (*p != '"') {
                why = "an unclosed \" quote";
                break; /* p is at the NUL: the loop's p++ would pass it */
            }
        } else if (*p == '\\') {
            if (p[1] == '\0') {
                why = "a backslash at the end";
                break;
            }
            word[wl++] = *++p;
        } else {
            word[wl++] = *p;
        }
    }
    if (!why && in_word) {
        word[wl] = '\0';
        out[n++] = vc_strdup(word);
    }
    free(word);
    if (!why && n == 0)
        why = "no command";
    if (why) {
        snprintf(err, errlen, "%s", why);
        vc_words_free(out);
        return -1;
    }
    *argv = out;
    *argc = n;
    return 0;
}
