"""The Kubernetes manifests (deploy/k8s): every overlay renders with `kubectl
kustomize`, each object validates against the Kubernetes schemas offline
(kubernetes-validate, strict), and the objects agree with each other: selectors,
ports, probes, the shared sealing key, what each overlay sends tokenyard to.

ServiceMonitor is a CRD (Prometheus Operator) whose schema kubernetes-validate does
not carry; it is checked here against the Service it scrapes instead."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from tokenyard.cli import build_parser, model_settings
from tokenyard.engines.session_headers import SessionForwarding
from tokenyard.server.loading import session_forwarding

REPO = Path(__file__).resolve().parents[2]
OVERLAYS = ("standalone", "llm-d", "vllm-router", "dynamo")
# The oldest and newest Kubernetes minor versions the manifests are meant for.
KUBERNETES_VERSIONS = ("1.29.0", "1.37.0")
CRDS = {("monitoring.coreos.com/v1", "ServiceMonitor")}
ENGINE_URLS = {
    "llm-d": "http://llm-d-epp:80",
    "vllm-router": "http://vllm-router:8000",
    "dynamo": "http://dynamo-frontend:8000",
}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> dict[str, list[dict]]:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        if os.environ.get("CI"):
            pytest.fail("kubectl is needed to render the manifests")
        pytest.skip("kubectl is not installed")
    tree = tmp_path_factory.mktemp("k8s") / "k8s"
    shutil.copytree(REPO / "deploy" / "k8s", tree, ignore=shutil.ignore_patterns("seal-key", "api-key"))
    # The secret files an operator creates (never committed).
    (tree / "base" / "seal-key").write_text(os.urandom(32).hex())
    (tree / "base" / "api-key").write_text(os.urandom(24).hex())
    out = {}
    for overlay in OVERLAYS:
        text = subprocess.run(
            [kubectl, "kustomize", str(tree / "overlays" / overlay)], check=True, capture_output=True, text=True
        ).stdout
        out[overlay] = [doc for doc in yaml.safe_load_all(text) if doc]
    return out


def by_kind(docs: list[dict], kind: str) -> list[dict]:
    return [d for d in docs if d["kind"] == kind]


def one(docs: list[dict], kind: str) -> dict:
    (doc,) = by_kind(docs, kind)
    return doc


def env(container: dict) -> dict[str, dict]:
    return {e["name"]: e for e in container.get("env", [])}


@pytest.mark.parametrize("overlay", OVERLAYS)
@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_every_object_validates_against_the_kubernetes_schemas(rendered, overlay, version):
    docs = rendered[overlay]
    assert {d["kind"] for d in docs} >= {
        "Deployment",
        "Service",
        "Secret",
        "PersistentVolumeClaim",
        "PodDisruptionBudget",
        "HorizontalPodAutoscaler",
        "ServiceMonitor",
    }
    for doc in docs:
        if (doc["apiVersion"], doc["kind"]) in CRDS:
            continue  # no schema offline; checked against its Service below
        kubernetes_validate.validate(doc, version, strict=True)


def test_a_broken_object_is_refused():
    # The validation can fail: a misspelt field under strict validation.
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "x"}, "spec": {"prots": []}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(service, KUBERNETES_VERSIONS[-1], strict=True)


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_objects_agree(rendered, overlay):
    docs = rendered[overlay]
    deployment, service = one(docs, "Deployment"), one(docs, "Service")
    pod = deployment["spec"]["template"]
    labels = pod["metadata"]["labels"]
    selector = deployment["spec"]["selector"]["matchLabels"]
    assert selector and selector.items() <= labels.items()
    assert service["spec"]["selector"].items() <= labels.items()
    assert one(docs, "PodDisruptionBudget")["spec"]["selector"]["matchLabels"] == selector
    hpa = one(docs, "HorizontalPodAutoscaler")
    assert hpa["spec"]["scaleTargetRef"]["name"] == deployment["metadata"]["name"]
    assert hpa["spec"]["minReplicas"] >= 2, "the PodDisruptionBudget keeps one of at least two"

    (container,) = pod["spec"]["containers"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"http": 8000}, "the image listens on 8000 (TOKENYARD_PORT)"
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"] == {"path": "/health", "port": "http"}
    assert container["resources"]["requests"] and container["resources"]["limits"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True

    # The sealing key: one generated Secret, mounted where TOKENYARD_SEAL_KEY_FILE
    # points, in every replica of the Deployment.
    secrets = {s["metadata"]["name"]: s for s in by_kind(docs, "Secret")}
    variables = env(container)
    seal_path = variables["TOKENYARD_SEAL_KEY_FILE"]["value"]
    (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == seal_path]
    (volume,) = [v for v in pod["spec"]["volumes"] if v["name"] == mount["name"]]
    seal_secret = secrets[volume["secret"]["secretName"]]
    assert mount["subPath"] in seal_secret["data"]
    api_key = variables["TOKENYARD_API_KEY"]["valueFrom"]["secretKeyRef"]
    assert api_key["key"] in secrets[api_key["name"]]["data"]
    # Writable places on a read-only root.
    writable = {m["mountPath"] for m in container["volumeMounts"] if not m.get("readOnly")}
    assert {"/var/cache/tokenyard", "/tmp"} <= writable

    # The ServiceMonitor (a CRD, not schema-checked) scrapes this Service's port.
    monitor = one(docs, "ServiceMonitor")
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    service_ports = {p["name"] for p in service["spec"]["ports"]}
    assert [(e["port"], e["path"]) for e in monitor["spec"]["endpoints"]] == [("http", "/metrics")]
    assert {e["port"] for e in monitor["spec"]["endpoints"]} <= service_ports


@pytest.mark.parametrize("overlay", ["llm-d", "vllm-router", "dynamo"])
def test_behind_a_fleet_router_tokenyard_sends_to_it_with_the_session(rendered, overlay):
    (container,) = one(rendered[overlay], "Deployment")["spec"]["template"]["spec"]["containers"]
    variables = env(container)
    assert variables["TOKENYARD_ENGINE_URL"]["value"] == ENGINE_URLS[overlay]
    assert "args" not in container
    headers = variables.get("TOKENYARD_SESSION_HEADER", {"value": "x-session-id"})["value"].split(",")
    assert "x-session-id" in headers
    if overlay == "dynamo":
        assert "x-dynamo-session-id" in headers


def test_standalone_routes_itself_over_the_engines_and_their_kv_events(rendered):
    (container,) = one(rendered["standalone"], "Deployment")["spec"]["template"]["spec"]["containers"]
    # The --engine-url flags, not the variable: the flag appends to the variable's list.
    assert "TOKENYARD_ENGINE_URL" not in env(container)
    urls = [a.split("=", 1)[1] for a in container["args"] if a.startswith("--engine-url=")]
    events = [a.split("=", 1)[1] for a in container["args"] if a.startswith("--kv-events=")]
    assert len(urls) == len(events) >= 2


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_tokenyard_reads_the_settings_as_meant(rendered, overlay, monkeypatch):
    """The container's variables and arguments through tokenyard's own command line."""
    (container,) = one(rendered[overlay], "Deployment")["spec"]["template"]["spec"]["containers"]
    for name in [n for n in os.environ if n.startswith("TOKENYARD_")]:
        monkeypatch.delenv(name)
    for name, variable in env(container).items():
        monkeypatch.setenv(name, variable.get("value", "from-a-secret"))
    args = build_parser().parse_args(["serve", *container.get("args", [])])
    (settings,) = model_settings(args)
    assert settings.engine == "remote" and settings.model == "/models/model"
    assert args.api_key == "from-a-secret" and str(args.seal_key_file) == "/run/secrets/tokenyard-seal-key"
    if overlay == "standalone":
        assert len(settings.engine_urls) == len(settings.kv_events) == 2
    else:
        assert settings.engine_urls == (ENGINE_URLS[overlay],)
    expected = ("x-session-id", "x-dynamo-session-id") if overlay == "dynamo" else ("x-session-id",)
    assert session_forwarding(settings) == SessionForwarding(expected, harness_headers=True)
