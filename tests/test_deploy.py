"""The several-servers deployment in deploy/: the compose file, the image and the proxy agree with each other.

Docker does not run here, so the compose file is read with a YAML parser and checked against the nginx
configuration and the Dockerfile; ``tests/e2e/test_proxy.py`` runs the nginx configuration for real.
"""

from __future__ import annotations

import re

import pytest

from tests.conftest import REPO_ROOT

yaml = pytest.importorskip("yaml", reason="PyYAML is not installed (pip install -r requirements-dev.txt)")

DEPLOY = REPO_ROOT / "deploy"
APP_PORT = 8501


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())


def _replicas(compose: dict) -> dict[str, dict]:
    return {name: s for name, s in compose["services"].items() if s.get("build")}


def test_replicas_are_built_from_the_dockerfile_and_share_redis(compose) -> None:
    replicas = _replicas(compose)
    assert len(replicas) >= 2
    for service in replicas.values():
        build = service["build"]
        assert (DEPLOY / build["context"] / build["dockerfile"]).resolve() == DEPLOY / "Dockerfile"
        assert (DEPLOY / build["context"]).resolve() == REPO_ROOT
        url = service["environment"]["TE_REDIS_URL"]
        assert re.fullmatch(r"redis://redis:6379/\d+", url) and "redis" in compose["services"]
        assert service["depends_on"]["redis"]["condition"] == "service_healthy"
        assert float(service["environment"]["TE_RECORDINGS_MB"]) > 0


def test_redis_keeps_nothing_on_disk_and_reports_health(compose) -> None:
    redis = compose["services"]["redis"]
    command = redis["command"]
    assert command[0] == "redis-server"
    options = dict(zip(command[1::2], command[2::2], strict=True))
    assert options["--save"] == "" and options["--appendonly"] == "no"
    assert options["--maxmemory-policy"] in ("volatile-ttl", "volatile-lru", "noeviction")  # never the recordings
    assert "ping" in redis["healthcheck"]["test"]


def test_the_proxy_sends_to_every_replica_sticky_with_websockets(compose) -> None:
    proxy = compose["services"]["proxy"]
    mount = next(v for v in proxy["volumes"] if v.endswith("/etc/nginx/conf.d/default.conf:ro"))
    conf = (DEPLOY / mount.split(":")[0]).resolve().read_text()
    upstream = re.search(r"upstream explorer \{(.*?)\}", conf, re.S).group(1)
    servers = re.findall(r"server (\w+):(\d+)", upstream)
    assert sorted(name for name, _ in servers) == sorted(_replicas(compose))
    assert {int(port) for _, port in servers} == {APP_PORT}
    assert re.search(r"^\s*hash \$te_route consistent;", upstream, re.M)  # sticky by cookie
    for header in ("Upgrade $http_upgrade", "Connection $connection_upgrade", "Host $http_host"):
        assert f"proxy_set_header {header};" in conf
    assert "proxy_http_version 1.1;" in conf and "proxy_pass http://explorer;" in conf
    assert set(proxy["depends_on"]) == set(_replicas(compose))
    assert all(d == {"condition": "service_healthy", "restart": True} for d in proxy["depends_on"].values())


def test_the_image_serves_the_app_on_the_proxied_port() -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert f"EXPOSE {APP_PORT}" in dockerfile and f"--server.port={APP_PORT}" in dockerfile
    assert '"streamlit", "run", "app.py"' in dockerfile and "--server.address=0.0.0.0" in dockerfile
    assert "pip install --no-cache-dir -r requirements.txt" in dockerfile
    torch_pin = re.search(r"^torch==\S+$", (REPO_ROOT / "requirements.txt").read_text(), re.M)
    assert torch_pin and "grep '^torch==' requirements.txt" in dockerfile  # the CPU build at the pinned version
    ignored = (DEPLOY / "Dockerfile.dockerignore").read_text().split()
    assert {".git", ".venv"} <= set(ignored)


def test_the_docs_show_the_deployment() -> None:
    guide = (REPO_ROOT / "docs" / "deployment.md").read_text()
    several = guide.split("\n## Several servers\n", 1)[1].split("\n## ", 1)[0]
    assert "deploy/docker-compose.yml" in several and "docker compose -f deploy/docker-compose.yml up" in several
    assert "(docs/deployment.md)" in (REPO_ROOT / "README.md").read_text()


def test_the_replicas_trust_the_forwarded_address_of_the_proxy_only(compose) -> None:
    from explorer.runs.clients import client_address, trusted_proxies

    proxy_ip = compose["services"]["proxy"]["networks"]["default"]["ipv4_address"]
    for replica in _replicas(compose).values():
        proxies = trusted_proxies(replica["environment"]["TE_TRUSTED_PROXIES"])
        assert client_address(proxy_ip, "198.51.100.4", proxies) == "198.51.100.4"
        assert client_address("172.28.0.11", "198.51.100.4", proxies) == "172.28.0.11"  # a replica is no proxy
    assert "X-Forwarded-For $proxy_add_x_forwarded_for" in (DEPLOY / "nginx.conf").read_text()
