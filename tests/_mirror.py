"""An HTTP mirror for the tests: python's http.server on 127.0.0.1 (an ephemeral port) serving a directory, started
and stopped by the test, with the paths it was asked for."""
import contextlib
import functools
import http.server
import threading


class _Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, fmt, *args):  # the paths asked for, not stderr
        self.server.asked.append(self.path)


@contextlib.contextmanager
def serving(directory):
    """``with serving(path) as mirror:`` ``mirror.url`` (http://127.0.0.1:PORT), ``mirror.asked`` (paths, in order)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Handler, directory=str(directory)))
    server.asked = []
    server.url = "http://127.0.0.1:%d" % server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
