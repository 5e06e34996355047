"""A plugin implementing a hook that does not exist (caught by check_pending)."""

from nodehost import hookimpl


@hookimpl
def nodehost_no_such_hook():
    return None
