"""An example causalplay plug-in: :class:`~causalplay_example.agents.MyAgent` for the Blicket tasks (entry point
``causalplay.agents``: ``my-agent``) and the ``oneblicket`` task family (entry point ``causalplay.families``)."""
