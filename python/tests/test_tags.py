"""cca.tag on the simulated device: the tag each block records (this
thread's own, else the shared one for threads without their own, unless
thread_only), nesting, the snapshot, the summary and the OOM report's
holders; figures equal the known allocations."""
import ctypes
import threading

import pytest

import cca
from cca import _lib
from cmem import _alloc, c_free, c_malloc

MiB = 1 << 20


def tag_of(device, p):
    for seg in cca.memory_snapshot():
        if seg["device"] != device:
            continue
        for b in seg["blocks"]:
            if b["address"] == p:
                return b.get("tag")
    raise AssertionError("no block at %#x" % p)


def in_thread(fn):
    out = []
    t = threading.Thread(target=lambda: out.append(fn()))
    t.start()
    t.join()
    return out[0]


def test_blocks_record_the_tag_in_force(shared_device):
    d = shared_device
    untagged = c_malloc(d, 4096)
    with cca.tag("optimizer"):
        own = c_malloc(d, 4096)
        other = in_thread(lambda: c_malloc(d, 4096))          # no tag of its own: the shared one
        with cca.tag("inner"):
            inner = c_malloc(d, 4096)
        back = c_malloc(d, 4096)
    with cca.tag("mine", thread_only=True):
        only = c_malloc(d, 4096)
        other2 = in_thread(lambda: c_malloc(d, 4096))         # thread_only: not shared
    after = c_malloc(d, 4096)
    assert [tag_of(d, p) for p in (untagged, own, other, inner, back, only, other2, after)] == \
        [None, "optimizer", "optimizer", "inner", "optimizer", "mine", None, None]
    for p in (untagged, own, other, inner, back, only, other2, after):
        c_free(d, p)


def test_decorator_and_bad_names(shared_device):
    d = shared_device

    @cca.tag("step")
    def step():
        return c_malloc(d, 8192)

    p = step()
    assert tag_of(d, p) == "step"
    c_free(d, p)
    with pytest.raises(TypeError):
        cca.tag(3)
    with pytest.raises(ValueError):
        cca.tag("")
    with pytest.raises(ValueError):
        cca.tag("two\nlines")
    assert cca.tag_name(0) is None and cca.tag_name(cca.tag("step").id) == "step"


def test_summary_and_oom_report_name_the_holders(small_device):
    d = small_device
    cca.empty_cache()
    with cca.tag("weights"):
        w = c_malloc(d, 20 * MiB)
    with cca.tag("activations"):
        x = c_malloc(d, 12 * MiB)
    s = cca.memory_summary(d)
    assert "Allocated by tag" in s and "weights" in s and "activations" in s
    assert s.index("weights") < s.index("activations")
    p = ctypes.c_void_p()
    st = _lib.lib().cca_malloc(_alloc(d), ctypes.byref(p), 48 * MiB, None)
    assert _lib.lib().cca_status_string(st) == b"CCA_ERROR_OUT_OF_MEMORY"
    r = cca.last_oom(d)
    assert r.holders[:2] == [("weights", 20 * MiB), ("activations", 12 * MiB)]
    assert "held by tag: weights 20.00 MiB, activations 12.00 MiB" in str(r)
    c_free(d, w)
    c_free(d, x)


def test_shared_tags_overlapping_across_threads(shared_device):
    """A enters, B enters, A leaves, B leaves: threads without their own tag
    get B's while it is open, then none - never a stale A."""
    d = shared_device
    a_in, b_in, leave_a, leave_b, a_out = (threading.Event() for _ in range(5))

    def run(name, entered, leave, done):
        with cca.tag(name):
            entered.set()
            leave.wait(5)
        done.set()

    ta = threading.Thread(target=run, args=("A", a_in, leave_a, a_out))
    tb = threading.Thread(target=run, args=("B", b_in, leave_b, threading.Event()))
    ta.start()
    a_in.wait(5)
    tb.start()
    b_in.wait(5)
    leave_a.set()
    a_out.wait(5)                                     # A left, B still open
    p = in_thread(lambda: c_malloc(d, 4096))
    leave_b.set()
    ta.join()
    tb.join()
    q = in_thread(lambda: c_malloc(d, 4096))
    assert (tag_of(d, p), tag_of(d, q)) == ("B", None)
    c_free(d, p)
    c_free(d, q)


def test_one_tag_object_nested_and_on_two_threads(shared_device):
    d = shared_device
    t = cca.tag("same")
    with t:
        with t:
            p = c_malloc(d, 4096)
        q = c_malloc(d, 4096)
        r = in_thread(lambda: (t.__enter__(), c_malloc(d, 4096), t.__exit__(None, None, None))[1])
    s = c_malloc(d, 4096)
    u = in_thread(lambda: c_malloc(d, 4096))
    assert [tag_of(d, x) for x in (p, q, r, s, u)] == ["same", "same", "same", None, None]
    for x in (p, q, r, s, u):
        c_free(d, x)
