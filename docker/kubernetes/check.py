#!/usr/bin/env python3
"""Validates docker/kubernetes/*.yaml without a cluster (run by scripts/test.sh).

`kubectl apply --dry-run=client` needs an API server for its schema; this checks instead, for
the kinds the manifests use, a schema of the Kubernetes API fields they may contain (unknown
keys, wrong types and missing required fields fail: a typo such as `readinesProbe` would be
silently ignored by a lenient apply), and the references between objects: the Secret keys the
container reads exist, probes name declared container ports, the Service selects the pod
template's labels and targets its ports, every volume mount has a claim template.

Usage: docker/kubernetes/check.py [FILE...]   (default: every .yaml beside this script)
"""

import sys
from pathlib import Path

try:
    import yaml
except ImportError:  # pragma: no cover - scripts/test.sh installs it
    sys.exit("check.py needs PyYAML: python3 -m pip install pyyaml")

STR, INT, BOOL = str, int, bool
ANY_MAP = "map"  # free-form string map (labels, stringData)


def obj(required=(), **fields):
    return ("object", set(required), fields)


def lst(item):
    return ("list", item)


METADATA = obj(["name"], name=STR, labels=ANY_MAP, annotations=ANY_MAP, namespace=STR)
PORT_REF = (STR, INT)
PROBE = obj(
    tcpSocket=obj(["port"], port=PORT_REF),
    httpGet=obj(["port"], path=STR, port=PORT_REF, scheme=STR),
    exec=obj(["command"], command=lst(STR)),
    initialDelaySeconds=INT,
    periodSeconds=INT,
    timeoutSeconds=INT,
    failureThreshold=INT,
    successThreshold=INT,
)
SECCOMP = obj(["type"], type=STR, localhostProfile=STR)
CONTAINER = obj(
    ["name", "image"],
    name=STR,
    image=STR,
    imagePullPolicy=STR,
    args=lst(STR),
    command=lst(STR),
    env=lst(
        obj(
            ["name"],
            name=STR,
            value=STR,
            valueFrom=obj(secretKeyRef=obj(["name", "key"], name=STR, key=STR)),
        )
    ),
    ports=lst(obj(["containerPort"], name=STR, containerPort=INT, protocol=STR)),
    readinessProbe=PROBE,
    livenessProbe=PROBE,
    startupProbe=PROBE,
    resources=obj(requests=ANY_MAP, limits=ANY_MAP),
    securityContext=obj(
        allowPrivilegeEscalation=BOOL,
        readOnlyRootFilesystem=BOOL,
        runAsNonRoot=BOOL,
        runAsUser=INT,
        capabilities=obj(drop=lst(STR), add=lst(STR)),
        seccompProfile=SECCOMP,
    ),
    volumeMounts=lst(obj(["name", "mountPath"], name=STR, mountPath=STR, readOnly=BOOL)),
)
POD_SPEC = obj(
    ["containers"],
    containers=lst(CONTAINER),
    terminationGracePeriodSeconds=INT,
    securityContext=obj(
        runAsUser=INT,
        runAsGroup=INT,
        fsGroup=INT,
        runAsNonRoot=BOOL,
        seccompProfile=SECCOMP,
    ),
)
SCHEMAS = {
    ("v1", "Secret"): obj(
        ["metadata"], metadata=METADATA, type=STR, stringData=ANY_MAP, data=ANY_MAP
    ),
    ("v1", "Service"): obj(
        ["metadata", "spec"],
        metadata=METADATA,
        spec=obj(
            ["ports", "selector"],
            clusterIP=STR,
            type=STR,
            selector=ANY_MAP,
            ports=lst(obj(["port"], name=STR, port=INT, targetPort=PORT_REF, protocol=STR)),
        ),
    ),
    ("apps/v1", "StatefulSet"): obj(
        ["metadata", "spec"],
        metadata=METADATA,
        spec=obj(
            ["selector", "template", "serviceName"],
            serviceName=STR,
            replicas=INT,
            selector=obj(["matchLabels"], matchLabels=ANY_MAP),
            template=obj(["metadata", "spec"], metadata=obj(labels=ANY_MAP), spec=POD_SPEC),
            volumeClaimTemplates=lst(
                obj(
                    ["metadata", "spec"],
                    metadata=METADATA,
                    spec=obj(
                        ["accessModes", "resources"],
                        accessModes=lst(STR),
                        storageClassName=STR,
                        resources=obj(["requests"], requests=ANY_MAP),
                    ),
                )
            ),
        ),
    ),
}


def check(value, schema, path, problems):
    if schema == ANY_MAP:
        if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, (str, int)) for k, v in value.items()
        ):
            problems.append(f"{path}: expected a map of strings")
        return
    if isinstance(schema, tuple) and schema and schema[0] == "object":
        _, required, fields = schema
        if not isinstance(value, dict):
            problems.append(f"{path}: expected an object")
            return
        for key in required - value.keys():
            problems.append(f"{path}.{key}: required")
        for key, item in value.items():
            if key not in fields:
                problems.append(f"{path}.{key}: not a field of this object")
            else:
                check(item, fields[key], f"{path}.{key}", problems)
        return
    if isinstance(schema, tuple) and schema and schema[0] == "list":
        if not isinstance(value, list):
            problems.append(f"{path}: expected a list")
            return
        for index, item in enumerate(value):
            check(item, schema[1], f"{path}[{index}]", problems)
        return
    types = schema if isinstance(schema, tuple) else (schema,)
    if isinstance(value, bool) and bool not in types:
        problems.append(f"{path}: expected {'/'.join(t.__name__ for t in types)}, got a boolean")
    elif not isinstance(value, types):
        problems.append(f"{path}: expected {'/'.join(t.__name__ for t in types)}")


def cross_check(documents, problems):
    by_kind = {}
    for document in documents:
        by_kind.setdefault(document["kind"], []).append(document)
    secrets = {s["metadata"]["name"]: s for s in by_kind.get("Secret", [])}
    for sts in by_kind.get("StatefulSet", []):
        name = sts["metadata"]["name"]
        spec = sts["spec"]
        labels = spec["template"]["metadata"].get("labels", {})
        if any(labels.get(k) != v for k, v in spec["selector"]["matchLabels"].items()):
            problems.append(f"StatefulSet {name}: selector does not match the template's labels")
        claims = {c["metadata"]["name"] for c in spec.get("volumeClaimTemplates", [])}
        for container in spec["template"]["spec"]["containers"]:
            ports = {p.get("name"): p["containerPort"] for p in container.get("ports", [])}
            for probe_name in ("readinessProbe", "livenessProbe", "startupProbe"):
                probe = container.get(probe_name, {})
                for action in ("tcpSocket", "httpGet"):
                    port = probe.get(action, {}).get("port")
                    if isinstance(port, str) and port not in ports:
                        problems.append(f"{name}: {probe_name} names an undeclared port {port!r}")
            for env in container.get("env", []):
                ref = env.get("valueFrom", {}).get("secretKeyRef")
                if ref:
                    secret = secrets.get(ref["name"])
                    if secret is None:
                        problems.append(f"{name}: env {env['name']} reads a missing Secret {ref['name']!r}")
                    elif ref["key"] not in {**secret.get("stringData", {}), **secret.get("data", {})}:
                        problems.append(f"{name}: env {env['name']} reads a missing key {ref['key']!r}")
            for mount in container.get("volumeMounts", []):
                if mount["name"] not in claims:
                    problems.append(f"{name}: volume mount {mount['name']!r} has no claim template")
            for service in by_kind.get("Service", []):
                selector = service["spec"]["selector"]
                if all(labels.get(k) == v for k, v in selector.items()):
                    for port in service["spec"]["ports"]:
                        target = port.get("targetPort", port["port"])
                        if isinstance(target, str) and target not in ports:
                            problems.append(
                                f"Service {service['metadata']['name']}: targetPort {target!r} is not a container port"
                            )
        if not any(
            all(labels.get(k) == v for k, v in s["spec"]["selector"].items())
            for s in by_kind.get("Service", [])
            if s["metadata"]["name"] == spec["serviceName"]
        ):
            problems.append(f"StatefulSet {name}: no Service {spec['serviceName']!r} selects its pods")


def main():
    here = Path(__file__).resolve().parent
    files = [Path(f) for f in sys.argv[1:]] or sorted(here.glob("*.yaml"))
    problems = []
    for file in files:
        documents = [d for d in yaml.safe_load_all(file.read_text()) if d is not None]
        for index, document in enumerate(documents):
            key = (document.get("apiVersion"), document.get("kind"))
            schema = SCHEMAS.get(key)
            where = f"{file.name}#{index} {key[1]}"
            if schema is None:
                problems.append(f"{where}: no schema for {key}")
                continue
            extra = {k: v for k, v in document.items() if k not in ("apiVersion", "kind")}
            check(extra, schema, where, problems)
        if not problems:
            cross_check(documents, problems)
        print(f"{file}: {len(documents)} objects")
    for problem in problems:
        print(problem)
    if problems:
        print(f"check.py: {len(problems)} problem(s)")
        return 1
    print("check.py: manifests valid")
    return 0


if __name__ == "__main__":
    sys.exit(main())
