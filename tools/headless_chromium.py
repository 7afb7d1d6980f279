#!/usr/bin/env python3
"""A real headless Chromium, driven over the DevTools protocol on a pipe - standard library only.

Chromium's --remote-debugging-pipe speaks the DevTools protocol as NUL-terminated JSON on file
descriptors 3 (to the browser) and 4 (from it): no port is opened, no websocket and no package
is needed. The tests and tools/docs_screenshots.py use it to load a page, read its rendered DOM
(Runtime.evaluate), wait for it to change (a bounded poll of a JavaScript predicate), save
screenshots and print it to PDF.

    with Chromium() as browser:
        page = browser.open("file:///tmp/diagnosis.html")
        page.evaluate("document.title")
        page.wait_for("document.querySelector('[data-drill=\"tainted-node\"]') !== null", "the drill")
        page.screenshot("/tmp/page.png")

The binary: $CHROMIUM, else chromium (Debian's package), chromium-browser, google-chrome.
"""
import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time

POLL = 0.1   # seconds between two looks of a bounded wait


class BrowserError(Exception):
    """The browser failed, answered with an error, or did not do what was waited for in time."""


def binary():
    """The Chromium to run, or None."""
    chosen = os.environ.get("CHROMIUM")
    return ((chosen and shutil.which(chosen)) or shutil.which("chromium")  # Debian's, toolchain/host-packages
            or shutil.which("chromium-browser") or shutil.which("google-chrome"))


class Chromium(object):
    """One headless browser process; pages are its tabs."""

    def __init__(self, width=1200, height=900, timeout=30.0, path=None):
        self.width, self.height, self.timeout = width, height, timeout
        self.path = path or binary()
        if not self.path:
            raise BrowserError("no Chromium: apt-get install chromium (or set CHROMIUM)")
        self.profile = tempfile.mkdtemp(prefix="headless-chromium-")
        self._next = 0
        self._buffer = b""
        self._events = []
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def fds():  # the browser reads fd 3 and writes fd 4
            a, b = os.dup(to_browser_r), os.dup(from_browser_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.log = open(os.path.join(self.profile, "chromium.log"), "wb")
        self.process = subprocess.Popen(
            [self.path, "--headless", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu",
             "--no-first-run", "--no-default-browser-check", "--disable-extensions",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--hide-scrollbars", "--mute-audio", "--user-data-dir=" + self.profile,
             "--window-size=%d,%d" % (width, height), "about:blank"],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log, pass_fds=(3, 4),
            preexec_fn=fds)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self.version = self.call("Browser.getVersion")["product"]

    # ------------------------------------------------------------------ the pipe
    def _read_message(self, deadline):
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("no answer from Chromium in %.0f s" % self.timeout)
            ready, _w, _x = select.select([self._from_browser], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise BrowserError("Chromium exited (%s); its log: %s" % (self.process.poll(), self._log_tail()))
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw.decode("utf-8"))

    def _log_tail(self):
        try:
            with open(os.path.join(self.profile, "chromium.log"), "rb") as handle:
                return handle.read()[-800:].decode("utf-8", "replace")
        except OSError:
            return "(none)"

    def call(self, method, params=None, session=None, timeout=None):
        """Send one command and return its result (events that arrive meanwhile are kept)."""
        self._next += 1
        message = {"id": self._next, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode("utf-8") + b"\0")
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            answer = self._read_message(deadline)
            if answer.get("id") == self._next:
                if "error" in answer:
                    raise BrowserError("%s: %s" % (method, answer["error"].get("message")))
                return answer.get("result") or {}
            if "method" in answer:
                self._events.append(answer)

    def event(self, method, session, timeout=None):
        """Wait (bounded) for an event of this session; returns its params."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            for i, event in enumerate(self._events):
                if event.get("method") == method and event.get("sessionId") == session:
                    del self._events[i]
                    return event.get("params") or {}
            self._events.append(self._read_message(deadline))

    # ------------------------------------------------------------------ pages
    def open(self, url, width=None, height=None):
        """A new tab showing url, once its load event fired."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session, target)
        page.call("Page.enable")
        page.call("Runtime.enable")
        page.call("Emulation.setDeviceMetricsOverride", {
            "width": width or self.width, "height": height or self.height, "deviceScaleFactor": 1,
            "mobile": False})
        page.goto(url)
        return page

    def close(self):
        if self.process.poll() is None:
            try:
                self.call("Browser.close", timeout=5)
            except BrowserError:
                pass
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        for fd in (self._to_browser, self._from_browser):
            try:
                os.close(fd)
            except OSError:
                pass
        self.log.close()
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Page(object):
    """One tab: navigate, read the DOM, wait for it, screenshot, print."""

    def __init__(self, browser, session, target):
        self.browser, self.session, self.target = browser, session, target
        self.console = []

    def call(self, method, params=None, timeout=None):
        return self.browser.call(method, params, self.session, timeout)

    def goto(self, url):
        answer = self.call("Page.navigate", {"url": url})
        if answer.get("errorText"):
            raise BrowserError("cannot load %s: %s" % (url, answer["errorText"]))
        self.browser.event("Page.loadEventFired", self.session)

    def evaluate(self, expression):
        """The value of a JavaScript expression in the page (promises awaited)."""
        answer = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True})
        if answer.get("exceptionDetails"):
            details = answer["exceptionDetails"]
            raise BrowserError("%s: %s" % (expression[:80], (details.get("exception") or {}).get(
                "description") or details.get("text")))
        return (answer.get("result") or {}).get("value")

    def wait_for(self, expression, what, timeout=30.0):
        """Poll a JavaScript expression until it is truthy (bounded); returns its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise BrowserError("waited %.0f s for %s (%s)" % (timeout, what, expression[:120]))
            time.sleep(POLL)  # poll interval of the bounded wait above

    def dom(self):
        """The rendered DOM as HTML (what --dump-dom prints)."""
        return self.evaluate("document.documentElement.outerHTML")

    def screenshot(self, path, full_page=True):
        params = {"format": "png"}
        if full_page:
            size = self.call("Page.getLayoutMetrics")["cssContentSize"]
            params.update(captureBeyondViewport=True, clip={
                "x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1})
        data = self.call("Page.captureScreenshot", params)["data"]
        with open(path, "wb") as handle:
            handle.write(base64.b64decode(data))
        return path

    def pdf(self, path):
        """The page as printed (print media, backgrounds kept as the page asks)."""
        data = self.call("Page.printToPDF", {"printBackground": True, "preferCSSPageSize": True})["data"]
        with open(path, "wb") as handle:
            handle.write(base64.b64decode(data))
        return path

    def close(self):
        self.browser.call("Target.closeTarget", {"targetId": self.target})
