#!/usr/bin/env python3
"""The viewer page of `mbk run --html` in headless Chromium (docs/viewer.md).

    test_viewer.py --mbk build/apps/mbk --poses build/tests/viewer_poses --work DIR

For the default model and for a URDF with every kind of visual: the page loads with
no console error, no exception and no request for anything outside it; the 3-D
canvas is not blank; two screenshots at different playback times differ where the
bodies are and agree everywhere else (the background); scrubbing (the slider, a drag
on a plot, the test hook's seek) sets the time, and at a sample's time the body
poses the page draws (read back from its instance matrices) are the poses of the
trajectory file's q (computed by viewer_poses through the library). A model with no
bodies and a run that stopped early still produce a page that says so; the four-bar
draws its constraint line; a 1000-body chain is thinned to the page's frame budget
and drawn with a handful of draw calls.

Prints one line per check and "N passed, N failed". Exit 0, 1 on a failure, 77 when
no chromium is installed (ctest SKIP_RETURN_CODE). Python standard library only.
"""

import argparse
import math
import os
import struct
import subprocess
import sys
import time
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cdp  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
passed = failed = 0


def check(ok, what, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("ok    %s" % what)
    else:
        failed += 1
        print("FAIL  %s%s" % (what, (": " + detail) if detail else ""))
    sys.stdout.flush()
    return ok


# ---------------------------------------------------------------- PNG decoding

def decode_png(data):
    """(width, height, channels, rows) of an 8-bit RGB or RGBA PNG; rows are bytearrays."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and ctype in (2, 6) and interlace == 0, "unsupported PNG"
            ch = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    raw = zlib.decompress(idat)
    stride = w * ch
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f == 1:
            for i in range(ch, stride):
                line[i] = (line[i] + line[i - ch]) & 255
        elif f == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif f == 3:
            for i in range(stride):
                left = line[i - ch] if i >= ch else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 255
        elif f == 4:
            for i in range(stride):
                a = line[i - ch] if i >= ch else 0
                b = prev[i]
                c = prev[i - ch] if i >= ch else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return w, h, ch, rows


def shot(b, rect):
    """The part [x0, y0, x1, y1] (CSS px; inner pixels) of a screenshot of the page, decoded.
    (The whole viewport is captured and cut here: a clipped capture may be laid out anew.)"""
    w, h, ch, rows = decode_png(b.screenshot())
    x0, y0 = int(math.ceil(rect[0])), int(math.ceil(rect[1]))
    x1, y1 = min(w, int(rect[2])), min(h, int(rect[3]))
    return x1 - x0, y1 - y0, ch, [bytearray(r[x0 * ch:x1 * ch]) for r in rows[y0:y1]], (x0, y0)


def pixel(img, x, y):
    w, h, ch, rows = img[:4]
    return tuple(rows[y][x * ch:x * ch + 3])


# ---------------------------------------------------------------- helpers

def run(cmd, expect=0):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    if r.returncode != expect:
        print("  %s -> %d\n  stdout: %s\n  stderr: %s" % (" ".join(cmd), r.returncode, r.stdout[-800:], r.stderr[-800:]))
    return r


def read_csv_times(path):
    with open(path) as f:
        next(f)
        return [float(line.split(",", 1)[0]) for line in f if line.strip()]


def reference_poses(poses_exe, model, csv, rows):
    r = run([poses_exe, model, csv] + [str(k) for k in rows])
    out = {}
    for line in r.stdout.splitlines():
        w = line.split()
        out[(int(w[0]), int(w[1]))] = [float(v) for v in w[3:10]]
    return out


def pose_error(a, b):
    """(position error, rotation angle error) between two (x y z qw qx qy qz)."""
    dp = math.sqrt(sum((a[i] - b[i]) ** 2 for i in range(3)))
    na = math.sqrt(sum(v * v for v in a[3:])) or 1
    nb = math.sqrt(sum(v * v for v in b[3:])) or 1
    dot = abs(sum(a[3 + i] * b[3 + i] for i in range(4))) / (na * nb)
    return dp, 2 * math.acos(min(1.0, dot))


def key(b, name, code, modifiers=0):
    """A key pressed and released on the page (CDP's Input domain); modifiers 2: Ctrl."""
    for kind in ("keyDown", "keyUp"):
        b.send("Input.dispatchKeyEvent", {"type": kind, "key": name, "code": code, "modifiers": modifiers,
                                          "windowsVirtualKeyCode": {"ArrowLeft": 37, "ArrowRight": 39}.get(name, 70)})


def camera(b):
    return b.evaluate("mbkViewer.three().camera.position.toArray()")


def settle(b):
    """Let the page draw and the compositor present a frame."""
    b.evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))", await_promise=True)


def load(b, path):
    b.events = []
    b.navigate("file://" + os.path.abspath(path))
    deadline = time.time() + 30
    while not b.evaluate("!!(window.mbkViewer && mbkViewer.ready)"):
        if time.time() > deadline:
            return False
        time.sleep(0.1)
    settle(b)
    return True


# ---------------------------------------------------------------- the checks of one page

def check_page(b, name, page, model, csv, poses_exe, times_to_compare):
    if not check(load(b, page), "%s: the page loads and its script runs" % name):
        return
    problems = b.problems()
    check(not problems, "%s: no console error, exception or request outside the page" % name, "; ".join(problems))
    check(b.evaluate("mbkViewer.webgl"), "%s: WebGL is on (the 3-D view is drawn)" % name)

    nb = b.evaluate("mbkViewer.nBodies")
    times = b.evaluate("mbkViewer.times()")
    csv_t = read_csv_times(csv)
    check(len(times) == len(csv_t) and all(abs(a - c) <= 1e-9 * max(1, abs(c)) for a, c in zip(times, csv_t)),
          "%s: the page holds the trajectory's %d sample times" % (name, len(csv_t)),
          "%d in the page" % len(times))

    # the canvas is not blank
    canvas = b.evaluate("mbkViewer.canvasRect()")
    ta, tb = times_to_compare
    b.evaluate("mbkViewer.seek(%r)" % ta)
    settle(b)
    img_a = shot(b, canvas)
    rects_a = b.evaluate("mbkViewer.bodyRects()")
    w, h, ch, rows, origin = img_a
    bg = pixel(img_a, 2, 2)
    colours = set()
    not_bg = 0
    for y in range(0, h, 2):
        for x in range(0, w, 2):
            p = pixel(img_a, x, y)
            colours.add(p)
            if max(abs(p[i] - bg[i]) for i in range(3)) > 8:
                not_bg += 1
    check(not_bg > 200 and len(colours) > 20, "%s: the canvas is not blank" % name,
          "%d non-background pixels, %d colours" % (not_bg, len(colours)))

    # two playback times: they differ where the bodies are, agree elsewhere
    b.evaluate("mbkViewer.seek(%r)" % tb)
    settle(b)
    img_b = shot(b, canvas)
    rects_b = b.evaluate("mbkViewer.bodyRects()")
    margin = 3
    boxes = [(r[0] - origin[0] - margin, r[1] - origin[1] - margin, r[2] - origin[0] + margin,
              r[3] - origin[1] + margin) for r in rects_a + rects_b]
    inside = outside = 0
    for y in range(h):
        ra, rb = img_a[3][y], img_b[3][y]
        if ra == rb:
            continue
        for x in range(w):
            if ra[x * ch:x * ch + 3] != rb[x * ch:x * ch + 3]:
                if any(x0 <= x <= x1 and y0 <= y <= y1 for x0, y0, x1, y1 in boxes):
                    inside += 1
                else:
                    outside += 1
    check(inside > 100, "%s: the screenshots at t = %g and %g s differ where the bodies are" % (name, ta, tb),
          "%d pixels differ there" % inside)
    check(outside == 0, "%s: and agree on the background (everywhere else)" % name,
          "%d pixels differ outside the bodies" % outside)

    # scrubbing: the slider, a drag on the energy plot
    t_mid = 0.5 * (times[0] + times[-1])
    b.evaluate("mbkViewer.play()")
    b.evaluate("(() => { const s = document.getElementById('time-slider'); s.value = %r;"
               " s.dispatchEvent(new Event('input')); })()" % t_mid)
    got = b.evaluate("mbkViewer.time()")
    check(abs(got - t_mid) < 1e-9 * max(1, t_mid) and not b.evaluate("mbkViewer.playing()"),
          "%s: the time slider scrubs (pauses, t = %g s)" % (name, t_mid), "t = %r" % got)
    plot = b.evaluate("(() => { const r = document.getElementById('plot-e').getBoundingClientRect();"
                      " return [r.left, r.top, r.width, r.height]; })()")
    # the plot's axes span x0 = 52 px to W - 8 px of the canvas (viewer.js drawPlotBase)
    x_at = lambda frac: plot[0] + 52 + frac * (plot[2] - 60)
    y = plot[1] + plot[3] / 2
    for kind, x in (("mousePressed", x_at(0.2)), ("mouseMoved", x_at(0.5)), ("mouseMoved", x_at(0.75)),
                    ("mouseReleased", x_at(0.75))):
        b.send("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left",
                                            "buttons": 0 if kind == "mouseReleased" else 1, "clickCount": 1})
    got = b.evaluate("mbkViewer.time()")
    want = times[0] + 0.75 * (times[-1] - times[0])
    check(abs(got - want) <= 0.01 * (times[-1] - times[0]), "%s: dragging the plot cursor scrubs to t = %.3g s"
          % (name, want), "t = %r" % got)

    # scrubbing to a sample's time draws the trajectory file's poses
    rows = sorted({0, len(times) // 3, (2 * len(times)) // 3, len(times) - 1})
    ref = reference_poses(poses_exe, model, csv, rows)
    worst_p = worst_r = 0.0
    missing = 0
    for k in rows:
        b.evaluate("mbkViewer.seek(%r)" % times[k])
        got = b.evaluate("Array.from({length: mbkViewer.nBodies}, (_, i) => mbkViewer.bodyPose(i))")
        for body in range(1, nb):
            if got[body] is None or (k, body) not in ref:
                missing += 1
                continue
            dp, dr = pose_error(got[body], ref[(k, body)])
            scale = max(1.0, max(abs(v) for v in ref[(k, body)][:3]))
            worst_p, worst_r = max(worst_p, dp / scale), max(worst_r, dr)
    check(missing == 0 and worst_p < 2e-6 and worst_r < 1e-5,
          "%s: scrubbing to t sets the poses the trajectory file holds for t (%d times x %d bodies)"
          % (name, len(rows), nb - 1),
          "worst position error %.2e (relative), rotation %.2e rad, %d missing" % (worst_p, worst_r, missing))
    problems = b.problems()
    check(not problems, "%s: still no console error after the interaction" % name, "; ".join(problems))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mbk", required=True)
    ap.add_argument("--poses", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    if not cdp.find_chromium():
        print("chromium is not installed (Debian's chromium package; scripts/install-deps.sh): skipped")
        return 77
    os.makedirs(a.work, exist_ok=True)
    os.chdir(a.work)
    mbk = os.path.abspath(a.mbk)
    urdf = os.path.join(HERE, "arm_shapes.urdf")
    with open("empty.urdf", "w") as f:
        f.write('<?xml version="1.0"?>\n<robot name="empty"><link name="world"/></robot>\n')

    r = run([mbk, "run", "--t-final", "4", "--html", "default.html", "--output", "default.csv", "--plot", "none"])
    check(r.returncode == 0 and os.path.getsize("default.html") > 500000,
          "mbk run --html writes the page of the default model")
    r = run([mbk, "run", urdf, "--q0", "shoulder=1.2,elbow=-0.5", "--t-final", "2", "--html", "arm.html",
             "--output", "arm.csv", "--plot", "none"])
    check(r.returncode == 0, "mbk run URDF --html writes the page of a URDF model")
    r = run([mbk, "run", "empty.urdf", "--t-final", "1", "--html", "empty.html", "--output", "none", "--plot", "none"])
    check(r.returncode == 0 and os.path.exists("empty.html"), "a model with no bodies: the page is written")
    r = run([mbk, "run", "--t-final", "1", "--interval", "0.5", "--max-steps", "2", "--html", "early.html",
             "--output", "none", "--plot", "none"], expect=1)
    check(r.returncode == 1 and os.path.exists("early.html"), "a run that stops early: the page is still written")
    r = run([mbk, "view", "builtin:fourbar", "--html", "fourbar.html"])
    check(r.returncode == 0 and "viewer" in r.stdout, "mbk view writes a page (four-bar)")
    r = run([mbk, "run", "builtin:drop", "--t-final", "1", "--html", "drop.html", "--output", "none", "--plot", "none"])
    check(r.returncode == 0, "a model with contact: the page is written (builtin:drop)")
    r = run([mbk, "run", "builtin:drop", "--gravity", "0,-9.81,0", "--t-final", "0.2", "--html", "dropy.html",
             "--output", "none", "--plot", "none"])
    check(r.returncode == 0, "contact under gravity along -y: the page is written")
    r = run([mbk, "run", "builtin:chain:2", "--t-final", "0.2", "--html", "outfail.html", "--output",
             "/proc/nope/x.csv", "--plot", "none"], expect=4)
    check(r.returncode == 4 and os.path.exists("outfail.html"), "a finished run whose CSV cannot be written: exit 4, "
          "the page written")
    r = run([mbk, "run", "builtin:chain:1000", "--t-final", "1", "--html", "chain1000.html", "--output", "none",
             "--plot", "none"])
    check(r.returncode == 0, "a 1000-body chain: the page is written (%.1f MB)"
          % (os.path.getsize("chain1000.html") / 1e6 if os.path.exists("chain1000.html") else 0))
    with open("default.html", encoding="utf-8") as f:
        html = f.read()
    check('REVISION="111"' in html or "REVISION = '111'" in html or "REVISION=\"111\"" in html,
          "the page embeds three.js r111 (Debian's libjs-three)")
    check(not any(s in html for s in ('src="http', "src='http", 'href="http', "import(")),
          "the page names no outside script or style")

    try:
        browser = cdp.Browser()
    except FileNotFoundError:
        print("chromium is not installed: skipped")
        return 77
    with browser as b:
        check_page(b, "default model", "default.html", "builtin:chain:5", "default.csv", a.poses, (0.0, 1.0))
        check_page(b, "URDF", "arm.html", urdf, "arm.csv", a.poses, (0.0, 0.3))

        for page, words in (("empty.html", "no bodies"), ("early.html", "stopped early")):
            if check(load(b, page), "%s loads" % page):
                status = b.evaluate("mbkViewer.status()") or ""
                check(words in status, "%s says '%s'" % (page, words), repr(status))
                check(not b.problems(), "%s: no console error" % page, "; ".join(b.problems()))
        status = b.evaluate("mbkViewer.status()") or ""
        check("failed at t =" in status, "the early stop's page gives the reason", repr(status))

        if check(load(b, "fourbar.html"), "the four-bar's page loads"):
            check(b.evaluate("mbkViewer.lines()") == 1, "it draws its loop-closing constraint as a line")
            check(not b.problems(), "fourbar.html: no console error", "; ".join(b.problems()))

        if check(load(b, "drop.html"), "the dropped box's page loads"):
            check(b.evaluate("mbkViewer.contacts()") == 8, "it draws its 8 contact spheres (and the ground plane)")
            check(not b.problems(), "drop.html: no console error", "; ".join(b.problems()))

        # contact with gravity along -y: the grid lies in the contact ground z = 0 and says so
        # (it stood across gravity, at y = -9.81, and its legend said "y = 0")
        if check(load(b, "dropy.html"), "the dropped box under gravity along -y loads"):
            g = b.evaluate("(() => { const g = mbkViewer.three().grid;"
                           " const n = new THREE.Vector3(0, 1, 0).applyQuaternion(g.quaternion);"
                           " return [n.x, n.y, n.z, g.position.z]; })()")
            legend = b.evaluate("document.getElementById('legend').textContent") or ""
            check(abs(g[2] - 1) < 1e-9 and abs(g[3]) < 1e-9 and "at z = 0 m (the contact ground)" in legend,
                  "its grid lies in the contact ground and its legend says z", "%r %r" % (g, legend))
        # the run finished: its page says nothing of an early stop when only the CSV failed
        if check(load(b, "outfail.html"), "outfail.html loads"):
            status = b.evaluate("mbkViewer.status()") or ""
            check("stopped early" not in status, "a finished run is not called stopped early", repr(status))

        # keys: an arrow steps one frame and leaves the camera (OrbitControls' own keys panned it
        # once the scene had been clicked); between two frames, the left arrow goes to the one
        # before the time (it skipped it); Ctrl+F is the browser's, not Fit
        if check(load(b, "default.html"), "default.html loads again"):
            T = b.evaluate("mbkViewer.times()")
            c = b.evaluate("mbkViewer.canvasRect()")
            x, y = (c[0] + c[2]) / 2, (c[1] + c[3]) / 2
            for kind in ("mousePressed", "mouseReleased"):
                b.send("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1})
            b.evaluate("mbkViewer.seek(%r)" % ((T[5] + T[6]) / 2))
            cam = camera(b)
            key(b, "ArrowLeft", "ArrowLeft")
            check(b.evaluate("mbkViewer.time()") == T[5], "left arrow between frames 5 and 6: frame 5",
                  repr(b.evaluate("mbkViewer.time()")))
            key(b, "ArrowRight", "ArrowRight")
            check(b.evaluate("mbkViewer.time()") == T[6] and camera(b) == cam,
                  "right arrow: the next frame, the camera where it was", "%r %r" % (camera(b), cam))
            b.evaluate("mbkViewer.three().camera.position.x += 1")
            cam = camera(b)
            key(b, "f", "KeyF", modifiers=2)
            check(camera(b) == cam, "Ctrl+F leaves the camera", "%r %r" % (camera(b), cam))
            key(b, "f", "KeyF")
            check(camera(b) != cam, "f fits the view")
            check(not b.problems(), "keys: no console error", "; ".join(b.problems()))

        if check(load(b, "chain1000.html"), "the 1000-body chain's page loads"):
            frames, samples = b.evaluate("[mbkViewer.frames, mbkViewer.samples]")
            check(frames < samples and frames * 1000 <= 250000,
                  "its trajectory is thinned to the frame budget (%d of %d samples)" % (frames, samples))
            check("frame" in (b.evaluate("mbkViewer.notes()") or ""), "the page states the budget")
            b.evaluate("mbkViewer.seek(0.5)")
            calls = b.evaluate("mbkViewer.drawCalls()")
            check(calls <= 20, "1000 bodies in %d draw calls (instanced meshes)" % calls)
            ms = b.evaluate("(() => { const t0 = performance.now(); for (let i = 0; i < 20; ++i)"
                            " mbkViewer.seek(0.05 * i); return (performance.now() - t0) / 20; })()")
            print("      a frame of the 1000-body chain takes %.1f ms of script to update and draw" % ms)
            b.evaluate("document.getElementById('loop').checked = false; mbkViewer.setSpeed(0.5); mbkViewer.seek(0)")
            fps, advanced, wall = b.evaluate(
                "new Promise(res => { let n = 0; mbkViewer.play(); const p0 = performance.now(), s0 = mbkViewer.time();"
                " function f() { ++n; const p = performance.now(); if (p - p0 < 800) requestAnimationFrame(f);"
                " else res([n / ((p - p0) / 1000), mbkViewer.time() - s0, (p - p0) / 1000]); }"
                " requestAnimationFrame(f); })", await_promise=True)
            b.evaluate("mbkViewer.pause()")
            print("      playing it: %.1f frames per second here (software WebGL), %.2f s of motion in %.2f s"
                  % (fps, advanced, wall))
            # the clock drives the motion: at 0.5x, half the wall time, less at most the two
            # frames the page's last update may lag behind
            frame = 1 / max(fps, 1)
            check(0.5 * (wall - 2 * frame) - 0.01 < advanced < 0.5 * wall + 0.01,
                  "it plays at the speed set (0.5x: %.2f s of motion in %.2f s)" % (advanced, wall))
            check(not b.problems(), "chain1000.html: no console error", "; ".join(b.problems()))

    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
