"""An HTTP/2 chat endpoint over TLS that ends its answers the ways libcurl 7.88 loses:

--mode end    a streamed answer of N bytes of text ("size:N" as the last user message),
              its last DATA and the empty END_STREAM frame written in one piece, as the
              Python h2 library and hypercorn end a stream;
--mode close  the first connection answers one event on each of its first --streams
              streams, then closes with a TLS close_notify and waits for the client's
              before its FIN (asyncio's TLS shutdown); later connections answer whole.

Prints "listening PORT" once ready. Needs the `h2` package (the SDK venv has it)."""
import argparse, asyncio, json, ssl
import h2.config, h2.connection, h2.events, h2.settings

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, default=0)
parser.add_argument("--cert", required=True)
parser.add_argument("--key", required=True)
parser.add_argument("--mode", choices=["end", "close"], required=True)
parser.add_argument("--streams", type=int, default=5)
args = parser.parse_args()
connections = 0


def event(delta, finish=None):
    chunk = {"id": "chatcmpl-h2", "object": "chat.completion.chunk", "created": 1, "model": "m",
             "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


def answer(size):
    return event({"content": "y" * size}) + event({}, "stop") + b"data: [DONE]\n\n"


async def serve(reader, writer):
    global connections
    connections += 1
    number = connections
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
    conn.initiate_connection()
    writer.write(conn.data_to_send())
    bodies, opened, pending = {}, 0, []
    while True:
        data = await reader.read(65536)
        if not data:
            break
        for ev in conn.receive_data(data):
            if isinstance(ev, h2.events.RequestReceived):
                bodies[ev.stream_id] = b""
            elif isinstance(ev, h2.events.DataReceived):
                bodies[ev.stream_id] = bodies.get(ev.stream_id, b"") + ev.data
                conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            elif isinstance(ev, h2.events.StreamEnded):
                request = json.loads(bodies.pop(ev.stream_id, b"{}") or b"{}")
                content = request.get("messages", [{}])[-1].get("content", "")
                size = int(content.split(":")[1]) if content.startswith("size:") else 100
                conn.send_headers(ev.stream_id, [(":status", "200"), ("content-type", "text/event-stream")])
                if args.mode == "close" and number == 1:
                    conn.send_data(ev.stream_id, event({"role": "assistant", "content": ""}))
                    opened += 1
                    continue
                pending.append((ev.stream_id, answer(size)))
        writer.write(conn.data_to_send())
        await writer.drain()
        # Each answer written whole after what the request's frames called for, its last
        # DATA and the empty END_STREAM frame in one write.
        for stream, body in pending:
            while body:
                piece = min(len(body), conn.max_outbound_frame_size, conn.local_flow_control_window(stream))
                conn.send_data(stream, body[:piece])
                body = body[piece:]
            conn.end_stream(stream)
            writer.write(conn.data_to_send())
            await writer.drain()
        pending.clear()
        if args.mode == "close" and number == 1 and opened >= args.streams:
            writer.close()
            return


async def main():
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(args.cert, args.key)
    context.set_alpn_protocols(["h2"])
    server = await asyncio.start_server(serve, "127.0.0.1", args.port, ssl=context)
    print("listening", server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()

asyncio.run(main())
