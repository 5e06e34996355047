"""Talking to the Kubernetes API server: the client, typed reads of API objects, events.

``client`` is the HTTP/1.1 client every component shares (TLS from a kubeconfig,
watches, back-off); ``objects`` reads fields of decoded objects with their types;
``events`` posts core/v1 Events about the node; ``incluster`` and ``protowire``
serve the in-cluster credentials and the protobuf encoding the client needs.
"""
