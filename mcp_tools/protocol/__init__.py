"""Sans-IO core of the Model Context Protocol: no Django, no sockets, only data in and out."""

__all__: list[str] = []
