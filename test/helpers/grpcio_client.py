# A strict gRPC client for the tests: Python grpcio (the C-core stack most non-Go gRPC clients use),
# from Debian's python3-grpcio. It reads one JSON object on stdin:
#   {"target": "127.0.0.1:1234", "tls": {"ca": "<PEM>", "serverName": "localhost"} | null,
#    "calls": [{"path": "/rpc/app.x.v1.XService/Method", "body": "<base64 message>",
#               "metadata": [["authorization", "Bearer …"]]}]}
# makes the calls in order on one channel (serialized bytes in and out, no generated stubs) and prints
# one JSON array: per call {code, details, initial, trailing, body} (body in base64 when OK).
# A call with "bodies": [...] instead of "body" is a bidirectional stream: every message is sent, the
# client closes its side, and the answers come back as "bodies" (base64), in order.
import base64
import json
import sys

import grpc


def main():
    request = json.load(sys.stdin)
    tls = request.get("tls")
    if tls is None:
        channel = grpc.insecure_channel(request["target"])
    else:
        credentials = grpc.ssl_channel_credentials(root_certificates=tls["ca"].encode())
        options = [("grpc.ssl_target_name_override", tls["serverName"])]
        channel = grpc.secure_channel(request["target"], credentials, options)
    results = []
    with channel:
        for call in request["calls"]:
            metadata = [tuple(pair) for pair in call.get("metadata", [])]
            if "bodies" in call:
                results.append(bidi(channel, call, metadata))
                continue
            method = channel.unary_unary(call["path"])
            body = base64.b64decode(call.get("body", ""))
            try:
                reply, rpc = method.with_call(body, metadata=metadata, timeout=call.get("timeout", 20))
                results.append(outcome(rpc, grpc.StatusCode.OK, rpc.details(), reply))
            except grpc.RpcError as error:
                results.append(outcome(error, error.code(), error.details(), None))
    json.dump(results, sys.stdout)


def bidi(channel, call, metadata):
    method = channel.stream_stream(call["path"])
    requests = [base64.b64decode(body) for body in call["bodies"]]
    responses = method(iter(requests), metadata=metadata, timeout=call.get("timeout", 20))
    bodies = []
    try:
        for reply in responses:
            bodies.append(base64.b64encode(reply).decode())
        result = outcome(responses, grpc.StatusCode.OK, responses.details(), None)
    except grpc.RpcError as error:
        result = outcome(error, error.code(), error.details(), None)
    result["bodies"] = bodies
    return result


def outcome(rpc, code, details, reply):
    return {
        "code": code.name,
        "details": details,
        "initial": pairs(rpc.initial_metadata()),
        "trailing": pairs(rpc.trailing_metadata()),
        "body": None if reply is None else base64.b64encode(reply).decode(),
    }


def pairs(metadata):
    return [[key, value if isinstance(value, str) else base64.b64encode(value).decode()] for key, value in (metadata or [])]


main()
