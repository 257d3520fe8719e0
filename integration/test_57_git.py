"""`vc deploy SITE --git URL|PATH --ref REF` (docs/deploys.md, "From
Git"): a local repository deployed at a tag and at a branch, with a
submodule (checked out with it), the commit in the release's message; a
ref that is not there deploys nothing."""
import json
import os
import subprocess

from test_45_deploy import deployed, get, write_app  # noqa: F401 (deployed is a fixture)

GIT = ["git", "-c", "user.name=Deployer", "-c", "user.email=d@example.test", "-c", "init.defaultBranch=main",
       "-c", "protocol.file.allow=always"]


def git(cwd, *args):
    return subprocess.run(GIT + list(args), cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def make_repos(tmp):
    """The app's repository: v1 tagged on main, v2 on the branch next; its
    lib/shared a submodule of its own repository."""
    shared = os.path.join(tmp, "shared-lib")
    os.makedirs(shared)
    git(shared, "init", "-q")
    with open(os.path.join(shared, "hello.php"), "w") as f:
        f.write("<?php return 'from the submodule';\n")
    git(shared, "add", ".")
    git(shared, "commit", "-q", "-m", "lib")
    repo = os.path.join(tmp, "repo")
    write_app(repo, "v1")
    git(repo, "init", "-q")
    git(repo, "submodule", "add", "-q", shared, "lib/shared")
    with open(os.path.join(repo, "public", "sub.php"), "w") as f:
        f.write("<?php echo require __DIR__ . '/../lib/shared/hello.php';\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "v1")
    git(repo, "tag", "v1")
    v1 = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "-b", "next")
    write_app(repo, "v2")
    git(repo, "commit", "-q", "-am", "v2")
    v2 = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "main")
    return repo, v1, v2


def test_deploy_from_git_at_a_tag_and_a_branch_with_a_submodule(deployed, tmp_path):
    s = deployed
    repo, v1, v2 = make_repos(str(tmp_path))
    r = s.vc("deploy", "deploy", "--git", repo, "--ref", "v1", timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"checked out v1 of {repo}: commit {v1}" in r.stdout
    assert get(s, "/")[1].startswith("v1 v1")
    assert get(s, "/sub.php") == (200, "from the submodule")
    releases = json.loads(s.vc("releases", "deploy", "--json", check=True).stdout)
    assert releases[-1]["message"] == f"git v1 {v1}", releases
    # A branch the clone has only as the remote's, and a message of one's own.
    r = s.vc("deploy", "deploy", "--git", repo, "--ref", "next", "--message", "the next one", timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert get(s, "/")[1].startswith("v2 v2")
    releases = json.loads(s.vc("releases", "deploy", "--json", check=True).stdout)
    assert releases[-1]["message"] == f"the next one (git next {v2})", releases
    # Nothing of git's own is shipped.
    current = os.path.realpath(os.path.join(s.srv, "current"))
    assert not os.path.exists(os.path.join(current, ".git"))
    assert not os.path.exists(os.path.join(current, "lib", "shared", ".git"))
    # A ref that is not there: said, and nothing deployed.
    r = s.vc("deploy", "deploy", "--git", repo, "--ref", "v9", timeout=60)
    assert r.returncode != 0 and 'has no tag, branch or commit "v9"' in r.stderr, r.stderr
    assert get(s, "/")[1].startswith("v2 v2")
    # --ref without --git, and --git with a DIR too, are usage errors.
    assert s.vc("deploy", "deploy", "--ref", "v1").returncode == 2
    assert s.vc("deploy", "deploy", repo, "--git", repo).returncode == 2
