"""The pictures (cca.plot_timeline, cca.plot_segments, cca-replay --svg and
--segments-svg) opened in headless Chromium: a page parses each SVG, puts it
in the document and measures what the browser drew, against figures this
test computes from a synthetic trace and snapshot without the drawing code
(peaks, the refused event, segment and block sizes). Each SVG is also
screenshotted on its own. Chromium missing: skipped, unless
CCA_REQUIRE_CHROMIUM=1 (CI), where that fails."""
import json
import os
import shutil
import struct
import subprocess
import zlib

import pytest

import cca

MiB = 1 << 20
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

if not CHROMIUM:
    if os.environ.get("CCA_REQUIRE_CHROMIUM") == "1":
        raise RuntimeError("CCA_REQUIRE_CHROMIUM=1 but no chromium on PATH (apt-get install chromium)")
    pytestmark = pytest.mark.skip(reason="no chromium on PATH (apt-get install chromium): the pictures are not opened")

# (action, id, MiB): on a 256 MiB device with no reserve, d (200 MiB) cannot
# be served whatever the configuration (128 MiB of b and c are live), and
# everything else can.
EVENTS = [("allocate", "a", 64), ("allocate", "b", 64), ("free", "a", 64), ("allocate", "c", 32),
          ("allocate", "d", 200), ("free", "c", 32), ("allocate", "e", 40), ("free", "e", 40), ("free", "b", 64)]
DEVICE = 256 * MiB


def write_trace(path):
    with open(path, "w") as f:
        f.write("#cca-trace 1 device=0 device_memory=%d\nThread,Time,Action,Pointer,Size,Stream\n" % DEVICE)
        for i, (act, name, mib) in enumerate(EVENTS):
            f.write("0,00:00:00.%06d,%s,0x%x,%d,0\n" % (i, act, 0x1000 + ord(name), mib * MiB))


def expected_run():
    """Peak live bytes and the refused event, by hand: a request is refused
    when live bytes and it exceed the device (here, only d)."""
    live, peak, refused, sizes = 0, 0, None, {}
    for i, (act, name, mib) in enumerate(EVENTS):
        if act == "allocate":
            if live + mib * MiB > DEVICE:
                refused = i if refused is None else refused
                continue
            sizes[name] = mib * MiB
            live += mib * MiB
            peak = max(peak, live)
        elif name in sizes:
            live -= sizes.pop(name)
    return peak, refused


PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><style>body{margin:0}</style></head><body>
<pre id="out"></pre>
<script>
var errors = [];
window.onerror = function (m) { errors.push(String(m)); };
var ce = console.error; console.error = function () { errors.push(Array.prototype.join.call(arguments, ' ')); ce.apply(console, arguments); };
var text = %s;
var doc = new DOMParser().parseFromString(text, 'image/svg+xml');
var res = {errors: errors, parse_error: doc.getElementsByTagName('parsererror').length > 0};
if (!res.parse_error) {
  var svg = document.importNode(doc.documentElement, true);
  document.body.appendChild(svg);
  var o = svg.getBoundingClientRect();
  function box(e) { var r = e.getBoundingClientRect(); return {x: r.left - o.left, y: r.top - o.top, w: r.width, h: r.height}; }
  function attrs(e) { var a = {}; for (var i = 0; i < e.attributes.length; i++) a[e.attributes[i].name] = e.attributes[i].value; return a; }
  res.panels = [];
  svg.querySelectorAll('g.timeline, g.segmap').forEach(function (g) {
    var p = {kind: g.getAttribute('class'), attrs: attrs(g), lines: [], ooms: [], segments: []};
    var plot = g.querySelector('rect.plot');
    if (plot) p.plot = {box: box(plot), attrs: attrs(plot)};
    g.querySelectorAll('polyline').forEach(function (l) { p.lines.push({cls: l.getAttribute('class'), conf: l.getAttribute('data-conf'), box: box(l)}); });
    g.querySelectorAll('line.oom').forEach(function (l) { p.ooms.push({conf: l.getAttribute('data-conf'), event: l.getAttribute('data-event'), box: box(l)}); });
    g.querySelectorAll('rect.segment').forEach(function (s) {
      var blocks = [];
      s.parentNode.querySelectorAll('rect.block').forEach(function (b) { blocks.push({state: b.getAttribute('data-state'), box: box(b)}); });
      p.segments.push({box: box(s), blocks: blocks});
    });
    res.panels.push(p);
  });
}
document.getElementById('out').textContent = JSON.stringify(res);
</script></body></html>
"""


def chromium(*args):
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr"] +
                          list(args), capture_output=True, text=True, timeout=120)


def measure(svg_path, tmp_path):
    with open(svg_path) as f:
        text = f.read()
    page = tmp_path / ("page-%s.html" % os.path.basename(svg_path))
    page.write_text(PAGE % json.dumps(text))
    p = chromium("--window-size=1000,4000", "--dump-dom", page.as_uri())
    assert p.returncode == 0, p.stderr[-2000:]
    start = p.stdout.index('<pre id="out">') + len('<pre id="out">')
    res = json.loads(p.stdout[start:p.stdout.index("</pre>", start)].replace("&quot;", '"').replace("&amp;", "&")
                     .replace("&lt;", "<").replace("&gt;", ">"))
    assert not res["parse_error"], "the SVG does not parse"
    assert res["errors"] == []
    assert "Uncaught" not in p.stderr and "CONSOLE" not in p.stderr, p.stderr[-2000:]
    return res


def png_pixels(path):
    """(width, height, rows of RGB(A) tuples) of an 8-bit RGB or RGBA PNG."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, w = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, colour = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and colour in (2, 6), (depth, colour)
            bpp = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, rows, prev, stride = zlib.decompress(idat), [], bytearray(w * bpp), w * bpp
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


def drawn_fraction(svg_path, tmp_path):
    """The SVG opened on its own and screenshotted: the share of pixels not the white background."""
    height = int(open(svg_path).read().split('height="', 1)[1].split('"', 1)[0])
    shot = tmp_path / (os.path.basename(svg_path) + ".png")
    p = chromium("--window-size=960,%d" % height, "--screenshot=%s" % shot, "file://" + os.path.abspath(svg_path))
    assert p.returncode == 0 and shot.exists(), p.stderr[-2000:]
    w, h, bpp, rows = png_pixels(str(shot))
    ink = sum(1 for r in rows for i in range(0, w * bpp, bpp) if r[i:i + 3] != b"\xff\xff\xff")
    return ink / float(w * h)


def check_timeline(panel, want):
    """Each configuration's reserved and live lines top out at its peaks, the OOM marker at the refused event."""
    a = panel["plot"]["attrs"]
    x0, y0, w, h = (float(a[k]) for k in ("x", "y", "width", "height"))
    n, top = int(a["data-events"]), float(a["data-max-bytes"])
    assert n == len(EVENTS)
    tops = {(l["conf"], l["cls"]): l["box"]["y"] for l in panel["lines"]}
    assert sorted(tops) == sorted((c, k) for c in want for k in ("live", "reserved"))
    for conf, (live, reserved, event) in want.items():
        assert abs(tops[(conf, "live")] - (y0 + h - live * h / top)) <= 1, (conf, tops)
        assert abs(tops[(conf, "reserved")] - (y0 + h - reserved * h / top)) <= 1, (conf, tops)
    ooms = {m["conf"]: m for m in panel["ooms"]}
    assert sorted(ooms) == sorted(want)
    for conf, (_, _, event) in want.items():
        assert abs(ooms[conf]["box"]["x"] - (x0 + event * w / (n - 1))) <= 1, ooms[conf]


def test_timeline_draws_each_configurations_peaks_and_its_oom(tmp_path):
    trace = str(tmp_path / "run.csv")
    write_trace(trace)
    peak_live, refused = expected_run()
    assert (peak_live, refused) == (128 * MiB, 4)
    svg = str(tmp_path / "timeline.svg")
    out = cca.plot_timeline(trace, svg, device_memory=DEVICE, reserve=0)
    confs = out["traces"][0]["configurations"]
    assert [c["label"] for c in confs] == ["pytorch", "expandable", "lean"]
    want = {}
    for c in confs:
        assert c["fits"] is False and c["oom_event"] == refused and c["peak_live_bytes"] == peak_live
        want[c["label"]] = (peak_live, c["peak_reserved_bytes"], refused)
    # PyTorch's rules, by hand: a and b get segments of their own; c, then e (c freed), split a's
    assert want["pytorch"][1] == (64 + 64) * MiB
    res = measure(svg, tmp_path)
    kinds = [p["kind"] for p in res["panels"]]
    assert kinds[0] == "timeline" and kinds[1:] == ["segmap"] * 3      # and each configuration's segments at its OOM
    check_timeline(res["panels"][0], want)
    # PyTorch's segments at the refusal: b's 64 MiB and a's, split by c (32 MiB) and a 32 MiB hole
    pt = res["panels"][1]
    check_segments(pt, [(64 * MiB, [("active_allocated", 64 * MiB)]),
                        (64 * MiB, [("active_allocated", 32 * MiB), ("inactive", 32 * MiB)])], order_free=True)
    assert drawn_fraction(svg, tmp_path) >= 0.01


def check_segments(panel, segments, order_free=False):
    """One bar per segment and one box per block, widths proportional to the sizes within 1 px, boxes in place."""
    got = panel["segments"]
    if order_free:
        got = sorted(got, key=lambda s: [b["state"] for b in s["blocks"]])
        segments = sorted(segments, key=lambda s: [b[0] for b in s[1]])
    assert len(got) == len(segments)
    largest = max(size for size, _ in segments)
    px = max(s["box"]["w"] for s in got) / largest                     # px per byte, as drawn
    for s, (size, blocks) in zip(got, segments):
        assert abs(s["box"]["w"] - size * px) <= 1, (s, size)
        assert [b["state"] for b in s["blocks"]] == [b[0] for b in blocks]
        at = 0
        for b, (_, bsize) in zip(s["blocks"], blocks):
            assert abs(b["box"]["w"] - bsize * px) <= 1, (b, bsize)
            assert abs(b["box"]["x"] - (s["box"]["x"] + at * px)) <= 1, (b, at)
            at += bsize


SNAP = [  # (segment size, pool, [(state, block size)])
    (20 * MiB, "large", [("active_allocated", 8 * MiB), ("inactive", 4 * MiB), ("active_allocated", 8 * MiB)]),
    (2 * MiB, "small", [("active_allocated", 512 * 1024), ("active_pending_free", 512 * 1024), ("inactive", MiB)]),
    (60 * MiB, "large", [("inactive", 60 * MiB)]),
    (6 * MiB, "large", [("active_allocated", 6 * MiB)]),
]


def snapshot_dict():
    segs, at = [], 0x7f0000000000
    for size, pool, blocks in SNAP:
        bl, a = [], at
        for state, bs in blocks:
            bl.append({"address": a, "size": bs, "requested_size": bs, "state": state, "frames": []})
            a += bs
        segs.append({"device": 0, "address": at, "total_size": size, "stream": 0, "segment_type": pool,
                     "allocated_size": 0, "active_size": 0, "requested_size": 0, "blocks": bl})
        at += size + 64 * MiB
    return {"segments": segs, "device_traces": [[]]}


def test_segment_map_draws_one_bar_per_segment_and_one_box_per_block(tmp_path):
    svg = str(tmp_path / "segments.svg")
    cca.plot_segments(snapshot_dict(), svg)                              # a dict, as torch's _snapshot() gives it
    res = measure(svg, tmp_path)
    assert [p["kind"] for p in res["panels"]] == ["segmap"]
    check_segments(res["panels"][0], [(size, blocks) for size, _, blocks in SNAP])
    assert drawn_fraction(svg, tmp_path) >= 0.01
    # the same from a pickle file, through the command
    import pickle
    pk = tmp_path / "snap.pickle"
    pk.write_bytes(pickle.dumps(snapshot_dict(), protocol=4))
    exe = os.path.join(os.path.dirname(os.path.abspath(cca._lib.library_path())), "..", "tools", "cca-replay")
    if not os.path.exists(exe):
        exe = shutil.which("cca-replay")
    svg2 = str(tmp_path / "segments2.svg")
    p = subprocess.run([exe, "--segments-svg", svg2, str(pk)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    res = measure(svg2, tmp_path)
    check_segments(res["panels"][0], [(size, blocks) for size, _, blocks in SNAP])


def test_svg_of_a_snapshot_pickle_draws_its_replay_and_its_segments(tmp_path):
    """cca-replay --svg on a snapshot: the replay's timeline (its blocks live
    at the start, no OOM on 80 GiB), then the snapshot's own segments."""
    import pickle
    pk = tmp_path / "snap.pickle"
    pk.write_bytes(pickle.dumps(snapshot_dict(), protocol=4))
    svg = str(tmp_path / "both.svg")
    out = cca.replay(str(pk), device_memory="80GiB", reserve=0, svg=svg)
    (t,) = out["traces"]
    live = sum(bs for _, _, blocks in SNAP for state, bs in blocks if state != "inactive")
    assert all(c["peak_live_bytes"] == live and c["fits"] for c in t["configurations"])
    res = measure(svg, tmp_path)
    assert [p["kind"] for p in res["panels"]] == ["timeline", "segmap"]
    a = res["panels"][0]["plot"]["attrs"]
    y0, h, top = float(a["y"]), float(a["height"]), float(a["data-max-bytes"])
    for line in res["panels"][0]["lines"]:
        if line["cls"] == "live":
            assert abs(line["box"]["y"] - (y0 + h - live * h / top)) <= 1, line
    assert res["panels"][0]["ooms"] == []
    check_segments(res["panels"][1], [(size, blocks) for size, _, blocks in SNAP])


def test_bad_snapshots_are_refused_and_nothing_is_written(tmp_path):
    svg = tmp_path / "x.svg"
    with pytest.raises(cca.ReplayError, match="no list of segments"):
        cca.plot_segments({"segments": 3}, str(svg))
    bad = snapshot_dict()
    bad["segments"][0]["blocks"][0]["size"] = 400 * MiB                 # past its segment's end
    with pytest.raises(cca.ReplayError, match="outside its segment"):
        cca.plot_segments(bad, str(svg))
    bad["segments"][0]["blocks"][0]["size"] = MiB
    bad["segments"][0]["blocks"][0]["state"] = "haunted"
    with pytest.raises(cca.ReplayError, match="unknown state 'haunted'"):
        cca.plot_segments(bad, str(svg))
    assert not svg.exists()


def test_segment_map_of_this_process_from_cca_memory_snapshot(tmp_path, sim):
    """cca.plot_segments(cca.memory_snapshot()): the live allocator's own
    segments, one bar each, a box per block, in the order the snapshot lists them."""
    import ctypes
    from cca import _core, _lib
    dev = sim.fresh_device()
    a, lib, held = _core.allocator(dev), _lib.lib(), []
    for size in (3 * MiB, 30 * MiB, 700 * 1024, 12 * MiB):
        p = ctypes.c_void_p()
        assert lib.cca_malloc(a, ctypes.byref(p), size, None) == 0
        held.append(p)
    lib.cca_free(a, held.pop(1))                                         # a hole
    try:
        segs = [s for s in cca.memory_snapshot() if s["device"] == dev]
        assert len(segs) >= 3
        svg = str(tmp_path / "mine.svg")
        cca.plot_segments(segs, svg)
        res = measure(svg, tmp_path)
        want = [(s["total_size"], [(b["state"], b["size"]) for b in s["blocks"]]) for s in segs]
        check_segments(res["panels"][0], want)
        assert drawn_fraction(svg, tmp_path) >= 0.01
    finally:
        for p in held:
            lib.cca_free(a, p)
