#!/usr/bin/python3
"""Validates real gateway answers against its OpenAPI 3.1 document, with python3-jsonschema
(JSON Schema 2020-12, the dialect of OpenAPI 3.1).

Usage: openapi_check.py OPENAPI.json < answers.jsonl
Each input line is one of
  {"method": "get", "path": "/api/v1/traces/abc", "status": 200, "content_type": "...", "body": <JSON>}
  {"event": "run.started", "data": <JSON>}          (an SSE event: checked against Event<Name>)
  {"route": ["get", "/api/v1/traces/{id}"]}         (the document must describe this route)
Prints {"checked": N, "failures": [...]} and exits 1 when anything fails.
"""
import json
import re
import sys

import jsonschema


def event_schema_name(event):
    return "Event" + "".join(part[:1].upper() + part[1:] for part in re.split(r"[._]", event))


def template_for(doc, path):
    for template in doc["paths"]:
        pattern = "^" + re.sub(r"\{[^/]+\}", "[^/]+", template) + "$"
        if re.match(pattern, path):
            return template
    return None


def deref(doc, node):
    while isinstance(node, dict) and "$ref" in node and len(node) == 1:
        target = doc
        for part in node["$ref"].lstrip("#/").split("/"):
            target = target[part]
        node = target
    return node


def main():
    doc = json.load(open(sys.argv[1]))
    if not str(doc.get("openapi", "")).startswith("3.1"):
        print(json.dumps({"checked": 0, "failures": ["not an OpenAPI 3.1 document"]}))
        return 1
    resolver = jsonschema.RefResolver.from_schema(doc)
    failures, checked = [], 0

    def check(schema, value, what):
        nonlocal checked
        checked += 1
        validator = jsonschema.Draft202012Validator(schema, resolver=resolver)
        for error in validator.iter_errors(value):
            failures.append("%s: %s at %s" % (what, error.message[:300], list(error.absolute_path)))

    for line in sys.stdin:
        if not line.strip():
            continue
        item = json.loads(line)
        if "route" in item:
            method, template = item["route"]
            checked += 1
            if method not in doc["paths"].get(template, {}):
                failures.append("undocumented route %s %s" % (method.upper(), template))
            continue
        if "event" in item:
            name = event_schema_name(item["event"])
            schema = doc["components"]["schemas"].get(name)
            if schema is None:
                failures.append("no schema %s for event %s" % (name, item["event"]))
                continue
            check({"$ref": "#/components/schemas/" + name}, item["data"], "event " + item["event"])
            continue
        template = template_for(doc, item["path"])
        if template is None:
            failures.append("no path for " + item["path"])
            continue
        operation = doc["paths"][template].get(item["method"])
        if operation is None:
            failures.append("no %s for %s" % (item["method"], template))
            continue
        response = deref(doc, operation["responses"].get(str(item["status"])))
        what = "%s %s %s" % (item["method"].upper(), item["path"], item["status"])
        if response is None:
            failures.append(what + ": status not documented")
            continue
        media = item["content_type"].split(";")[0].strip()
        content = response.get("content", {}).get(media)
        if content is None:
            failures.append(what + ": media type %s not documented" % media)
            continue
        check(content["schema"], item["body"], what)
    print(json.dumps({"checked": checked, "failures": failures}))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
