"""The deployment files that cannot run here, checked offline: the nginx configuration (rendered and passed
through `nginx -t`), deploy/compose.yaml's structure, and the Kubernetes manifests against Kubernetes' own
schemas (kubernetes-validate ships them: no cluster, no network), the class database's included."""

from __future__ import annotations

import re
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from harness import hall
from lessons.common.classroom import DATABASE_URL_VARIABLE

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
MANIFESTS = sorted((DEPLOY / "kubernetes").glob("*.yaml"))
DATABASE_MANIFEST = DEPLOY / "kubernetes" / "postgres.yaml"
KUBERNETES_VERSION = "1.37.0"  # the newest schemas kubernetes-validate 1.37.0 carries
LECTURE_SECONDS = 90 * 60


def rendered_config_passes_nginx_t(config: str, tmp_path: Path) -> None:
    hall.prepare_prefix(tmp_path)
    (tmp_path / "nginx.conf").write_text(config)
    hall.check_nginx_config(tmp_path / "nginx.conf", tmp_path)


@pytest.mark.parametrize("brotli", [True, False], ids=["with brotli", "gzip only"])
def test_the_rendered_nginx_configuration_passes_nginx_t(brotli, tmp_path):
    config = hall.nginx_config(["127.0.0.1:18501", "127.0.0.1:18502", "127.0.0.1:18503"], "127.0.0.1:18500", brotli)
    rendered_config_passes_nginx_t(config, tmp_path)
    assert ("brotli on;" in config) == brotli == ("load_module" in config)


def test_nginx_t_rejects_a_broken_configuration(tmp_path):
    config = hall.nginx_config(["127.0.0.1:18501"], "127.0.0.1:18500", brotli=False)
    with pytest.raises(RuntimeError, match="nginx -t failed"):
        rendered_config_passes_nginx_t(config.replace("least_conn;", "least_conn"), tmp_path)


def test_every_replica_is_a_backup_of_every_other_and_named_by_its_own_port():
    config = hall.nginx_config(["127.0.0.1:18501", "127.0.0.1:18502"], "127.0.0.1:18500", brotli=False)
    assert re.search(r"upstream replica-0 \{\s+server 127.0.0.1:18501;\s+server 127.0.0.1:18502 backup;", config)
    assert re.search(r"upstream replica-1 \{\s+server 127.0.0.1:18502;\s+server 127.0.0.1:18501 backup;", config)
    assert '"~:18501$" replica-0;' in config and '"~:18502$" replica-1;' in config
    with pytest.raises(ValueError, match="port of its own"):
        hall.nginx_config(["10.0.0.1:8501", "10.0.0.2:8501"], "8080", brotli=False)


def test_the_websocket_stays_open_longer_than_a_lecture():
    config = hall.nginx_config(["127.0.0.1:18501"], "127.0.0.1:18500", brotli=False)
    websocket = config[config.index("location = /_stcore/stream") :]
    for timeout in ("proxy_read_timeout", "proxy_send_timeout"):
        hours = re.search(rf"{timeout} (\d+)h;", websocket)
        assert hours and int(hours.group(1)) * 3600 > LECTURE_SECONDS, timeout


def test_composes_nginx_configuration_is_the_template_rendered_for_its_services():
    assert (DEPLOY / "nginx" / "compose.conf").read_text() == hall.compose_nginx_config(), (
        "run `python -m harness.hall > deploy/nginx/compose.conf`"
    )


def test_composes_nginx_configuration_passes_nginx_t_with_its_services_on_loopback(tmp_path):
    # nginx -t resolves every upstream's host name; the services' names exist only inside Compose's network.
    config = re.sub(r"replica-\d+:(\d+)", r"127.0.0.1:\1", hall.compose_nginx_config())
    rendered_config_passes_nginx_t(config, tmp_path)


def test_compose_runs_each_replica_on_the_port_nginx_expects_with_a_health_check_and_nginx_after_them():
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    services = compose["services"]
    replicas = [name for name in services if name.startswith("replica-")]
    assert replicas == [hall.replica_name(index) for index in range(hall.COMPOSE_REPLICAS)]
    for index, name in enumerate(replicas):
        service, port = services[name], hall.COMPOSE_FIRST_PORT + index
        assert (DEPLOY / service["build"]["context"] / service["build"]["dockerfile"]).is_file()
        assert f"--server.port={port}" in service["command"]
        assert f"127.0.0.1:{port}/_stcore/health" in " ".join(service["healthcheck"]["test"])
        assert "STREAMLIT_SERVER_COOKIE_SECRET" in service["environment"]
        assert services["nginx"]["depends_on"][name] == {"condition": "service_healthy"}
    nginx_context = DEPLOY / services["nginx"]["build"]["context"]
    copied = re.findall(r"^COPY (\S+)", (nginx_context / "Dockerfile").read_text(), re.MULTILINE)
    assert copied == ["compose.conf"] and (nginx_context / "compose.conf").is_file()
    assert services["nginx"]["ports"] == [f"8501:{hall.COMPOSE_LISTEN}"]


def test_each_replica_gets_its_share_of_the_cores_for_torchs_threads():
    assert [hall.threads_per_replica(replicas, cores=2) for replicas in (1, 2, 3)] == [2, 1, 1]
    assert [hall.threads_per_replica(replicas, cores=16) for replicas in (1, 2, 8, 16)] == [16, 8, 2, 1]
    services = yaml.safe_load((DEPLOY / "compose.yaml").read_text())["services"]
    assert {services[name]["environment"]["OMP_NUM_THREADS"] for name in services if name.startswith("replica-")} == {
        "1"
    }
    (container,) = resources()["Deployment"]["spec"]["template"]["spec"]["containers"]
    threads = {variable["name"]: variable.get("value") for variable in container["env"]}["OMP_NUM_THREADS"]
    assert threads == container["resources"]["requests"]["cpu"] == "1"  # as many threads as the pod has cores


@pytest.mark.parametrize("manifest", MANIFESTS, ids=[path.name for path in MANIFESTS])
def test_each_kubernetes_manifest_is_valid_against_the_kubernetes_schemas(manifest):
    for resource in yaml.safe_load_all(manifest.read_text()):
        kubernetes_validate.validate(resource, KUBERNETES_VERSION, strict=True)


def test_the_validator_rejects_a_misspelt_field():
    deployment = resources()["Deployment"]
    deployment["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, KUBERNETES_VERSION, strict=True)


def resources(manifests: list[Path] | None = None) -> dict[str, dict]:
    """The app's resources by kind (the database's, in postgres.yaml, apart: it has a Service of its own)."""
    manifests = manifests or [path for path in MANIFESTS if path != DATABASE_MANIFEST]
    return {resource["kind"]: resource for path in manifests for resource in yaml.safe_load_all(path.read_text())}


def test_the_pods_are_probed_on_streamlits_health_endpoint_and_request_the_memory_measured_with_a_class():
    (container,) = resources()["Deployment"]["spec"]["template"]["spec"]["containers"]
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"] == {"path": "/_stcore/health", "port": "http"}
    assert container["ports"] == [{"name": "http", "containerPort": 8501}]
    # docs/hosting.md: a hosted replica peaks at 815-824 MiB with forty students at once.
    assert container["resources"]["requests"]["memory"] == "900Mi"
    assert container["resources"]["limits"]["memory"] == "1280Mi"


def test_the_ingress_pins_a_browser_by_cookie_and_keeps_websockets_open_for_a_lecture():
    kinds = resources()
    annotations = kinds["Ingress"]["metadata"]["annotations"]
    prefix = "nginx.ingress.kubernetes.io/"
    assert annotations[prefix + "affinity"] == "cookie"
    assert annotations[prefix + "session-cookie-name"] == hall.COOKIE
    assert annotations[prefix + "session-cookie-change-on-failure"] == "true"
    for timeout in ("proxy-read-timeout", "proxy-send-timeout"):
        assert int(annotations[prefix + timeout]) > LECTURE_SECONDS
    backend = kinds["Ingress"]["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
    assert backend["name"] == kinds["Service"]["metadata"]["name"]
    assert kinds["Service"]["spec"]["selector"] == kinds["Deployment"]["spec"]["selector"]["matchLabels"]
    target = kinds["HorizontalPodAutoscaler"]["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", kinds["Deployment"]["metadata"]["name"])


def test_compose_gives_every_replica_the_one_postgresql_and_starts_them_once_it_is_healthy():
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    services, postgres = compose["services"], compose["services"]["postgres"]
    assert postgres["image"] == "postgres:17" and "ports" not in postgres, "the database is for the replicas only"
    (volume,) = postgres["volumes"]
    assert volume.split(":") == ["class-answers", "/var/lib/postgresql/data"] and "class-answers" in compose["volumes"]
    assert postgres["healthcheck"]["test"][:2] == ["CMD", "pg_isready"]
    password = postgres["environment"]["POSTGRES_PASSWORD"]
    assert password.startswith("${ANATOMY_DATABASE_PASSWORD:?"), "the password comes from the environment"
    for index in range(hall.COMPOSE_REPLICAS):
        replica = services[hall.replica_name(index)]
        assert replica["environment"][DATABASE_URL_VARIABLE] == (
            f"postgresql+psycopg://anatomy:{password}@postgres:5432/anatomy"
        )
        assert replica["depends_on"]["postgres"] == {"condition": "service_healthy"}


def test_the_database_keeps_its_data_on_a_claimed_volume_and_every_pod_reads_its_url_from_one_secret():
    database = resources([DATABASE_MANIFEST])
    statefulset, service, secret = database["StatefulSet"], database["Service"], database["Secret"]
    assert service["spec"]["clusterIP"] == "None" and statefulset["spec"]["serviceName"] == service["metadata"]["name"]
    assert service["spec"]["selector"] == statefulset["spec"]["selector"]["matchLabels"]
    (container,) = statefulset["spec"]["template"]["spec"]["containers"]
    (claim,) = statefulset["spec"]["volumeClaimTemplates"]
    assert container["image"] == "postgres:17"
    assert [mount["name"] for mount in container["volumeMounts"]] == [claim["metadata"]["name"]]
    environment = {variable["name"]: variable for variable in container["env"]}
    assert environment["POSTGRES_PASSWORD"]["valueFrom"]["secretKeyRef"] == {
        "name": secret["metadata"]["name"],
        "key": "password",
    }
    assert environment["PGDATA"]["value"].startswith(container["volumeMounts"][0]["mountPath"] + "/")

    (app,) = resources()["Deployment"]["spec"]["template"]["spec"]["containers"]
    (url,) = [variable for variable in app["env"] if variable["name"] == DATABASE_URL_VARIABLE]
    assert url["valueFrom"]["secretKeyRef"] == {"name": secret["metadata"]["name"], "key": "url"}
    host = f"{statefulset['metadata']['name']}-0.{service['metadata']['name']}:5432"
    assert f"@{host}/anatomy" in secret["stringData"]["url"]
    assert f":{secret['stringData']['password']}@" in secret["stringData"]["url"]
