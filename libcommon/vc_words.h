/*
 * A command line split into its words as a shell would quote them, with
 * no expansion: blanks separate words; '...' is literal; "..." keeps
 * blanks, with \" \\ \$ \` as escapes; a backslash outside quotes takes
 * the next character as it is. Nothing else is special: no variables,
 * globs, pipes or redirections, as supervisor's `command` (which runs
 * the program itself, not a shell; `sh -c '...'` where one is wanted).
 */
#ifndef VC_WORDS_H
#define VC_WORDS_H

#include <stddef.h>

/* The words of s into *argv (NULL-terminated, each word and the array
 * vc_words_free()'s) and their count. 0, or -1 with a message in err
 * (an unclosed quote, a trailing backslash, no word, a NUL-free line of
 * more than 4096 bytes). */
int vc_words_split(const char *s, char ***argv, size_t *argc, char *err, size_t errlen);
void vc_words_free(char **argv);

#endif
