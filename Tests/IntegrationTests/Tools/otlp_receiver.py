#!/usr/bin/env python3
"""An OTLP/HTTP receiver for the tests: decodes what exporters send with the official protobuf classes
(PyPI's opentelemetry-proto) and writes it as JSON lines, never with Attache's code.

  otlp_receiver.py OUT.jsonl
  otlp_receiver.py --discard       answers every export without decoding or writing it (a sink for
                                   Scripts/bench/observability.sh, cheap enough not to compete for the CPU)
  otlp_receiver.py --trace-delay S OUT.jsonl
                                   answers each span export S seconds late (a distant or busy collector)

Listens on 127.0.0.1 on a free port and prints `listening PORT`. Accepts POST /v1/traces, /v1/metrics
and /v1/logs with Content-Type application/x-protobuf (gzipped with Content-Encoding: gzip, or not),
answers each with the empty Export*ServiceResponse, and appends one line per span, metric data point and
log record:

  {"signal":"span","traceId","spanId","parentSpanId","name","kind","status","attributes":{},"resource":{},
   "events":[{"name","attributes"}],"links":[{"traceId","spanId"}]}
  {"signal":"metric","name","unit","attributes":{},"resource":{}}
  {"signal":"log","body","attributes":{},"resource":{}}

Then one line per request: {"signal":"request","path","items","encoding"}. Anything else is answered 404
or 415.
"""
import gzip
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest, ExportLogsServiceResponse)
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest, ExportMetricsServiceResponse)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest, ExportTraceServiceResponse)


def value(any_value):
    """An AnyValue as the plain JSON value it holds."""
    kind = any_value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [value(item) for item in any_value.array_value.values]
    if kind == "kvlist_value":
        return attributes(any_value.kvlist_value.values)
    if kind == "bytes_value":
        return any_value.bytes_value.hex()
    return getattr(any_value, kind)


def attributes(pairs):
    return {pair.key: value(pair.value) for pair in pairs}


def spans(request):
    for resource_spans in request.resource_spans:
        resource = attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                yield {
                    "signal": "span", "traceId": span.trace_id.hex(), "spanId": span.span_id.hex(),
                    "parentSpanId": span.parent_span_id.hex(), "name": span.name, "kind": span.kind,
                    "status": span.status.code, "attributes": attributes(span.attributes), "resource": resource,
                    "events": [{"name": event.name, "attributes": attributes(event.attributes)} for event in span.events],
                    "links": [{"traceId": link.trace_id.hex(), "spanId": link.span_id.hex()} for link in span.links],
                }


def metric_points(request):
    for resource_metrics in request.resource_metrics:
        resource = attributes(resource_metrics.resource.attributes)
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                kind = metric.WhichOneof("data")
                points = getattr(metric, kind).data_points if kind else []
                for point in points:
                    yield {"signal": "metric", "name": metric.name, "unit": metric.unit,
                           "attributes": attributes(point.attributes), "resource": resource}


def log_records(request):
    for resource_logs in request.resource_logs:
        resource = attributes(resource_logs.resource.attributes)
        for scope_logs in resource_logs.scope_logs:
            for record in scope_logs.log_records:
                yield {"signal": "log", "body": value(record.body), "attributes": attributes(record.attributes),
                       "resource": resource}


ROUTES = {
    "/v1/traces": (ExportTraceServiceRequest, ExportTraceServiceResponse, spans),
    "/v1/metrics": (ExportMetricsServiceRequest, ExportMetricsServiceResponse, metric_points),
    "/v1/logs": (ExportLogsServiceRequest, ExportLogsServiceResponse, log_records),
}


def main():
    arguments = sys.argv[1:]
    trace_delay = 0.0
    if arguments[0] == "--trace-delay":
        trace_delay = float(arguments[1])
        arguments = arguments[2:]
    discard = arguments[0] == "--discard"
    out = None if discard else open(arguments[0], "a", encoding="utf-8")
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def answer(self, status, body=b"", content_type="text/plain"):
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            route = ROUTES.get(self.path.split("?")[0])
            if route is None:
                return self.answer(404, b"not found\n")
            if self.headers.get("Content-Type", "").split(";")[0].strip() != "application/x-protobuf":
                return self.answer(415, b"application/x-protobuf only\n")
            request_type, response_type, items = route
            if trace_delay and request_type is ExportTraceServiceRequest:
                time.sleep(trace_delay)
            if discard:
                return self.answer(200, response_type().SerializeToString(), "application/x-protobuf")
            encoding = self.headers.get("Content-Encoding", "identity").strip().lower()
            if encoding == "gzip":
                body = gzip.decompress(body)
            elif encoding != "identity":
                return self.answer(415, b"gzip or identity only\n")
            request = request_type()
            request.ParseFromString(body)
            lines = [json.dumps(item, sort_keys=True) for item in items(request)]
            lines.append(json.dumps({"signal": "request", "path": self.path, "items": len(lines), "encoding": encoding}))
            with lock:
                out.write("".join(line + "\n" for line in lines))
                out.flush()
            self.answer(200, response_type().SerializeToString(), "application/x-protobuf")

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(f"listening {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
