"""Shared by the Python tests of `s2s serve` (serve_api, serve_soak): the
checks and their counts, and a server on a free port of 127.0.0.1."""
import atexit
import http.client
import resource
import signal
import socket
import subprocess
import sys

counts = {"passed": 0, "failed": 0}
running = []  # servers to kill should the test die half-way
atexit.register(lambda: [p.kill() for p in running if p.poll() is None])


def check(name, cond, detail=""):
    counts["passed" if cond else "failed"] += 1
    if not cond:
        print(f"FAIL: {name} {detail}", flush=True)


def finish(name):
    """The closing line ctest reads, and the exit status."""
    print(f"{name}: {counts['passed']} passed, {counts['failed']} failed")
    sys.exit(1 if counts["failed"] else 0)


class Server:
    """S2S serve ARGS on --port 0, the port read from its first line;
    memory: a bound on its address space, so that an allocation past it
    fails as on a full machine; stderr: where its messages go (a pipe is
    read only when it fails to start: a long test sends them elsewhere)."""

    def __init__(self, s2s, *args, memory=None, stderr=subprocess.PIPE):
        def limit():
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        self.p = subprocess.Popen([s2s, "serve", "--port", "0", *args], stdout=subprocess.PIPE,
                                  stderr=stderr, text=True,
                                  preexec_fn=limit if memory else None)
        running.append(self.p)
        line = self.p.stdout.readline()
        if not line.startswith("listening on http://127.0.0.1:"):
            why = self.p.stderr.read() if self.p.stderr else ""
            raise SystemExit(f"no listening line: {line!r} {why}")
        self.port = int(line.rsplit(":", 1)[1])

    def send(self, method, path, body=None, headers=None, timeout=60):
        """One request on a connection of its own: (status, body bytes, response)."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, data, r

    def raw(self, data, read=True, timeout=10):
        """Sends bytes on a connection of their own; returns what came back
        before the server closed it, reset it or went quiet for timeout."""
        s = socket.create_connection(("127.0.0.1", self.port), timeout=timeout)
        s.sendall(data)
        out = b""
        try:
            while read:
                chunk = s.recv(65536)
                if not chunk:
                    break
                out += chunk
        except (socket.timeout, ConnectionResetError):
            pass
        s.close()
        return out

    def stop(self, timeout=60):
        self.p.send_signal(signal.SIGTERM)
        try:
            return self.p.wait(timeout=timeout)
        finally:
            self.p.stdout.close()
            if self.p.stderr:
                self.p.stderr.close()
