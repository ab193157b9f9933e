"""The board agent (``agent.py``), its runtime adapters, and the host side of its job protocol."""
