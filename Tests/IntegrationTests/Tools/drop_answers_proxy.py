#!/usr/bin/env python3
"""A TCP proxy on 127.0.0.1 that loses some of the server's answers.

The request reaches the server whole; when the server's answer comes back, the proxy drops it with the
given probability and closes the client's connection instead: the server has stored the upload, the
client never hears so. That is the moment a lost answer (a mobile network, a load balancer timing out,
a crash) leaves a client that must send again without knowing whether its first send arrived.

    drop_answers_proxy.py --upstream PORT [--drop 0.2] [--seed N]

Prints "listening PORT" as the first line of stdout; runs until killed. Counts go to stderr on
SIGTERM.
"""
import argparse
import asyncio
import os
import random
import signal
import sys

parser = argparse.ArgumentParser()
parser.add_argument("--upstream", type=int, required=True)
parser.add_argument("--drop", type=float, default=0.2)
parser.add_argument("--seed", type=int, default=None)
args = parser.parse_args()
rng = random.Random(args.seed)
counts = {"answers": 0, "dropped": 0, "connections": 0}


async def close(writer):
    try:
        writer.close()
        await writer.wait_closed()
    except Exception:
        pass


async def client_to_server(client_reader, server_writer):
    try:
        while True:
            data = await client_reader.read(65536)
            if not data:
                break
            server_writer.write(data)
            await server_writer.drain()
    except Exception:
        pass
    finally:
        try:
            server_writer.write_eof()
        except Exception:
            pass


async def server_to_client(server_reader, client_writer, server_writer):
    try:
        while True:
            data = await server_reader.read(65536)
            if not data:
                break
            # An answer begins with its status line; the reference server's answers fit one read.
            if data.startswith(b"HTTP/"):
                counts["answers"] += 1
                if rng.random() < args.drop:
                    counts["dropped"] += 1
                    transport = client_writer.transport
                    # A reset, as a dead peer or a middlebox would leave it.
                    transport.abort()
                    await close(server_writer)
                    return
            client_writer.write(data)
            await client_writer.drain()
    except Exception:
        pass
    await close(client_writer)
    await close(server_writer)


async def handle(client_reader, client_writer):
    counts["connections"] += 1
    try:
        server_reader, server_writer = await asyncio.open_connection("127.0.0.1", args.upstream)
    except Exception:
        client_writer.transport.abort()
        return
    await asyncio.gather(
        client_to_server(client_reader, server_writer),
        server_to_client(server_reader, client_writer, server_writer),
    )


async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    print("listening %d" % port, flush=True)
    loop = asyncio.get_running_loop()

    def stop():
        # At once: connections still open must not keep the process alive.
        print(f"answers={counts['answers']} dropped={counts['dropped']} connections={counts['connections']}",
              file=sys.stderr, flush=True)
        os._exit(0)

    loop.add_signal_handler(signal.SIGTERM, stop)
    await server.serve_forever()


asyncio.run(main())
