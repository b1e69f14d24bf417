/**
 * The relay inside a sandbox (docs/architecture.md §13): listens on 127.0.0.1:<port> and joins
 * each connection to the sandbox's Unix socket of the egress proxy. Python 3 from the
 * Runtime Assets (no socat there); run by the exec's shell before its command with
 * `python3 -c "$WORKCELL_EGRESS_RELAY"`. The parent returns once the port listens (so the
 * command never races it) and the daemon child holds no stdio of the exec. It exits when
 * its socket is gone (the run ended), so in a container, where it outlives the exec, the
 * next run's relay gets the port: a bind that fails waits for that (up to 3 s), unless the
 * relay already there serves this same socket (an earlier exec of the same run). It runs as
 * the sandbox user: killing it only takes the sandbox's own network away.
 */
export const RELAY_SOURCE = `
import os, socket, threading, time
port = int(os.environ["WORKCELL_EGRESS_PORT"])
path = os.environ["WORKCELL_EGRESS_SOCKET"]
marker = "/tmp/.workcell-relay-%d" % port
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
deadline = time.time() + 3
while True:
    try:
        server.bind(("127.0.0.1", port))
        break
    except OSError:
        try:
            with open(marker) as f:
                if f.read() == path:
                    raise SystemExit(0)
        except OSError:
            pass
        if time.time() > deadline:
            raise SystemExit(1)
        time.sleep(0.05)
server.listen(128)
try:
    with open(marker, "w") as f:
        f.write(path)
except OSError:
    pass
if os.fork():
    os._exit(0)
os.setsid()
null = os.open(os.devnull, os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)
def watch():
    while os.path.exists(path):
        time.sleep(0.5)
    os._exit(0)
threading.Thread(target=watch, daemon=True).start()
def pump(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    try:
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        pass
def serve(client):
    upstream = socket.socket(socket.AF_UNIX)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        upstream.close()
        return
    back = threading.Thread(target=pump, args=(upstream, client), daemon=True)
    back.start()
    pump(client, upstream)
    back.join()
    client.close()
    upstream.close()
while True:
    try:
        client, _ = server.accept()
    except OSError:
        continue
    threading.Thread(target=serve, args=(client,), daemon=True).start()
`;
