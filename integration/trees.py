"""Files the tests lay out for a site, readable as a web server's would be."""
import os


def write_tree(base, files):
    """Writes {path relative to base: text or bytes} under base."""
    for name, data in files.items():
        path = os.path.join(base, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb" if isinstance(data, bytes) else "w") as f:
            f.write(data)


def open_to_all(top):
    """Directories 0755 and files 0644 below top, top itself 0711 (crossed,
    not listed): the suite's user, the pools' and the reference servers'
    read them, whoever runs the test."""
    for d, _, files in os.walk(top):
        os.chmod(d, 0o755 if d != top else 0o711)
        for f in files:
            os.chmod(os.path.join(d, f), 0o644)
