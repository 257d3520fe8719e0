"""`vc up --root DIR` recognises the application DIR holds and serves the
document root it needs (cli/detect.c): Laravel and Symfony from public/,
Drupal's Composer layout from web/, Drupal, WordPress and MediaWiki from
DIR itself, any other tree with public/index.php from public/; it says
what it found, and --no-detect serves DIR as given. The trees here carry
each application's telltale files, not the applications."""
import os

import pytest

from conftest import curl

TREES = {
    "Laravel": ({"artisan": "#!/usr/bin/env php", "public/index.php": "<?php echo 'laravel';"}, "public"),
    "Symfony": ({"bin/console": "#!/usr/bin/env php", "public/index.php": "<?php echo 'symfony';"}, "public"),
    "Drupal (Composer layout)": ({"web/core/lib/Drupal.php": "<?php", "web/index.php": "<?php echo 'drupal';"},
                                 "web"),
    "Drupal": ({"core/lib/Drupal.php": "<?php", "index.php": "<?php echo 'drupal';"}, ""),
    "WordPress": ({"wp-login.php": "<?php", "wp-includes/version.php": "<?php", "index.php": "<?php echo 'wp';"}, ""),
    "MediaWiki": ({"includes/MediaWiki.php": "<?php", "index.php": "<?php echo 'wiki';"}, ""),
    "an application with public/index.php": ({"public/index.php": "<?php echo 'plain';"}, "public"),
}


def make_tree(base, files):
    for rel, text in files.items():
        path = os.path.join(base, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    for d, _, names in os.walk(base):
        os.chmod(d, 0o755)
        for n in names:
            os.chmod(os.path.join(d, n), 0o644)


@pytest.mark.parametrize("app", list(TREES))
def test_vc_up_serves_the_root_the_application_needs_and_says_so(make_suite, tmp_path, app):
    files, sub = TREES[app]
    tree = str(tmp_path / "app")
    make_tree(tree, files)
    os.chmod(tmp_path, 0o755)
    s = make_suite(root=tree).start()
    try:
        served = os.path.join(tree, sub) if sub else tree
        assert f"vc up: {tree} holds {app}: serving {served} " in s.logs(), s.logs()[-2000:]
        index = files[os.path.join(sub, "index.php") if sub else "index.php"]
        assert curl(s.url("/"))[2] == index[len("<?php echo '"):-2].encode()
        # What it left out of the document root stays out of reach.
        if sub:
            assert curl(s.url("/" + sub + "/index.php"))[0] == 404
    finally:
        s.stop()


def test_no_detect_serves_the_directory_as_given(make_suite, tmp_path):
    tree = str(tmp_path / "app")
    make_tree(tree, TREES["Laravel"][0])
    os.chmod(tmp_path, 0o755)
    s = make_suite(root=tree, args=["--no-detect"]).start()
    try:
        assert "holds" not in s.logs()
        assert curl(s.url("/public/index.php"))[2] == b"laravel"
    finally:
        s.stop()


def test_mediawikis_data_directory_beside_its_tree_is_writable(make_suite, tmp_path):
    """MediaWiki's installer keeps its SQLite database in ../data, beside
    the tree: the pool's wall would make it read-only ("the wiki is in
    read-only mode"), so `vc up --root` makes it one of php.writable_dirs,
    and says so. Without it, the write is refused."""
    tree, data = str(tmp_path / "w" / "wiki"), str(tmp_path / "w" / "data")
    files = dict(TREES["MediaWiki"][0])
    files["write.php"] = ("<?php echo @file_put_contents(dirname(__DIR__) . '/data/wiki.sqlite', 'x') !== false"
                          " ? 'wrote' : 'refused';")
    make_tree(tree, files)
    os.makedirs(data)
    os.chmod(data, 0o755)
    for d in (tmp_path, tmp_path / "w"):
        os.chmod(d, 0o755)
    s = make_suite(root=tree).start()
    try:
        assert f"vc up: the application keeps its data in {data}: writable to its PHP" in s.logs(), s.logs()[-2000:]
        assert curl(s.url("/write.php"))[2] == b"wrote"
    finally:
        s.stop()
    s = make_suite(root=tree, args=["--no-detect"]).start()
    try:
        assert curl(s.url("/write.php"))[2] == b"refused"
    finally:
        s.stop()
