/**
 * The relay inside a sandbox (ARCHITECTURE.md §13): listens on 127.0.0.1:<port> and joins
 * each connection to the sandbox's Unix socket of the egress proxy. Python 3 from the
 * Runtime Assets (no socat there); run by the exec's shell before its command with
 * `python3 -c "$WORKCELL_EGRESS_RELAY"`. The parent returns once the port listens (so the
 * command never races it) and the daemon child holds no stdio of the exec; a port already
 * bound (an earlier exec's relay in a container) is left as it is. It runs as the sandbox
 * user: killing it only takes the sandbox's own network away.
 */
export const RELAY_SOURCE = `
import os, socket, threading
port = int(os.environ["WORKCELL_EGRESS_PORT"])
path = os.environ["WORKCELL_EGRESS_SOCKET"]
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    server.bind(("127.0.0.1", port))
except OSError:
    raise SystemExit(0)
server.listen(128)
if os.fork():
    os._exit(0)
os.setsid()
null = os.open(os.devnull, os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)
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
