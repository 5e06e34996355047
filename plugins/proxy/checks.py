"""kube-proxy's host checks (``nodehost_checks``).

* ``proxy.port-<n>`` -- its healthz port free, or who holds it;
* ``proxy.version-skew`` (not in the preflight) -- kube-proxy's and the
  kubelet's versions (``--version``), at most three minor versions apart as
  Kubernetes' version skew policy allows.
"""

from __future__ import annotations

from nodehost.check import Check, CheckContext

NAME = "proxy"
#: Kubernetes' version skew policy: kube-proxy and the kubelet at most this many minors apart.
MAX_MINOR_SKEW = 3


def proxy_checks(context: CheckContext) -> list[Check]:
    if NAME not in context.selected:
        return []
    from nodehost.check.ports import port_check
    from nodehost.plugins.proxy import configuration

    merged = configuration.proxy_arguments(context.config)
    launch = configuration.launch_arguments(merged.arguments)
    ip, port = configuration.healthz_address(launch.values)
    found = [port_check(f"{NAME}.port-{port}", ip, port)] if port else []
    if not context.preflight:
        found.append(version_skew_check(context.program(NAME), context.program("kubelet")))
    return found


def version_skew_check(proxy: tuple[str, bool] | None, kubelet: tuple[str, bool] | None) -> Check:
    """kube-proxy's version against the kubelet's (skipped unless both are planned)."""
    from nodehost.check.programs import minor_version, program_version

    name = f"{NAME}.version-skew"
    if proxy is None or kubelet is None:
        return Check.skipped(name, "needs both kube-proxy and the kubelet planned on this node")
    try:
        versions = {path: program_version(path) for path, _ in (proxy, kubelet)}
    except OSError as error:
        return Check.error(name, str(error), "install working kube-proxy and kubelet programs")
    proxy_text, kubelet_text = versions[proxy[0]], versions[kubelet[0]]
    ours, theirs = minor_version(proxy_text), minor_version(kubelet_text)
    found = f"kube-proxy {proxy_text}, kubelet {kubelet_text}"
    if ours is None or theirs is None:
        return Check.warning(name, f"{found}: cannot compare", "check both with --version")
    if ours[0] != theirs[0] or abs(ours[1] - theirs[1]) > MAX_MINOR_SKEW:
        return Check.error(
            name,
            f"{found}: more than {MAX_MINOR_SKEW} minor versions apart",
            "install kube-proxy and kubelet of the same minor version",
        )
    return Check.ok(name, found)
