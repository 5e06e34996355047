"""Loading plugins and keeping their records: the pluggy manager and what it checks.

``manager`` registers built-in and entry-point plugins and calls hooks;
``records`` defines and strictly checks component and network-provider records;
``clashes`` finds config sections claimed twice; ``entrypoints`` reads the
``nodehost`` entry-point group; ``inventory`` lists what is installed;
``selection`` turns ``--components`` into an ordered set; ``markers`` holds the
pluggy markers.
"""
