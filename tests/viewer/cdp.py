"""A small Chrome DevTools Protocol client over a websocket, Python standard library only.

Starts headless Chromium with a fresh profile, opens one page, and sends CDP commands
(Page, Runtime, Log, Network) to it. Used by tests/viewer/test_viewer.py.

    with Browser() as b:
        b.navigate("file:///tmp/page.html")
        b.evaluate("1 + 1")          # -> 2
        png = b.screenshot()         # PNG bytes

Every wait has a deadline: nothing here blocks for ever.
"""

import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import urllib.parse
import http.client

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "chrome")


class CDPError(Exception):
    pass


def find_chromium():
    """Path of a Chromium executable, or None. $MBK_CHROMIUM overrides."""
    env = os.environ.get("MBK_CHROMIUM")
    if env:
        return env if os.access(env, os.X_OK) else None
    for n in CHROMIUM_NAMES:
        p = shutil.which(n)
        if p:
            return p
    return None


class WebSocket:
    """Just enough of RFC 6455 for CDP: text frames, client masking, fragments, ping."""

    def __init__(self, url, timeout):
        u = urllib.parse.urlparse(url)
        self.sock = socket.create_connection((u.hostname, u.port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        req = ("GET %s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % (u.path, u.hostname, u.port, key))
        self.sock.sendall(req.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise CDPError("websocket handshake: connection closed")
            head += chunk
        status = head.split(b"\r\n", 1)[0]
        if b" 101 " not in status:
            raise CDPError("websocket handshake refused: %r" % status)
        self.buf = head.split(b"\r\n\r\n", 1)[1]

    def _read(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(max(65536, n - len(self.buf)))
            if not chunk:
                raise CDPError("websocket closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def send(self, text, opcode=1):
        data = text.encode() if isinstance(text, str) else text
        head = bytes([0x80 | opcode])
        n = len(data)
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 65536:
            head += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i & 3] for i, b in enumerate(data)) if n < 4096 else _mask_fast(data, mask)
        self.sock.sendall(head + mask + masked)

    def recv(self):
        message = b""
        while True:
            b0, b1 = self._read(2)
            opcode, n = b0 & 0x0F, b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            mask = self._read(4) if b1 & 0x80 else None
            data = self._read(n)
            if mask:
                data = _mask_fast(data, mask)
            if opcode == 8:
                raise CDPError("websocket closed by the browser")
            if opcode == 9:
                self.send(data, opcode=10)
                continue
            if opcode in (0, 1, 2):
                message += data
                if b0 & 0x80:
                    return message.decode("utf-8", "replace")

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def _mask_fast(data, mask):
    n = len(data)
    m = (mask * (n // 4 + 1))[:n]
    return (int.from_bytes(data, "little") ^ int.from_bytes(m, "little")).to_bytes(n, "little")


class Browser:
    """Headless Chromium with one page target, driven through CDP."""

    def __init__(self, width=1280, height=800, timeout=60):
        self.exe = find_chromium()
        if not self.exe:
            raise FileNotFoundError("chromium not found")
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="mbk-chromium-")
        args = [self.exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--no-first-run", "--no-default-browser-check",
                "--disable-extensions", "--disable-sync", "--mute-audio", "--hide-scrollbars",
                "--use-angle=swiftshader", "--enable-unsafe-swiftshader",
                "--force-device-scale-factor=1", "--window-size=%d,%d" % (width, height),
                "--user-data-dir=" + self.profile, "--remote-debugging-port=0", "about:blank"]
        self.log = open(os.path.join(self.profile, "chromium.log"), "w")
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        self.events = []
        self.next_id = 0
        self.ws = None
        try:
            port = self._port()
            self.ws = WebSocket(self._page_ws(port), timeout)
            # the viewport itself is width x height CSS pixels at scale 1
            self.send("Emulation.setDeviceMetricsOverride", {"width": width, "height": height,
                                                             "deviceScaleFactor": 1, "mobile": False})
        except Exception:
            self.close()
            raise

    def _port(self):
        path = os.path.join(self.profile, "DevToolsActivePort")
        deadline = time.time() + self.timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise CDPError("chromium exited with status %s before listening (log: %s)"
                               % (self.proc.returncode, self._log_tail()))
            try:
                with open(path) as f:
                    first = f.readline().strip()
                if first.isdigit():
                    return int(first)
            except OSError:
                pass
            time.sleep(0.05)
        raise CDPError("chromium did not open its debugging port within %d s" % self.timeout)

    def _page_ws(self, port):
        deadline = time.time() + self.timeout
        while time.time() < deadline:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            try:
                conn.request("GET", "/json/list")
                targets = json.loads(conn.getresponse().read().decode())
            finally:
                conn.close()
            pages = [t for t in targets if t.get("type") == "page" and t.get("webSocketDebuggerUrl")]
            if pages:
                return pages[0]["webSocketDebuggerUrl"]
            time.sleep(0.1)
        raise CDPError("no page target in chromium")

    def _log_tail(self):
        try:
            self.log.flush()
            with open(os.path.join(self.profile, "chromium.log")) as f:
                return f.read()[-1500:]
        except OSError:
            return ""

    def send(self, method, params=None, timeout=None):
        """Send a command and wait for its result; events that arrive meanwhile are kept."""
        self.next_id += 1
        my = self.next_id
        self.ws.send(json.dumps({"id": my, "method": method, "params": params or {}}))
        deadline = time.time() + (timeout or self.timeout)
        while True:
            self.ws.sock.settimeout(max(0.1, deadline - time.time()))
            try:
                msg = json.loads(self.ws.recv())
            except socket.timeout:
                raise CDPError("%s: no answer within %s s" % (method, timeout or self.timeout))
            if msg.get("id") == my:
                if "error" in msg:
                    raise CDPError("%s: %s" % (method, msg["error"]))
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)
            if time.time() > deadline:
                raise CDPError("%s: no answer within %s s" % (method, timeout or self.timeout))

    def wait_event(self, method, timeout=None):
        deadline = time.time() + (timeout or self.timeout)
        seen = 0
        while True:
            for e in self.events[seen:]:
                if e["method"] == method:
                    return e
            seen = len(self.events)
            if time.time() > deadline:
                raise CDPError("no %s within %s s" % (method, timeout or self.timeout))
            self.ws.sock.settimeout(max(0.1, deadline - time.time()))
            try:
                msg = json.loads(self.ws.recv())
            except socket.timeout:
                continue
            if "method" in msg:
                self.events.append(msg)

    def navigate(self, url, timeout=None):
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(domain + ".enable")
        self.events = [e for e in self.events if e["method"] != "Page.loadEventFired"]
        self.send("Page.navigate", {"url": url})
        self.wait_event("Page.loadEventFired", timeout)

    def evaluate(self, expr, await_promise=False, timeout=None):
        r = self.send("Runtime.evaluate", {"expression": expr, "returnByValue": True,
                                           "awaitPromise": await_promise}, timeout)
        if "exceptionDetails" in r:
            d = r["exceptionDetails"]
            raise CDPError("evaluating %r: %s" % (expr[:80], d.get("exception", {}).get("description", d.get("text"))))
        return r.get("result", {}).get("value")

    def screenshot(self):
        r = self.send("Page.captureScreenshot", {"format": "png"})
        return base64.b64decode(r["data"])

    def problems(self):
        """Console errors, uncaught exceptions, error log entries and requests for anything but the
        page itself (file:) or inline data (data:, blob:), as text lines."""
        out = []
        for e in self.events:
            m, p = e["method"], e.get("params", {})
            if m == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                out.append("uncaught exception: %s" % d.get("exception", {}).get("description", d.get("text")))
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                args = " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))
                out.append("console.%s: %s" % (p.get("type"), args))
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append("log error: %s (%s)" % (p["entry"].get("text"), p["entry"].get("url", "")))
            elif m == "Network.requestWillBeSent":
                url = p.get("request", {}).get("url", "")
                if not url.startswith(("file:", "data:", "blob:", "about:")):
                    out.append("the page fetched %s" % url)
        return out

    def console_warnings(self):
        return ["console.warning: " + " ".join(str(a.get("value", "")) for a in e["params"].get("args", []))
                for e in self.events
                if e["method"] == "Runtime.consoleAPICalled" and e["params"].get("type") == "warning"]

    def close(self):
        if self.ws:
            try:
                self.send("Browser.close", timeout=5)
            except Exception:
                pass
            self.ws.close()
            self.ws = None
        if self.proc and self.proc.poll() is None:
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(self.proc.pid, 9)
                except OSError:
                    pass
                self.proc.wait(timeout=10)
        self.log.close()
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
