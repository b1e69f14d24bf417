#!/usr/bin/env python3
# A fake dockerd for scripts/ensure-dockerd.sh's test: records how it was started, then
# answers the Docker CLI's `version` on the --host socket.
import http.server, json, os, socket, socketserver, sys
args = sys.argv[1:]
host = next(a.split("=", 1)[1] for a in args if a.startswith("--host="))
path = host[len("unix://"):]
with open(os.environ["FAKE_DOCKERD_MARKER"], "a") as f:
    f.write(json.dumps({"args": args, "sid": os.getsid(0), "pid": os.getpid()}) + "\n")
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self): self._answer()
    def do_HEAD(self): self._answer()
    def _answer(self):
        body = b"OK" if self.path.endswith("/_ping") else json.dumps({
            "Version": "fake", "ApiVersion": "1.41", "MinAPIVersion": "1.12", "GitCommit": "x",
            "GoVersion": "go", "Os": "linux", "Arch": "amd64", "KernelVersion": "k", "BuildTime": "t"}).encode()
        self.send_response(200)
        self.send_header("Api-Version", "1.41")
        self.send_header("Content-Type", "text/plain" if body == b"OK" else "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD": self.wfile.write(body)
class S(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
try: os.unlink(path)
except FileNotFoundError: pass
print("fake dockerd serving", path, flush=True)
S(path, H).serve_forever()
