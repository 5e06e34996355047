"""The test API server holds a cluster's load the way the real one does: paged lists that
continue where the last page ended, watches that resume from a version, and ``410 Gone`` once
a version's history is no longer kept."""

from __future__ import annotations

import base64
import http.client
import json
import ssl
from pathlib import Path
from typing import Any

import yaml

from nodehost.testing.apiserver import TestApiServer

SERVICES = "/api/v1/namespaces/default/services"


def service(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default"}, "spec": {"clusterIP": "None"}}


def admin_context(api: TestApiServer, folder: Path) -> ssl.SSLContext:
    """TLS as the admin kubeconfig's client certificate (``system:masters``)."""
    user = yaml.safe_load(api.admin_kubeconfig.read_text())["users"][0]["user"]
    pair = folder / "admin.pem"
    pair.write_bytes(
        base64.b64decode(user["client-certificate-data"])
        + base64.b64decode(user["client-key-data"])
    )
    context = ssl.create_default_context(cafile=str(api.ca_file))
    context.load_cert_chain(pair)
    return context


def get(api: TestApiServer, context: ssl.SSLContext, path: str) -> tuple[int, Any]:
    """(status, JSON body) of a GET; a watch's body is its list of events."""
    connection = http.client.HTTPSConnection(api.host, api.port, context=context, timeout=10)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        body = response.read().decode()
    finally:
        connection.close()
    if "watch=1" in path:
        return response.status, [json.loads(line) for line in body.splitlines() if line]
    return response.status, json.loads(body)


def test_a_list_comes_in_pages_that_continue_where_the_last_ended(api, tmp_path) -> None:
    context = admin_context(api, tmp_path)
    for name in ("e", "a", "g", "c", "b", "f", "d"):
        api.store.put("services", service(name))
    names, versions, remaining, path = [], set(), [], f"{SERVICES}?limit=3"
    while True:
        status, page = get(api, context, path)
        assert status == 200
        names += [item["metadata"]["name"] for item in page["items"]]
        versions.add(page["metadata"]["resourceVersion"])
        remaining.append(page["metadata"].get("remainingItemCount"))
        token = page["metadata"].get("continue")
        if not token:
            break
        path = f"{SERVICES}?limit=3&continue={token}"
    assert names == ["a", "b", "c", "d", "e", "f", "g"]
    assert remaining == [4, 1, None]
    assert len(versions) == 1  # every page names the first page's version


def test_a_malformed_continue_token_is_a_400(api, tmp_path) -> None:
    status, body = get(api, admin_context(api, tmp_path), f"{SERVICES}?limit=1&continue=x")
    assert (status, body["reason"]) == (400, "BadRequest")


def test_a_continue_token_older_than_the_kept_history_is_410(api, tmp_path) -> None:
    context = admin_context(api, tmp_path)
    api.store.event_window = 4
    for index in range(3):
        api.store.put("services", service(f"s{index}"))
    _, page = get(api, context, f"{SERVICES}?limit=1")
    for index in range(3, 12):
        api.store.put("services", service(f"s{index}"))
    status, body = get(api, context, f"{SERVICES}?limit=1&continue={page['metadata']['continue']}")
    assert (status, body["reason"]) == (410, "Expired")


def test_a_watch_resumes_after_the_version_it_names(api, tmp_path) -> None:
    first = api.store.put("services", service("first"))
    api.store.put("services", service("second"))
    api.store.delete("services", "default", "first")
    version = first["metadata"]["resourceVersion"]
    status, events = get(
        api,
        admin_context(api, tmp_path),
        f"{SERVICES}?watch=1&resourceVersion={version}&timeoutSeconds=1",
    )
    assert status == 200
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "second"),
        ("DELETED", "first"),
    ]


def test_a_watch_from_a_version_no_longer_kept_gets_a_410_error_event(api, tmp_path) -> None:
    api.store.event_window = 4
    first = api.store.put("services", service("first"))
    for index in range(12):
        api.store.put("services", service(f"s{index}"))
    version = first["metadata"]["resourceVersion"]
    _, events = get(
        api,
        admin_context(api, tmp_path),
        f"{SERVICES}?watch=1&resourceVersion={version}&timeoutSeconds=1",
    )
    assert [(e["type"], e["object"]["code"], e["object"]["reason"]) for e in events] == [
        ("ERROR", 410, "Expired")
    ]


def test_a_write_wakes_only_the_watches_it_concerns(api) -> None:
    """A watch of one object by name (as a node waits for its own CSR) is not notified by
    writes to other objects; a write to its object notifies it (notification is synchronous
    with the write, so the condition's waiter list tells)."""
    import threading

    store = api.store

    def watch_one_name() -> None:
        with store.lock:
            store.wait_for_events("services", "mine", 30)

    waiter = threading.Thread(target=watch_one_name)
    waiter.start()
    while ("services", "mine") not in store._wakers:
        threading.Event().wait(0.01)
    condition = store._wakers[("services", "mine")]
    store.put("services", service("other"))
    with store.lock:
        assert len(condition._waiters) == 1  # type: ignore[attr-defined]
    store.put("services", service("mine"))
    with store.lock:
        assert len(condition._waiters) == 0  # type: ignore[attr-defined]
    waiter.join()
