/*
 * vc panel passwd USER [--random]: sets a panel user's password through
 * vc-panel's `passwd` verb (vc-panel is the one writer of its users
 * database). The password is read from the terminal without echo, twice,
 * or as one line from standard input; --random makes one and prints it.
 * Either way it must be changed at the next sign-in.
 */
#include "cli.h"
#include "vc_ctl.h"
#include "vc_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>
#include <zmq.h>

/* One line from stdin, without its newline; echo off on a terminal. */
static char *read_line(const char *prompt)
{
    int tty = isatty(STDIN_FILENO);
    struct termios old, quiet;
    if (tty) {
        fprintf(stderr, "%s", prompt);
        tcgetattr(STDIN_FILENO, &old);
        quiet = old;
        quiet.c_lflag &= ~(tcflag_t)ECHO;
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet);
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = getline(&line, &cap, stdin);
    if (tty) {
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &old);
        fprintf(stderr, "\n");
    }
    if (n < 0) {
        free(line);
        return NULL;
    }
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = '\0';
    return line;
}

int cmd_panel(cli_t *cli, int argc, char **argv)
{
    int random = argc == 4 && !strcmp(argv[3], "--random");
    if (argc < 3 || argc > 3 + random || strcmp(argv[1], "passwd") != 0) {
        fprintf(stderr, "usage: vc panel passwd USER [--random]\n");
        return 2;
    }
    char *password = NULL;
    if (!random) {
        password = read_line("new password: ");
        if (password && isatty(STDIN_FILENO)) {
            char *again = read_line("again: ");
            int same = again && strcmp(again, password) == 0;
            free(again);
            if (!same) {
                fprintf(stderr, "vc panel passwd: the two passwords differ\n");
                free(password);
                return 1;
            }
        }
        if (password == NULL || password[0] == '\0') {
            fprintf(stderr, "vc panel passwd: no password given (or use --random)\n");
            free(password);
            return 1;
        }
    }
    vc_config_t *cfg = cli_running_config(cli);
    if (cfg == NULL) {
        free(password);
        return 1;
    }
    void *zctx = zmq_ctx_new();
    char *ep = vc_config_endpoint(cfg, "ctl-vc-panel");
    const char *args[] = {argv[2]};
    Vc__Reply *r = NULL;
    int rc = vc_ctl_call_payload(zctx, ep, "passwd", args, 1, password, password ? strlen(password) : 0, 10000, &r);
    int status = 1;
    if (rc < 0) {
        fprintf(stderr, "vc panel passwd: vc-panel does not answer: %s (is panel.enable = true?)\n", vc_strerror(rc));
    } else if (!r->ok) {
        fprintf(stderr, "vc panel passwd: %s\n", r->message);
    } else {
        printf("%s\n", r->message);
        if (vc_reply_get(r, "password"))
            printf("password: %s\n", vc_reply_get(r, "password"));
        status = 0;
    }
    if (r)
        vc__reply__free_unpacked(r, NULL);
    free(ep);
    free(password);
    zmq_ctx_term(zctx);
    vc_config_destroy(&cfg);
    return status;
}
