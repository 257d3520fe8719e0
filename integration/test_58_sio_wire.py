"""The front's Socket.IO packet reader (daemons/vc-front/realtime/sio_wire.c)
against the reference's (socket.io-parser, as socket.io 4.8 reads what a
client sends), on the same texts: the examples of the protocol's document,
packets a reader must refuse, the quirks of the reference (it reads the
type, the attachments and the ack id with JavaScript's Number(), so a space
counts as a digit), and thousands of mutations of them. Each reading is
compared: taken or refused, and if taken its type, namespace, ack id,
attachments and data. The differences that remain are listed with their
reason in KNOWN; any other fails."""
import json
import os
import random
import shutil
import subprocess

import pytest

from conftest import BUILD

NODE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "node")
READER = os.path.join(BUILD, "tests", "test_sio_wire")

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")

EXAMPLES = [
    # socket.io-protocol's "Packet encoding" and "Exchange protocol".
    "0", "0/admin,", '0/admin,{"token":"123"}', '0{"token":"123"}', "1/admin,", "1",
    '2["hello",1]', '2/admin,456["project:delete",123]', "3/admin,456[]", '4{"message":"Not authorized"}',
    '4/admin,{"message":"Not authorized"}', '51-["hello",{"_placeholder":true,"num":0}]',
    '61-/admin,456[{"_placeholder":true,"num":0}]', '52-["a",{"_placeholder":true,"num":0},'
    '{"_placeholder":true,"num":1}]', '2["chat message","hi there"]', '2/chat,["join","room 1"]',
    '2["a",{"nested":[1,2,{"x":null}]},true,false,null,1.5e3,"\\u00e9"]', "3[]", "31[]", '3/x,7["ok"]',
]
REFUSED = [
    "7", "x", "2[]", "2{}", '2["connect"]', '2["disconnect",1]', '2["disconnecting"]', '2["newListener"]',
    "2[null]", "2[true]", "2[[]]", "1{}", "1[]", "0[]", '0"a"', '56666600000000000000000000000-["a"]', '2["a"', "5-[]", '50-["a"]',
    '511-["a"]', '5["a"]', '51["a"]', "3{}", '3"a"', "4[]", '4/x,[]', "2[\"a\"]x", "0{}{}",
]
QUIRKS = [
    # What JavaScript's Number() makes of a space, a sign or a hex digit.
    "", " ", " 2", "\t0", "0 1", "41", '2 ["a"]', '21 2["a"]', '2 1["a"]', '2/a, 3["a"]', '5 1-["a"]', '51 -["a"]',
    '5+1-["a"]', '50x1-["a"]', '51.0-["a"]', '51e0-["a"]', '5-1-["a"]', '51.5-["a"]', '5 -["a"]',
    "2/a", "2/", "2/,", "2/a,/b", "2//,", '2/a,,["a"]', '2,["a"]', "3 ", "3  ", '2[1]', '2[-1,2]',
    '2["a"] ', ' 2["a"]', '2["a"]\n', '22 ["a"]', '2/ns with space,1["a"]', '2/a,b,1["a"]',
    '29007199254740991["a"]', '29007199254740992["a"]', '2007["a"]', '20x1["a"]', '0/admin,{"a":1}  ',
]
# The differences the front keeps, each with why, as (reason, test of
# the two readings).
KNOWN = [
    ("an ack id of 2^53 or more: the reference keeps it as a rounded double and answers with that; the front "
     "refuses the packet (a client numbers its acks from 0, one a call)",
     lambda ours, theirs: ours.get("why") == "ack id too large" and theirs["ok"] and theirs["id"] >= 2 ** 53),
]


def mutations(seed, count):
    """Texts made from the examples by inserting, deleting and replacing
    characters, deterministically."""
    rnd = random.Random(seed)
    alphabet = list("0123456789 \t-/,[]{}\":a.") + ["\x1e", "null", "true", "\\"]
    base = EXAMPLES + REFUSED + QUIRKS
    out = []
    for _ in range(count):
        s = rnd.choice(base)
        for _ in range(rnd.randint(1, 3)):
            k = rnd.randrange(len(s) + 1)
            op = rnd.random()
            if op < 0.4:
                s = s[:k] + rnd.choice(alphabet) + s[k:]
            elif op < 0.7 and s:
                s = s[:k] + s[k + 1:]
            elif s:
                s = s[:k] + rnd.choice(alphabet) + s[k + 1:]
        out.append(s)
    return out


def read(cmd, texts, cwd=None):
    # node with the sanitized run's preload would not start.
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS")}
    r = subprocess.run(cmd, input="".join(json.dumps(t) + "\n" for t in texts), capture_output=True, text=True,
                       timeout=120, cwd=cwd, env=env if cwd else None)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == len(texts), (len(lines), len(texts), r.stderr)
    return [json.loads(line) for line in lines]


def same(ours, theirs):
    """The two readings agree: both refuse, or both take it alike (the
    reasons a packet is refused are worded differently; the reference
    closes the connection on any)."""
    if ours["ok"] != theirs["ok"]:
        return False
    if not ours["ok"]:
        return True
    return all(ours.get(k) == theirs.get(k) for k in ("type", "nsp", "id", "attachments", "data"))


def test_the_front_reads_socketio_packets_as_the_reference_does():
    texts = EXAMPLES + REFUSED + QUIRKS + mutations(58, 5000)
    ours = read([READER, "--decode"], texts)
    theirs = read([shutil.which("node"), os.path.join(NODE_DIR, "sio_decode.mjs")], texts, cwd=NODE_DIR)
    differ = {t: (o, r) for t, o, r in zip(texts, ours, theirs) if not same(o, r)}
    unknown = {t: d for t, d in differ.items() if not any(test(*d) for _, test in KNOWN)}
    assert not unknown, dict(list(unknown.items())[:20])
    # The lists say what they claim.
    by_text = dict(zip(texts, theirs))
    assert all(by_text[t]["ok"] for t in EXAMPLES), [t for t in EXAMPLES if not by_text[t]["ok"]]
    assert not any(by_text[t]["ok"] for t in REFUSED), [t for t in REFUSED if by_text[t]["ok"]]
    # Enough of the mutations are taken to compare readings, not only refusals.
    taken = sum(1 for o in ours[len(EXAMPLES) + len(REFUSED) + len(QUIRKS):] if o["ok"])
    assert taken > 500, taken
