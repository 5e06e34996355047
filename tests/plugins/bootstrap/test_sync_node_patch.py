"""What config sync puts on the Node: the config's node labels and the two annotations."""

from __future__ import annotations

from nodehost.plugins.bootstrap.sync import node_labels, node_patch


def test_node_labels_come_from_every_node_labels_value_later_ones_winning() -> None:
    config = b"""
kubeletArguments:
  node-labels: ["region=east,tier=gold", "tier=silver", " zone=a "]
"""
    assert node_labels(config) == {"region": "east", "tier": "silver", "zone": "a"}


def test_a_value_without_a_key_or_equals_sign_is_no_label() -> None:
    assert node_labels(b"kubeletArguments:\n  node-labels: ['=x,plain,empty=']\n") == {"empty": ""}


def test_a_config_without_node_labels_gives_none() -> None:
    for config in (b"nodeName: n\n", b"kubeletArguments: {}\n", b"- a list\n", b"{unclosed"):
        assert node_labels(config) == {}


def test_the_patch_carries_origins_md5sum_key_and_the_generation() -> None:
    patch = node_patch(b"kubeletArguments:\n  node-labels: [a=b]\n", "abc123", 4)
    assert patch == {
        "metadata": {
            "labels": {"a": "b"},
            "annotations": {
                "node.openshift.io/md5sum": "abc123",
                "nodehost.io/config-generation": "4",
            },
        }
    }
