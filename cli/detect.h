/*
 * What application a directory given to `vc up --root` holds, and the
 * document root it needs (detect.c): Laravel and Symfony serve public/,
 * Drupal's Composer layout web/, WordPress, MediaWiki and Drupal's own
 * tarball the directory itself, and any other tree with public/index.php
 * its public/. Each of them runs through index.php as its front
 * controller, the suite's default.
 */
#ifndef VC_CLI_DETECT_H
#define VC_CLI_DETECT_H

typedef struct detected {
    const char *app; /* "Laravel", ...; NULL: nothing recognised */
    char *root;      /* the document root to serve (caller frees); NULL with app NULL */
    char *data;      /* its data directory outside its tree, where one exists (caller frees), or NULL */
} detected_t;

/* dir: an existing directory, as given. */
detected_t detect_app(const char *dir);

#endif
