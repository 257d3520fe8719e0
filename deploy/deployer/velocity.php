<?php
/*
 * Velocity for Deployer 7: `vc deploy` from a team's own pipeline.
 *
 * Deployer builds the application as it always has (composer install,
 * assets); Velocity then signs the built tree, stages it on every node of
 * the site and switches them together (docs/deploys.md). Deployer's own
 * releases/ and `current` are not used: vc-fed keeps them on each node.
 *
 * In deploy.php:
 *
 *     require 'contrib/velocity.php';   // this file, copied beside deploy.php
 *     set('velocity_site', 'shop');
 *     set('velocity_source', __DIR__ . '/build');   // the built tree
 *     task('deploy', ['build', 'velocity:deploy']);
 *
 * `vc deploy` runs where Deployer runs (velocity_local, the default): the
 * deployer's key never leaves that machine, which must be one of the
 * site's nodes (a runner on a node, or a node itself). With velocity_local
 * false, the tree is uploaded to the first host and signed there with a
 * key kept on that host.
 */

namespace Deployer;

// The vc command; a shell fragment ("sudo -u deploy vc", "vc --data /srv/vc").
set('velocity_vc', 'vc');
// The site to deploy (required).
set('velocity_site', function () {
    throw error('velocity: set velocity_site, the site to deploy');
});
// The built tree to deploy.
set('velocity_source', function () {
    throw error('velocity: set velocity_source, the directory Deployer built');
});
// The key that signs (vc key new NAME); '' takes the only key there is.
set('velocity_key', '');
// Patterns never shipped, beside the site's deploy_exclude.
set('velocity_exclude', []);
// The release's message: the commit being deployed when there is one.
set('velocity_message', function () {
    $rev = has('target') ? get('target') : '';
    return trim('Deployer' . ($rev !== '' ? ': ' . $rev : ''));
});
// true: vc runs here; false: on the first host, over Deployer's ssh.
set('velocity_local', true);
// Where the tree goes on the host when velocity_local is false.
set('velocity_upload_to', '/tmp/velocity-deploy');

/* One vc command line, every argument quoted for the shell. */
function velocity_command(string $verb, array $args): string
{
    $line = get('velocity_vc') . ' ' . $verb;
    foreach ($args as $arg) {
        $line .= ' ' . escapeshellarg((string)$arg);
    }
    return $line;
}

/* Runs it where vc-fed is asked, with a bound a deploy fits in. */
function velocity_run(string $line): string
{
    $options = ['timeout' => 900];
    return get('velocity_local') ? runLocally($line, $options) : run($line, $options);
}

desc('Sign the built tree and switch every node of the site to it together');
task('velocity:deploy', function () {
    $source = get('velocity_source');
    if (!get('velocity_local')) {
        upload(rtrim($source, '/') . '/', get('velocity_upload_to'));
        $source = get('velocity_upload_to');
    }
    $args = [get('velocity_site'), $source, '--message', get('velocity_message')];
    if (get('velocity_key') !== '') {
        array_push($args, '--key', get('velocity_key'));
    }
    foreach (get('velocity_exclude') as $pattern) {
        array_push($args, '--exclude', $pattern);
    }
    writeln(velocity_run(velocity_command('deploy', $args)));
})->once();

desc('Switch every node back to the previous release (the one left is marked bad)');
task('velocity:rollback', function () {
    writeln(velocity_run(velocity_command('rollback', [get('velocity_site')])));
})->once();

desc("The site's releases: id, state, when, who signed, the message");
task('velocity:releases', function () {
    writeln(velocity_run(velocity_command('releases', [get('velocity_site')])));
})->once();
